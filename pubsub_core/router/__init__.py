"""The relay chain Router (the Router Module): UMP, DMP and HRMP storage, routines, entry points and session change.

Publish messages reach the relay chain as upward messages through this module; downward and horizontal
messages take a parachain's PoV space before pub-sub gets any (see ``budget``).
"""

from pubsub_core.router.budget import (
    AbridgedMessages,
    InboundMessagesBudget,
    PendingHorizontalMessage,
    PendingInbound,
    abridge_inbound,
    into_abridged,
    pending_inbound,
)
from pubsub_core.router.config import RouterConfig
from pubsub_core.router.errors import AcceptanceError, EntryPointError, RouterError
from pubsub_core.router.interfaces import DepositLedger, DispatchResult, Dispatcher, ParaRegistry
from pubsub_core.router.invariants import check_invariants
from pubsub_core.router.records import (
    CandidateCommitments,
    HrmpChannel,
    HrmpChannelId,
    HrmpOpenChannelRequest,
    InboundDownwardMessage,
    InboundHrmpMessage,
    OutboundHrmpMessage,
    mqc_extend,
)
from pubsub_core.router.router import Router, check_candidate, enact_candidate
from pubsub_core.router.storage import RouterStorage

__all__ = [
    "AbridgedMessages",
    "AcceptanceError",
    "CandidateCommitments",
    "DepositLedger",
    "DispatchResult",
    "Dispatcher",
    "EntryPointError",
    "HrmpChannel",
    "HrmpChannelId",
    "HrmpOpenChannelRequest",
    "InboundDownwardMessage",
    "InboundHrmpMessage",
    "InboundMessagesBudget",
    "OutboundHrmpMessage",
    "ParaRegistry",
    "PendingHorizontalMessage",
    "PendingInbound",
    "Router",
    "RouterConfig",
    "RouterError",
    "RouterStorage",
    "abridge_inbound",
    "check_candidate",
    "check_invariants",
    "enact_candidate",
    "into_abridged",
    "mqc_extend",
    "pending_inbound",
]
