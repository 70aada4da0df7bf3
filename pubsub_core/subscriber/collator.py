"""Collator side (Prune): build the block's pub-sub relay proof by running the runtime's own traversal.

As in the pub-sub design's block building: the collator asks for the relay keys (every subscribed key of every enabled
publisher), proves them all from its relay state (the initial proof), then runs ``run_block`` over that
initial proof and the subscriber's state, records every relay node the traversal reads, and discards the
traversal's writes (Prune writes nothing, not even the cursor: reference
bug 6 in docs/decisions.md). What it leaves out follows from the traversal itself: unchanged child tries (root equal to
PreviousPublishedDataRoots), cached nodes (served by CachedTrieNodes), nodes leading only to unsubscribed keys
(never walked), subtrees unchanged since the key was last processed (the walk stops), values whose entry hash
did not change, and everything past the budget (the walk stops with Incomplete and the runtime's cursor).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from pubsub_core.subscriber.config import SubscriberConfig
from pubsub_core.subscriber.engine import BlockContext, EngineResult, RelaySource, Subscriptions, run_block
from pubsub_core.subscriber.errors import CheatingCollatorError, RelayStateError
from pubsub_core.subscriber.pallet import relay_keys
from pubsub_core.subscriber.types import RelayProof
from pubsub_core.trie.proof import ProofDB
from state import StateBackend, StateTransaction

__all__ = ["RelayStateView", "collate", "prune"]


class RelayStateView(Protocol):
    """The collator's relay parent state (pubsub_core.trie.RelayTries fits): its root and a prover."""

    @property
    def relay_root(self) -> bytes: ...

    def prove(
        self, main_keys: Iterable[bytes] = (), child_keys: Mapping[int, Iterable[bytes]] | None = None
    ) -> list[bytes]:
        """One StorageProof of main-trie keys and child-trie keys (with the main-trie paths to child roots)."""
        ...


class _Discard(Exception):
    """Raised inside an atomic section to drop Prune's writes."""


def prune(
    relay: RelaySource,
    state: StateBackend | StateTransaction,
    ctx: BlockContext,
    subscriptions: Subscriptions,
    config: SubscriberConfig,
) -> EngineResult:
    """Run the traversal in Prune mode: the predicted outcome and the relay nodes read; no state is written."""
    txn = state if isinstance(state, StateTransaction) else StateTransaction(state)
    try:
        return _run_discarding(txn, relay, ctx, subscriptions, config)
    except CheatingCollatorError as exc:
        missing = exc.node_hashes[0] if exc.node_hashes else ctx.relay_root
        raise RelayStateError(missing, ctx.relay_root) from exc
    finally:
        if txn is not state:
            txn.rollback()


def _run_discarding(
    txn: StateTransaction,
    relay: RelaySource,
    ctx: BlockContext,
    subscriptions: Subscriptions,
    config: SubscriberConfig,
) -> EngineResult:
    outcome: list[EngineResult] = []
    try:
        with txn.atomic():
            outcome.append(run_block(txn, relay, ctx, subscriptions, config))
            raise _Discard
    except _Discard:
        return outcome[0]


def collate(
    relay: RelayStateView,
    state: StateBackend | StateTransaction,
    ctx: BlockContext,
    subscriptions: Subscriptions,
    config: SubscriberConfig,
) -> RelayProof:
    """The pub-sub relay proof for this block: exactly the nodes Verify will read, sorted and deduplicated."""
    if relay.relay_root != ctx.relay_root:
        raise ValueError(
            f"the relay view has root 0x{relay.relay_root.hex()}, the block context 0x{ctx.relay_root.hex()}"
        )
    txn = state if isinstance(state, StateTransaction) else StateTransaction(state)
    requested: dict[int, list[bytes]] = {}
    for item in relay_keys(txn, subscriptions):
        requested.setdefault(item.publisher, []).append(item.key)
    if txn is not state:
        txn.rollback()
    initial = ProofDB(relay.prove(child_keys=requested), allow_duplicates=True)
    outcome = prune(initial, state, ctx, subscriptions, config)
    return RelayProof(
        relay_block_number=ctx.relay_block_number,
        relay_block_hash=ctx.relay_block_hash,
        relay_root=ctx.relay_root,
        nodes=tuple(sorted(outcome.relay_nodes.values())),
    )
