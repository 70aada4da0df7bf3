"""Deterministic work order: system paras first (ascending), then the others in a shuffle seeded by the block hash.

The shuffle sorts non-system paras by ``blake2_256(relay_block_hash ‖ u32_le(para))``: a permutation that no
party chooses, that changes every block, and that Prune and Verify compute identically. Keys of a publisher are
processed in ascending byte order. A cursor left by an Incomplete block rotates the list (wrap-around).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence

from pubsub_core.codec.scale import encode_u32
from pubsub_core.hashing import blake2_256
from pubsub_core.subscriber.config import SubscriberConfig

__all__ = ["WorkItem", "WorkSegment", "order_publishers", "work_segments"]

WorkItem = tuple[int, bytes]
"""One unit of proof processing: (publisher para id, 32-byte subscribed key)."""

WorkSegment = tuple[int, int, int]
"""A run of one publisher's work items: (para id, start, stop) into its keys ascending."""


def order_publishers(publishers: Sequence[int], relay_block_hash: bytes, config: SubscriberConfig) -> list[int]:
    """System paras ascending, then non-system paras by their block-hash-seeded shuffle key."""
    unique = sorted(set(publishers))
    limit = config.system_para_limit  # ``config.is_system``, read once (the config is interpreted)
    system = [para for para in unique if para < limit]
    others = [para for para in unique if para >= limit]
    others.sort(key=lambda para: (blake2_256(relay_block_hash + encode_u32(para)), para))
    return system + others


def work_segments(
    subscriptions: Mapping[int, Sequence[bytes]],
    relay_block_hash: bytes,
    config: SubscriberConfig,
    cursor: WorkItem | None,
) -> list[WorkSegment]:
    """The block's work items (publishers in ``order_publishers`` order, each one's keys ascending), started at
    the cursor's item and wrapped around, as runs of one publisher each, so that a publisher can be
    skipped whole (its child root unchanged) without visiting its keys; ``subscriptions`` holds each
    publisher's keys distinct and ascending. The cursor's publisher may appear twice: from the cursor's key to
    its last key first, and from its first key up to the cursor's key last (the wrap-around)."""
    order = order_publishers(list(subscriptions), relay_block_hash, config)
    segments = [(para, 0, len(subscriptions[para])) for para in order]
    if cursor is None or cursor[0] not in subscriptions:
        return segments
    para, key = cursor
    keys = subscriptions[para]
    at = bisect_left(keys, key)
    if at == len(keys) or keys[at] != key:
        return segments  # a stale cursor: start at the beginning
    first = order.index(para)
    tail = [(para, at, len(keys))] if at < len(keys) else []
    head = [(para, 0, at)] if at else []
    return tail + segments[first + 1 :] + segments[:first] + head
