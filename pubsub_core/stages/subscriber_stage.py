"""Stage S, one subscriber parachain: per relay view, budget, collate (Prune), process_relay_proof (Verify),
then the block's subscriber calls, committed once; emits updates, pallet events and PoV metering."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from state import MemoryBackend, StateBackend, StateTransaction

from pubsub_core.errors import PubSubError
from pubsub_core.relay import canonical_json
from pubsub_core.subscriber import (
    BlockContext,
    PalletEvent,
    SubscribedKey,
    SubscriberConfig,
    clear_publisher_cache,
    collate,
    declared_subscriptions,
    enable_publisher,
    process_relay_proof,
    pubsub_budget,
    set_subscriptions,
)
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
from pubsub_core.subscriber.errors import SubscriberCallError
from pubsub_core.stages.records import OutputRecord, RelayView, SubscriberCallFailed

__all__ = ["SubscriberStage", "ViewConflictError", "ViewProver"]

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


class ViewProver:
    """A relay view as the collator's relay state: its root, and its nodes as the proof of any keys asked for
    (they cover every subscribed key; the collator's pruning keeps only what the traversal reads)."""

    __slots__ = ("nodes", "relay_root")

    def __init__(self, view: RelayView) -> None:
        self.relay_root = view.relay_root
        self.nodes = list(view.nodes)

    def prove(self, main_keys: Iterable[bytes] = (), child_keys: Mapping[int, Iterable[bytes]] | None = None) -> list[bytes]:
        return self.nodes


class SubscriberStage:
    """One subscriber's state (a MemoryBackend in the simulator) and its per-block step."""

    def __init__(self, realm: str, subscriber: int, config: SubscriberConfig, backend: StateBackend | None = None) -> None:
        self.realm = realm
        self.subscriber = subscriber
        self.config = config
        self.backend = backend if backend is not None else MemoryBackend()

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
        subscriptions = declared_subscriptions(txn)
        try:
            proof = collate(ViewProver(view), txn, ctx, subscriptions, config)
            outcome = process_relay_proof(txn, proof, ctx, subscriptions, config)
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
            OutputRecord(f"{self.realm}.updates", key, f"{self.subscriber}-{view.number}-u{u.seq}", u.to_json())
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
        return OutputRecord(f"{self.realm}.events", str(self.subscriber), event.id, event.to_json())


class _ViewLedger:
    """Stage S's record of the views it applied (namespaces ``stage.*``): the last one, the digests of the
    latest ``VIEW_WINDOW``, and views waiting for their predecessor (keyed by it)."""

    LAST = "stage.LastView"  # value: u64 BE block number
    DIGESTS = "stage.ViewDigests"  # u64 BE block number -> 32-byte digest
    PARKED = "stage.ParkedViews"  # u64 BE predecessor + 1 (0: none) -> digest ‖ view JSON

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
