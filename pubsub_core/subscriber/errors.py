"""Errors of the subscriber side: typed, carrying the data that explains them (STYLE.md, point 2)."""

from __future__ import annotations

from enum import Enum

from pubsub_core.errors import PubSubError

__all__ = [
    "CheatingCollatorError",
    "CheatingReason",
    "NoCachedNodesError",
    "PublisherNotDisabledError",
    "RelayStateError",
    "SubscriberCallError",
    "SubscriberConfigError",
    "SubscriberError",
    "SubscriptionError",
]


class SubscriberError(PubSubError):
    """Base class of every error the subscriber pallet, the collator side and the runtime side raise."""


class SubscriberConfigError(SubscriberError, ValueError):
    """A SubscriberConfig field is out of range."""

    def __init__(self, field: str, value: object, requirement: str) -> None:
        super().__init__(f"subscriber config {field}={value!r} is invalid: {requirement}.")
        self.field = field
        self.value = value
        self.requirement = requirement


class SubscriptionError(SubscriberError, ValueError):
    """A subscription declaration is malformed (para id out of range, or a key that is not 32 bytes)."""

    def __init__(self, publisher: int, detail: str) -> None:
        super().__init__(f"the subscription to publisher {publisher} is invalid: {detail}.")
        self.publisher = publisher
        self.detail = detail


class PublisherNotDisabledError(SubscriberError):
    """``enable_publisher`` was called for a publisher that is not in DisabledPublishers."""

    def __init__(self, publisher: int) -> None:
        super().__init__(f"publisher {publisher} is not disabled, so it cannot be enabled.")
        self.publisher = publisher


class NoCachedNodesError(SubscriberError):
    """``clear_publisher_cache`` was called for a publisher with no cached nodes and no stored root or key state."""

    def __init__(self, publisher: int) -> None:
        super().__init__(f"publisher {publisher} has nothing cached, so there is nothing to clear.")
        self.publisher = publisher


class RelayStateError(SubscriberError):
    """The collator's own relay view lacks a node it should hold: a bug or a corrupt view, never the subscriber's fault."""

    def __init__(self, node_hash: bytes, relay_root: bytes) -> None:
        super().__init__(
            f"the relay view with root 0x{relay_root.hex()} has no node 0x{node_hash.hex()}, "
            "so the collator cannot build the proof."
        )
        self.node_hash = node_hash
        self.relay_root = relay_root


class CheatingReason(Enum):
    """Why the runtime rejected a collator's relay proof (every case makes the block invalid)."""

    MISSING_NODE_BELOW_LIMIT = "MissingNodeBelowLimit"
    """A node the traversal needed is absent while the budget could still pay for it."""
    EXTRANEOUS_NODE = "ExtraneousNode"
    """The proof holds a node the traversal never read."""
    DUPLICATE_NODE = "DuplicateNode"
    """The same node appears twice in the proof."""
    ROOT_MISMATCH = "RootMismatch"
    """The proof is not a proof of the relay parent's state root (for example a replayed older proof)."""
    MALFORMED_NODE = "MalformedNode"
    """A node the traversal read does not decode as a trie node, or a child root is not 32 bytes."""


class CheatingCollatorError(SubscriberError):
    """The relay proof is invalid: the block is rejected and the subscriber state is left unchanged.

    Carries the reason, the node hashes involved, and where known the publisher and key being read.
    """

    def __init__(
        self,
        reason: CheatingReason,
        detail: str,
        *,
        relay_root: bytes,
        node_hashes: tuple[bytes, ...] = (),
        publisher: int | None = None,
        key: bytes | None = None,
    ) -> None:
        where = ""
        if publisher is not None:
            where = f" while reading publisher {publisher}" + (f" key 0x{key.hex()}" if key is not None else "")
        super().__init__(f"cheating collator ({reason.value}){where}: {detail}.")
        self.reason = reason
        self.detail = detail
        self.relay_root = relay_root
        self.node_hashes = node_hashes
        self.publisher = publisher
        self.key = key


class SubscriberCallError(SubscriberError):
    """A subscriber-side call (pallet 2) that does not decode (``Malformed``), comes from an origin that may not
    make it (``BadOrigin``) or exceeds a subscription limit (``SubscriptionError``)."""

    def __init__(self, reason: str, detail: str, data: bytes) -> None:
        super().__init__(f"subscriber call refused ({reason}): {detail}")
        self.reason = reason
        self.detail = detail
        self.data = data

    @property
    def reason_code(self) -> str:
        return self.reason
