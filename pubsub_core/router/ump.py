"""Upward Message Passing: acceptance, enactment into the relay dispatch queues, weighted dispatch.

Invariants this module relies on and keeps (checked by ``invariants.check_invariants``):
- the keys of RelayDispatchQueues and RelayDispatchQueueSize are exactly the items of NeedsDispatch;
- RelayDispatchQueueSize for P equals (len, total bytes) of RelayDispatchQueues for P, and no queue is empty;
- NeedsDispatch is strictly ascending;
- NextDispatchRoundStartWith, if set, is in NeedsDispatch.
"""

from __future__ import annotations

import bisect

from pubsub_core.errors import PubSubError
from pubsub_core.hashing import blake2_256
from pubsub_core.router.config import RouterConfig
from pubsub_core.router.errors import (
    TooManyUpwardMessages,
    UpwardMessageTooLarge,
    UpwardQueueCountExceeded,
    UpwardQueueSizeExceeded,
)
from pubsub_core.router.events import UpwardMessageDispatched
from pubsub_core.router.interfaces import DispatchResult, Dispatcher
from pubsub_core.router.storage import RouterStorage
from state import StateTransaction

__all__ = ["check_upward_messages", "enact_upward_messages", "process_pending_upward_messages"]


def check_upward_messages(
    txn: StateTransaction, config: RouterConfig, para: int, messages: tuple[bytes, ...]
) -> None:
    """Acceptance: count and size limits, and room in the para's relay dispatch queue."""
    if len(messages) > config.max_upward_message_num_per_candidate:
        raise TooManyUpwardMessages(para, len(messages), config.max_upward_message_num_per_candidate)
    for index, message in enumerate(messages):
        if len(message) > config.max_upward_message_size:
            raise UpwardMessageTooLarge(para, index, len(message), config.max_upward_message_size)
    queued, queued_bytes = RouterStorage(txn).relay_dispatch_queue_size(para)
    if queued + len(messages) > config.max_upward_queue_count:
        raise UpwardQueueCountExceeded(para, queued, len(messages), config.max_upward_queue_count)
    incoming_bytes = sum(len(message) for message in messages)
    if queued_bytes + incoming_bytes > config.max_upward_queue_size:
        raise UpwardQueueSizeExceeded(para, queued_bytes, incoming_bytes, config.max_upward_queue_size)


def enact_upward_messages(txn: StateTransaction, para: int, messages: tuple[bytes, ...]) -> None:
    """Enactment: append the messages to the para's queue, update its size, and mark it as needing dispatch."""
    if not messages:
        return
    storage = RouterStorage(txn)
    queue = storage.relay_dispatch_queue(para)
    queue.extend(messages)
    count, total_bytes = storage.relay_dispatch_queue_size(para)
    storage.set_relay_dispatch_queue(para, queue)
    storage.set_relay_dispatch_queue_size(
        para, count + len(messages), total_bytes + sum(len(message) for message in messages)
    )
    needs = storage.needs_dispatch()
    position = bisect.bisect_left(needs, para)
    if position == len(needs) or needs[position] != para:
        needs.insert(position, para)
        storage.set_needs_dispatch(needs)


def _dispatch_one(txn: StateTransaction, dispatch: Dispatcher, para: int, message: bytes) -> UpwardMessageDispatched:
    """Run one message in its own atomic section; a protocol error from the executor counts as a failure."""
    try:
        with txn.atomic():
            result = dispatch(para, message)
    except PubSubError as exc:
        result = DispatchResult(weight_used=0, success=False, error=f"{type(exc).__name__}: {exc}")
    return UpwardMessageDispatched(para, blake2_256(message), result.weight_used, result.success, result.error)


def process_pending_upward_messages(
    txn: StateTransaction, config: RouterConfig, dispatch: Dispatcher
) -> list[UpwardMessageDispatched]:
    """Dispatch queued upward messages round-robin over NeedsDispatch until the step weight is reached.

    One message per para per visit, starting at NextDispatchRoundStartWith. When the cumulative weight
    reaches ``preferred_dispatchable_upward_messages_step_weight`` the round stops, and the *next* para in the
    cycle is stored as where the next round starts (Polkadot's cursor; the Router Module's literal "set it to P" would
    serve P first again and starve the others when one message outweighs the step). Never fails: a failed
    or raising dispatch is reported in its event and the message is consumed.
    """
    storage = RouterStorage(txn)
    needs = storage.needs_dispatch()
    if not needs:
        storage.set_next_dispatch_round_start_with(None)
        return []
    start = storage.next_dispatch_round_start_with()
    cursor = needs.index(start) if start in needs else 0
    queues: dict[int, list[bytes]] = {}
    heads: dict[int, int] = {}
    events: list[UpwardMessageDispatched] = []
    total_weight = 0
    next_start: int | None = None
    while needs:
        para = needs[cursor]
        if para not in queues:
            queues[para] = storage.relay_dispatch_queue(para)
            heads[para] = 0
        message = queues[para][heads[para]]
        heads[para] += 1
        event = _dispatch_one(txn, dispatch, para, message)
        events.append(event)
        total_weight += event.weight_used
        if heads[para] == len(queues[para]):
            del needs[cursor]
        else:
            cursor += 1
        if not needs:
            break
        cursor %= len(needs)
        if total_weight >= config.preferred_dispatchable_upward_messages_step_weight:
            next_start = needs[cursor]
            break
    for para in sorted(queues):
        remaining = queues[para][heads[para] :]
        storage.set_relay_dispatch_queue(para, remaining)
        storage.set_relay_dispatch_queue_size(para, len(remaining), sum(len(message) for message in remaining))
    storage.set_needs_dispatch(needs)
    storage.set_next_dispatch_round_start_with(next_start)
    return events
