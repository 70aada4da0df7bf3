"""One pass over the relay state: the collator builds its block's proof and applies it in the same traversal.

Stage S is the collator and the runtime of its subscriber at once. The two-pass path runs ``run_block`` twice:
Prune over the collator's relay state (recording the nodes read, discarding the writes), then Verify over the
pruned proof (committing). Both traversals read the same subscriber state and the same relay nodes (the pruned
proof holds exactly the nodes Prune read, and the budget is checked before every read with the same rule), so
Verify repeats Prune read for read. ``process_relay_state`` runs the traversal once, over the collator's relay
nodes by hash, keeps its writes, and returns the proof (the nodes read, sorted, as ``collate`` builds it) with
the outcome ``process_relay_proof`` returns.

What Verify checks on an honest proof holds here by construction: the proof has no duplicate (nodes are keyed by
hash), contains the relay root whenever it is not empty (every relay read starts at the root), holds every node
the traversal needs (it is the set of nodes read) and no other (ExtraneousNode). What the source lacks is the
collator's fault, as in Prune: RelayStateError, and the transaction is left unchanged.

``verify_proof=True`` is the checking mode: the two-pass path (Prune over ``relay``, then ``process_relay_proof``
over the pruned proof), byte-identical in outputs and state; tests run both over random workloads.

Contract of ``relay``: content-addressed. ``relay.get(h)`` returns a node whose Blake2-256 is ``h``, or None
(``NodesByHash.of`` builds one from a list of nodes; Stage S's by-hash mirror of relay nodes is another).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pubsub_core.hashing import blake2_256
from pubsub_core.subscriber.collator import prune
from pubsub_core.subscriber.config import SubscriberConfig
from pubsub_core.subscriber.engine import BlockContext, RelaySource, Subscriptions, run_block
from pubsub_core.subscriber.errors import CheatingCollatorError, RelayStateError
from pubsub_core.subscriber.runtime import SubscriptionHandler, notify, process_relay_proof
from pubsub_core.subscriber.types import BlockOutcome, RelayProof
from state import StateTransaction

__all__ = ["AppliedBlock", "NodesByHash", "process_relay_state"]


@dataclass(frozen=True, slots=True)
class AppliedBlock:
    """One subscriber block built and applied: the block's pub-sub relay proof and what Verify produced."""

    proof: RelayProof
    outcome: BlockOutcome


class NodesByHash:
    """Relay nodes by their Blake2-256 (duplicates collapse): a content-addressed ``RelaySource``."""

    __slots__ = ("nodes",)

    def __init__(self, nodes: dict[bytes, bytes]) -> None:
        self.nodes = nodes

    @classmethod
    def of(cls, nodes: Iterable[bytes]) -> NodesByHash:
        return cls({blake2_256(node): node for node in nodes})

    def get(self, node_hash: bytes) -> bytes | None:
        return self.nodes.get(node_hash)


def process_relay_state(
    txn: StateTransaction,
    relay: RelaySource,
    ctx: BlockContext,
    subscriptions: Subscriptions,
    config: SubscriberConfig,
    handler: SubscriptionHandler | None = None,
    *,
    verify_proof: bool = False,
) -> AppliedBlock:
    """Build this block's relay proof from ``relay`` (the collator's relay nodes at ``ctx.relay_root``) and apply
    it to the subscriber state in ``txn``, in one traversal (``verify_proof``: Prune, then Verify of its proof).

    Returns the proof and the outcome; calls ``handler`` for each delivery. Raises RelayStateError when ``relay``
    lacks a node or holds a malformed one, SubscriptionError for a malformed declaration; ``txn`` is then
    unchanged.
    """
    subscriptions.check_para_ids()  # the two-pass path's collate asks for the relay keys first, which checks them
    if verify_proof:
        predicted = prune(relay, txn, ctx, subscriptions, config)
        proof = _proof(ctx, predicted.relay_nodes)
        return AppliedBlock(proof, process_relay_proof(txn, proof, ctx, subscriptions, config, handler))
    with txn.atomic():
        try:
            result = run_block(txn, relay, ctx, subscriptions, config)
        except CheatingCollatorError as exc:  # as in Prune: the collator's own relay state is at fault
            missing = exc.node_hashes[0] if exc.node_hashes else ctx.relay_root
            raise RelayStateError(missing, ctx.relay_root) from exc
    notify(handler, result.updates)
    outcome = BlockOutcome(result.result, result.updates, result.events, result.pov)
    return AppliedBlock(_proof(ctx, result.relay_nodes), outcome)


def _proof(ctx: BlockContext, nodes: dict[bytes, bytes]) -> RelayProof:
    """The nodes read, sorted (sp-trie's StorageProof order), as ``collate`` builds the proof."""
    return RelayProof(
        relay_block_number=ctx.relay_block_number,
        relay_block_hash=ctx.relay_block_hash,
        relay_root=ctx.relay_root,
        nodes=tuple(sorted(nodes.values())),
    )
