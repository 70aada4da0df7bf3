"""Stage S, one subscriber parachain: per relay view, budget, collate (Prune), process_relay_proof (Verify),
then the block's subscriber calls, committed once; emits updates, pallet events and PoV metering."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from state import MemoryBackend, StateBackend, StateTransaction

from pubsub_core.errors import PubSubError
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
from pubsub_core.subscriber.calls import EnablePublisher, SetSubscriptions, decode_subscriber_call
from pubsub_core.stages.errors import StageError
from pubsub_core.subscriber.errors import SubscriberCallError
from pubsub_core.stages.records import OutputRecord, RelayView, SubscriberCallFailed

__all__ = ["SubscriberStage", "ViewProver"]


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
                call = decode_subscriber_call(forwarded.call, config)
                if isinstance(call, SetSubscriptions):
                    set_subscriptions(txn, {p: [SubscribedKey(k) for k in keys] for p, keys in call.subscriptions}, config)
                    continue
                apply = enable_publisher if isinstance(call, EnablePublisher) else clear_publisher_cache
                events.append(self._event(apply(txn, call.publisher, subscriber=self.subscriber, at=view.number, index=index)))
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

    def _event(self, event: PalletEvent) -> OutputRecord:
        return OutputRecord(f"{self.realm}.events", str(self.subscriber), event.id, event.to_json())
