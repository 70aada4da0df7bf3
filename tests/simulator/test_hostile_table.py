"""Rows of docs/reliability.md's hostile input table that need the whole protocol, through
the simulator: a subscription to 10,000 keys, a publisher flooding at ten times the rate limit, a subscriber call
signed by another para, and blocks whose manifests name records that never arrive (one at position 2**64-1)."""

from __future__ import annotations

from pubsub_core.codec.scale import encode_u64
from pubsub_core.envelope import Topic
from pubsub_core.hashing import blake2_256
from pubsub_core.relay import BlockHeader
from pubsub_core.stages import ProtocolConfig
from pubsub_core.subscriber import EnablePublisher, GovernanceCall, SetSubscriptions
from producers.workload import published_key
from tests.simulator.test_bad_input import COLLATORS, PUBLISHER, SUBSCRIBER, UNREGISTERED, builder, rejected, run

KEYS = tuple(sorted(blake2_256(b"key %d" % i) for i in range(10_000)))


def test_a_subscription_to_ten_thousand_keys_is_refused_or_bounded() -> None:
    """10,000 keys of one publisher do not decode (1,024 keys per publisher): ``Malformed`` at admission.
    Spread over 100 publishers (100 each) the call applies, and the next blocks stay within the PoV budget."""
    log = builder()
    sub, origin = COLLATORS[SUBSCRIBER], f"para:{SUBSCRIBER}"
    one = log.signed(sub, "extrinsics", origin, SetSubscriptions(((PUBLISHER, KEYS),)).encode())
    spread = SetSubscriptions(tuple((1000 + i, KEYS[i * 100:(i + 1) * 100]) for i in range(100)))
    log.signed(sub, "extrinsics", origin, spread.encode())
    log.block()
    log.publish(PUBLISHER, COLLATORS[PUBLISHER], [(k, b"v" * 40, 0) for k in KEYS[:16]])
    log.block()
    log.block()
    outputs = run(log.lines)
    assert rejected(outputs) == {one.record_id: ("rejected", "Malformed")}
    assert not [o for o in outputs if o["value"].get("kind") == "CallFailed"]
    povs = [o["value"] for o in outputs if str(o["topic"]).endswith(".pov")]
    assert len(povs) == 3
    assert all(int(p["proof_bytes"]) <= int(p["budget"]["remaining"]) for p in povs)
    updates = [o for o in outputs if str(o["topic"]).endswith(".updates")]
    assert len(updates) == 16


def test_a_publisher_flooding_at_ten_times_the_rate_limit_is_capped_every_block() -> None:
    """Para 1000 sends 20 messages a block against a quota of 2: at most 2 a block apply, every other one is
    ``RateLimited`` or ``Throttled``; para 2999's one message a block is never refused."""
    config = ProtocolConfig.from_json({"admission": {"max_messages_per_block": 2}})
    log = builder()
    key = published_key(PUBLISHER, 0)
    flood: dict[str, int] = {}
    quiet = []
    for number in range(1, 4):
        for n in range(20):
            flood[log.publish(PUBLISHER, COLLATORS[PUBLISHER], [(key, bytes([number, n]), 0)]).record_id] = number
        quiet.append(log.publish(UNREGISTERED, COLLATORS[UNREGISTERED], [(key, b"x", 0)]).record_id)
        log.block()
    refused = rejected(run(log.lines, config))
    assert not set(quiet) & set(refused)
    assert set(refused) <= set(flood)
    assert {reason for _, reason in refused.values()} <= {"RateLimited", "Throttled"}
    for number in range(1, 4):
        sent = [r for r, n in flood.items() if n == number]
        assert len(sent) - sum(r in refused for r in sent) <= 2


def test_a_subscriber_call_from_another_para() -> None:
    """Para 2999's collator signing a call for para 3000's origin is ``NotMember`` on arrival; on its own origin
    it can only address itself, and a governance call naming 3000 from a para is a ``BadOrigin`` CallFailed."""
    log = builder()
    other = COLLATORS[UNREGISTERED]
    call = SetSubscriptions(((PUBLISHER, (published_key(PUBLISHER, 0),)),)).encode()
    envelope = other.sign(Topic("polkadot", "extrinsics", f"para:{SUBSCRIBER}"), 1, call).encode()
    forged = log.hostile("extrinsics", f"para:{SUBSCRIBER}", envelope)  # not in the block's manifest
    log.signed(other, "extrinsics", f"para:{UNREGISTERED}", GovernanceCall(SUBSCRIBER, EnablePublisher(1)).encode())
    log.block()
    outputs = run(log.lines)
    assert forged.record_id not in rejected(outputs)  # refused on arrival, it never took the position
    arrivals = [(o["value"]["status"], o["value"]["reason"]) for o in outputs
                if str(o["id"]).startswith("ingest/")]
    assert arrivals == [("rejected", "NotMember")]
    failed = [(o["key"], o["value"]["reason"]) for o in outputs
              if o["value"].get("kind") == "CallFailed"]
    assert failed == [("relay", "BadOrigin")]
    assert not [o for o in outputs if o["key"] == str(SUBSCRIBER) and str(o["topic"]).endswith(".events")]


def test_a_manifest_naming_records_that_never_arrive_even_at_position_two_to_the_64() -> None:
    """A block naming position 2**64-1 of an origin (a signed header from the author) waits, costs nothing, and
    ends ``MissingRecords`` at the end of the input, as a block naming one missing record does."""
    log = builder()
    log.block()
    header = BlockHeader(2, log.block_hash(2), log.block_hash(1), 1 << 20, 0, (("upward", str(PUBLISHER), 2**64 - 1),))
    assert header.encode().endswith(encode_u64(2**64 - 1))
    hostile = log.signed(log.author, "blocks", "author", header.encode())
    log.publish(PUBLISHER, COLLATORS[PUBLISHER], [(published_key(PUBLISHER, 0), b"v", 0)])
    outputs = run(log.lines)
    got = rejected(outputs)
    assert got[hostile.record_id] == ("rejected", "MissingRecords")
    assert [o["value"]["number"] for o in outputs if str(o["topic"]).endswith(".seals")] == [1]
