"""Stage S, one subscriber parachain: per relay view, add its nodes to the stage's mirror of relay nodes, build
and apply the block's relay proof over the mirror in one pass (``process_relay_state``; a full view also
checks it with the two-pass Prune + Verify), then the block's subscriber calls, committed once; emits updates,
pallet events and PoV metering."""

from __future__ import annotations

import json
from typing import Final

from state import MemoryBackend, StateBackend, StateTransaction

from pubsub_core.errors import PubSubError
from pubsub_core.hashing import blake2_256
from pubsub_core.relay import canonical_json
from pubsub_core.subscriber import (
    BlockContext,
    PalletEvent,
    SubscribedKey,
    SubscriberConfig,
    clear_publisher_cache,
    declared_subscriptions,
    enable_publisher,
    pubsub_budget,
    set_subscriptions,
)
from pubsub_core.subscriber.block import NodesByHash, process_relay_state
from pubsub_core.subscriber.engine import Subscriptions
from pubsub_core.trie import AccessTracker, NodeSource, lookup, nodes_on_paths, prefixed_child_storage_key
from pubsub_core.subscriber.calls import (
    AdminCall,
    ClearPublisherCache,
    EnablePublisher,
    GovernanceCall,
    SetSubscriptions,
    decode_subscriber_call,
)
from pubsub_core.subscriber.config import AdminOrigin
from pubsub_core.stages.errors import StageError
from pubsub_core.stages.subscriber_state import (
    LAST_VIEW,
    PARKED_VIEWS,
    RELAY_MIRROR,
    RELAY_MIRROR_COUNT,
    RELAY_MIRROR_MARK,
    SUBSCRIBER_STATE,
    VIEW_DIGESTS,
)
from pubsub_core.subscriber.errors import SubscriberCallError
from pubsub_core.stages.records import JsonText, OutputRecord, RelayView, SubscriberCallFailed

__all__ = ["SubscriberStage", "ViewConflictError", "live_nodes"]

_CALL_NAMES = {EnablePublisher: "enable_publisher", ClearPublisherCache: "clear_publisher_cache"}

VIEW_WINDOW = 1024
"""How many applied views' digests Stage S remembers to recognise a replay (a crash replays a few batches)."""


class ViewConflictError(StageError):
    """A view for a block this subscriber already applied, with other bytes: never applied, reported."""

    def __init__(self, subscriber: int, number: int, reason: str, detail: str) -> None:
        super().__init__(f"subscriber {subscriber}, view of block {number}: {detail}")
        self.subscriber = subscriber
        self.number = number
        self.reason = reason
        self.detail = detail


class SubscriberStage:
    """One subscriber's state (a MemoryBackend in the simulator) and its per-block step."""

    def __init__(self, realm: str, subscriber: int, config: SubscriberConfig, backend: StateBackend | None = None) -> None:
        self.realm = realm
        self.subscriber = subscriber
        self.config = config
        self.backend = backend if backend is not None else MemoryBackend()
        SUBSCRIBER_STATE.open_store(self.backend)

    def receive(self, view: RelayView, digest: bytes) -> list[OutputRecord]:
        """A view as the seam delivers it (at least once, possibly out of order): applied once, in ``previous``
        order. A replay of an applied view (same ``digest``) is skipped; one with other bytes, or one too old to
        check, raises ``ViewConflictError`` and changes nothing. A view whose predecessor has not been applied
        yet waits in the stage's state. Returns the outputs of every view this one let through, in order."""
        ledger = _ViewLedger(StateTransaction(self.backend))
        last = ledger.last()
        if last is not None and view.number <= last:
            known = ledger.digest(view.number)
            if known == digest:
                return []
            reason, detail = (("ViewConflict", "differs from the applied view of that block") if known is not None
                              else ("ViewTooOld", f"older than the {VIEW_WINDOW} views remembered"))
            raise ViewConflictError(self.subscriber, view.number, reason, detail)
        if view.previous != last:
            parked = ledger.parked(view.previous)
            if parked is not None and parked[1] != digest:
                raise ViewConflictError(self.subscriber, view.number, "ViewConflict",
                                        "differs from a waiting view after the same predecessor")
            ledger.park(view, digest)
            ledger.txn.commit()
            return []
        out: list[OutputRecord] = []
        ready: tuple[RelayView, bytes] | None = (view, digest)
        while ready is not None:
            current, current_digest = ready
            out += self.step(current)
            ledger = _ViewLedger(StateTransaction(self.backend))
            ledger.applied(current.number, current_digest)
            ready = ledger.parked(current.number)
            if ready is not None:
                ledger.unpark(current.number)
            ledger.txn.commit()
        return out

    def step(self, view: RelayView) -> list[OutputRecord]:
        """One parachain block built on the view's relay block: updates, then events, then the PoV record."""
        if view.subscriber != self.subscriber:
            raise StageError(f"a view for subscriber {view.subscriber} reached subscriber {self.subscriber}")
        config, key = self.config, str(self.subscriber)
        budget = pubsub_budget(view.max_pov_size, view.dmq_sizes, view.hrmp_sizes, config)
        ctx = BlockContext(self.subscriber, view.number, view.hash, view.relay_root, budget)
        txn = StateTransaction(self.backend)
        subscriptions = declared_subscriptions(txn)  # what Stage R proved: the declarations before this block
        try:
            mirror = _RelayMirror(txn)
            mirror.receive(view)
            mirror.collect_if_due(view.relay_root, subscriptions)
            outcome = process_relay_state(txn, mirror, ctx, subscriptions, config, verify_proof=view.full).outcome
        except PubSubError as exc:
            txn.rollback()
            raise StageError(f"subscriber {self.subscriber} could not process relay block {view.number}: {exc}") from exc
        events: list[OutputRecord] = [self._event(e) for e in outcome.events]
        index = len(outcome.events)
        for forwarded in view.calls:
            try:
                call = decode_subscriber_call(forwarded.call)
                if isinstance(call, SetSubscriptions):
                    set_subscriptions(txn, {p: [SubscribedKey(k) for k in keys] for p, keys in call.subscriptions}, config)
                    continue
                admin = self._admitted_admin_call(call, forwarded.origin, forwarded.call)
                apply = enable_publisher if isinstance(admin, EnablePublisher) else clear_publisher_cache
                events.append(self._event(apply(txn, admin.publisher, subscriber=self.subscriber, at=view.number, index=index)))
                index += 1
            except PubSubError as exc:
                reason = exc.reason if isinstance(exc, SubscriberCallError) else type(exc).__name__
                failed = SubscriberCallFailed(view.number, forwarded.record_id, self.subscriber, reason, str(exc))
                events.append(OutputRecord(f"{self.realm}.events", key, failed.id, failed.to_json()))
        txn.commit()
        updates = [
            OutputRecord(f"{self.realm}.updates", key, f"{self.subscriber}-{view.number}-u{u.seq}",
                         JsonText(u.json_text()))
            for u in outcome.updates
        ]
        pov = OutputRecord(f"{self.realm}.pov", key, outcome.pov.id, outcome.pov.to_json())
        return [*updates, *events, pov]

    def _admitted_admin_call(self, call: GovernanceCall | AdminCall, origin: str, data: bytes) -> AdminCall:
        """The administrative call to apply, if its origin may make it here (``SubscriberConfig.admin_origin``):
        governance (``root`` with call 3, addressed to this subscriber) always; the subscriber's own para origin
        only under ``GOVERNANCE_OR_SUBSCRIBER``. ``BadOrigin`` otherwise."""
        if isinstance(call, GovernanceCall):
            if origin != "root" or call.subscriber != self.subscriber:
                raise SubscriberCallError("BadOrigin", f"a governance call for {call.subscriber} from {origin}", data)
            return call.call
        if origin != f"para:{self.subscriber}":
            raise SubscriberCallError("BadOrigin", f"{origin} is not subscriber {self.subscriber}", data)
        if self.config.admin_origin is not AdminOrigin.GOVERNANCE_OR_SUBSCRIBER:
            raise SubscriberCallError("BadOrigin", f"{_CALL_NAMES[type(call)]} needs governance (admin_origin is "
                                                   f"{self.config.admin_origin.value})", data)
        return call

    def _event(self, event: PalletEvent) -> OutputRecord:
        return OutputRecord(f"{self.realm}.events", str(self.subscriber), event.id, JsonText(event.json_text()))


class _ViewLedger:
    """Stage S's record of the views it applied (namespaces ``stage.*``, ``subscriber_state``): the last one, the digests of the
    latest ``VIEW_WINDOW``, and views waiting for their predecessor (keyed by it)."""

    LAST: Final = LAST_VIEW
    DIGESTS: Final = VIEW_DIGESTS
    PARKED: Final = PARKED_VIEWS

    def __init__(self, txn: StateTransaction) -> None:
        self.txn = txn

    def last(self) -> int | None:
        raw = self.txn.get_value(self.LAST)
        return None if raw is None else int.from_bytes(raw, "big")

    def digest(self, number: int) -> bytes | None:
        return self.txn.get(self.DIGESTS, number.to_bytes(8, "big"))

    def applied(self, number: int, digest: bytes) -> None:
        self.txn.set_value(self.LAST, number.to_bytes(8, "big"))
        self.txn.put(self.DIGESTS, number.to_bytes(8, "big"), digest)
        if number >= VIEW_WINDOW:
            self.txn.delete(self.DIGESTS, (number - VIEW_WINDOW).to_bytes(8, "big"))

    @staticmethod
    def _slot(previous: int | None) -> bytes:
        return (0 if previous is None else previous + 1).to_bytes(8, "big")

    def parked(self, previous: int | None) -> tuple[RelayView, bytes] | None:
        raw = self.txn.get(self.PARKED, self._slot(previous))
        if raw is None:
            return None
        return RelayView.from_json(json.loads(raw[32:])), raw[:32]

    def park(self, view: RelayView, digest: bytes) -> None:
        self.txn.put(self.PARKED, self._slot(view.previous), digest + canonical_json(view.to_json()).encode())

    def unpark(self, previous: int | None) -> None:
        self.txn.delete(self.PARKED, self._slot(previous))


MIRROR_GC_FLOOR = 64
"""The mirror is never collected while it holds this many nodes or fewer (a tiny P_n would else be collected
at nearly every view)."""


class _RelayMirror:
    """Stage S's copy of the relay nodes its views sent (namespaces ``stage.*``, ``subscriber_state``): a content-addressed
    ``RelaySource`` over the transaction, so the one pass reads it as it would read a full proof.

    Invariant (relied on by ``step``): after view n is received, the mirror contains P_n, the proof of every key
    declared before block n. By induction: a full view replaces the mirror with P_n; a delta view adds P_n minus
    P_{n-1} to a mirror containing P_{n-1}; collection keeps exactly P_n, marked from the view's relay root along
    the declared keys. Views reach ``step`` in ``previous`` order (``_ViewLedger``), which the induction needs.
    The traversal reads only nodes of P_n, so the outputs do not depend on when collection runs.
    """

    NODES: Final = RELAY_MIRROR
    COUNT: Final = RELAY_MIRROR_COUNT
    MARK: Final = RELAY_MIRROR_MARK

    __slots__ = ("txn",)

    def __init__(self, txn: StateTransaction) -> None:
        self.txn = txn

    def get(self, node_hash: bytes) -> bytes | None:
        return self.txn.get(self.NODES, node_hash)

    def _counter(self, namespace: str) -> int:
        raw = self.txn.get_value(namespace)
        return 0 if raw is None else int.from_bytes(raw, "big")

    def count(self) -> int:
        return self._counter(self.COUNT)

    def _set_counts(self, count: int, mark: int | None = None) -> None:
        self.txn.set_value(self.COUNT, count.to_bytes(8, "big"))
        if mark is not None:
            self.txn.set_value(self.MARK, mark.to_bytes(8, "big"))

    def _keep_only(self, live: dict[bytes, bytes], held: dict[bytes, bytes]) -> None:
        """Make the mirror (``held``: its entries) exactly ``live`` (hash -> node), writing only what differs."""
        for node_hash in held:
            if node_hash not in live:
                self.txn.delete(self.NODES, node_hash)
        for node_hash, node in live.items():
            if node_hash not in held:
                self.txn.put(self.NODES, node_hash, node)
        self._set_counts(len(live), len(live))

    def receive(self, view: RelayView) -> None:
        """Take a view's nodes: a full view replaces the mirror, a delta adds to it."""
        if view.full:
            self._keep_only({blake2_256(node): node for node in view.nodes}, self.txn.items(self.NODES))
            return
        # One backend read for the whole view (most of a delta's nodes are new, so each ``get`` went to the
        # backend on its own): 58,000 received nodes in the simulator benchmark.
        hashed = [(blake2_256(node), node) for node in view.nodes]
        txn = self.txn
        txn.prefetch(self.NODES, [node_hash for node_hash, _ in hashed])
        added = 0
        for node_hash, node in hashed:
            if txn.get(self.NODES, node_hash) is None:
                txn.put(self.NODES, node_hash, node)
                added += 1
        if added:
            self._set_counts(self.count() + added)

    def collect_if_due(self, relay_root: bytes, subscriptions: Subscriptions) -> None:
        """Keep only P_n once the mirror holds more than twice what it held after its last collection (and more
        than ``MIRROR_GC_FLOOR`` nodes). Raises IncompleteProofError if the mirror lacks a node of P_n."""
        count = self.count()
        if count <= max(2 * self._counter(self.MARK), MIRROR_GC_FLOOR):
            return
        # Marks over a snapshot of the mirror (NodesByHash) rather than through StateTransaction.get, and diffs
        # against it: collection runs often on a workload whose updates change most of a small P_n
        # (docs/benchmarks.md, "Measured code choices").
        held = self.txn.items(self.NODES)
        self._keep_only(live_nodes(NodesByHash(held), relay_root, subscriptions), held)


def live_nodes(source: NodeSource, relay_root: bytes, subscriptions: Subscriptions) -> dict[bytes, bytes]:
    """Hash -> node of P_n over ``source``: the main-trie paths to the declared publishers' child roots and
    the child-trie paths to their declared keys (what ``RelayTries.prove`` gives Stage R)."""
    declared = subscriptions.merged()
    # One walk per publisher records its main-trie path and gives its child root (nodes_on_paths over the root
    # entries, then a lookup of each, walked every path twice).
    tracker = AccessTracker()
    child_roots = [(lookup(source, relay_root, prefixed_child_storage_key(para), tracker), keys)
                   for para, keys in declared.items()]
    live = tracker.accessed
    for child_root, keys in child_roots:
        if child_root is not None:
            live.update(nodes_on_paths(source, child_root, keys))
    return live
