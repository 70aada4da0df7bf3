"""The pub-sub spec, Requirement: Trie Depth Limit (and Proof Processing: Depth limit enforced during processing)."""

from __future__ import annotations

from pubsub_core.subscriber import (
    DisableReason,
    EventKind,
    SubscriberConfig,
    cached_nodes,
    disabled_publishers,
    enable_publisher,
    relay_keys,
)
from pubsub_core.subscriber.errors import PublisherNotDisabledError
from pubsub_core.trie import ProofDB, decode_node, prefixed_child_storage_key, walk_path
import pytest

from tests.subscriber.harness import SUBSCRIBER, Harness, entry, key, subs_of


def deep_keys(levels: int) -> list[bytes]:
    """Keys whose paths branch at nibbles 0..levels-1: the all-zero key sits ``levels + 1`` nodes deep."""
    keys = [bytes(32)]
    for j in range(levels):
        keys.append(bytes.fromhex("0" * j + "1" + "0" * (63 - j)))
    return keys


def path_length(h: Harness, para: int, k: bytes) -> int:
    child = h.relay.child(para)
    return sum(1 for _ in walk_path(ProofDB(child.prove([k])), child.root, k))


def deep_harness(levels: int, depth_limit: int = 8) -> Harness:
    h = Harness(config=SubscriberConfig(max_trie_depth=depth_limit))
    h.publish(1000, {k: entry(b"v%d" % i) for i, k in enumerate(deep_keys(levels))})
    return h


def test_proof_within_depth_limit() -> None:
    h = deep_harness(levels=5)
    assert path_length(h, 1000, bytes(32)) == 6
    outcome = h.block(subs_of({1000: [bytes(32)]}))
    assert [u.value for u in outcome.updates] == [b"v0"]
    assert disabled_publishers(h.txn()) == {}


def test_proof_exceeds_depth_limit() -> None:
    h = deep_harness(levels=9)
    h.publish(1000, {key("shallow"): entry(b"s")})
    assert path_length(h, 1000, bytes(32)) == 10
    h.publish(2000, {key("A"): entry(b"a")})
    subs = subs_of({1000: [key("shallow"), bytes(32)], 2000: [key("A")]})
    outcome = h.block(subs)
    # Nothing of publisher 1000 is delivered, not even the shallow key processed before the deep one.
    assert [(u.publisher, u.value) for u in outcome.updates] == [(2000, b"a")]
    assert disabled_publishers(h.txn()) == {1000: DisableReason.TRIE_DEPTH_EXCEEDED}
    disabled = [e for e in outcome.events if e.kind is EventKind.PUBLISHER_DISABLED]
    assert [(e.publisher, e.reason) for e in disabled] == [(1000, "TrieDepthExceeded")]
    assert cached_nodes(h.txn(), 1000) == {}


def test_depth_limit_enforced_during_processing() -> None:
    h = deep_harness(levels=9)
    outcome = h.block(subs_of({1000: [bytes(32)]}))
    assert outcome.updates == ()
    proof = h.proofs[-1]
    child_nodes = set(h.relay.child(1000).prove([bytes(32)]))
    # Traversal stopped at depth 8: 8 of the 10 nodes on the path were read.
    assert len(child_nodes & set(proof.nodes)) == 8
    assert 1000 in disabled_publishers(h.txn())


def test_disabled_publisher_is_skipped() -> None:
    h = deep_harness(levels=9)
    h.publish(2000, {key("A"): entry(b"a")})
    subs = subs_of({1000: [bytes(32)], 2000: [key("A")]})
    h.block(subs)
    assert [k.publisher for k in relay_keys(h.txn(), subs)] == [2000]
    h.publish(1000, {bytes(32): entry(b"changed")})
    h.publish(2000, {key("A"): entry(b"a2")})
    outcome = h.block(subs)
    assert [u.publisher for u in outcome.updates] == [2000]
    proof = set(h.proofs[-1].nodes)
    assert not proof & set(h.relay.child(1000).prove([bytes(32)]))
    main_path_1000 = set(h.relay.main.prove([prefixed_child_storage_key(1000)]))
    main_path_2000 = set(h.relay.main.prove([prefixed_child_storage_key(2000)]))
    assert not proof & (main_path_1000 - main_path_2000)


def test_re_enable_disabled_publisher() -> None:
    h = deep_harness(levels=9)
    subs = subs_of({1000: [bytes(32), key("B")]})
    h.publish(1000, {key("B"): entry(b"b")})
    h.block(subs)
    with pytest.raises(PublisherNotDisabledError):
        enable_publisher(h.txn(), 2000, subscriber=SUBSCRIBER, at=h.number)
    # The publisher reshapes its trie, then governance re-enables it.
    h.publish(1000, {k: None for k in deep_keys(9)[2:]})
    txn = h.txn()
    event = enable_publisher(txn, 1000, subscriber=SUBSCRIBER, at=h.number)
    txn.commit()
    assert event.kind is EventKind.PUBLISHER_ENABLED and event.publisher == 1000
    assert disabled_publishers(h.txn()) == {}
    outcome = h.block(subs)
    assert sorted(u.value for u in outcome.updates) == [b"b", b"v0"]


def test_depth_limit_bounds_cache_size() -> None:
    """The spec's "Depth limit bounds cache size": with MaxTrieDepth 8 and 100 subscribed keys, a key path has at most 8
    nodes and the cache at most 100 * 8. Both bounds are reached: each key sits exactly 8 nodes deep, in its own
    publisher's child trie (so no node is shared), and every node of every path is cached."""
    limit, publishers = 8, range(1000, 1100)
    h = Harness(config=SubscriberConfig(max_trie_depth=limit))
    target = bytes(32)
    for para in publishers:
        h.publish(para, {k: entry(b"v%d" % i) for i, k in enumerate(deep_keys(limit - 1))})
    assert {path_length(h, para, target) for para in publishers} == {limit}
    outcome = h.block(subs_of({para: [target] for para in publishers}))
    assert len(outcome.updates) == len(publishers) and not disabled_publishers(h.txn())
    caches = [cached_nodes(h.txn(), para) for para in publishers]
    assert [len(cache) for cache in caches] == [limit] * len(publishers)
    assert sum(len(cache) for cache in caches) == len(publishers) * limit
    for cache in caches:
        assert all(len(node) <= h.config.max_cached_node_size for node in cache.values())
        assert all(decode_node(node) is not None for node in cache.values()), "structure nodes only"
    # One level deeper is over the bound: the publisher is disabled and caches nothing.
    h.publish(1000, {k: entry(b"w%d" % i) for i, k in enumerate(deep_keys(limit))})
    h.block(subs_of({para: [target] for para in publishers}))
    assert 1000 in disabled_publishers(h.txn()) and cached_nodes(h.txn(), 1000) == {}
