"""A para's pending inbound messages in the order the PoV budget formula consumes them (into_abridged).

Before pub-sub gets any PoV space, a parachain's collator fills its block with inbound messages
(cumulus ``parachain_inherent.rs``): the downward queue in queue order, then the horizontal messages of
all ingress channels sorted by (sent_at, sender). ``into_abridged`` keeps messages whole while they fit in
a size limit and hashes the rest; the limit starts at ``messages_collection_size_limit``, the downward
messages consume it, it grows by the same limit again, and the horizontal messages consume it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pubsub_core.router.records import HrmpChannelId, InboundDownwardMessage, InboundHrmpMessage
from pubsub_core.router.storage import RouterStorage
from state import StateTransaction

__all__ = [
    "AbridgedMessages",
    "InboundMessagesBudget",
    "PendingHorizontalMessage",
    "PendingInbound",
    "abridge_inbound",
    "into_abridged",
    "pending_inbound",
]


@dataclass(frozen=True, slots=True)
class PendingHorizontalMessage:
    """One inbound HRMP message with its sender, as cumulus flattens the ingress channels."""

    sender: int
    sent_at: int
    data: bytes


@dataclass(frozen=True, slots=True)
class PendingInbound:
    """A para's inbound messages visible at a relay block, each list in consumption order."""

    downward: tuple[InboundDownwardMessage, ...]
    horizontal: tuple[PendingHorizontalMessage, ...]

    def downward_sizes(self) -> list[int]:
        """Payload sizes of the downward messages, in consumption order."""
        return [len(message.msg) for message in self.downward]

    def horizontal_sizes(self) -> list[int]:
        """Payload sizes of the horizontal messages, in consumption order."""
        return [len(message.data) for message in self.horizontal]


def pending_inbound(txn: StateTransaction, para: int, block: int) -> PendingInbound:
    """The downward and horizontal messages pending for ``para`` that were sent at or before ``block``.

    Downward messages keep their queue order; horizontal messages from every ingress channel are merged
    and sorted by (sent_at, sender), channel order kept among equals (cumulus ``InboundHrmpMessages::from_map``).
    """
    storage = RouterStorage(txn)
    downward = tuple(message for message in storage.downward_message_queue(para) if message.sent_at <= block)
    horizontal: list[PendingHorizontalMessage] = []
    for sender in storage.ingress_index(para):
        contents: list[InboundHrmpMessage] = storage.channel_contents(HrmpChannelId(sender, para))
        horizontal.extend(
            PendingHorizontalMessage(sender, message.sent_at, message.data)
            for message in contents
            if message.sent_at <= block
        )
    horizontal.sort(key=lambda message: (message.sent_at, message.sender))
    return PendingInbound(downward, tuple(horizontal))


@dataclass(frozen=True, slots=True)
class AbridgedMessages:
    """into_abridged's split: the first ``full_count`` messages go in whole; the rest only as hashes."""

    full_count: int
    hashed_count: int
    full_bytes: int
    remaining_limit: int


def into_abridged(sizes: Sequence[int], size_limit: int) -> AbridgedMessages:
    """cumulus ``InboundMessagesCollection::into_abridged``: take messages whole while each fits the limit.

    Stops at the first message that does not fit (later, smaller messages are hashed too).
    """
    remaining = size_limit
    full = 0
    for size in sizes:
        if remaining < size:
            break
        remaining -= size
        full += 1
    return AbridgedMessages(full, len(sizes) - full, size_limit - remaining, remaining)


@dataclass(frozen=True, slots=True)
class InboundMessagesBudget:
    """How much of the PoV a block's inbound messages take before pub-sub, per the budget formula."""

    downward: AbridgedMessages
    horizontal: AbridgedMessages

    @property
    def message_bytes(self) -> int:
        """Bytes of whole downward and horizontal messages included in the block."""
        return self.downward.full_bytes + self.horizontal.full_bytes

    @property
    def remaining_limit(self) -> int:
        """The size limit left after both collections: what the formula passes on."""
        return self.horizontal.remaining_limit


def abridge_inbound(pending: PendingInbound, messages_collection_size_limit: int) -> InboundMessagesBudget:
    """Apply the budget formula's message step: DMQ into_abridged from the collection limit, then the limit
    grows by the collection limit again, then HRMP into_abridged."""
    downward = into_abridged(pending.downward_sizes(), messages_collection_size_limit)
    horizontal = into_abridged(
        pending.horizontal_sizes(), downward.remaining_limit + messages_collection_size_limit
    )
    return InboundMessagesBudget(downward, horizontal)
