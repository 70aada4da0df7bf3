"""Stage R and a stalled realm: a block waiting on a position no authentic record fills is seen stalled after
``stall_after_blocks`` later blocks (a ``Stalled`` record on ``<realm>.health``), what Stage R holds meanwhile is
bounded (``StalledBufferFull``), and only an authentic void order from the author unsticks it."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from producers.workload import LogBuilder, _forged, signer
from pubsub_core.envelope import Topic
from pubsub_core.envelope import KeyRegistry
from pubsub_core.hashing import blake2_256
from pubsub_core.relay import Genesis, InputRecord, VoidOrder, canonical_json
from pubsub_core.relay.void import VOID_TAG, VoidDecodeError
from pubsub_core.simulator import Simulator
from pubsub_core.stages import ProtocolConfig
from pubsub_core.stages.ingest import LineParser, ingest_record
from pubsub_core.stages.records import LogRecord, OutputRecord
from pubsub_core.stages.relay_stage import RelayStage
from pubsub_core.subscriber import SetSubscriptions
from pubsub_core.xcm import Publish, Xcm, encode_versioned_xcm
from state import MemoryBackend

PUBLISHER = signer("collator/1000")
SUBSCRIBER = signer("collator/3000")
STRANGER = signer("stranger")
PRICE = blake2_256(b"price")
SLOT = ("upward", "1000")


@dataclass
class Stalled:
    """A log whose block 3 includes upward/1000/1, of which only a forged copy is written; ``genuine`` is the
    record that was never written (a test may write it late)."""

    log: LogBuilder
    genuine: InputRecord


def stalled(later_blocks: int) -> Stalled:
    """Blocks 1 and 2 apply; block 3 includes position 1 of upward/1000, whose only copy is forged; then
    ``later_blocks`` empty blocks."""
    log = LogBuilder("polkadot")
    keys = {1000: frozenset({PUBLISHER.public_key}), 3000: frozenset({SUBSCRIBER.public_key})}
    log.genesis(KeyRegistry(para_keys=keys, author_keys=frozenset({log.author.public_key})), Genesis())
    log.signed(SUBSCRIBER, "extrinsics", "para:3000", SetSubscriptions(((1000, (PRICE,)),)).encode())
    log.block()
    log.publish(1000, PUBLISHER, [(PRICE, b"42", 0)])
    log.block()
    seqno = log.seqnos[(*SLOT, PUBLISHER.public_key)] + 1
    log.seqnos[(*SLOT, PUBLISHER.public_key)] = seqno
    genuine = InputRecord(*SLOT, 1, PUBLISHER.sign(Topic("polkadot", *SLOT), seqno,
                                                   encode_versioned_xcm(Xcm((Publish(PRICE, b"43", 0),)))).encode())
    log.hostile(*SLOT, _forged(genuine))
    log.positions[SLOT] = 2
    log.since_block[SLOT] = 1
    log.block()
    for _ in range(later_blocks):
        log.block()
    return Stalled(log, genuine)


def void(log: LogBuilder, order: VoidOrder | bytes, key: object = None) -> None:
    """Append a void order (or raw bytes after the tag) signed by the author, or by ``key``."""
    data = order.encode() if isinstance(order, VoidOrder) else order
    log.signed(key or log.author, "blocks", "author", data)  # type: ignore[arg-type]


def run(lines: list[str], config: ProtocolConfig | None = None) -> list[dict[str, object]]:
    simulator = Simulator(config or ProtocolConfig())
    out = [record for line in lines for record in simulator.feed_line(line)]
    return [record.to_json() for record in out]


def by_topic(outputs: list[dict[str, object]], kind: str) -> dict[str, dict[str, object]]:
    return {str(o["id"]): o["value"] for o in outputs if o["topic"] == f"polkadot.{kind}"}  # type: ignore[misc]


def seals(outputs: list[dict[str, object]]) -> list[int]:
    return [int(v["number"]) for v in by_topic(outputs, "seals").values()]  # type: ignore[call-overload]


ORDER = VoidOrder(3, ((*SLOT, 1, 1),))


@pytest.mark.parametrize("threshold", [1, 2, 3, 5])
def test_the_stall_is_seen_when_the_threshold_th_later_block_queues_and_not_before(threshold: int) -> None:
    case = stalled(later_blocks=threshold + 2)
    simulator = Simulator(ProtocolConfig(stall_after_blocks=threshold))
    blocks_read = 0
    seen_at = None
    for line in case.log.lines:
        out = simulator.feed_line(line)
        blocks_read += '"topic":"polkadot.blocks"' in line
        if any(r.id.startswith("stalled/") for r in out):
            assert seen_at is None, "a stall is reported once"
            seen_at = blocks_read
    assert seen_at == 3 + threshold  # block 3 waits; the threshold-th block after it is block 3 + threshold
    status = RelayStage("polkadot", simulator.config, simulator.relays["polkadot"].backend).waiting()
    assert status is not None and status.stalled
    assert (status.block, status.block_record, status.missing) == (3, "polkadot.blocks@2", ("upward/1000/1",))
    assert status.later_blocks == threshold + 2


def test_a_stalled_record_names_the_block_since_when_and_what_it_awaits() -> None:
    outputs = run(stalled(later_blocks=3).log.lines)
    assert by_topic(outputs, "health") == {"stalled/polkadot.blocks@2": {
        "kind": "Stalled", "realm": "polkadot", "block": 3, "block_record": "polkadot.blocks@2", "after_blocks": 3,
        "awaits": [{"stream": "upward", "origin": "1000", "first": 1, "last": 1}]}}
    assert seals(outputs) == [1, 2]
    record = next(o for o in outputs if o["topic"] == "polkadot.health")
    assert record["key"] == "polkadot"


def test_an_authentic_void_order_fills_the_positions_with_nothing_and_the_realm_moves_on() -> None:
    case = stalled(later_blocks=3)
    void(case.log, ORDER)
    case.log.publish(1000, PUBLISHER, [(PRICE, b"44", 0)])
    case.log.block()
    outputs = run(case.log.lines)
    assert seals(outputs) == [1, 2, 3, 4, 5, 6, 7]
    health = by_topic(outputs, "health")
    assert list(health) == ["stalled/polkadot.blocks@2", "resumed/polkadot.blocks@2", "voided/polkadot.blocks@6"]
    assert health["voided/polkadot.blocks@6"] == {
        "kind": "Voided", "realm": "polkadot", "block": 3, "block_record": "polkadot.blocks@2",
        "void_record": "polkadot.blocks@6", "ranges": [{"stream": "upward", "origin": "1000", "first": 1, "last": 1}]}
    assert by_topic(outputs, "rejected")["outcome/upward/1000/1"] == {
        "block": 3, "record": "upward/1000/1", "status": "rejected", "reason": "Voided",
        "detail": "the author's void order polkadot.blocks@6 voided it"}
    assert [v["value"] for v in by_topic(outputs, "updates").values()] == ["0x3432", "0x3434"]


def _refused_voids(case: Stalled) -> list[dict[str, object]]:
    outputs = run(case.log.lines)
    assert seals(outputs) == [1, 2], "an order that is refused unsticks nothing"
    assert not [i for i in by_topic(outputs, "health") if not i.startswith("stalled/")]
    return outputs


def test_a_forged_void_order_is_refused_and_changes_nothing() -> None:
    case = stalled(later_blocks=3)
    void(case.log, ORDER)
    case.log.lines[-1] = case.log.lines[-1].replace(case.log.lines[-1][-8:-4], "0000")  # signature bytes
    outputs = _refused_voids(case)
    assert by_topic(outputs, "rejected")["block/polkadot.blocks@6"]["reason"] == "BadSignature"


def test_a_void_order_signed_by_a_key_other_than_the_authors_is_refused() -> None:
    case = stalled(later_blocks=3)
    void(case.log, ORDER, key=STRANGER)
    outputs = _refused_voids(case)
    assert by_topic(outputs, "rejected")["block/polkadot.blocks@6"]["reason"] == "NotMember"


@pytest.mark.parametrize("data", [VOID_TAG, VOID_TAG + b"\x03\x00\x00\x00\x04", VOID_TAG + b"\x03\x00\x00\x00\x00",
                                  VoidOrder(3, ((*SLOT, 1, 1),)).encode() + b"\x00"])
def test_a_malformed_void_order_from_the_author_is_refused(data: bytes) -> None:
    with pytest.raises(VoidDecodeError):
        VoidOrder.decode(data)
    case = stalled(later_blocks=3)
    void(case.log, data)
    outputs = _refused_voids(case)
    assert by_topic(outputs, "rejected")["block/polkadot.blocks@6"]["reason"] == "MalformedVoid"


@pytest.mark.parametrize(("order", "reason"), [
    (VoidOrder(4, ((*SLOT, 1, 1),)), "VoidNotWaiting"),  # block 4 is queued, not first
    (VoidOrder(3, ((*SLOT, 0, 1),)), "VoidOutOfRange"),  # position 0 was included by block 2
    (VoidOrder(3, ((*SLOT, 1, 2),)), "VoidOutOfRange"),  # block 3 includes up to position 1
    (VoidOrder(3, (("upward", "2000", 0, 0),)), "VoidOutOfRange"),  # block 3 names no upward/2000
])
def test_a_void_order_that_does_not_fit_the_waiting_block_is_refused(order: VoidOrder, reason: str) -> None:
    case = stalled(later_blocks=3)
    void(case.log, order)
    outputs = _refused_voids(case)
    if reason == "VoidNotWaiting":  # it waits behind block 4 until its turn, which never comes before the end
        assert "block/polkadot.blocks@6" not in by_topic(outputs, "rejected")
        simulator = Simulator()
        for line in case.log.lines:
            simulator.feed_line(line)
        outputs = [r.to_json() for r in simulator.finish()]
    assert by_topic(outputs, "rejected")["block/polkadot.blocks@6"]["reason"] == reason


def test_a_late_genuine_record_at_a_voided_position_is_refused_not_applied() -> None:
    case = stalled(later_blocks=3)
    void(case.log, ORDER)
    case.log.line("polkadot.upward", "1000", case.genuine.to_json())
    case.log.block()
    outputs = run(case.log.lines)
    assert seals(outputs) == [1, 2, 3, 4, 5, 6, 7]
    assert by_topic(outputs, "rejected")["ingest/polkadot.upward@2"]["reason"] == "PositionConflict"
    assert [v["value"] for v in by_topic(outputs, "updates").values()] == ["0x3432"]  # "43" never applies


def test_a_void_order_wins_over_a_record_that_arrives_before_the_block_is_applied() -> None:
    """The void order is queued behind block 3 when the genuine record arrives: block 3 applies with the position
    voided, and the record has the one ``Voided`` outcome of its position."""
    case = stalled(later_blocks=3)
    void(case.log, ORDER)
    lines = case.log.lines
    genuine = canonical_json({"topic": "polkadot.upward", "key": "1000", "value": case.genuine.to_json()})
    simulator = Simulator()
    out = [r.to_json() for line in lines for r in simulator.feed_line(line)]
    assert seals(out) == [1, 2, 3, 4, 5, 6]
    late = [r.to_json() for r in simulator.feed_line(genuine)]
    assert by_topic(late, "rejected")["ingest/polkadot.upward@2"]["reason"] == "PositionConflict"


def test_what_a_stalled_realm_holds_is_bounded_and_a_refused_record_can_be_sent_again() -> None:
    config = ProtocolConfig(stall_after_blocks=2, max_held_records=6)
    case = stalled(later_blocks=2)  # held: blocks 3, 4, 5 -> seen stalled
    log = case.log
    for value in (b"a", b"b", b"c", b"d"):
        log.publish(1000, PUBLISHER, [(PRICE, value, 0)])  # positions 2..5: 3 fit, the 4th is refused
    kept = list(log.lines)
    outputs = run(kept, config)
    rejected = by_topic(outputs, "rejected")
    full = [i for i, v in rejected.items() if v["reason"] == "StalledBufferFull"]
    assert full == ["ingest/polkadot.upward@5"]
    assert "holds 6 records and blocks" in str(rejected[full[0]]["detail"])
    # the void order passes the full hold; once block 3 applies, the refused record is produced again, unchanged
    void(log, ORDER)
    refused_line = kept[-1]
    log.lines.append(refused_line)
    log.block()
    outputs = run(log.lines, config)
    assert seals(outputs) == [1, 2, 3, 4, 5, 6]
    assert [v["value"] for v in by_topic(outputs, "updates").values()] == ["0x3432", "0x64"]
    assert "ingest/polkadot.upward@6" not in by_topic(outputs, "rejected")


def test_the_hold_is_not_bounded_while_no_block_is_stalled() -> None:
    """A catch-up reads a batch's records before its blocks: many records held, no stall, nothing refused."""
    config = ProtocolConfig(max_held_records=2)
    log = stalled(later_blocks=0).log
    lines = [line for line in log.lines if "polkadot.blocks" not in line]
    lines += [line for line in log.lines if "polkadot.blocks" in line]
    assert not [v for v in by_topic(run(lines, config), "rejected").values() if v["reason"] == "StalledBufferFull"]


def _stage_outputs(lines: list[str], cuts: list[int]) -> list[str]:
    """Stage R alone over ``lines`` fed in batches split at ``cuts``, a new stage per batch over one backend (as
    the job builds one every micro-batch)."""
    router = LineParser("polkadot")
    records: list[LogRecord | OutputRecord] = []
    for line in lines:
        routed = router.route(line)
        assert not isinstance(routed, OutputRecord)
        kafka, offset = routed
        records.append(ingest_record(kafka.topic, kafka.key, kafka.value, offset, "polkadot"))
    backend = MemoryBackend()
    out: list[str] = []
    for start, end in zip([0, *cuts], [*cuts, len(records)]):
        stage = RelayStage("polkadot", ProtocolConfig(), backend)
        for record in records[start:end]:
            assert isinstance(record, LogRecord)
            immediate, steps = stage.feed(record)
            out += [r.to_line() for r in immediate] + [r.to_line() for s in steps for r in s.outputs]
    return out


def test_stall_void_and_recovery_are_the_same_whatever_the_batching() -> None:
    case = stalled(later_blocks=4)
    void(case.log, ORDER)
    case.log.publish(1000, PUBLISHER, [(PRICE, b"44", 0)])
    case.log.block()
    lines = case.log.lines
    whole = _stage_outputs(lines, [])
    assert any('"kind":"Stalled"' in line for line in whole) and any('"kind":"Voided"' in line for line in whole)
    for cuts in ([1], [5, 9], list(range(1, len(lines))), [len(lines) - 3]):
        assert _stage_outputs(lines, cuts) == whole


def test_void_orders_read_back_as_written_and_never_as_a_header() -> None:
    order = VoidOrder(7, (("extrinsics", "root", 0, 3), ("upward", "2000", 5, 5), ("upward", "2000", 7, 9)))
    assert VoidOrder.decode(order.encode()) == order
    assert json.loads(canonical_json(order.to_json()))[0] == {"stream": "extrinsics", "origin": "root", "first": 0,
                                                               "last": 3}
    for bad in [((*SLOT, 2, 1),), ((*SLOT, 1, 2), (*SLOT, 2, 3)), (("blocks", "author", 0, 0),),
                ((*SLOT, 0, 5000),), ()]:
        with pytest.raises(ValueError):
            VoidOrder(3, bad)
