"""The pub-sub spec, Requirement: Trie Node Caching."""

from __future__ import annotations

from pubsub_core.hashing import blake2_256
from pubsub_core.subscriber import EventKind, cached_nodes

from tests.subscriber.harness import Harness, entry, key, path_nodes, subs_of


def populated(count: int = 300) -> tuple[Harness, list[bytes]]:
    h = Harness()
    keys = [key(f"k{i}") for i in range(count)]
    h.publish(1000, {k: entry(b"value-%03d-" % i + b"x" * 40) for i, k in enumerate(keys)})
    return h, keys


def test_initial_proof_processing() -> None:
    h, keys = populated()
    subscribed = keys[:100]
    h.block(subs_of({1000: subscribed}))
    cache = cached_nodes(h.txn(), 1000)
    assert cache == path_nodes(h, 1000, subscribed)
    values = {blake2_256(entry(b"value-%03d-" % i + b"x" * 40)) for i in range(100)}
    assert not values & set(cache), "external value nodes are never cached"


def test_subsequent_proof_with_cached_nodes() -> None:
    h, keys = populated()
    subscribed = keys[:100]
    subs = subs_of({1000: subscribed})
    h.block(subs)
    cache_before = cached_nodes(h.txn(), 1000)
    previous_full = set(h.full_proof({1000: subscribed}))
    h.publish(1000, {keys[3]: entry(b"new"), keys[250]: entry(b"unsubscribed change")})
    h.block(subs)
    proof = set(h.proofs[-1].nodes)
    full = set(h.full_proof({1000: subscribed}))
    assert not {blake2_256(n) for n in proof} & set(cache_before), "cached nodes are pruned"
    assert proof <= full, "nodes leading only to unsubscribed keys are pruned"
    assert proof.isdisjoint(previous_full - set(h.relay.main.prove([]))), "only new or changed nodes"
    assert len(proof) < len(full) / 5


def test_cache_synchronization_via_dual_trie_traversal() -> None:
    h, keys = populated()
    subscribed = keys[:100]
    subs = subs_of({1000: subscribed})
    h.block(subs)
    old_root = h.relay.child_root(1000)
    assert old_root in cached_nodes(h.txn(), 1000)
    h.publish(1000, {keys[3]: entry(b"new"), keys[7]: None})
    outcome = h.block(subs)
    cache = cached_nodes(h.txn(), 1000)
    assert cache == path_nodes(h, 1000, subscribed), "new nodes added, stale nodes removed"
    assert old_root not in cache
    assert outcome.pov.keys_processed == 100
    assert outcome.pov.keys_unchanged >= 90, "traversal stops at unchanged subtrees"
    assert sorted((u.key, u.kind.value) for u in outcome.updates) == sorted(
        [(keys[3], "set"), (keys[7], "deleted")]
    )


def test_subscription_change_clears_cache() -> None:
    h, keys = populated(20)
    a, b, c, d = keys[:4]
    h.block(subs_of({1000: [a, b]}))
    outcome = h.block(subs_of({1000: [c, d]}))
    assert [(e.kind, e.publisher) for e in outcome.events if e.kind is EventKind.PUBLISHER_CACHE_CLEARED] == [
        (EventKind.PUBLISHER_CACHE_CLEARED, 1000)
    ]
    assert cached_nodes(h.txn(), 1000) == path_nodes(h, 1000, [c, d])
    child_part = set(h.relay.child(1000).prove([c, d]))
    assert child_part <= set(h.proofs[-1].nodes), "the next block carries the full proof for the new keys"
    assert sorted(u.key for u in outcome.updates) == sorted([c, d])


def test_partial_subscription_caching() -> None:
    h = Harness()
    names = ["A", "B", "C", "D", "E"]
    h.publish(1000, {key(n): entry(n.encode() * 40) for n in names})
    h.block(subs_of({1000: [key("A"), key("B")]}))
    cache = cached_nodes(h.txn(), 1000)
    assert cache == path_nodes(h, 1000, [key("A"), key("B")])
    only_cde = set(path_nodes(h, 1000, [key("C"), key("D"), key("E")])) - set(cache)
    assert only_cde and not only_cde & set(cache)
