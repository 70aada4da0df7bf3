"""Runtime side (Verify): process the collator's relay proof with the same traversal, then validate the proof.

Checks, in order: no duplicate node (DuplicateNode); a non-empty proof contains the relay parent's root node
(RootMismatch, e.g. a replayed proof); every node the traversal needs is present (MissingNodeBelowLimit: the
traversal checks the budget before each read, so a missing node is always one the budget could pay for, and
Incomplete arises only at the limit); every proof node was read (ExtraneousNode). Any failure rejects the
block: the error propagates and none of the block's writes survive.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from pubsub_core.codec.types import SubscribedKey, TtlState
from pubsub_core.subscriber.config import SubscriberConfig
from pubsub_core.subscriber.engine import BlockContext, Subscriptions, run_block
from pubsub_core.subscriber.errors import CheatingCollatorError, CheatingReason
from pubsub_core.subscriber.meter import Weight
from pubsub_core.subscriber.types import BlockOutcome, RelayProof, Update, UpdateKind
from pubsub_core.trie.errors import DuplicateNodeError, UnusedNodesError
from pubsub_core.trie.proof import ProofDB
from pubsub_core.trie.recorder import AccessTracker
from state import StateTransaction

__all__ = ["SubscriptionHandler", "notify", "process_relay_proof"]


class SubscriptionHandler(Protocol):
    """The parachain's side of the subscription: what it subscribes to, and what it does with updates.

    ``on_data_removed`` tells the parachain a key left the publisher's child trie (deleted or expired);
    the reference never did (bug 13).
    """

    def subscriptions(self) -> tuple[list[tuple[int, list[SubscribedKey]]], Weight]:
        """(publisher, keys) pairs and the weight of computing them."""
        ...

    def on_data_updated(self, publisher: int, key: SubscribedKey, value: bytes, ttl_state: TtlState) -> Weight:
        """A subscribed key has a new value."""
        ...

    def on_data_removed(self, publisher: int, key: SubscribedKey, expired: bool) -> Weight:
        """A subscribed key is gone: expired (its TTL ran out) or deleted."""
        ...


class _TrackedProof:
    """The proof as the traversal's relay source, recording every node read."""

    __slots__ = ("db", "tracker")

    def __init__(self, db: ProofDB) -> None:
        self.db = db
        self.tracker = AccessTracker()

    def get(self, node_hash: bytes) -> bytes | None:
        node = self.db.get(node_hash)
        if node is not None:
            self.tracker.record(node_hash, node)
        return node


def process_relay_proof(
    txn: StateTransaction,
    proof: RelayProof,
    ctx: BlockContext,
    subscriptions: Subscriptions,
    config: SubscriberConfig,
    handler: SubscriptionHandler | None = None,
) -> BlockOutcome:
    """Verify: process ``proof`` against the trusted ``ctx.relay_root`` and update the subscriber state in ``txn``.

    Returns the deliveries (in order), pallet events and PoV metering; calls ``handler`` for each delivery
    once the proof is accepted. Raises CheatingCollatorError with a typed reason, leaving ``txn`` unchanged.
    """
    with txn.atomic():
        try:
            db = ProofDB(proof.nodes)
        except DuplicateNodeError as exc:
            raise CheatingCollatorError(
                CheatingReason.DUPLICATE_NODE,
                str(exc),
                relay_root=ctx.relay_root,
                node_hashes=(exc.node_hash,),
            ) from exc
        if len(db) and ctx.relay_root not in db:
            raise CheatingCollatorError(
                CheatingReason.ROOT_MISMATCH,
                f"the proof does not contain the relay parent's root node 0x{ctx.relay_root.hex()}",
                relay_root=ctx.relay_root,
            )
        source = _TrackedProof(db)
        outcome = run_block(txn, source, ctx, subscriptions, config)
        try:
            source.tracker.ensure_no_unused_nodes(db)
        except UnusedNodesError as exc:
            raise CheatingCollatorError(
                CheatingReason.EXTRANEOUS_NODE,
                str(exc),
                relay_root=ctx.relay_root,
                node_hashes=tuple(sorted(exc.node_hashes)),
            ) from exc
    notify(handler, outcome.updates)
    return BlockOutcome(outcome.result, outcome.updates, outcome.events, outcome.pov)


def notify(handler: SubscriptionHandler | None, updates: Iterable[Update]) -> None:
    """Hand an accepted block's deliveries to the parachain, in order."""
    if handler is None:
        return
    for update in updates:
        key = SubscribedKey(update.key)
        if update.kind is UpdateKind.SET:
            handler.on_data_updated(update.publisher, key, update.value, update.ttl_state)
        else:
            handler.on_data_removed(update.publisher, key, update.kind is UpdateKind.EXPIRED)
