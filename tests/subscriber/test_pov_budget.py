"""The pub-sub spec, Requirement: PoV Budget Constraint."""

from __future__ import annotations

from typing import Any

import pytest

from pubsub_core.broadcaster import BroadcasterConfig
from pubsub_core.codec.types import U32_MAX, PublishedEntry, SubscribedKey
from pubsub_core.hashing import blake2_256
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

from tests.support.adversarial import AdversaryMode, corrupt
from tests.subscriber.harness import Harness, entry, key, subs_of

MB = 1_000_000


def exact_budget_config(**overrides: Any) -> SubscriberConfig:
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


def test_light_block_with_large_pub_sub_budget() -> None:
    budget = pubsub_budget(5 * MB, [], [100_000] * 5, SubscriberConfig())
    assert budget.allowed_pov_size == 4_250_000
    assert budget.pubsub == 3_750_000


def test_heavy_block_with_small_pub_sub_budget() -> None:
    budget = pubsub_budget(5 * MB, [500_000] * 4, [500_000] * 4, SubscriberConfig())
    assert budget.dmq_bytes + budget.hrmp_bytes == 4 * MB
    assert budget.pubsub == 250_000


def test_full_block_with_no_pub_sub_budget() -> None:
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


def shuffled(paras: list[int], relay_block_hash: bytes) -> list[int]:
    """The documented order of non-system paras, computed here independently of the engine's ordering module."""
    return sorted(paras, key=lambda para: blake2_256(relay_block_hash + para.to_bytes(4, "little")))


def test_cursor_resumption_with_wrap_around() -> None:
    """The spec's "Cursor resumption with wrap-around" with non-system publishers A, B, C, so each block orders them by
    its own shuffle. The cursor (B, K2) is left by a real Incomplete block; the next block (every value changed) starts
    there, goes on in its own order and wraps around to the items before the cursor."""
    config = exact_budget_config()
    h = Harness(config=config)
    k1, k2, k3 = (bytes([i]) * 32 for i in (1, 2, 3))
    a, b, c = 3000, 3001, 3002
    subscribed = {a: [k1, k2], b: [k1, k2, k3], c: [k1]}
    names = {(a, k1): b"A1", (a, k2): b"A2", (b, k1): b"B1", (b, k2): b"B2", (b, k3): b"B3", (c, k1): b"C1"}

    def publish(version: bytes) -> None:
        for para in subscribed:
            h.publish(para, {k: entry(names[(para, k)] + version) for k in subscribed[para]})

    publish(b"")
    subs = subs_of(subscribed)
    first_order = shuffled([a, b, c], h.context().relay_block_hash)
    assert first_order != sorted(first_order), "this block's shuffle is not ParaId order"
    predictions = ((n, h.predict(subs, h.context(n)).pov) for n in range(500, 5_000, 10))
    budget = next(n for n, pov in predictions if (pov.cursor_publisher, pov.cursor_key) == (b, k2))
    first = h.block(subs, max_pov=budget)
    assert first.result is ProcessingResult.INCOMPLETE
    assert processing_cursor(h.txn()) == (b, SubscribedKey(k2))
    items = [(para, k) for para in first_order for k in subscribed[para]]
    assert [u.value for u in first.updates] == [names[i] for i in items[: items.index((b, k2))]]
    publish(b"'")
    second_order = shuffled([a, b, c], h.context().relay_block_hash)
    assert second_order != first_order, "the order changes from block to block"
    items = [(para, k) for para in second_order for k in subscribed[para]]
    start = items.index((b, k2))
    outcome = h.block(subs)
    assert [u.value for u in outcome.updates] == [names[i] + b"'" for i in items[start:] + items[:start]]
    assert outcome.result is ProcessingResult.COMPLETE
    assert processing_cursor(h.txn()) is None


def test_per_read_reserve_derives_from_the_relay_value_limit() -> None:
    """The reserve checked before each read is one read of the largest node or value the relay
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
    """Incomplete is valid only when one more read (db_read + the largest node or value) cannot be paid. The budget
    and the reserve are computed here from the block's inputs, not taken from the engine's record."""
    config = exact_budget_config()
    h = Harness(config=config)
    keys = [key(f"k{i}") for i in range(40)]
    h.publish(1000, {k: entry(k * 10) for k in keys})
    max_pov = 9_000
    outcome = h.block(subs_of({1000: keys}), max_pov=max_pov)
    assert outcome.result is ProcessingResult.INCOMPLETE
    budget = max_pov * 100 // 100  # pov_percent 100, no downward or horizontal messages
    largest_value_node = len(PublishedEntry(bytes(BroadcasterConfig().max_value_length), 1, 1).encode())
    reserve = max(750, largest_value_node)
    proof = h.proofs[-1]
    pov = outcome.pov
    assert pov.budget.pubsub == budget and pov.proof_bytes == proof.size
    used = proof.size + pov.cache_read_bytes + pov.state_read_bytes
    assert used <= budget < used + reserve, "stopped only when one more largest read could not be paid"
    reads = len(proof.nodes) + pov.cache_hits
    assert pov.consumed_ref_time >= reads * 25_000_000 and pov.consumed_ref_time + 25_000_000 <= config.ref_time_limit
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



def state_of(h: Harness) -> dict[str, dict[bytes, bytes]]:
    """Every namespace of the subscriber's committed state."""
    return {namespace: h.backend.scan(namespace) for namespace in h.backend.namespaces()}


@pytest.mark.parametrize("preset", [False, True], ids=["no-cursor", "cursor-from-an-incomplete-block"])
def test_the_smallest_budgets_leave_the_cursor_where_the_next_block_resumes(preset: bool) -> None:
    """Budgets 0, 1 and one read's reserve minus one cannot pay the block's first read (its own cursor): the block
    is Incomplete, reads and writes nothing, and the stored cursor stays what it was: the (publisher, key) an
    earlier block did not process, or none. With exactly one read's reserve the first read is paid: a stored
    cursor (36 bytes) leaves less than a reserve, so the block stops before its work items and keeps it; without
    one (absent entries cost no proof bytes) the block reaches its first work item and stores it. Either way the
    next block resumes exactly there (docs/decisions.md, "Subscriber cursor at the smallest budgets")."""
    config = exact_budget_config(messages_collection_size_limit=10 * MB)  # the budget is the PoV, byte for byte
    reserve = config.db_read.proof_size + max(config.max_cached_node_size, config.max_value_node_size)
    assert reserve == config.min_step.proof_size
    h = Harness(config=config)
    keys = sorted(key(f"k{i}") for i in range(12))
    h.publish(1000, {k: entry(k * 4) for k in keys})
    subs = subs_of({1000: keys})
    stored: bytes | None = None
    if preset:
        predictions = ((n, h.predict(subs, h.context(n)).pov) for n in range(reserve, 20_000, 16))
        cut_at = next(n for n, pov in predictions if pov.cursor_key == keys[5])
        cut = h.block(subs, max_pov=cut_at)
        assert cut.result is ProcessingResult.INCOMPLETE and len(cut.updates) == 5
        stored = keys[5]
    before = state_of(h)
    for budget in (0, 1, reserve - 1):
        outcome = h.block(subs, max_pov=budget)
        assert outcome.pov.budget.pubsub == budget
        assert outcome.result is ProcessingResult.INCOMPLETE, budget
        assert outcome.updates == () and outcome.events == () and h.proofs[-1].nodes == (), budget
        assert (outcome.pov.consumed_proof_size, outcome.pov.consumed_ref_time) == (0, 0), budget
        assert state_of(h) == before, f"budget {budget} changed the subscriber state"
        # The cursor was not read, so the record cannot name it: null, and the stored one is untouched.
        assert (outcome.pov.cursor_publisher, outcome.pov.cursor_key) == (None, None), budget
        assert processing_cursor(h.txn()) == (None if stored is None else (1000, SubscribedKey(stored))), budget
    one_read = h.block(subs, max_pov=reserve)
    assert one_read.result is ProcessingResult.INCOMPLETE and one_read.updates == ()
    resume_at = keys[0] if stored is None else stored
    assert processing_cursor(h.txn()) == (1000, SubscribedKey(resume_at))
    assert (one_read.pov.cursor_publisher, one_read.pov.cursor_key) == (1000, resume_at)
    resumed = h.block(subs)
    assert resumed.result is ProcessingResult.COMPLETE
    assert [u.key for u in resumed.updates] == keys[keys.index(resume_at):]
