"""The pub-sub spec, Requirements: Publisher Prioritization and Relay Proof Collection."""

from __future__ import annotations

from pubsub_core.subscriber import ProcessingResult, SubscriberConfig, child_storage_key, prefixed_child_storage_key
from pubsub_core.subscriber.ordering import order_publishers, work_segments
from pubsub_core.trie import read_child_proof

from tests.subscriber.harness import Harness, entry, key, subs_of


def test_system_parachain_first() -> None:
    h = Harness()
    h.publish(3000, {key("k"): entry(b"public")})
    h.publish(1000, {key("k"): entry(b"system")})
    outcome = h.block(subs_of({3000: [key("k")], 1000: [key("k")]}))
    assert [u.publisher for u in outcome.updates] == [1000, 3000]


def test_system_parachain_first_under_a_tight_budget() -> None:
    h = Harness(config=SubscriberConfig(pov_percent=100))
    h.publish(3000, {key(f"k{i}"): entry(key(f"k{i}") * 20) for i in range(30)})
    h.publish(1000, {key(f"k{i}"): entry(key(f"k{i}") * 20) for i in range(30)})
    subs = subs_of({3000: [key(f"k{i}") for i in range(30)], 1000: [key(f"k{i}") for i in range(30)]})
    outcome = h.block(subs, max_pov=15_000)
    assert outcome.result is ProcessingResult.INCOMPLETE
    assert {u.publisher for u in outcome.updates} == {1000}


def test_non_system_publishers_are_shuffled_by_the_block_hash() -> None:
    config = SubscriberConfig()
    paras = [3000 + i for i in range(12)] + [1000, 1500]
    orders = {tuple(order_publishers(paras, bytes([seed]) * 32, config)) for seed in range(8)}
    assert all(order[:2] == (1000, 1500) for order in orders)
    assert all(sorted(order) == sorted(paras) for order in orders)
    assert len(orders) > 1, "the order of non-system publishers depends on the block hash"
    assert order_publishers(paras, b"\x07" * 32, config) == order_publishers(list(reversed(paras)), b"\x07" * 32, config)


def test_cursor_rotation_ignores_a_stale_cursor() -> None:
    subs = {1000: [b"a" * 32, b"b" * 32], 1500: [b"c" * 32]}  # system paras: ascending order
    config = SubscriberConfig()
    assert work_segments(subs, bytes(32), config, (1500, b"c" * 32)) == [(1500, 0, 1), (1000, 0, 2)]
    for stale in ((9999, b"z" * 32), (1000, b"z" * 32)):
        assert work_segments(subs, bytes(32), config, stale) == [(1000, 0, 2), (1500, 0, 1)]


def test_proof_collection_for_subscriptions() -> None:
    h = Harness()
    values = {key(n): entry(n.encode() * 50) for n in "ABCDEFGH"}
    h.publish(1000, values)
    subscribed = [key("A"), key("B"), key("C")]
    h.block(subs_of({1000: subscribed}))
    proof = h.proofs[-1]
    read = read_child_proof(h.relay.relay_root, proof.nodes, child_storage_key(1000), subscribed)
    assert read == {k: values[k] for k in subscribed}


def test_child_trie_key_derivation() -> None:
    assert child_storage_key(1000).hex() == "707562737562e8030000"
    assert child_storage_key(2001).hex() == "707562737562d1070000"
    assert prefixed_child_storage_key(1000).hex() == (
        "3a6368696c645f73746f726167653a64656661756c743a707562737562e8030000"
    )
    # The relay side stores the publisher's child root under exactly this key.
    h = Harness()
    h.publish(1000, {key("A"): entry(b"a")})
    assert h.relay.main.get(prefixed_child_storage_key(1000)) == h.relay.child_root(1000)
