"""Horizontal Relay-routed Message Passing: acceptance, enactment, and the channel-management entry points.

Invariants this module relies on and keeps (checked by ``invariants.check_invariants``):
- HrmpOpenChannelRequests and HrmpOpenChannelRequestsList hold the same channels, the list without repeats;
  likewise HrmpCloseChannelRequests and HrmpCloseChannelRequestsList;
- HrmpOpenChannelRequestCount[X] = number of requests (X, _); HrmpAcceptedChannelRequestCount[X] = number of
  confirmed requests (_, X);
- the ingress index of P lists exactly the senders of channels (_, P), the egress index of P exactly the
  recipients of channels (P, _), both strictly ascending; no channel exists outside the indexes;
- channel contents exist only for open channels; a channel's used_places/used_bytes equal the count and
  total size of its contents and stay within its limits; contents are sent_at-ordered;
- each digest list of P is non-empty and free of repeats, digest blocks strictly increase and lie above
  P's watermark, and every message in a channel (S, P) at block B is announced by a digest (B, [.. S ..]).
"""

from __future__ import annotations

import bisect

from pubsub_core.router.config import RouterConfig
from pubsub_core.router.errors import (
    HrmpAcceptInboundLimitReached,
    HrmpAcceptInsufficientBalance,
    HrmpChannelAlreadyExists,
    HrmpChannelBytesExceeded,
    HrmpChannelNotFound,
    HrmpChannelPlacesExceeded,
    HrmpCloseAlreadyRequested,
    HrmpCloseChannelNotFound,
    HrmpCloseNotParticipant,
    HrmpMessageSizeOutOfRange,
    HrmpMessageTooLarge,
    HrmpOpenInsufficientBalance,
    HrmpOpenInvalidRecipient,
    HrmpOpenOutboundLimitReached,
    HrmpOpenPlacesOutOfRange,
    HrmpOpenRequestAlreadyConfirmed,
    HrmpOpenRequestAlreadyExists,
    HrmpOpenRequestNotFound,
    HrmpOpenToSelf,
    HrmpWatermarkAheadOfContext,
    HrmpWatermarkNotAdvanced,
    HrmpWatermarkWithoutDigest,
    TooManyHorizontalMessages,
)
from pubsub_core.router.events import (
    HrmpChannelClosed,
    HrmpCloseChannelRequested,
    HrmpOpenChannelAccepted,
    HrmpOpenChannelRequested,
)
from pubsub_core.router.interfaces import DepositLedger, ParaRegistry
from pubsub_core.router.records import (
    HrmpChannel,
    HrmpChannelId,
    HrmpOpenChannelRequest,
    InboundHrmpMessage,
    OutboundHrmpMessage,
    mqc_extend,
)
from pubsub_core.router.storage import RouterStorage
from state import StateTransaction

__all__ = [
    "check_hrmp_watermark",
    "hrmp_accept_open_channel",
    "hrmp_close_channel",
    "hrmp_init_open_channel",
    "open_channel",
    "prune_hrmp",
    "queue_outbound_hrmp",
    "remove_channel",
    "verify_outbound_hrmp",
]


def _insert_sorted(items: list[int], item: int) -> None:
    position = bisect.bisect_left(items, item)
    if position == len(items) or items[position] != item:
        items.insert(position, item)


# -- candidate acceptance ------------------------------------------------------------------------
def check_hrmp_watermark(txn: StateTransaction, para: int, new_watermark: int, context_block: int) -> None:
    """Acceptance: the watermark lands on the context block, or advances to a block at which the para
    received horizontal messages, never beyond the context block.

    As in Polkadot, a watermark equal to the context block is always accepted, even when it equals the
    stored one: the Router Module's strict advancement would reject a second candidate built on the same relay parent.
    """
    if new_watermark == context_block:
        return
    if new_watermark > context_block:
        raise HrmpWatermarkAheadOfContext(para, new_watermark, context_block)
    storage = RouterStorage(txn)
    current = storage.watermark(para)
    if current is not None and new_watermark <= current:
        raise HrmpWatermarkNotAdvanced(para, new_watermark, current)
    if not any(block == new_watermark for block, _ in storage.channel_digests(para)):
        raise HrmpWatermarkWithoutDigest(para, new_watermark, context_block)


def verify_outbound_hrmp(
    txn: StateTransaction, config: RouterConfig, sender: int, messages: tuple[OutboundHrmpMessage, ...]
) -> None:
    """Acceptance: every message has an open channel with room for it.

    Room is counted cumulatively over the candidate's messages to the same recipient (the Router Module checks each
    message against the stored use alone, which would let several messages together overfill a channel).
    The count limit ``hrmp_max_message_num_per_candidate`` is Polkadot's; the Router Module does not list it.
    """
    if len(messages) > config.hrmp_max_message_num_per_candidate:
        raise TooManyHorizontalMessages(sender, len(messages), config.hrmp_max_message_num_per_candidate)
    storage = RouterStorage(txn)
    use: dict[int, tuple[int, int]] = {}
    for index, message in enumerate(messages):
        channel = storage.channel(HrmpChannelId(sender, message.recipient))
        if channel is None:
            raise HrmpChannelNotFound(sender, index, message.recipient)
        size = len(message.data)
        if size > channel.limit_message_size:
            raise HrmpMessageTooLarge(sender, index, message.recipient, size, channel.limit_message_size)
        used_places, used_bytes = use.get(message.recipient, (channel.used_places, channel.used_bytes))
        if used_bytes + size > channel.limit_used_bytes:
            raise HrmpChannelBytesExceeded(sender, index, message.recipient, used_bytes, size, channel.limit_used_bytes)
        if used_places + 1 > channel.limit_used_places:
            raise HrmpChannelPlacesExceeded(sender, index, message.recipient, used_places, channel.limit_used_places)
        use[message.recipient] = (used_places + 1, used_bytes + size)


# -- candidate enactment -------------------------------------------------------------------------
def queue_outbound_hrmp(
    txn: StateTransaction, sender: int, messages: tuple[OutboundHrmpMessage, ...], now: int
) -> None:
    """Enactment: append each message to its channel at block ``now``, announce it in the recipient's
    digest, count it in the channel's use and extend the channel's MQC head."""
    storage = RouterStorage(txn)
    for index, message in enumerate(messages):
        channel_id = HrmpChannelId(sender, message.recipient)
        channel = storage.channel(channel_id)
        if channel is None:
            raise HrmpChannelNotFound(sender, index, message.recipient)
        contents = storage.channel_contents(channel_id)
        contents.append(InboundHrmpMessage(now, message.data))
        storage.set_channel_contents(channel_id, contents)
        digests = storage.channel_digests(message.recipient)
        if digests and digests[-1][0] == now:
            if sender not in digests[-1][1]:
                digests[-1][1].append(sender)
        else:
            digests.append((now, [sender]))
        storage.set_channel_digests(message.recipient, digests)
        storage.set_channel(
            channel_id,
            HrmpChannel(
                sender_deposit=channel.sender_deposit,
                recipient_deposit=channel.recipient_deposit,
                limit_used_places=channel.limit_used_places,
                limit_used_bytes=channel.limit_used_bytes,
                limit_message_size=channel.limit_message_size,
                used_places=channel.used_places + 1,
                used_bytes=channel.used_bytes + len(message.data),
                mqc_head=mqc_extend(channel.mqc_head, now, message.data),
            ),
        )


def prune_hrmp(txn: StateTransaction, recipient: int, new_watermark: int) -> None:
    """Enactment: drop the recipient's digests and inbound messages up to ``new_watermark``, free the
    channels' places and bytes, and store the new watermark."""
    storage = RouterStorage(txn)
    digests = storage.channel_digests(recipient)
    cut = 0
    while cut < len(digests) and digests[cut][0] <= new_watermark:
        cut += 1
    senders = sorted({sender for _, block_senders in digests[:cut] for sender in block_senders})
    storage.set_channel_digests(recipient, digests[cut:])
    for sender in senders:
        channel_id = HrmpChannelId(sender, recipient)
        channel = storage.channel(channel_id)
        if channel is None:
            continue
        contents = storage.channel_contents(channel_id)
        kept = [message for message in contents if message.sent_at > new_watermark]
        pruned_bytes = sum(len(message.data) for message in contents) - sum(len(message.data) for message in kept)
        storage.set_channel_contents(channel_id, kept)
        storage.set_channel(
            channel_id,
            HrmpChannel(
                sender_deposit=channel.sender_deposit,
                recipient_deposit=channel.recipient_deposit,
                limit_used_places=channel.limit_used_places,
                limit_used_bytes=channel.limit_used_bytes,
                limit_message_size=channel.limit_message_size,
                used_places=channel.used_places - (len(contents) - len(kept)),
                used_bytes=channel.used_bytes - pruned_bytes,
                mqc_head=channel.mqc_head,
            ),
        )
    storage.set_watermark(recipient, new_watermark)


# -- channel removal (session change) -------------------------------------------------------------
def remove_channel(txn: StateTransaction, balances: DepositLedger, channel_id: HrmpChannelId) -> HrmpChannelClosed | None:
    """Close a channel if it exists: refund both deposits, drop it, its contents and its index entries."""
    storage = RouterStorage(txn)
    channel = storage.channel(channel_id)
    if channel is None:
        return None
    balances.unreserve(txn, channel_id.sender, channel.sender_deposit)
    balances.unreserve(txn, channel_id.recipient, channel.recipient_deposit)
    storage.set_channel(channel_id, None)
    storage.set_channel_contents(channel_id, [])
    storage.set_egress_index(
        channel_id.sender, [p for p in storage.egress_index(channel_id.sender) if p != channel_id.recipient]
    )
    storage.set_ingress_index(
        channel_id.recipient, [p for p in storage.ingress_index(channel_id.recipient) if p != channel_id.sender]
    )
    return HrmpChannelClosed(channel_id)


def open_channel(txn: StateTransaction, channel_id: HrmpChannelId, request: HrmpOpenChannelRequest) -> None:
    """Turn a confirmed request into an empty channel with the request's deposits and limits."""
    storage = RouterStorage(txn)
    storage.set_channel(
        channel_id,
        HrmpChannel(
            sender_deposit=request.sender_deposit,
            recipient_deposit=request.recipient_deposit,
            limit_used_places=request.limit_used_places,
            limit_used_bytes=request.limit_used_bytes,
            limit_message_size=request.limit_message_size,
            used_places=0,
            used_bytes=0,
            mqc_head=bytes(32),
        ),
    )
    ingress = storage.ingress_index(channel_id.recipient)
    _insert_sorted(ingress, channel_id.sender)
    storage.set_ingress_index(channel_id.recipient, ingress)
    egress = storage.egress_index(channel_id.sender)
    _insert_sorted(egress, channel_id.recipient)
    storage.set_egress_index(channel_id.sender, egress)


# -- entry points ------------------------------------------------------------------------------
def hrmp_init_open_channel(
    txn: StateTransaction,
    config: RouterConfig,
    paras: ParaRegistry,
    balances: DepositLedger,
    origin: int,
    recipient: int,
    max_places: int,
    max_message_size: int,
) -> HrmpOpenChannelRequested:
    """Signed call by ``origin``: request a channel origin->recipient, reserving the sender deposit."""
    if origin == recipient:
        raise HrmpOpenToSelf(origin)
    if not 0 < max_places <= config.hrmp_channel_max_places:
        raise HrmpOpenPlacesOutOfRange(origin, max_places, config.hrmp_channel_max_places)
    if not 0 < max_message_size <= config.hrmp_channel_max_message_size:
        raise HrmpMessageSizeOutOfRange(origin, max_message_size, config.hrmp_channel_max_message_size)
    if not paras.is_valid_para(txn, recipient):
        raise HrmpOpenInvalidRecipient(origin, recipient)
    storage = RouterStorage(txn)
    channel_id = HrmpChannelId(origin, recipient)
    if storage.channel(channel_id) is not None:
        raise HrmpChannelAlreadyExists(origin, recipient)
    if storage.open_request(channel_id) is not None:
        raise HrmpOpenRequestAlreadyExists(origin, recipient)
    limit = (
        config.hrmp_max_parachain_outbound_channels
        if paras.is_parachain(txn, origin)
        else config.hrmp_max_parathread_outbound_channels
    )
    channels = len(storage.egress_index(origin))
    requests = storage.open_request_count(origin)
    if channels + requests >= limit:
        raise HrmpOpenOutboundLimitReached(origin, channels, requests, limit)
    balance = balances.free_balance(txn, origin)
    if balance < config.hrmp_sender_deposit:
        raise HrmpOpenInsufficientBalance(origin, balance, config.hrmp_sender_deposit)
    with txn.atomic():
        balances.reserve(txn, origin, config.hrmp_sender_deposit)
        storage.set_open_request_count(origin, requests + 1)
        storage.set_open_requests_list([*storage.open_requests_list(), channel_id])
        storage.set_open_request(
            channel_id,
            HrmpOpenChannelRequest(
                confirmed=False,
                age=0,
                sender_deposit=config.hrmp_sender_deposit,
                limit_used_places=max_places,
                limit_used_bytes=config.hrmp_channel_max_size,
                limit_message_size=max_message_size,
                recipient_deposit=0,
            ),
        )
    return HrmpOpenChannelRequested(channel_id, max_places, max_message_size, config.hrmp_channel_max_size)


def hrmp_accept_open_channel(
    txn: StateTransaction,
    config: RouterConfig,
    paras: ParaRegistry,
    balances: DepositLedger,
    origin: int,
    sender: int,
) -> HrmpOpenChannelAccepted:
    """Signed call by ``origin``: confirm the pending request sender->origin, reserving the recipient deposit."""
    storage = RouterStorage(txn)
    channel_id = HrmpChannelId(sender, origin)
    request = storage.open_request(channel_id)
    if request is None:
        raise HrmpOpenRequestNotFound(origin, sender)
    if request.confirmed:
        raise HrmpOpenRequestAlreadyConfirmed(origin, sender)
    limit = (
        config.hrmp_max_parachain_inbound_channels
        if paras.is_parachain(txn, origin)
        else config.hrmp_max_parathread_inbound_channels
    )
    channels = len(storage.ingress_index(origin))
    accepted = storage.accepted_request_count(origin)
    if channels + accepted >= limit:
        raise HrmpAcceptInboundLimitReached(origin, channels, accepted, limit)
    balance = balances.free_balance(txn, origin)
    if balance < config.hrmp_recipient_deposit:
        raise HrmpAcceptInsufficientBalance(origin, balance, config.hrmp_recipient_deposit)
    with txn.atomic():
        balances.reserve(txn, origin, config.hrmp_recipient_deposit)
        storage.set_open_request(
            channel_id,
            HrmpOpenChannelRequest(
                confirmed=True,
                age=request.age,
                sender_deposit=request.sender_deposit,
                limit_used_places=request.limit_used_places,
                limit_used_bytes=request.limit_used_bytes,
                limit_message_size=request.limit_message_size,
                recipient_deposit=config.hrmp_recipient_deposit,
            ),
        )
        storage.set_accepted_request_count(origin, accepted + 1)
    return HrmpOpenChannelAccepted(channel_id)


def hrmp_close_channel(txn: StateTransaction, origin: int, channel_id: HrmpChannelId) -> HrmpCloseChannelRequested:
    """Signed call by either party: register the channel for closing at the next session change."""
    if not channel_id.is_participant(origin):
        raise HrmpCloseNotParticipant(origin, channel_id.sender, channel_id.recipient)
    storage = RouterStorage(txn)
    if storage.channel(channel_id) is None:
        raise HrmpCloseChannelNotFound(origin, channel_id.sender, channel_id.recipient)
    if storage.has_close_request(channel_id):
        raise HrmpCloseAlreadyRequested(origin, channel_id.sender, channel_id.recipient)
    with txn.atomic():
        storage.set_close_request(channel_id, True)
        storage.set_close_requests_list([*storage.close_requests_list(), channel_id])
    return HrmpCloseChannelRequested(channel_id, origin)
