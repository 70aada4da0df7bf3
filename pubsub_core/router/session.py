"""Para offboarding and the Router's session change: outgoing paras, open requests, close requests.

Choices where the Router Module is silent (see docs/router.md):
- an outgoing para also loses its HRMP watermark and digests, and every open request it takes part in is
  dropped with its deposits refunded (the Router Module lets requests "die out", but it also deletes the para's
  request counters, which would leave the counter invariants broken until they do);
- a confirmed request whose sender or recipient is no longer a valid para is dropped with both deposits
  refunded instead of leaving them reserved forever;
- every refund goes back to the para that paid, whether or not it is offboarded.
"""

from __future__ import annotations

import bisect

from pubsub_core.router.config import RouterConfig
from pubsub_core.router.events import (
    HrmpChannelOpened,
    HrmpOpenChannelDropped,
    HrmpOpenRequestExpired,
    RouterEvent,
)
from pubsub_core.router.hrmp import open_channel, remove_channel
from pubsub_core.router.interfaces import DepositLedger, ParaRegistry
from pubsub_core.router.records import HrmpChannelId, HrmpOpenChannelRequest
from pubsub_core.router.storage import RouterStorage
from state import StateTransaction

__all__ = ["on_session_change", "schedule_para_cleanup"]


def schedule_para_cleanup(txn: StateTransaction, para: int) -> None:
    """Add ``para`` to OutgoingParas, kept ascending and without repeats; it is cleaned at the session change."""
    storage = RouterStorage(txn)
    outgoing = storage.outgoing_paras()
    position = bisect.bisect_left(outgoing, para)
    if position == len(outgoing) or outgoing[position] != para:
        outgoing.insert(position, para)
        storage.set_outgoing_paras(outgoing)


def _refund_request(
    txn: StateTransaction, balances: DepositLedger, channel_id: HrmpChannelId, request: HrmpOpenChannelRequest
) -> None:
    balances.unreserve(txn, channel_id.sender, request.sender_deposit)
    if request.confirmed:
        balances.unreserve(txn, channel_id.recipient, request.recipient_deposit)


def _decrement(value: int) -> int:
    return value - 1 if value > 0 else 0


def _clean_outgoing_para(
    txn: StateTransaction, balances: DepositLedger, para: int, outgoing: list[int]
) -> list[RouterEvent]:
    """Remove every trace of ``para``: its channels both ways, its queues, counters and open requests."""
    storage = RouterStorage(txn)
    events: list[RouterEvent] = []
    for sender in storage.ingress_index(para):
        closed = remove_channel(txn, balances, HrmpChannelId(sender, para))
        if closed is not None:
            events.append(closed)
    for recipient in storage.egress_index(para):
        closed = remove_channel(txn, balances, HrmpChannelId(para, recipient))
        if closed is not None:
            events.append(closed)
    storage.set_downward_message_queue(para, [])
    storage.set_downward_message_queue_head(para, None)
    storage.set_relay_dispatch_queue_size(para, 0, 0)
    storage.set_relay_dispatch_queue(para, [])
    storage.set_open_request_count(para, 0)
    storage.set_accepted_request_count(para, 0)
    storage.set_needs_dispatch([p for p in storage.needs_dispatch() if p != para])
    if storage.next_dispatch_round_start_with() == para:
        storage.set_next_dispatch_round_start_with(None)
    storage.set_watermark(para, None)
    storage.set_channel_digests(para, [])
    kept: list[HrmpChannelId] = []
    for channel_id in storage.open_requests_list():
        request = storage.open_request(channel_id)
        if request is None or not channel_id.is_participant(para):
            kept.append(channel_id)
            continue
        _refund_request(txn, balances, channel_id, request)
        if channel_id.sender not in outgoing:
            storage.set_open_request_count(channel_id.sender, _decrement(storage.open_request_count(channel_id.sender)))
        if request.confirmed and channel_id.recipient not in outgoing:
            storage.set_accepted_request_count(
                channel_id.recipient, _decrement(storage.accepted_request_count(channel_id.recipient))
            )
        storage.set_open_request(channel_id, None)
        events.append(HrmpOpenChannelDropped(channel_id))
    storage.set_open_requests_list(kept)
    return events


def _process_open_requests(
    txn: StateTransaction, config: RouterConfig, paras: ParaRegistry, balances: DepositLedger
) -> list[RouterEvent]:
    """Age unconfirmed requests (refunding those reaching the TTL) and turn confirmed ones into channels."""
    storage = RouterStorage(txn)
    events: list[RouterEvent] = []
    kept: list[HrmpChannelId] = []
    for channel_id in storage.open_requests_list():
        request = storage.open_request(channel_id)
        if request is None:
            continue
        if not request.confirmed:
            age = request.age + 1
            if age < config.hrmp_open_request_ttl:
                storage.set_open_request(
                    channel_id,
                    HrmpOpenChannelRequest(
                        confirmed=False,
                        age=age,
                        sender_deposit=request.sender_deposit,
                        limit_used_places=request.limit_used_places,
                        limit_used_bytes=request.limit_used_bytes,
                        limit_message_size=request.limit_message_size,
                        recipient_deposit=request.recipient_deposit,
                    ),
                )
                kept.append(channel_id)
                continue
            _refund_request(txn, balances, channel_id, request)
            events.append(HrmpOpenRequestExpired(channel_id))
        else:
            if paras.is_valid_para(txn, channel_id.sender) and paras.is_valid_para(txn, channel_id.recipient):
                open_channel(txn, channel_id, request)
                events.append(HrmpChannelOpened(channel_id))
            else:
                _refund_request(txn, balances, channel_id, request)
                events.append(HrmpOpenChannelDropped(channel_id))
            storage.set_accepted_request_count(
                channel_id.recipient, _decrement(storage.accepted_request_count(channel_id.recipient))
            )
        storage.set_open_request_count(channel_id.sender, _decrement(storage.open_request_count(channel_id.sender)))
        storage.set_open_request(channel_id, None)
    storage.set_open_requests_list(kept)
    return events


def _process_close_requests(txn: StateTransaction, balances: DepositLedger) -> list[RouterEvent]:
    """Close every channel registered for closing this session, refunding both deposits."""
    storage = RouterStorage(txn)
    events: list[RouterEvent] = []
    for channel_id in storage.close_requests_list():
        closed = remove_channel(txn, balances, channel_id)
        if closed is not None:
            events.append(closed)
        storage.set_close_request(channel_id, False)
    storage.set_close_requests_list([])
    return events


def on_session_change(
    txn: StateTransaction, config: RouterConfig, paras: ParaRegistry, balances: DepositLedger
) -> list[RouterEvent]:
    """The Router's part of a session change, applied fully or not at all; ``config`` is the new session's."""
    storage = RouterStorage(txn)
    events: list[RouterEvent] = []
    with txn.atomic():
        outgoing = storage.outgoing_paras()
        storage.set_outgoing_paras([])
        for para in outgoing:
            events.extend(_clean_outgoing_para(txn, balances, para, outgoing))
        events.extend(_process_open_requests(txn, config, paras, balances))
        events.extend(_process_close_requests(txn, balances))
    return events
