"""Subscriber pallet calls and queries: stored subscriptions, relay keys, enable_publisher, clear_publisher_cache.

Each call runs in ``txn.atomic()``: it applies fully and returns its event, or raises a typed error and
writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pubsub_core.codec.types import SubscribedKey
from pubsub_core.subscriber import storage as st
from pubsub_core.subscriber.config import SubscriberConfig
from pubsub_core.subscriber.engine import (
    DisableReason,
    Subscriptions,
    child_storage_key,
    clear_publisher_state,
)
from pubsub_core.subscriber.errors import NoCachedNodesError, PublisherNotDisabledError, SubscriptionError
from pubsub_core.subscriber.types import EventKind, PalletEvent
from state import StateTransaction

__all__ = [
    "RelayStorageKey",
    "cached_nodes",
    "clear_publisher_cache",
    "declared_subscriptions",
    "disabled_publishers",
    "enable_publisher",
    "previous_root",
    "processing_cursor",
    "relay_keys",
    "set_subscriptions",
    "subscribed_key",
]


def subscribed_key(literal: str) -> SubscribedKey:
    """``subscribed_key!("name")``: the Blake2-256 of the literal's UTF-8 bytes."""
    return SubscribedKey.from_data(literal.encode())


@dataclass(frozen=True, slots=True)
class RelayStorageKey:
    """``RelayStorageKey::Child { storage_key, key }``: one subscribed key in a publisher's child trie."""

    publisher: int
    storage_key: bytes
    key: bytes


def set_subscriptions(
    txn: StateTransaction, subscriptions: Mapping[int, Sequence[SubscribedKey]], config: SubscriberConfig
) -> None:
    """Replace the stored subscriptions (the simulator's and the job's SubscriptionHandler)."""
    if len(subscriptions) > config.max_publishers:
        raise SubscriptionError(max(subscriptions), f"more than MaxPublishers={config.max_publishers} publishers")
    with txn.atomic():
        for para in subscriptions:
            if not 0 <= para <= 0xFFFFFFFF:
                raise SubscriptionError(para, "a para id is a u32")
        for stored in txn.items(st.DECLARED):
            if int.from_bytes(stored, "big") not in subscriptions:
                txn.delete(st.DECLARED, stored)
        for para, keys in subscriptions.items():
            txn.put(st.DECLARED, st.para_key(para), st.encode_keys(sorted({key.hash for key in keys})))


def declared_subscriptions(txn: StateTransaction) -> Subscriptions:
    """The stored subscriptions, publishers ascending."""
    declared = txn.items(st.DECLARED)
    return Subscriptions(
        tuple(
            (int.from_bytes(para, "big"), tuple(SubscribedKey(key) for key in st.decode_keys(declared[para])))
            for para in sorted(declared)
        )
    )


def disabled_publishers(txn: StateTransaction) -> dict[int, DisableReason]:
    """DisabledPublishers: publisher -> reason."""
    return {
        int.from_bytes(para, "big"): DisableReason(reason[0]) for para, reason in sorted(txn.items(st.DISABLED).items())
    }


def relay_keys(txn: StateTransaction, subscriptions: Subscriptions) -> tuple[RelayStorageKey, ...]:
    """``relay_keys()``: one child key per subscribed (publisher, key), disabled publishers left out."""
    return tuple(
        RelayStorageKey(para, child_storage_key(para), key)
        for para, keys in subscriptions.merged().items()
        if txn.get(st.DISABLED, st.para_key(para)) is None
        for key in keys
    )


def enable_publisher(txn: StateTransaction, publisher: int, *, subscriber: int, at: int, index: int = 0) -> PalletEvent:
    """Remove ``publisher`` from DisabledPublishers; next block processes it afresh (its state was cleared)."""
    with txn.atomic():
        if txn.get(st.DISABLED, st.para_key(publisher)) is None:
            raise PublisherNotDisabledError(publisher)
        txn.delete(st.DISABLED, st.para_key(publisher))
    return PalletEvent(subscriber, at, index, EventKind.PUBLISHER_ENABLED, publisher)


def clear_publisher_cache(
    txn: StateTransaction, publisher: int, *, subscriber: int, at: int, index: int = 0
) -> PalletEvent:
    """Free a publisher's CachedTrieNodes, recorded paths and stored root (reference bug 7: the root is cleared
    too, and NoCachedNodes is raised when there is nothing to clear). Subscribed keys are re-read in full next
    block; what was already delivered is remembered, so only changes are delivered again."""
    with txn.atomic():
        if not clear_publisher_state(txn, publisher, keep_entries=None, forget_known=False):
            raise NoCachedNodesError(publisher)
    return PalletEvent(subscriber, at, index, EventKind.PUBLISHER_CACHE_CLEARED, publisher)


def cached_nodes(txn: StateTransaction, publisher: int) -> dict[bytes, bytes]:
    """CachedTrieNodes of one publisher: node hash -> encoded node."""
    return dict(sorted(txn.items(st.cache_ns(publisher)).items()))


def previous_root(txn: StateTransaction, publisher: int) -> bytes | None:
    """PreviousPublishedDataRoots entry of one publisher."""
    return txn.get(st.ROOTS, st.para_key(publisher))


def processing_cursor(txn: StateTransaction) -> tuple[int, SubscribedKey] | None:
    """RelayProofProcessingCursor: where the next block resumes, None when the last block completed."""
    raw = txn.get_value(st.CURSOR)
    if raw is None:
        return None
    para, key = st.decode_cursor(raw)
    return para, SubscribedKey(key)
