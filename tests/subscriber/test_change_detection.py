"""The pub-sub spec, Requirement: Change Detection."""

from __future__ import annotations

import pytest

from pubsub_core.subscriber import SubscriberConfig, previous_root
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


@pytest.mark.parametrize("deliver_all", [False, True])
def test_root_changed(deliver_all: bool) -> None:
    """The pub-sub spec delivers every subscribed key with data when the root changes; the pub-sub design's
    dual-trie traversal only the changed ones (the default). ``deliver_all_on_root_change`` chooses; its price is
    the unchanged key's path and value read again."""
    h = Harness(config=SubscriberConfig(deliver_all_on_root_change=deliver_all))
    values = {key(name): bytes([i]) * 40 for i, name in enumerate("ABCDEFGH")}  # 40 bytes: V1 value nodes
    h.publish(1000, {k: entry(v) for k, v in values.items()})
    subs = subs_of({1000: [key("A"), key("B")]})
    first = h.block(subs)
    assert {(u.key, u.value) for u in first.updates} == {(key("A"), values[key("A")]), (key("B"), values[key("B")])}
    r1 = previous_root(h.txn(), 1000)
    h.publish(1000, {key("A"): entry(b"a2")})
    r2 = h.relay.child_root(1000)
    assert r1 != r2
    outcome = h.block(subs)
    changed = [(1000, key("A"), b"a2", r2)]
    unchanged = [(1000, key("B"), values[key("B")], r2)]
    got = [(u.publisher, u.key, u.value, u.child_root) for u in outcome.updates]
    assert sorted(got) == sorted(changed + unchanged if deliver_all else changed)
    assert outcome.pov.keys_unchanged == (0 if deliver_all else 1)
    assert (entry(values[key("B")]) in h.proofs[-1].nodes) is deliver_all
    assert previous_root(h.txn(), 1000) == r2
    h.relay.set_main({b"other": b"z" * 40})  # root unchanged: nothing either way
    assert h.block(subs).updates == ()
    # The proof proves the new child root.
    proof = h.proofs[-1]
    assert read_proof(h.relay.relay_root, proof.nodes, [prefixed_child_storage_key(1000)]) == {
        prefixed_child_storage_key(1000): r2
    }
    assert len(ProofDB(proof.nodes)) == len(proof.nodes)
