"""Regressions for the reference subscriber's bugs (docs/decisions.md, bugs 1-8 and 13), one test per bug."""

from __future__ import annotations

from pubsub_core.codec.types import PublishedEntry, TtlState
from pubsub_core.subscriber import (
    ProcessingResult,
    SubscriberConfig,
    UpdateKind,
    cached_nodes,
    clear_publisher_cache,
    previous_root,
    processing_cursor,
)

from tests.subscriber.harness import SUBSCRIBER, Harness, entry, key, path_nodes, subs_of


def test_bug1_unchanged_publisher_is_not_redelivered_every_other_block() -> None:
    h = Harness()
    h.publish(1000, {key("A"): entry(b"a")})
    h.publish(2000, {key("B"): entry(b"b")})
    subs = subs_of({1000: [key("A")], 2000: [key("B")]})
    h.block(subs)
    for round_ in range(4):
        h.publish(2000, {key("B"): entry(b"b%d" % round_)})
        outcome = h.block(subs)
        assert [u.publisher for u in outcome.updates] == [2000]


def test_bug1_no_duplicate_delivery_after_incomplete_and_wrap_around() -> None:
    h = Harness(config=SubscriberConfig(pov_percent=100))
    keys = sorted(key(f"k{i}") for i in range(30))
    h.publish(1000, {k: entry(k * 8) for k in keys})
    subs = subs_of({1000: keys})
    delivered = []
    for _ in range(10):
        outcome = h.block(subs, max_pov=6_000)
        delivered += [u.key for u in outcome.updates]
        if outcome.result is ProcessingResult.COMPLETE:
            break
    assert sorted(delivered) == keys, "every key exactly once across the partial blocks"


def test_bug1_root_is_not_recorded_before_all_keys_are_processed() -> None:
    h = Harness(config=SubscriberConfig(pov_percent=100))
    keys = sorted(key(f"k{i}") for i in range(30))
    h.publish(1000, {k: entry(k * 8) for k in keys})
    outcome = h.block(subs_of({1000: keys}), max_pov=6_000)
    assert outcome.result is ProcessingResult.INCOMPLETE
    assert previous_root(h.txn(), 1000) is None
    while h.block(subs_of({1000: keys}), max_pov=6_000).result is ProcessingResult.INCOMPLETE:
        pass
    assert previous_root(h.txn(), 1000) == h.relay.child_root(1000)


def test_bug2_keys_of_one_publisher_do_not_evict_each_others_nodes() -> None:
    h = Harness()
    keys = [key(f"k{i}") for i in range(200)]
    h.publish(1000, {k: entry(k * 2) for k in keys})
    subs = subs_of({1000: keys[:20]})
    h.block(subs)
    h.publish(1000, {keys[5]: entry(b"changed")})
    outcome = h.block(subs)
    assert cached_nodes(h.txn(), 1000) == path_nodes(h, 1000, keys[:20])
    h.publish(1000, {keys[6]: entry(b"changed too")})
    h.block(subs)
    # Only the nodes that changed are proven; no other key's path had to be re-sent.
    child_proof = set(h.proofs[-1].nodes) & set(h.relay.child(1000).prove(keys[:20]))
    assert child_proof <= set(h.relay.child(1000).prove([keys[6]]))
    assert outcome.pov.cache_hits == 0


def test_bug3_nodes_served_by_the_cache_do_not_break_the_unused_node_check() -> None:
    h = Harness()
    h.publish(1000, {key(n): entry(n.encode() * 40) for n in "ABCDEFGH"})
    h.block(subs_of({1000: [key("A")]}))
    outcome = h.block(subs_of({1000: [key("A"), key("B")]}))
    assert outcome.pov.cache_hits > 0 and outcome.result is ProcessingResult.COMPLETE


def test_bug4_depth_is_checked_before_delivery_and_is_the_true_path_depth() -> None:
    from tests.subscriber.test_trie_depth_limit import deep_harness

    h = deep_harness(levels=7, depth_limit=8)  # the deepest path has exactly 8 nodes
    outcome = h.block(subs_of({1000: [bytes(32)]}))
    assert [u.value for u in outcome.updates] == [b"v0"]
    h = deep_harness(levels=8, depth_limit=8)  # 9 nodes: disabled, nothing delivered
    assert h.block(subs_of({1000: [bytes(32)]})).updates == ()


def test_bug5_a_publisher_whose_child_trie_disappears_is_an_absence_not_a_skip() -> None:
    h = Harness()
    h.publish(1000, {key("A"): entry(b"a")})
    subs = subs_of({1000: [key("A")]})
    h.block(subs)
    h.publish(1000, {key("A"): None})
    assert h.relay.child_root(1000) is None
    outcome = h.block(subs)
    assert [(u.key, u.kind) for u in outcome.updates] == [(key("A"), UpdateKind.DELETED)]


def test_bug6_prune_writes_nothing_not_even_the_cursor() -> None:
    h = Harness(config=SubscriberConfig(pov_percent=100))
    keys = [key(f"k{i}") for i in range(30)]
    h.publish(1000, {k: entry(k * 8) for k in keys})
    before = {ns: h.backend.scan(ns) for ns in h.backend.namespaces()}
    ctx = h.context(max_pov=6_000)
    proof = h.collate(subs_of({1000: keys}), ctx)
    assert proof.nodes
    assert {ns: h.backend.scan(ns) for ns in h.backend.namespaces()} == before
    assert processing_cursor(h.txn()) is None


def test_bug7_clear_publisher_cache_clears_the_root_and_reports_an_empty_cache() -> None:
    h = Harness()
    h.publish(1000, {key("A"): entry(b"a")})
    subs = subs_of({1000: [key("A")]})
    h.block(subs)
    txn = h.txn()
    clear_publisher_cache(txn, 1000, subscriber=SUBSCRIBER, at=h.number)
    txn.commit()
    assert previous_root(h.txn(), 1000) is None
    # The next block re-reads the publisher although its root did not change.
    outcome = h.block(subs)
    assert outcome.pov.publishers_unchanged == 0 and cached_nodes(h.txn(), 1000)


def test_bug8_entries_decode_with_the_relay_u32_block_number_and_ttl_uses_the_relay_block() -> None:
    h = Harness()
    h.number = 1_000
    h.publish(1000, {key("A"): PublishedEntry(b"v", 100, 950).encode(4)})
    outcome = h.block(subs_of({1000: [key("A")]}))
    assert [(u.value, u.ttl_state) for u in outcome.updates] == [(b"v", TtlState.valid_for(50))]


def test_bug13_subscribers_learn_about_deletions_and_expiries() -> None:
    h = Harness()
    h.number = 10
    h.publish(1000, {key("A"): entry(b"a", ttl=5, when=10), key("B"): entry(b"b")})
    subs = subs_of({1000: [key("A"), key("B")]})
    h.block(subs)
    h.number = 20  # A's TTL ran out; on_idle removed it. B is deleted by its publisher.
    h.publish(1000, {key("A"): None, key("B"): None})
    outcome = h.block(subs)
    assert sorted((u.key, u.kind) for u in outcome.updates) == sorted(
        [(key("A"), UpdateKind.EXPIRED), (key("B"), UpdateKind.DELETED)]
    )
    assert all(u.value == b"" and u.ttl_state == TtlState.timed_out() for u in outcome.updates)


def test_budget_running_out_between_the_child_root_and_the_progress_read() -> None:
    """Regression (found by the simulator's properties): exhaustion right after the child root was read."""
    for budget in range(2_300, 4_400, 7):
        h = Harness(config=SubscriberConfig(pov_percent=100))
        h.publish(2001, {key("A"): entry(b"a"), key("B"): entry(b"b")})
        outcome = h.block(subs_of({2001: [key("A"), key("B")]}), max_pov=budget)
        assert outcome.pov.consumed_proof_size <= budget


def test_unsubscribing_a_key_does_not_redeliver_the_other_keys() -> None:
    """Regression (found by the simulator): the cache clear on a removed key used to forget what was delivered."""
    h = Harness()
    h.number = 10
    h.publish(1000, {key("A"): entry(b"a"), key("B"): entry(b"b", ttl=3, when=10), key("C"): entry(b"c")})
    h.block(subs_of({1000: [key("A"), key("B")]}))
    h.number = 20  # B expired meanwhile and was removed by on_idle
    h.publish(1000, {key("B"): None})
    outcome = h.block(subs_of({1000: [key("B"), key("C")]}))
    assert sorted((u.key, u.kind.value) for u in outcome.updates) == sorted(
        [(key("B"), "expired"), (key("C"), "set")]
    )
    assert h.block(subs_of({1000: [key("B"), key("C")]})).updates == ()
