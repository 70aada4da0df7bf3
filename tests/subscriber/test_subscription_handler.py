"""The pub-sub spec, Requirement: Subscription Handler."""

from __future__ import annotations

from pubsub_core.codec.types import SubscribedKey, TtlKind, TtlState
from pubsub_core.subscriber import (
    EventKind,
    Subscriptions,
    Weight,
    cached_nodes,
    clear_publisher_cache,
    process_relay_proof,
    subscribed_key,
)
from pubsub_core.subscriber.errors import NoCachedNodesError
import pytest

from tests.subscriber.harness import SUBSCRIBER, Harness, entry, key, path_nodes, subs_of


class RecordingHandler:
    """A parachain's SubscriptionHandler that records every callback."""

    def __init__(self, subscriptions: list[tuple[int, list[SubscribedKey]]], weight: Weight) -> None:
        self._subscriptions = subscriptions
        self._weight = weight
        self.updates: list[tuple[int, SubscribedKey, bytes, TtlState]] = []
        self.removed: list[tuple[int, SubscribedKey, bool]] = []

    def subscriptions(self) -> tuple[list[tuple[int, list[SubscribedKey]]], Weight]:
        return self._subscriptions, self._weight

    def on_data_updated(self, publisher: int, key: SubscribedKey, value: bytes, ttl_state: TtlState) -> Weight:
        self.updates.append((publisher, key, value, ttl_state))
        return Weight(1_000, 0)

    def on_data_removed(self, publisher: int, key: SubscribedKey, expired: bool) -> Weight:
        self.removed.append((publisher, key, expired))
        return Weight(1_000, 0)


def test_subscription_declaration() -> None:
    handler = RecordingHandler([(1000, [SubscribedKey(key("A"))])], Weight(7_000_000, 0))
    declared, weight = handler.subscriptions()
    assert declared == [(1000, [SubscribedKey(key("A"))])]
    assert all(len(k.hash) == 32 for _, keys in declared for k in keys)
    h = Harness()
    h.publish(1000, {key("A"): entry(b"a")})
    subs = Subscriptions.of(dict(declared), weight)
    outcome = h.block(subs)
    # The weight of computing subscriptions is charged to the block's meter (ref_time only).
    no_weight = Harness()
    no_weight.publish(1000, {key("A"): entry(b"a")})
    baseline = no_weight.block(Subscriptions.of(dict(declared)))
    assert outcome.pov.consumed_ref_time - baseline.pov.consumed_ref_time == 7_000_000
    assert outcome.pov.consumed_proof_size == baseline.pov.consumed_proof_size


def test_adding_subscriptions() -> None:
    h = Harness()
    h.publish(1000, {key("A"): entry(b"a"), key("B"): entry(b"b")})
    h.block(subs_of({1000: [key("A")]}))
    assert set(cached_nodes(h.txn(), 1000)) == set(path_nodes(h, 1000, [key("A")]))
    # The publisher's root does not change, yet the new key is fetched, delivered and cached.
    outcome = h.block(subs_of({1000: [key("A"), key("B")]}))
    assert [(u.publisher, u.key, u.value) for u in outcome.updates] == [(1000, key("B"), b"b")]
    cached = set(cached_nodes(h.txn(), 1000))
    path_a, path_b = set(path_nodes(h, 1000, [key("A")])), set(path_nodes(h, 1000, [key("B")]))
    assert path_b - path_a, "B's path has nodes of its own"
    assert cached == path_a | path_b, "the new key's path was cached, and nothing else"
    assert h.block(subs_of({1000: [key("A"), key("B")]})).updates == ()


def test_removing_subscriptions_requires_cache_clear() -> None:
    h = Harness()
    h.publish(1000, {key("A"): entry(b"a")})
    h.publish(2000, {key("X"): entry(b"x")})
    h.block(subs_of({1000: [key("A")], 2000: [key("X")]}))
    stale = cached_nodes(h.txn(), 1000)
    h.publish(1000, {key("A"): entry(b"a2")})
    h.block(subs_of({2000: [key("X")]}))
    assert cached_nodes(h.txn(), 1000) == stale, "stale nodes stay until the cache is cleared"
    txn = h.txn()
    event = clear_publisher_cache(txn, 1000, subscriber=SUBSCRIBER, at=h.number)
    txn.commit()
    assert event.kind is EventKind.PUBLISHER_CACHE_CLEARED and event.publisher == 1000
    assert cached_nodes(h.txn(), 1000) == {}
    with pytest.raises(NoCachedNodesError):
        clear_publisher_cache(h.txn(), 1000, subscriber=SUBSCRIBER, at=h.number)
    h.publish(2000, {key("X"): entry(b"x2")})
    h.block(subs_of({2000: [key("X")]}))
    assert cached_nodes(h.txn(), 1000) == {}, "only current subscriptions rebuild the cache"


def test_data_update_callback() -> None:
    h = Harness()
    h.number = 100
    h.publish(1000, {key("K"): entry(b"\x01\x02\x03", ttl=50, when=90), key("L"): entry(b"inf")})
    handler = RecordingHandler([(1000, [SubscribedKey(key("K")), SubscribedKey(key("L"))])], Weight())
    subs = Subscriptions.of(dict(handler.subscriptions()[0]))
    ctx = h.context()
    proof = h.collate(subs, ctx)
    process_relay_proof(h.txn(), proof, ctx, subs, h.config, handler)
    assert sorted(handler.updates, key=lambda u: u[2]) == [
        (1000, SubscribedKey(key("K")), b"\x01\x02\x03", TtlState.valid_for(40)),
        (1000, SubscribedKey(key("L")), b"inf", TtlState.infinite()),
    ]


def test_data_update_callback_reports_timed_out_and_removal() -> None:
    h = Harness()
    h.number = 200
    h.publish(1000, {key("K"): entry(b"old", ttl=10, when=100)})
    outcome = h.block(subs_of({1000: [key("K")]}))
    assert outcome.updates[0].ttl_state.kind is TtlKind.TIMED_OUT
    h.publish(1000, {key("K"): None})
    handler = RecordingHandler([(1000, [SubscribedKey(key("K"))])], Weight())
    subs = subs_of({1000: [key("K")]})
    ctx = h.context()
    proof = h.collate(subs, ctx)
    process_relay_proof(h.txn(), proof, ctx, subs, h.config, handler)
    assert handler.removed == [(1000, SubscribedKey(key("K")), True)]


def test_compile_time_key_hashing() -> None:
    assert subscribed_key("my_key").hash.hex() == "bc9d53ee74990af2b89dacb0a0f2e037a7d8025b0b269ff0be1cf41eab7cc88b"


def test_runtime_key_hashing() -> None:
    k = SubscribedKey.from_data(b"test_key")
    assert k.hash.hex() == "4bb87fd68ba5822a84b0365f7081b4ce4bee6793ff360f0c675c15f20e6e1b98"


def test_pre_computed_hash() -> None:
    assert SubscribedKey.from_hash(bytes([0x42] * 32)).hash == bytes([0x42] * 32)


def test_subscriptions_json_round_trip() -> None:
    subs = Subscriptions.of({1000: [SubscribedKey(key("A"))], 3000: [SubscribedKey(key("B"))]}, Weight(5, 0))
    data = subs.to_json()
    assert data["entries"][0] == {"publisher": 1000, "keys": ["0x" + key("A").hex()]}
    assert Subscriptions.from_json(data) == subs
