"""Bad input never stops a run: every kind of bad line or record ends as one typed outcome on ``rejected``
(or a ``CallFailed`` event for a subscriber call the relay included), and good traffic around it is unaffected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typing import Any
from hypothesis import given, settings
from hypothesis import strategies as st

from producers.workload import LogBuilder, minimal_example, published_key, signer
from pubsub_core.codec.hexjson import unhex_0x
from pubsub_core.codec.scale import encode_bytes, encode_compact, encode_u32
from pubsub_core.envelope import KeyRegistry, Topic
from pubsub_core.relay import BlockHeader, Genesis
from pubsub_core.simulator import simulate
from pubsub_core.stages import ConfigError, RelayView, ProtocolConfig, SubscriberStage
from pubsub_core.subscriber import (
    AdminOrigin,
    ClearPublisherCache,
    EnablePublisher,
    GovernanceCall,
    SetSubscriptions,
    SubscriberCallError,
    decode_subscriber_call,
    subscriber_of,
)
from pubsub_core.stages.ingest import is_blank
from pubsub_core.stages.records import decode_value
from pubsub_core.xcm import Publish, Xcm, encode_versioned_xcm
from pubsub_core.xcm.types import ClearOrigin
from tests.simulator.properties import check_outcomes

PUBLISHER, SUBSCRIBER, UNREGISTERED = 1000, 3000, 2999
COLLATORS = {p: signer(f"test/{p}") for p in (PUBLISHER, SUBSCRIBER, UNREGISTERED)}
ROOT = signer("test/root")


def builder() -> LogBuilder:
    log = LogBuilder("polkadot")
    log.genesis(KeyRegistry(para_keys={p: frozenset({s.public_key}) for p, s in COLLATORS.items()},
                            root_keys=frozenset({ROOT.public_key}), author_keys=frozenset({log.author.public_key})),
                Genesis())
    return log


def run(lines: list[str], config: ProtocolConfig | None = None) -> list[dict[str, Any]]:
    outputs = [json.loads(record.to_line()) for record in simulate(lines, config)]
    check_outcomes(lines, outputs)
    return outputs


def rejected(outputs: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """record -> (status, reason) of everything on ``rejected``."""
    return {str(o["value"]["record"]): (str(o["value"]["status"]), str(o["value"]["reason"]))
            for o in outputs if str(o["topic"]).endswith(".rejected")}


def relay_events(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o["value"]["event"] for o in outputs if o["key"] == "relay" and "event" in o["value"]]


def ingest_reasons(outputs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(status, reason) of every line refused when it arrived, sorted."""
    return sorted((str(o["value"]["status"]), str(o["value"]["reason"]))
                  for o in outputs if str(o["id"]).startswith("ingest/"))


def test_each_kind_of_bad_record_gets_its_typed_reason() -> None:
    log = builder()
    collator, key = COLLATORS[PUBLISHER], published_key(PUBLISHER, 0)
    good = log.publish(PUBLISHER, collator, [(key, b"ok", 0)])
    message = encode_versioned_xcm(Xcm((Publish(key, b"forged", 0),)))
    forged = bytearray(collator.sign(Topic("polkadot", "upward", str(PUBLISHER)), 10**6, message).encode())
    forged[-1] ^= 1
    log.hostile("upward", str(PUBLISHER), bytes(forged))
    log.hostile("upward", str(PUBLISHER), good.value)  # a replay at the next position
    log.hostile("upward", str(PUBLISHER), signer("stranger").sign(
        Topic("polkadot", "upward", str(PUBLISHER)), 1, encode_versioned_xcm(Xcm((ClearOrigin(),)))).encode())
    oversize = log.signed(collator, "upward", str(PUBLISHER),
                          b"\x05" + encode_compact(1) + b"\x34" + key + encode_bytes(bytes(1025)) + encode_u32(0))
    non_publish = log.signed(collator, "upward", str(PUBLISHER), encode_versioned_xcm(Xcm((ClearOrigin(),))))
    unregistered = log.publish(UNREGISTERED, COLLATORS[UNREGISTERED], [(key, b"x", 0)])
    log.lines += [
        '{"topic": "polkadot.upward", "key": "1000", "value": {',
        json.dumps({"topic": "polkadot.sideways", "key": "1000", "value": {}}),
        json.dumps({"topic": "polkadot.upward", "key": "1000", "value": {"stream": "upward", "origin": "1000",
                                                                         "position": 99, "value": "0xzz"}}),
        json.dumps({"topic": "polkadot.upward", "key": "1001", "value": good.to_json()}),
        json.dumps({"topic": "polkadot.upward", "key": "1000", "value": {**good.to_json(), "value": "0x00"}}),
        json.dumps({"topic": "polkadot.upward", "key": "1000", "value": good.to_json()}),
        "[1, 2, 3]",
    ]
    log.block()
    outputs = run(log.lines)
    got = rejected(outputs)
    assert got[oversize.record_id] == ("rejected", "Malformed")
    assert got[non_publish.record_id] == ("rejected", "BadFormat")
    assert good.record_id not in got and unregistered.record_id not in got
    assert ingest_reasons(outputs) == sorted([
        ("rejected", "BadSignature"), ("ignored", "Duplicate"), ("rejected", "NotMember"),
        ("rejected", "MalformedJson"), ("rejected", "UnknownTopic"), ("rejected", "MalformedRecord"),
        ("rejected", "KeyMismatch"), ("rejected", "Malformed"), ("ignored", "Duplicate"), ("rejected", "MalformedJson")])
    executed = [(e["para"], e["outcome"], e["error"]) for e in relay_events(outputs) if e["event"] == "MessageExecuted"]
    assert executed == [(PUBLISHER, "Complete", ""), (UNREGISTERED, "Incomplete", "NotRegistered")]


def test_a_block_waits_for_its_records_and_missing_ones_are_reported_at_the_end() -> None:
    log = builder()
    first = log.publish(PUBLISHER, COLLATORS[PUBLISHER], [(published_key(PUBLISHER, 0), b"a", 0)])
    log.block()
    second = log.publish(PUBLISHER, COLLATORS[PUBLISHER], [(published_key(PUBLISHER, 0), b"b", 0)])
    log.block()
    late = log.publish(PUBLISHER, COLLATORS[PUBLISHER], [(published_key(PUBLISHER, 0), b"c", 0)])
    genesis, block1, block2 = log.lines[0], log.lines[2], log.lines[4]
    # Blocks first: block 1 waits for upward/1000/0, block 2 for /1; the third record is never included.
    lines = [genesis, block1, block2, log.lines[1], log.lines[3], log.lines[5]]
    outputs = run(lines)
    assert [o["value"]["number"] for o in outputs if str(o["topic"]).endswith(".seals")] == [1, 2]
    assert rejected(outputs) == {late.record_id: ("rejected", "NeverIncluded")}
    assert first.record_id != second.record_id
    # Without the record a block needs, the block (and everything after it) never applies.
    outputs = run([genesis, block1, block2, log.lines[3]])
    assert rejected(outputs) == {"blocks/author/0": ("rejected", "MissingRecords"),
                                 "blocks/author/1": ("rejected", "MissingRecords"),
                                 second.record_id: ("rejected", "NeverIncluded")}


def test_blocks_that_do_not_extend_the_chain_or_are_not_signed_are_rejected() -> None:
    log = builder()
    log.block()
    bad = BlockHeader(5, bytes([5]) * 32, bytes([4]) * 32, 1 << 20, 0, ())
    out_of_order = log.signed(log.author, "blocks", "author", bad.encode())
    unsigned = log.signed(signer("not the author"), "blocks", "author", bad.encode())
    log.lines.append(log.lines[-2])  # the author's header again: a replayed seqno
    log.lines.append(log.lines[0])  # a second genesis
    log.block()
    outputs = run(log.lines)
    got = rejected(outputs)
    assert got[unsigned.record_id] == ("rejected", "NotMember")
    assert got[out_of_order.record_id] == ("ignored", "Duplicate")  # its replay; the first copy is below
    everything = sorted((str(o["value"]["status"]), str(o["value"]["reason"]))
                        for o in outputs if str(o["topic"]).endswith(".rejected"))
    assert everything == sorted([("rejected", "BlockOrderError"), ("rejected", "NotMember"),
                                 ("ignored", "Duplicate"), ("rejected", "GenesisTooLate")])


def test_an_envelope_refused_as_a_position_conflict_spends_its_seqno() -> None:
    """The two duplicate checks kept consistent: Stage R's record of seqnos received spends an
    authentic envelope's seqno even when it is refused as a PositionConflict, as admission's watermark spends a
    seqno refused after the duplicate check; so a copy of the refused envelope at a free position is an ignored
    Duplicate, not a record that waits to be included."""
    log = builder()
    collator, key = COLLATORS[PUBLISHER], published_key(PUBLISHER, 0)
    genuine = log.publish(PUBLISHER, collator, [(key, b"a", 0)])
    equivocation = collator.sign(Topic("polkadot", "upward", str(PUBLISHER)), 10,
                                 encode_versioned_xcm(Xcm((Publish(key, b"b", 0),)))).encode()
    log.line("polkadot.upward", str(PUBLISHER), {**genuine.to_json(), "value": "0x" + equivocation.hex()})
    log.hostile("upward", str(PUBLISHER), equivocation)  # the next, free position
    log.block()
    outputs = run(log.lines)
    assert ingest_reasons(outputs) == sorted([("rejected", "PositionConflict"), ("ignored", "Duplicate")])
    assert not [o for o in outputs if str(o["id"]).startswith("outcome/")]


def test_a_flooding_para_is_throttled_across_blocks_and_a_quiet_one_is_not() -> None:
    """Backpressure through the block machine: para 1000 sends three records a block against a quota of two,
    is throttled to one a block once its penalty reaches the threshold, and has its quota back after a quiet
    stretch; para 2999 (whose publishes fail in execution, which is not an admission rejection) is never
    refused."""
    config = ProtocolConfig.from_json({"admission": {
        "max_messages_per_block": 2, "throttled_messages_per_block": 1, "penalty_per_rejection": 15,
        "penalty_threshold": 20, "max_penalty": 30, "penalty_decay_per_block": 1}})
    log = builder()
    key = published_key(PUBLISHER, 0)
    sent: dict[str, int] = {}
    for number, count in enumerate([3, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2], start=1):
        for n in range(count):
            record = log.publish(PUBLISHER, COLLATORS[PUBLISHER], [(key, bytes([number, n]), 0)])
            sent[record.record_id] = number
        log.publish(UNREGISTERED, COLLATORS[UNREGISTERED], [(key, b"x", 0)])
        log.block()
    refused: dict[int, list[str]] = {}
    for record_id, (status, reason) in rejected(run(log.lines, config)).items():
        assert record_id in sent and status == "rejected", (record_id, reason)
        refused.setdefault(sent[record_id], []).append(reason)
    # Block 1: the third record is RateLimited (15 points). Block 2: 14 points, so again RateLimited (29).
    # Block 3: 28 points, throttled: the second and third are Throttled (capped at 30). Ten quiet blocks later
    # (block 14: 19 points) the full quota is back.
    assert refused == {1: ["RateLimited"], 2: ["RateLimited"], 3: ["Throttled", "Throttled"]}


def subscriber_calls_log() -> tuple[LogBuilder, list[str]]:
    """Subscriber calls of every kind over three blocks; returns the log and the ids of the undecodable ones."""
    log = builder()
    sub, origin = COLLATORS[SUBSCRIBER], f"para:{SUBSCRIBER}"
    key = published_key(PUBLISHER, 0)
    log.signed(sub, "extrinsics", origin, SetSubscriptions(((PUBLISHER, (key,)),)).encode())
    log.signed(ROOT, "extrinsics", "root", SetSubscriptions(((PUBLISHER, (key,)),)).encode())
    malformed = [log.signed(sub, "extrinsics", origin, data).record_id for data in (
        b"\x02\x07",  # no such call
        EnablePublisher(PUBLISHER).encode()[:-1],  # truncated
        b"\x02\x03" + encode_u32(SUBSCRIBER) + SetSubscriptions(()).encode(),  # governance sets no subscriptions
    )]
    malformed.append(log.signed(ROOT, "extrinsics", "root", GovernanceCall(SUBSCRIBER, EnablePublisher(PUBLISHER)).encode() + b"\x00").record_id)
    log.publish(PUBLISHER, COLLATORS[PUBLISHER], [(key, b"v", 0)])
    log.block()
    log.signed(sub, "extrinsics", origin, EnablePublisher(PUBLISHER).encode())
    log.signed(sub, "extrinsics", origin, ClearPublisherCache(PUBLISHER).encode())
    log.block()
    for call in (EnablePublisher(PUBLISHER), ClearPublisherCache(PUBLISHER), ClearPublisherCache(PUBLISHER)):
        log.signed(ROOT, "extrinsics", "root", GovernanceCall(SUBSCRIBER, call).encode())
    log.signed(sub, "extrinsics", origin, GovernanceCall(SUBSCRIBER, ClearPublisherCache(PUBLISHER)).encode())
    log.block()
    return log, malformed


@pytest.mark.parametrize("admin_origin", list(AdminOrigin))
def test_subscriber_calls_that_cannot_apply_are_call_failed_events(admin_origin: AdminOrigin) -> None:
    """A subscriber call that does not decode is a Malformed record at the relay's admission; one that
    decodes but cannot apply (origin, state) is a CallFailed event. enable_publisher and
    clear_publisher_cache come from governance (root, call 3 naming the subscriber); from the subscriber's own
    origin only under admin_origin=governance_or_subscriber."""
    log, malformed = subscriber_calls_log()
    config = ProtocolConfig.from_json({"subscriber": {"admin_origin": admin_origin.value}})
    assert config.subscriber.admin_origin is admin_origin
    outputs = run(log.lines, config)
    assert rejected(outputs) == {record: ("rejected", "Malformed") for record in malformed}
    failed = [(o["key"], o["value"]["block"], o["value"]["reason"])
              for o in outputs if o["value"].get("kind") == "CallFailed"]
    by_subscriber = ([("3000", 2, "PublisherNotDisabledError")] if admin_origin is AdminOrigin.GOVERNANCE_OR_SUBSCRIBER
                     else [("3000", 2, "BadOrigin"), ("3000", 2, "BadOrigin")])
    assert failed == [("relay", 1, "BadOrigin"),  # root cannot set a subscriber's subscriptions
                      *by_subscriber,
                      ("relay", 3, "BadOrigin"),  # a para cannot make a governance call
                      ("3000", 3, "PublisherNotDisabledError"), ("3000", 3, "NoCachedNodesError")]
    cleared = [o["value"]["relay_block_number"] for o in outputs
               if o["key"] == "3000" and o["value"].get("kind") == "PublisherCacheCleared"]
    assert cleared == ([2, 3] if admin_origin is AdminOrigin.GOVERNANCE_OR_SUBSCRIBER else [3])
    assert [unhex_0x(o["value"]["value"]) for o in outputs if str(o["topic"]).endswith(".updates")][:1] == [b"v"]


def test_governance_calls_decode_and_address_their_subscriber() -> None:
    for inner in (EnablePublisher(PUBLISHER), ClearPublisherCache(PUBLISHER)):
        call = GovernanceCall(SUBSCRIBER, inner)
        assert decode_subscriber_call(call.encode()) == call
        assert subscriber_of("root", call, call.encode()) == SUBSCRIBER
        for origin in (f"para:{SUBSCRIBER}", "para:1"):
            with pytest.raises(SubscriberCallError) as refused:
                subscriber_of(origin, call, call.encode())
            assert refused.value.reason == "BadOrigin"
    assert subscriber_of(f"para:{SUBSCRIBER}", EnablePublisher(1), b"") == SUBSCRIBER
    with pytest.raises(SubscriberCallError) as refused:
        subscriber_of("root", EnablePublisher(1), b"")
    assert refused.value.reason == "BadOrigin"


@settings(max_examples=40)
@given(st.lists(st.tuples(st.integers(0, 7), st.text(max_size=40) | st.binary(max_size=40).map(lambda b: b.hex())),
                max_size=6))
def test_garbage_lines_never_stop_a_run_nor_change_the_blocks(garbage: list[tuple[int, str]]) -> None:
    lines = minimal_example()
    baseline = [o for o in run(lines) if not str(o["id"]).startswith("ingest/")]
    mixed = list(lines)
    for where, text in garbage:
        mixed.insert(min(where, len(mixed)), text.replace("\n", " "))
    outputs = run(mixed)
    assert [o for o in outputs if not str(o["id"]).startswith("ingest/")] == baseline
    assert sum(str(o["id"]).startswith("ingest/") for o in outputs) == sum(not is_blank(t) for _, t in garbage)


def test_the_stage_seam_serializes() -> None:
    """The relay views written with relay_proofs, read back from JSON into fresh subscriber stages, give the
    same subscriber outputs as the one-process run; without the views the outputs are the same as without
    the option."""
    lines = example_lines()
    with_views = list(simulate(lines, relay_proofs=True))
    views = [o for o in with_views if o.topic == "polkadot.relay-proofs"]
    others = [o.to_line() for o in with_views if o.topic != "polkadot.relay-proofs"]
    assert others == [o.to_line() for o in simulate(lines)] and views
    stages: dict[int, SubscriberStage] = {}
    replayed: list[str] = []
    for record in views:
        view = RelayView.from_json(json.loads(record.to_line())["value"])
        assert view.to_json() == record.value
        stage = stages.setdefault(view.subscriber, SubscriberStage("polkadot", view.subscriber, ProtocolConfig().subscriber))
        replayed += [o.to_line() for o in stage.step(view)]
    # In the one-process run, a view is followed by its subscriber's outputs, ending with the PoV record.
    direct: list[str] = []
    after_view = False
    for record in with_views:
        if record.topic == "polkadot.relay-proofs":
            after_view = True
        elif after_view:
            direct.append(record.to_line())
            after_view = record.topic != "polkadot.pov"
    assert replayed == direct


def example_lines() -> list[str]:
    return (Path(__file__).resolve().parents[2] / "examples" / "small.jsonl").read_text().splitlines()


def test_config_sections_apply_and_unknown_keys_are_refused() -> None:
    log = builder()
    for value in (b"a", b"b"):
        log.publish(PUBLISHER, COLLATORS[PUBLISHER], [(published_key(PUBLISHER, 0), value, 0)])
    log.block()
    config = ProtocolConfig.from_json({"admission": {"max_messages_per_block": 1}})
    assert sorted(rejected(run(log.lines, config)).values()) == [("rejected", "RateLimited")]
    bad: object
    for bad in ({"admission": {"nope": 1}}, {"subscriber": {"db_read": 5}}, {"admission": {"realm": "x"}}, {"subscriber": {"pov_percent": 101}},
                {"subscriber": {"admin_origin": "anyone"}}, {"subscriber": {"admin_origin": 1}}, {"colour": "blue"}, []):
        try:
            ProtocolConfig.from_json(bad)
        except ConfigError as exc:
            assert str(exc)
        else:
            raise AssertionError(f"{bad} was accepted")


def test_decode_value_checks_the_key_against_the_record() -> None:
    record = {"stream": "upward", "origin": "1000", "position": 0, "value": "0x00"}
    assert decode_value("polkadot", "upward", "1000", record).value == b"\x00"  # type: ignore[union-attr]


def test_realms_run_side_by_side_without_mixing() -> None:
    """Two relay chains in one log: each realm's outputs are those of its own log alone."""
    polkadot, kusama = minimal_example("polkadot"), minimal_example("kusama")
    alone = [o.to_line() for o in simulate(polkadot)] + [o.to_line() for o in simulate(kusama)]
    mixed = [line for pair in zip(polkadot, kusama) for line in pair]
    together = [o.to_line() for o in simulate(mixed)]
    assert sorted(together) == sorted(alone)
    for realm in ("polkadot", "kusama"):
        mine = [line for line in together if json.loads(line)["topic"].startswith(realm + ".")]
        assert mine == [line for line in alone if json.loads(line)["topic"].startswith(realm + ".")]
    # Polkadot's lines replayed into kusama: its headers and records are refused when they arrive (the realm is
    # part of what is signed), so they take no position or height of kusama's.
    crossed = [line.replace('"topic":"polkadot.', '"topic":"kusama.') for line in polkadot]
    reasons = sorted(str(o.value["reason"]) for o in simulate(kusama + crossed[1:]) if o.topic == "kusama.rejected")
    assert reasons == ["NotMember"] * 6
