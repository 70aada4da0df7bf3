"""Seed 002, Requirement: PoV Budget Constraint."""

from __future__ import annotations

import pytest

from pubsub_core.broadcaster import BroadcasterConfig
from pubsub_core.codec.scale import encode_u32
from pubsub_core.codec.types import U32_MAX, PublishedEntry
from pubsub_core.subscriber import (
    CheatingCollatorError,
    CheatingReason,
    ProcessingResult,
    SubscriberConfig,
    Weight,
    WeightMeter,
    processing_cursor,
    pubsub_budget,
)
from pubsub_core.subscriber import storage as st
from pubsub_core.subscriber.adversarial import AdversaryMode, corrupt

from tests.subscriber.harness import Harness, entry, key, subs_of

MB = 1_000_000


def exact_budget_config(**overrides: int) -> SubscriberConfig:
    """pov_percent=100, so the pub-sub budget equals max_pov when no messages are pending."""
    return SubscriberConfig(pov_percent=100, **overrides)


def test_budget_calculation() -> None:
    config = SubscriberConfig()
    budget = pubsub_budget(1 * MB, [100_000], [200_000], config)
    assert budget.allowed_pov_size == 850_000
    assert (budget.dmq_taken, budget.dmq_bytes, budget.hrmp_taken, budget.hrmp_bytes) == (1, 100_000, 1, 200_000)
    assert budget.pubsub == 550_000 and budget.floor == 0
    # A DMQ message larger than the collection limit is left for a later block (into_abridged stops there).
    assert pubsub_budget(1 * MB, [500_000, 1], [], config).dmq_taken == 0
    # The floor is configurable; by default there is none.
    floored = pubsub_budget(1 * MB, [], [850_000], SubscriberConfig(min_pubsub_budget=64_000))
    assert floored.remaining == 0 and floored.pubsub == 64_000


def test_light_block_with_large_pubsub_budget() -> None:
    budget = pubsub_budget(5 * MB, [], [100_000] * 5, SubscriberConfig())
    assert budget.allowed_pov_size == 4_250_000
    assert budget.pubsub == 3_750_000


def test_heavy_block_with_small_pubsub_budget() -> None:
    budget = pubsub_budget(5 * MB, [500_000] * 4, [500_000] * 4, SubscriberConfig())
    assert budget.dmq_bytes + budget.hrmp_bytes == 4 * MB
    assert budget.pubsub == 250_000


def test_full_block_with_no_pubsub_budget() -> None:
    h = Harness()
    h.publish(1000, {key("A"): entry(b"a")})
    subs = subs_of({1000: [key("A")]})
    outcome = h.block(subs, max_pov=5 * MB, dmq=[2_125_000], hrmp=[2_125_000])
    assert outcome.pov.budget.pubsub == 0
    assert outcome.result is ProcessingResult.INCOMPLETE
    assert outcome.updates == () and h.proofs[-1].nodes == ()
    retry = h.block(subs)
    assert retry.result is ProcessingResult.COMPLETE
    assert [u.value for u in retry.updates] == [b"a"]


def test_weightmeter_tracks_ref_time_and_proof_size() -> None:
    meter = WeightMeter(Weight(100, 1_000))
    read = Weight(25, 0).saturating_add(Weight(0, 300))
    assert meter.can_consume(read)
    meter.consume(read)
    assert meter.remaining() == Weight(75, 700)
    assert not meter.can_consume(Weight(0, 701)) and not meter.can_consume(Weight(76, 0))
    h = Harness()
    h.publish(1000, {key(f"k{i}"): entry(b"v" * 50) for i in range(50)})
    subs = subs_of({1000: [key(f"k{i}") for i in range(10)]})
    ctx = h.context()
    predicted = h.predict(subs, ctx)
    outcome = h.block(subs)
    # Prune and Verify consume exactly the same weight.
    assert predicted.pov == outcome.pov
    proof = h.proofs[-1]
    assert outcome.pov.proof_bytes == proof.size
    assert outcome.pov.consumed_proof_size == proof.size + outcome.pov.cache_read_bytes + outcome.pov.state_read_bytes
    assert outcome.pov.consumed_ref_time % h.config.db_read.ref_time == 0
    assert outcome.pov.consumed_ref_time >= len(proof.nodes) * h.config.db_read.ref_time


def test_weight_exhausted_mid_processing() -> None:
    h = Harness(config=exact_budget_config())
    keys = sorted(key(f"k{i}") for i in range(40))
    h.publish(1000, {k: entry(k * 10) for k in keys})
    subs = subs_of({1000: keys})
    outcome = h.block(subs, max_pov=12_000)
    assert outcome.result is ProcessingResult.INCOMPLETE
    delivered = [u.key for u in outcome.updates]
    assert 0 < len(delivered) < len(keys) and delivered == keys[: len(delivered)]
    cursor = processing_cursor(h.txn())
    assert cursor is not None and cursor == (1000, type(cursor[1])(keys[len(delivered)]))
    assert (outcome.pov.cursor_publisher, outcome.pov.cursor_key) == (1000, keys[len(delivered)])
    assert h.proofs[-1].size <= 12_000 and outcome.pov.consumed_proof_size <= 12_000
    # The remaining nodes were left out: the later keys' leaves are not in the proof.
    later = set(h.relay.child(1000).prove(keys[len(delivered) + 1 :]))
    full_first = set(h.relay.child(1000).prove(keys[: len(delivered)]))
    assert not (later - full_first) & set(h.proofs[-1].nodes)


def test_cursor_resumption_with_wrap_around() -> None:
    h = Harness()
    k1, k2, k3 = (bytes([i]) * 32 for i in (1, 2, 3))
    a, b, c = 1000, 1001, 1002
    h.publish(a, {k1: entry(b"A1"), k2: entry(b"A2")})
    h.publish(b, {k1: entry(b"B1"), k2: entry(b"B2"), k3: entry(b"B3")})
    h.publish(c, {k1: entry(b"C1")})
    txn = h.txn()
    txn.set_value(st.CURSOR, encode_u32(b) + k2)
    txn.commit()
    outcome = h.block(subs_of({a: [k1, k2], b: [k1, k2, k3], c: [k1]}))
    assert [u.value for u in outcome.updates] == [b"B2", b"B3", b"C1", b"A1", b"A2", b"B1"]
    assert outcome.result is ProcessingResult.COMPLETE
    assert processing_cursor(h.txn()) is None


def test_per_read_reserve_derives_from_the_relay_value_limit() -> None:
    """Issue 13, item 8: the reserve checked before each read is one read of the largest node or value the relay
    can hold, derived from its MaxValueLength, so no budget is left unusable for a value that cannot exist."""
    relay_limit = BroadcasterConfig().max_value_length
    config = exact_budget_config()
    assert config.max_value_length == relay_limit
    assert config.max_value_node_size == len(PublishedEntry(bytes(relay_limit), U32_MAX, U32_MAX).encode())
    assert config.min_step.proof_size == max(config.max_cached_node_size, config.max_value_node_size) < 2058
    assert exact_budget_config(max_value_length=2048).max_value_node_size == 2058
    keys = sorted(key(f"k{i}") for i in range(6))
    first = Harness(config=config)
    first.publish(1000, {k: entry(k) for k in keys})
    needed = first.block(subs_of({1000: keys})).pov.consumed_proof_size
    # A budget with exactly the derived reserve to spare completes; the old 2058-byte reserve would stop short.
    for value_limit, result in ((relay_limit, ProcessingResult.COMPLETE), (2048, ProcessingResult.INCOMPLETE)):
        h = Harness(config=exact_budget_config(max_value_length=value_limit))
        h.publish(1000, {k: entry(k) for k in keys})
        assert h.block(subs_of({1000: keys}), max_pov=needed + config.min_step.proof_size).result is result


def test_proof_validation_all_nodes_accessed() -> None:
    h = Harness()
    h.publish(1000, {key("A"): entry(b"a")})
    before = h.backend.scan("subscriber.roots")
    with pytest.raises(CheatingCollatorError) as caught:
        h.block(subs_of({1000: [key("A")]}), tamper=lambda p: corrupt(AdversaryMode.EXTRANEOUS, p) or p)
    assert caught.value.reason is CheatingReason.EXTRANEOUS_NODE and caught.value.node_hashes
    assert h.backend.scan("subscriber.roots") == before


def test_proof_validation_incomplete_at_weight_limit() -> None:
    config = exact_budget_config()
    h = Harness(config=config)
    keys = [key(f"k{i}") for i in range(40)]
    h.publish(1000, {k: entry(k * 10) for k in keys})
    outcome = h.block(subs_of({1000: keys}), max_pov=9_000)
    assert outcome.result is ProcessingResult.INCOMPLETE
    meter = WeightMeter(config.budget_weight(outcome.pov.budget.pubsub))
    meter.consume(Weight(outcome.pov.consumed_ref_time, outcome.pov.consumed_proof_size))
    assert not meter.can_consume(config.min_step), "Incomplete is accepted only at the budget limit"
    assert processing_cursor(h.txn()) is not None


def test_proof_validation_incomplete_below_weight_limit() -> None:
    h = Harness(config=exact_budget_config())
    keys = [key(f"k{i}") for i in range(40)]
    h.publish(1000, {k: entry(k * 10) for k in keys})
    with pytest.raises(CheatingCollatorError) as caught:
        h.block(subs_of({1000: keys}), max_pov=9_000, tamper=lambda p: corrupt(AdversaryMode.OMIT_BELOW_LIMIT, p) or p)
    assert caught.value.reason is CheatingReason.MISSING_NODE_BELOW_LIMIT
    assert caught.value.node_hashes and caught.value.publisher == 1000
    assert processing_cursor(h.txn()) is None, "a rejected block changes nothing"
