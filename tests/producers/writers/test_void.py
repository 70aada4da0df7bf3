"""`pubsub author void`'s plan: the positions a waiting block misses, found from the topics as Stage R would,
the author's next seqno, and a record Stage R takes as the order that unsticks the realm."""

from __future__ import annotations

import json

import pytest

from producers.writers.void import VOID_POSITION_BASE, KafkaRecords, NothingToVoid, VoidError, plan_void, void_record
from pubsub_core.relay import VoidOrder
from pubsub_core.simulator import Simulator
from pubsub_core.stages import GenesisRecord
from pubsub_core.stages.records import INPUT_STREAMS
from tests.stages.test_stall import stalled


def topics(lines: list[str]) -> dict[str, KafkaRecords]:
    """The log's lines as Kafka records, per topic in offset order."""
    out: dict[str, KafkaRecords] = {}
    for line in lines:
        body = json.loads(line)
        records = out.setdefault(body["topic"], [])
        value = body["value"] if isinstance(body["value"], str) else json.dumps(body["value"], sort_keys=True,
                                                                                 separators=(",", ":"))
        records.append((str(body["key"]).encode(), value.encode(), len(records)))
    return out


def plan(lines: list[str], number: int, positions: list[tuple[str, str, int, int]] | None = None):  # type: ignore[no-untyped-def]
    case_topics = topics(lines)
    genesis = GenesisRecord.from_json(json.loads(case_topics["polkadot.genesis"][0][1] or b""))
    inputs = {f"polkadot.{s}": case_topics.get(f"polkadot.{s}", []) for s in INPUT_STREAMS}
    author = next(iter(genesis.registry.author_keys))
    return plan_void("polkadot", genesis.registry, case_topics["polkadot.blocks"], inputs, number, author,
                     positions=positions)


def test_the_plan_voids_what_no_authentic_record_fills_with_the_authors_next_seqno() -> None:
    case = stalled(later_blocks=3)
    found = plan(case.log.lines, 3)
    assert found.order == VoidOrder(3, (("upward", "1000", 1, 1),))
    assert (found.block.number, found.block_record, found.seqno, found.computed) == (3, "polkadot.blocks@2", 7, True)
    assert found.lines()[0] == ("block 3 of polkadot (polkadot.blocks@2): void 1 position(s) (no authentic record on "
                                "the input topics):")


def test_the_written_record_unsticks_the_realm_in_stage_r() -> None:
    case = stalled(later_blocks=3)
    found = plan(case.log.lines, 3)
    value = json.loads(void_record("polkadot", case.log.author, found))
    assert value["position"] == VOID_POSITION_BASE + 6
    line = json.dumps({"topic": "polkadot.blocks", "key": "author", "value": value})
    simulator = Simulator()
    out = [r for text in [*case.log.lines, line] for r in simulator.feed_line(text)]
    assert [r.value["number"] for r in out if r.topic == "polkadot.seals"] == [1, 2, 3, 4, 5, 6]
    assert [r.id for r in out if r.topic == "polkadot.health"] == [
        "stalled/polkadot.blocks@2", "resumed/polkadot.blocks@2", "voided/polkadot.blocks@6"]


def test_a_block_with_every_record_has_nothing_to_void() -> None:
    with pytest.raises(NothingToVoid):
        plan(stalled(later_blocks=1).log.lines, 2)


def test_a_block_not_on_the_topic_cannot_be_voided() -> None:
    with pytest.raises(VoidError, match="block 9 does not extend the chain"):
        plan(stalled(later_blocks=1).log.lines, 9)


def test_given_positions_must_lie_in_what_the_block_still_fills() -> None:
    lines = stalled(later_blocks=1).log.lines
    assert plan(lines, 3, [("upward", "1000", 1, 1)]).computed is False
    with pytest.raises(VoidError, match="fills 1..1"):
        plan(lines, 3, [("upward", "1000", 0, 1)])
    with pytest.raises(VoidError, match="names none"):
        plan(lines, 3, [("upward", "2000", 0, 0)])
