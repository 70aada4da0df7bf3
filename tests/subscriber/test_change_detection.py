"""Seed 002, Requirement: Change Detection."""

from __future__ import annotations

from pubsub_core.subscriber import previous_root
from pubsub_core.trie import ProofDB, prefixed_child_storage_key, read_proof

from tests.subscriber.harness import Harness, entry, key, subs_of


def test_root_unchanged() -> None:
    h = Harness()
    h.publish(1000, {key("A"): entry(b"a"), key("B"): entry(b"b")})
    subs = subs_of({1000: [key("A"), key("B")]})
    h.block(subs)
    root = h.relay.child_root(1000)
    assert previous_root(h.txn(), 1000) == root
    h.relay.set_main({b"other": b"y" * 40})  # a new relay block, same child root
    outcome = h.block(subs)
    assert outcome.updates == ()
    assert outcome.pov.publishers_unchanged == 1 and outcome.pov.keys_processed == 0
    assert outcome.pov.cache_hits == 0 and outcome.pov.cache_read_bytes == 0
    # Only the main-trie path to the child root is proven; no child-trie node is.
    proof = h.proofs[-1]
    main_only = h.relay.main.prove([prefixed_child_storage_key(1000)])
    assert sorted(proof.nodes) == sorted(main_only)


def test_root_changed() -> None:
    h = Harness()
    h.publish(1000, {key("A"): entry(b"a1"), key("B"): entry(b"b1")})
    subs = subs_of({1000: [key("A"), key("B")]})
    first = h.block(subs)
    assert {(u.key, u.value) for u in first.updates} == {(key("A"), b"a1"), (key("B"), b"b1")}
    r1 = previous_root(h.txn(), 1000)
    h.publish(1000, {key("A"): entry(b"a2")})
    r2 = h.relay.child_root(1000)
    assert r1 != r2
    outcome = h.block(subs)
    assert [(u.publisher, u.key, u.value, u.child_root) for u in outcome.updates] == [(1000, key("A"), b"a2", r2)]
    assert previous_root(h.txn(), 1000) == r2
    # The proof proves the new child root.
    proof = h.proofs[-1]
    assert read_proof(h.relay.relay_root, proof.nodes, [prefixed_child_storage_key(1000)]) == {
        prefixed_child_storage_key(1000): r2
    }
    assert len(ProofDB(proof.nodes)) == len(proof.nodes)
