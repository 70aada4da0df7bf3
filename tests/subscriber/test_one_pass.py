"""process_relay_state (one traversal: build the proof and apply it) against the two-pass path (collate, then
process_relay_proof), over random workloads: byte-identical proofs, outcomes, handler calls, errors and state.

Three subscribers follow the same relay chain with the same subscriptions, each driven one way: the two-pass
path as Stage S ran it (collate over the view's nodes, then process_relay_proof), the one pass over the nodes by
hash, and the one pass's checking mode (``verify_proof=True``). Schedules include budgets that run out
(Incomplete and a cursor), a node missing from the collator's view (RelayStateError, nothing written), publishers
disabled by MaxTrieDepth and enabled again, cleared publisher caches and subscription changes.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as stg

from pubsub_core.codec.types import PublishedEntry, SubscribedKey, TtlState
from pubsub_core.errors import PubSubError
from pubsub_core.hashing import blake2_256
from pubsub_core.subscriber import (
    BlockContext,
    NodesByHash,
    PalletEvent,
    ProcessingResult,
    RelayStateError,
    SubscriberConfig,
    Subscriptions,
    clear_publisher_cache,
    collate,
    disabled_publishers,
    enable_publisher,
    process_relay_proof,
    process_relay_state,
    prune,
    pubsub_budget,
)
from pubsub_core.subscriber.meter import Weight
from pubsub_core.trie import RelayTries
from state import MemoryBackend, StateTransaction

from tests.subscriber.harness import SUBSCRIBER, key, subs_of

PUBLISHERS = (1000, 1001, 2000, 3000)
KEYS_PER_PUBLISHER = 10
CONFIGS = {
    "default": SubscriberConfig(pov_percent=100),
    "shallow": SubscriberConfig(pov_percent=100, max_trie_depth=2),  # publishers get disabled
    "deliver-all": SubscriberConfig(pov_percent=100, deliver_all_on_root_change=True, max_cached_node_size=80),
}


def pkey(publisher: int, index: int) -> bytes:
    return key(f"{publisher}/{index}")


@dataclass(frozen=True)
class Step:
    """One relay block: publishes (None deletes), the PoV size, the subscriptions, and what happens around it."""

    changes: tuple[tuple[int, int, bytes | None, int], ...]  # (publisher, key index, value, ttl)
    max_pov: int
    subscription: tuple[tuple[int, tuple[int, ...]], ...]
    drop_node: int | None = None  # index into the honest proof of a node the collator's view lacks
    clear: bool = False  # clear_publisher_cache of the first subscribed publisher after the block
    enable: bool = False  # enable_publisher of every disabled publisher after the block


class Recorder:
    """A SubscriptionHandler that records every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def subscriptions(self) -> tuple[list[tuple[int, list[SubscribedKey]]], Weight]:
        return [], Weight()

    def on_data_updated(self, publisher: int, key: SubscribedKey, value: bytes, ttl_state: TtlState) -> Weight:
        self.calls.append(("updated", publisher, key.hash, value, ttl_state))
        return Weight()

    def on_data_removed(self, publisher: int, key: SubscribedKey, expired: bool) -> Weight:
        self.calls.append(("removed", publisher, key.hash, expired))
        return Weight()


class _ViewProver:
    """The view as Stage S's two-pass path saw it: a root and its nodes as the proof of anything asked for."""

    def __init__(self, relay_root: bytes, nodes: list[bytes]) -> None:
        self.relay_root = relay_root
        self.nodes = nodes

    def prove(self, main_keys: Iterable[bytes] = (), child_keys: Mapping[int, Iterable[bytes]] | None = None) -> list[bytes]:
        return self.nodes


Apply = Callable[[StateTransaction, list[bytes], BlockContext, Subscriptions, SubscriberConfig, Recorder], Any]


def two_pass(txn: StateTransaction, nodes: list[bytes], ctx: BlockContext, subs: Subscriptions,
             config: SubscriberConfig, handler: Recorder) -> Any:
    proof = collate(_ViewProver(ctx.relay_root, nodes), txn, ctx, subs, config)
    return proof, process_relay_proof(txn, proof, ctx, subs, config, handler)


def one_pass(txn: StateTransaction, nodes: list[bytes], ctx: BlockContext, subs: Subscriptions,
             config: SubscriberConfig, handler: Recorder) -> Any:
    block = process_relay_state(txn, NodesByHash.of(nodes), ctx, subs, config, handler)
    return block.proof, block.outcome


def checking(txn: StateTransaction, nodes: list[bytes], ctx: BlockContext, subs: Subscriptions,
             config: SubscriberConfig, handler: Recorder) -> Any:
    block = process_relay_state(txn, NodesByHash.of(nodes), ctx, subs, config, handler, verify_proof=True)
    return block.proof, block.outcome


PATHS: dict[str, Apply] = {"two-pass": two_pass, "one-pass": one_pass, "checking": checking}


@dataclass
class Coverage:
    """What a run went through, so the seeded test can show the schedules reach every case."""

    blocks: int = 0
    incomplete: int = 0
    missing: int = 0
    disabled: int = 0
    cleared: int = 0
    enabled: int = 0
    deliveries: int = 0


@dataclass
class Subscriber:
    apply: Apply
    backend: MemoryBackend = field(default_factory=MemoryBackend)
    handler: Recorder = field(default_factory=Recorder)

    def state(self) -> dict[str, dict[bytes, bytes]]:
        return {ns: self.backend.scan(ns) for ns in sorted(self.backend.namespaces()) if self.backend.scan(ns)}


def _call(txn: StateTransaction, action: Callable[[], Any]) -> Any:
    """The action's result, or its error as (type, message); committed only on success."""
    try:
        result = action()
    except PubSubError as exc:
        txn.rollback()
        return type(exc).__name__, str(exc)
    txn.commit()
    return result


def run_paths(steps: Sequence[Step], config: SubscriberConfig) -> Coverage:
    """Drive every path through ``steps``; assert after each block that all agree; return what happened."""
    relay = RelayTries()
    relay.set_main({b":code": b"runtime", b"other": b"x" * 40})
    subscribers = {name: Subscriber(apply) for name, apply in PATHS.items()}
    coverage = Coverage()
    expiry: dict[tuple[int, bytes], int] = {}
    for number, step in enumerate(steps, start=1):
        changes: dict[int, dict[bytes, bytes | None]] = {}
        for para, index, value, ttl in step.changes:
            k = pkey(para, index)
            changes.setdefault(para, {})[k] = None if value is None else PublishedEntry(value, ttl, number).encode()
            expiry.pop((para, k), None)
            if value is not None and ttl:
                expiry[(para, k)] = number + ttl
        for (para, k), at in sorted(expiry.items()):
            if number >= at:
                changes.setdefault(para, {})[k] = None
                del expiry[(para, k)]
        if changes:
            relay.apply(child_changes=changes)
        subs = subs_of({para: [pkey(para, i) for i in indexes] for para, indexes in step.subscription})
        budget = pubsub_budget(step.max_pov, (), (), config)
        ctx = BlockContext(SUBSCRIBER, number, blake2_256(b"block" + number.to_bytes(8, "little")),
                           relay.relay_root, budget)
        nodes = relay.prove(child_keys={para: list(keys) for para, keys in subs.merged().items()})
        if step.drop_node is not None:
            reference = subscribers["two-pass"]
            honest = prune(NodesByHash.of(nodes), reference.backend, ctx, subs, config).relay_nodes
            if honest:
                gone = sorted(honest.values())[step.drop_node % len(honest)]
                nodes = [node for node in nodes if node != gone]
        results = {}
        for name, subscriber in subscribers.items():
            txn = StateTransaction(subscriber.backend)
            results[name] = _call(txn, lambda: subscriber.apply(txn, nodes, ctx, subs, config, subscriber.handler))
        _assert_same(results, subscribers)
        coverage.blocks += 1
        reference_result = results["two-pass"]
        if reference_result[0] == RelayStateError.__name__:
            coverage.missing += 1
        else:
            outcome = reference_result[1]
            coverage.incomplete += outcome.result is ProcessingResult.INCOMPLETE
            coverage.deliveries += len(outcome.updates)
            coverage.disabled += sum(event.kind.value == "PublisherDisabled" for event in outcome.events)
        for name, subscriber in subscribers.items():
            after: list[tuple[str, Any]] = []
            if step.clear:
                para = step.subscription[0][0]
                txn = StateTransaction(subscriber.backend)
                cleared = _call(txn, lambda: clear_publisher_cache(txn, para, subscriber=SUBSCRIBER, at=number))
                after.append(("clear", cleared))
            if step.enable:
                for para in disabled_publishers(StateTransaction(subscriber.backend)):
                    txn = StateTransaction(subscriber.backend)
                    after.append(("enable", _call(txn, lambda: enable_publisher(txn, para, subscriber=SUBSCRIBER,
                                                                                   at=number))))
            results[name] = after
        _assert_same(results, subscribers)
        for action, result in results["two-pass"]:
            if isinstance(result, PalletEvent):  # not an error
                coverage.cleared += action == "clear"
                coverage.enabled += action == "enable"
    return coverage


def _assert_same(results: Mapping[str, Any], subscribers: Mapping[str, Subscriber]) -> None:
    reference = results["two-pass"]
    for name, result in results.items():
        assert result == reference, f"{name} differs from the two-pass path"
    states = {name: subscriber.state() for name, subscriber in subscribers.items()}
    calls = {name: subscriber.handler.calls for name, subscriber in subscribers.items()}
    for name in subscribers:
        assert states[name] == states["two-pass"], f"{name} leaves other subscriber state"
        assert calls[name] == calls["two-pass"], f"{name} calls the handler otherwise"


# -- random schedules ----------------------------------------------------------------------------------------------

changes = stg.tuples(
    stg.sampled_from(PUBLISHERS),
    stg.integers(0, KEYS_PER_PUBLISHER - 1),
    stg.one_of(stg.none(), stg.binary(min_size=0, max_size=90)),
    stg.sampled_from((0, 0, 2, 5)),
)
subscriptions = stg.dictionaries(
    stg.sampled_from(PUBLISHERS),
    stg.lists(stg.integers(0, KEYS_PER_PUBLISHER - 1), min_size=1, max_size=KEYS_PER_PUBLISHER, unique=True)
    .map(tuple),
    min_size=1,
    max_size=len(PUBLISHERS),
).map(lambda d: tuple(d.items()))
steps = stg.builds(
    Step,
    stg.lists(changes, max_size=8).map(tuple),
    stg.sampled_from((0, 2_000, 4_000, 9_000, 30_000, 1_000_000)),
    subscriptions,
    stg.one_of(stg.none(), stg.none(), stg.none(), stg.integers(0, 1_000)),
    stg.booleans(),
    stg.booleans(),
)


@pytest.mark.parametrize("config_name", sorted(CONFIGS))
@settings(max_examples=40, deadline=None)
@given(schedule=stg.lists(steps, min_size=1, max_size=10))
def test_one_pass_equals_two_pass(config_name: str, schedule: list[Step]) -> None:
    run_paths(schedule, CONFIGS[config_name])


def _random_step(rng: random.Random, subscription: tuple[tuple[int, tuple[int, ...]], ...]) -> Step:
    batch = tuple(
        (rng.choice(PUBLISHERS), rng.randrange(KEYS_PER_PUBLISHER),
         None if rng.random() < 0.2 else rng.randbytes(rng.randrange(0, 90)), rng.choice((0, 0, 2, 5)))
        for _ in range(rng.randrange(0, 9))
    )
    return Step(
        batch,
        rng.choice((2_000, 4_000, 9_000, 30_000, 1_000_000, 1_000_000)),
        subscription,
        drop_node=rng.randrange(1_000) if rng.random() < 0.1 else None,
        clear=rng.random() < 0.1,
        enable=rng.random() < 0.2,
    )


@pytest.mark.parametrize("config_name", sorted(CONFIGS))
def test_seeded_schedules_agree_and_reach_every_case(config_name: str) -> None:
    """Seeded loops (longer than Hypothesis's) that must go through every case the paths could disagree on."""
    total = Coverage()
    for seed in range(12):
        rng = random.Random(f"{config_name}/{seed}")
        schedule = []
        subscription: tuple[tuple[int, tuple[int, ...]], ...] = ()
        for _ in range(25):
            if not subscription or rng.random() < 0.15:
                paras = rng.sample(PUBLISHERS, rng.randrange(1, len(PUBLISHERS) + 1))
                subscription = tuple(
                    (para, tuple(sorted(rng.sample(range(KEYS_PER_PUBLISHER), rng.randrange(1, KEYS_PER_PUBLISHER)))))
                    for para in paras
                )
            schedule.append(_random_step(rng, subscription))
        run = run_paths(schedule, CONFIGS[config_name])
        for name in vars(total):
            setattr(total, name, getattr(total, name) + getattr(run, name))
    assert total.blocks == 12 * 25
    assert total.incomplete > 0 and total.missing > 0 and total.deliveries > 0
    assert total.cleared > 0
    if config_name == "shallow":
        assert total.disabled > 0 and total.enabled > 0


def test_a_missing_node_leaves_the_state_unchanged() -> None:
    """The collator's view lacks the relay root: RelayStateError names it, and nothing is written."""
    relay = RelayTries()
    relay.apply(child_changes={1000: {pkey(1000, 0): PublishedEntry(b"v", 0, 1).encode()}})
    config = SubscriberConfig(pov_percent=100)
    subs = subs_of({1000: [pkey(1000, 0)]})
    ctx = BlockContext(SUBSCRIBER, 1, bytes(32), relay.relay_root, pubsub_budget(1_000_000, (), (), config))
    nodes = relay.prove(child_keys={1000: [pkey(1000, 0)]})
    backend = MemoryBackend()
    txn = StateTransaction(backend)
    with pytest.raises(RelayStateError) as caught:
        process_relay_state(txn, NodesByHash.of(n for n in nodes if blake2_256(n) != relay.relay_root), ctx, subs,
                            config)
    assert caught.value.node_hash == relay.relay_root
    txn.commit()
    assert backend.namespaces() == [] or all(not backend.scan(ns) for ns in backend.namespaces())
    applied = process_relay_state(StateTransaction(backend), NodesByHash.of(nodes), ctx, subs, config)
    assert [u.value for u in applied.outcome.updates] == [b"v"]
    assert relay.relay_root in {blake2_256(n) for n in applied.proof.nodes}
