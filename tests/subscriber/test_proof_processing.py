"""The pub-sub spec, Requirement: Proof Processing (the depth case is in test_trie_depth_limit)."""

from __future__ import annotations

from pubsub_core.hashing import blake2_256
from pubsub_core.subscriber import ProcessingResult, SubscriberConfig, cached_nodes

from tests.subscriber.harness import Harness, entry, key, path_nodes, subs_of


def test_unchanged_child_tries_skipped() -> None:
    h = Harness()
    h.publish(1000, {key(f"k{i}"): entry(b"v%d" % i) for i in range(50)})
    h.publish(2000, {key("X"): entry(b"x")})
    subs = subs_of({1000: [key(f"k{i}") for i in range(10)], 2000: [key("X")]})
    h.block(subs)
    h.publish(2000, {key("X"): entry(b"x2")})
    outcome = h.block(subs)
    assert outcome.pov.publishers_unchanged == 1
    assert outcome.pov.cache_hits == 0
    proof = set(h.proofs[-1].nodes)
    assert not proof & set(h.relay.child(1000).prove([key(f"k{i}") for i in range(50)]))
    assert [u.publisher for u in outcome.updates] == [2000]


def test_cached_nodes_read_from_storage() -> None:
    h = Harness()
    h.publish(1000, {key(n): entry(n.encode() * 40) for n in "ABCDEFGHIJ"})
    h.block(subs_of({1000: [key("A")]}))
    cached = cached_nodes(h.txn(), 1000)
    # B is added while the root is unchanged: its walk starts at the cached root node.
    outcome = h.block(subs_of({1000: [key("A"), key("B")]}))
    assert outcome.pov.cache_hits >= 1
    assert outcome.pov.cache_read_bytes == sum(
        len(cached[h_]) for h_ in cached if h_ in path_nodes(h, 1000, [key("B")])
    )
    proof = {blake2_256(n) for n in h.proofs[-1].nodes}
    assert not proof & set(cached), "cached nodes are left out of the proof"
    assert proof & set(path_nodes(h, 1000, [key("B")])), "only the new nodes come from the proof"


def test_unsubscribed_key_paths_not_accessed() -> None:
    h = Harness()
    h.publish(1000, {key(n): entry(n.encode() * 40) for n in "ABCDE"})
    h.block(subs_of({1000: [key("A"), key("B")]}))
    proof = set(h.proofs[-1].nodes)
    assert proof <= set(h.full_proof({1000: [key("A"), key("B")]}))
    only_cde = set(h.relay.child(1000).prove([key("C"), key("D"), key("E")])) - set(
        h.relay.child(1000).prove([key("A"), key("B")])
    )
    assert only_cde and not proof & only_cde


def test_budget_limit_enforced_with_combined_tracking() -> None:
    """The spec's "Budget limit enforced with combined tracking": proof and cache reads share one budget. Half the keys
    are cached by a first block; adding the other half reads their shared branches from the cache and their leaves and
    values from the proof, in comparable amounts (like the scenario's 600 KB + 600 KB), and the cache bytes are what
    stops the block."""
    config = SubscriberConfig(pov_percent=100)
    h = Harness(config=config)
    keys = sorted(key(f"k{i}") for i in range(400))
    h.publish(1000, {k: entry(k + k[:8]) for k in keys})  # 40-byte values: V1 value nodes, never cached
    h.block(subs_of({1000: keys[::2]}), max_pov=10_000_000)
    subs = subs_of({1000: keys})
    full = h.predict(subs, h.context(10_000_000)).pov
    assert full.cache_read_bytes > full.proof_bytes // 2 > 0, "both parts are substantial"
    budget = full.consumed_proof_size // 2
    outcome = h.block(subs, max_pov=budget)
    pov = outcome.pov
    assert outcome.result is ProcessingResult.INCOMPLETE
    assert pov.consumed_proof_size == pov.proof_bytes + pov.cache_read_bytes + pov.state_read_bytes <= budget
    assert pov.cache_hits > 0 and pov.cache_read_bytes > config.min_step.proof_size
    # The meter stopped because of the combined total: without the cache bytes one more read would have fit.
    assert pov.consumed_proof_size + config.min_step.proof_size > budget
    assert pov.consumed_proof_size - pov.cache_read_bytes + config.min_step.proof_size <= budget
    assert pov.cursor_publisher == 1000 and pov.cursor_key is not None
    assert h.proofs[-1].size == pov.proof_bytes, "off-chain, the remaining nodes were left out of the proof"
    # Resumes at the cursor and finishes; every added key is delivered exactly once over the two blocks.
    rest = h.block(subs, max_pov=10_000_000)
    assert rest.result is ProcessingResult.COMPLETE
    assert sorted(u.key for u in outcome.updates + rest.updates) == sorted(keys[1::2])


def test_state_is_read_in_few_large_calls() -> None:
    """On Spark every state call is a JVM round trip, so a block reads its working set in batches (docs/design.md,
    "Dataflow")."""
    h = Harness()
    keys = [key(f"k{i}") for i in range(2000)]
    for para in (1000, 3000):
        h.publish(para, {k: entry(k) for k in keys})
    subs = subs_of({1000: keys[:100], 3000: keys[:100]})
    h.block(subs)
    h.publish(1000, {k: entry(k + b"2") for k in keys[::50]})
    h.publish(3000, {k: entry(k + b"2") for k in keys[1::50]})
    before = h.backend.stats.calls
    outcome = h.block(subs)
    assert outcome.pov.keys_processed == 200
    assert h.backend.stats.calls - before <= 30, "collate and verify each read the state in a handful of calls"
