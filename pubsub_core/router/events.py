"""Typed events the Router returns (the relay chain emits them as pallet events)."""

from __future__ import annotations

from dataclasses import dataclass

from pubsub_core.router.records import HrmpChannelId

__all__ = [
    "DownwardMessageQueued",
    "HrmpChannelClosed",
    "HrmpChannelOpened",
    "HrmpCloseChannelRequested",
    "HrmpOpenChannelAccepted",
    "HrmpOpenChannelDropped",
    "HrmpOpenChannelRequested",
    "HrmpOpenRequestExpired",
    "RouterEvent",
    "UpwardMessageDispatched",
]


@dataclass(frozen=True, slots=True)
class UpwardMessageDispatched:
    """process_pending_upward_messages executed one upward message of ``para``."""

    para: int
    message_hash: bytes
    weight_used: int
    success: bool
    error: str | None


@dataclass(frozen=True, slots=True)
class DownwardMessageQueued:
    """queue_downward_message appended a message to ``para``'s queue; ``mqc_head`` is the new head."""

    para: int
    sent_at: int
    size: int
    mqc_head: bytes


@dataclass(frozen=True, slots=True)
class HrmpOpenChannelRequested:
    """hrmp_init_open_channel registered a request and reserved the sender deposit."""

    channel: HrmpChannelId
    max_places: int
    max_message_size: int
    max_total_size: int


@dataclass(frozen=True, slots=True)
class HrmpOpenChannelAccepted:
    """hrmp_accept_open_channel confirmed a request and reserved the recipient deposit."""

    channel: HrmpChannelId


@dataclass(frozen=True, slots=True)
class HrmpCloseChannelRequested:
    """hrmp_close_channel registered the channel for closing at the next session change."""

    channel: HrmpChannelId
    by: int


@dataclass(frozen=True, slots=True)
class HrmpChannelOpened:
    """At a session change, a confirmed request became an open channel."""

    channel: HrmpChannelId


@dataclass(frozen=True, slots=True)
class HrmpOpenRequestExpired:
    """At a session change, an unconfirmed request reached the TTL; the sender deposit was refunded."""

    channel: HrmpChannelId


@dataclass(frozen=True, slots=True)
class HrmpOpenChannelDropped:
    """At a session change, a request involving an offboarded para was dropped and its deposits refunded."""

    channel: HrmpChannelId


@dataclass(frozen=True, slots=True)
class HrmpChannelClosed:
    """A channel was removed (close request or offboarding); both deposits were refunded."""

    channel: HrmpChannelId


RouterEvent = (
    UpwardMessageDispatched
    | DownwardMessageQueued
    | HrmpOpenChannelRequested
    | HrmpOpenChannelAccepted
    | HrmpCloseChannelRequested
    | HrmpChannelOpened
    | HrmpOpenRequestExpired
    | HrmpOpenChannelDropped
    | HrmpChannelClosed
)
