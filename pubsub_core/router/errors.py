"""Errors of the relay chain Router (UMP, DMP, HRMP): one typed class per failed check, carrying its data.

Acceptance errors reject a candidate's messages; entry-point errors reject a signed HRMP call; in both
cases nothing was written (callers run inside ``txn.atomic()``).
"""

from __future__ import annotations

from pubsub_core.errors import PubSubError

__all__ = [
    "AcceptanceError",
    "DownwardMessageTooLarge",
    "DownwardMessageUnroutable",
    "DownwardMessagesNotProcessed",
    "EntryPointError",
    "HrmpAcceptInsufficientBalance",
    "HrmpAcceptInboundLimitReached",
    "HrmpChannelAlreadyExists",
    "HrmpChannelBytesExceeded",
    "HrmpChannelNotFound",
    "HrmpChannelPlacesExceeded",
    "HrmpCloseAlreadyRequested",
    "HrmpCloseChannelNotFound",
    "HrmpCloseNotParticipant",
    "HrmpMessageSizeOutOfRange",
    "HrmpMessageTooLarge",
    "HrmpOpenInsufficientBalance",
    "HrmpOpenInvalidRecipient",
    "HrmpOpenOutboundLimitReached",
    "HrmpOpenPlacesOutOfRange",
    "HrmpOpenRequestAlreadyConfirmed",
    "HrmpOpenRequestAlreadyExists",
    "HrmpOpenRequestNotFound",
    "HrmpOpenToSelf",
    "HrmpWatermarkAheadOfContext",
    "HrmpWatermarkNotAdvanced",
    "HrmpWatermarkWithoutDigest",
    "ProcessedDownwardMessagesExceedQueue",
    "RouterConfigError",
    "RouterError",
    "TooManyHorizontalMessages",
    "TooManyUpwardMessages",
    "UpwardMessageTooLarge",
    "UpwardQueueCountExceeded",
    "UpwardQueueSizeExceeded",
]


class RouterError(PubSubError):
    """Base class for every error of the Router module."""


class RouterConfigError(RouterError):
    """A router configuration value is out of its allowed range."""

    def __init__(self, field: str, value: int, reason: str) -> None:
        super().__init__(f"Router config field {field} = {value} is invalid: {reason}.")
        self.field = field
        self.value = value
        self.reason = reason


# -- candidate acceptance ---------------------------------------------------------------------
class AcceptanceError(RouterError):
    """A candidate's message commitments fail an acceptance check; the candidate is rejected."""

    def __init__(self, para: int, message: str) -> None:
        super().__init__(message)
        self.para = para


class TooManyUpwardMessages(AcceptanceError):
    """check_upward_messages: more messages than max_upward_message_num_per_candidate."""

    def __init__(self, para: int, count: int, limit: int) -> None:
        super().__init__(para, f"Para {para} sent {count} upward messages, more than the limit of {limit} per candidate.")
        self.count = count
        self.limit = limit


class UpwardMessageTooLarge(AcceptanceError):
    """check_upward_messages: one message exceeds max_upward_message_size."""

    def __init__(self, para: int, index: int, size: int, limit: int) -> None:
        super().__init__(
            para, f"Upward message {index} of para {para} has {size} bytes, more than the limit of {limit} bytes."
        )
        self.index = index
        self.size = size
        self.limit = limit


class UpwardQueueCountExceeded(AcceptanceError):
    """check_upward_messages: the relay dispatch queue would hold more than max_upward_queue_count messages."""

    def __init__(self, para: int, queued: int, incoming: int, limit: int) -> None:
        super().__init__(
            para,
            f"The upward queue of para {para} holds {queued} messages; {incoming} more would exceed "
            f"the capacity of {limit} messages.",
        )
        self.queued = queued
        self.incoming = incoming
        self.limit = limit


class UpwardQueueSizeExceeded(AcceptanceError):
    """check_upward_messages: the relay dispatch queue would hold more than max_upward_queue_size bytes."""

    def __init__(self, para: int, queued_bytes: int, incoming_bytes: int, limit: int) -> None:
        super().__init__(
            para,
            f"The upward queue of para {para} holds {queued_bytes} bytes; {incoming_bytes} more would exceed "
            f"the capacity of {limit} bytes.",
        )
        self.queued_bytes = queued_bytes
        self.incoming_bytes = incoming_bytes
        self.limit = limit


class ProcessedDownwardMessagesExceedQueue(AcceptanceError):
    """check_processed_downward_messages: the candidate processed more messages than are queued."""

    def __init__(self, para: int, processed: int, queue_length: int) -> None:
        super().__init__(
            para,
            f"Para {para} claims {processed} processed downward messages but only {queue_length} are queued.",
        )
        self.processed = processed
        self.queue_length = queue_length


class DownwardMessagesNotProcessed(AcceptanceError):
    """check_processed_downward_messages: the queue is not empty but the candidate processed nothing."""

    def __init__(self, para: int, queue_length: int) -> None:
        super().__init__(
            para, f"Para {para} processed no downward message although {queue_length} are queued for it."
        )
        self.queue_length = queue_length


class HrmpWatermarkNotAdvanced(AcceptanceError):
    """check_hrmp_watermark: the new watermark is not strictly greater than the stored one."""

    def __init__(self, para: int, new_watermark: int, current_watermark: int) -> None:
        super().__init__(
            para,
            f"The HRMP watermark {new_watermark} of para {para} does not advance past the current "
            f"watermark {current_watermark}.",
        )
        self.new_watermark = new_watermark
        self.current_watermark = current_watermark


class HrmpWatermarkAheadOfContext(AcceptanceError):
    """check_hrmp_watermark: the new watermark is beyond the candidate's context block number."""

    def __init__(self, para: int, new_watermark: int, context_block: int) -> None:
        super().__init__(
            para,
            f"The HRMP watermark {new_watermark} of para {para} is ahead of the context block {context_block}.",
        )
        self.new_watermark = new_watermark
        self.context_block = context_block


class HrmpWatermarkWithoutDigest(AcceptanceError):
    """check_hrmp_watermark: the watermark is neither the context block nor a block with inbound messages."""

    def __init__(self, para: int, new_watermark: int, context_block: int) -> None:
        super().__init__(
            para,
            f"The HRMP watermark {new_watermark} of para {para} is neither the context block {context_block} "
            f"nor a block at which it received horizontal messages.",
        )
        self.new_watermark = new_watermark
        self.context_block = context_block


class TooManyHorizontalMessages(AcceptanceError):
    """verify_outbound_hrmp: more messages than hrmp_max_message_num_per_candidate."""

    def __init__(self, para: int, count: int, limit: int) -> None:
        super().__init__(
            para, f"Para {para} sent {count} horizontal messages, more than the limit of {limit} per candidate."
        )
        self.count = count
        self.limit = limit


class HrmpChannelNotFound(AcceptanceError):
    """verify_outbound_hrmp: a message is addressed to a recipient with no open channel from the sender."""

    def __init__(self, para: int, index: int, recipient: int) -> None:
        super().__init__(
            para, f"Horizontal message {index} of para {para} goes to {recipient}, but no channel {para}->{recipient} exists."
        )
        self.index = index
        self.recipient = recipient


class HrmpMessageTooLarge(AcceptanceError):
    """verify_outbound_hrmp: a message exceeds the channel's limit_message_size."""

    def __init__(self, para: int, index: int, recipient: int, size: int, limit: int) -> None:
        super().__init__(
            para,
            f"Horizontal message {index} of para {para} to {recipient} has {size} bytes, more than the "
            f"channel's message size limit of {limit}.",
        )
        self.index = index
        self.recipient = recipient
        self.size = size
        self.limit = limit


class HrmpChannelBytesExceeded(AcceptanceError):
    """verify_outbound_hrmp: the channel would hold more than limit_used_bytes."""

    def __init__(self, para: int, index: int, recipient: int, used_bytes: int, size: int, limit: int) -> None:
        super().__init__(
            para,
            f"Horizontal message {index} of para {para} ({size} bytes) would fill channel {para}->{recipient} "
            f"past its {limit} bytes ({used_bytes} already used).",
        )
        self.index = index
        self.recipient = recipient
        self.used_bytes = used_bytes
        self.size = size
        self.limit = limit


class HrmpChannelPlacesExceeded(AcceptanceError):
    """verify_outbound_hrmp: the channel would hold more than limit_used_places messages."""

    def __init__(self, para: int, index: int, recipient: int, used_places: int, limit: int) -> None:
        super().__init__(
            para,
            f"Horizontal message {index} of para {para} would fill channel {para}->{recipient} past its "
            f"{limit} places ({used_places} already used).",
        )
        self.index = index
        self.recipient = recipient
        self.used_places = used_places
        self.limit = limit


# -- DMP ----------------------------------------------------------------------------------------
class DownwardMessageTooLarge(RouterError):
    """queue_downward_message: the message exceeds max_downward_message_size."""

    def __init__(self, para: int, size: int, limit: int) -> None:
        super().__init__(f"A downward message of {size} bytes to para {para} exceeds the limit of {limit} bytes.")
        self.para = para
        self.size = size
        self.limit = limit


class DownwardMessageUnroutable(RouterError):
    """queue_downward_message: the destination is not a valid para."""

    def __init__(self, para: int) -> None:
        super().__init__(f"Para {para} is not a valid para; the downward message cannot be routed.")
        self.para = para


# -- HRMP entry points ----------------------------------------------------------------------------
class EntryPointError(RouterError):
    """A signed HRMP channel call fails one of its checks; nothing was written or reserved."""

    def __init__(self, origin: int, message: str) -> None:
        super().__init__(message)
        self.origin = origin


class HrmpOpenToSelf(EntryPointError):
    """hrmp_init_open_channel: origin and recipient are the same para."""

    def __init__(self, origin: int) -> None:
        super().__init__(origin, f"Para {origin} cannot open an HRMP channel to itself.")


class HrmpOpenPlacesOutOfRange(EntryPointError):
    """hrmp_init_open_channel: max_places is zero or above hrmp_channel_max_places."""

    def __init__(self, origin: int, max_places: int, limit: int) -> None:
        super().__init__(origin, f"Para {origin} asked for {max_places} places; it must be between 1 and {limit}.")
        self.max_places = max_places
        self.limit = limit


class HrmpMessageSizeOutOfRange(EntryPointError):
    """hrmp_init_open_channel: max_message_size is zero or above hrmp_channel_max_message_size."""

    def __init__(self, origin: int, max_message_size: int, limit: int) -> None:
        super().__init__(
            origin, f"Para {origin} asked for a message size of {max_message_size}; it must be between 1 and {limit}."
        )
        self.max_message_size = max_message_size
        self.limit = limit


class HrmpOpenInvalidRecipient(EntryPointError):
    """hrmp_init_open_channel: the recipient is not a valid para."""

    def __init__(self, origin: int, recipient: int) -> None:
        super().__init__(origin, f"Para {origin} cannot open a channel to {recipient}: it is not a valid para.")
        self.recipient = recipient


class HrmpChannelAlreadyExists(EntryPointError):
    """hrmp_init_open_channel: the channel is already open."""

    def __init__(self, origin: int, recipient: int) -> None:
        super().__init__(origin, f"The HRMP channel {origin}->{recipient} already exists.")
        self.recipient = recipient


class HrmpOpenRequestAlreadyExists(EntryPointError):
    """hrmp_init_open_channel: an open request for the channel is already pending."""

    def __init__(self, origin: int, recipient: int) -> None:
        super().__init__(origin, f"An open request for the HRMP channel {origin}->{recipient} is already pending.")
        self.recipient = recipient


class HrmpOpenOutboundLimitReached(EntryPointError):
    """hrmp_init_open_channel: open channels plus pending requests already reach the outbound limit."""

    def __init__(self, origin: int, channels: int, requests: int, limit: int) -> None:
        super().__init__(
            origin,
            f"Para {origin} has {channels} outbound channels and {requests} open requests; the limit is {limit}.",
        )
        self.channels = channels
        self.requests = requests
        self.limit = limit


class HrmpOpenInsufficientBalance(EntryPointError):
    """hrmp_init_open_channel: the origin cannot cover hrmp_sender_deposit."""

    def __init__(self, origin: int, balance: int, deposit: int) -> None:
        super().__init__(origin, f"Para {origin} has a free balance of {balance}, less than the sender deposit {deposit}.")
        self.balance = balance
        self.deposit = deposit


class HrmpOpenRequestNotFound(EntryPointError):
    """hrmp_accept_open_channel: no request from the sender to the origin is pending."""

    def __init__(self, origin: int, sender: int) -> None:
        super().__init__(origin, f"No open request for the HRMP channel {sender}->{origin} is pending.")
        self.sender = sender


class HrmpOpenRequestAlreadyConfirmed(EntryPointError):
    """hrmp_accept_open_channel: the request was already accepted."""

    def __init__(self, origin: int, sender: int) -> None:
        super().__init__(origin, f"The open request for the HRMP channel {sender}->{origin} is already confirmed.")
        self.sender = sender


class HrmpAcceptInboundLimitReached(EntryPointError):
    """hrmp_accept_open_channel: inbound channels plus accepted requests already reach the inbound limit."""

    def __init__(self, origin: int, channels: int, accepted: int, limit: int) -> None:
        super().__init__(
            origin,
            f"Para {origin} has {channels} inbound channels and {accepted} accepted requests; the limit is {limit}.",
        )
        self.channels = channels
        self.accepted = accepted
        self.limit = limit


class HrmpAcceptInsufficientBalance(EntryPointError):
    """hrmp_accept_open_channel: the origin cannot cover hrmp_recipient_deposit."""

    def __init__(self, origin: int, balance: int, deposit: int) -> None:
        super().__init__(
            origin, f"Para {origin} has a free balance of {balance}, less than the recipient deposit {deposit}."
        )
        self.balance = balance
        self.deposit = deposit


class HrmpCloseNotParticipant(EntryPointError):
    """hrmp_close_channel: the origin is neither the sender nor the recipient of the channel."""

    def __init__(self, origin: int, sender: int, recipient: int) -> None:
        super().__init__(origin, f"Para {origin} is not a party to the HRMP channel {sender}->{recipient}.")
        self.sender = sender
        self.recipient = recipient


class HrmpCloseChannelNotFound(EntryPointError):
    """hrmp_close_channel: the channel does not exist."""

    def __init__(self, origin: int, sender: int, recipient: int) -> None:
        super().__init__(origin, f"The HRMP channel {sender}->{recipient} does not exist.")
        self.sender = sender
        self.recipient = recipient


class HrmpCloseAlreadyRequested(EntryPointError):
    """hrmp_close_channel: closing the channel was already requested this session."""

    def __init__(self, origin: int, sender: int, recipient: int) -> None:
        super().__init__(origin, f"Closing the HRMP channel {sender}->{recipient} was already requested.")
        self.sender = sender
        self.recipient = recipient
