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

__all__ = ["WorkItem", "WorkSegment", "order_publishers", "rotate_to_cursor", "work_items", "work_segments"]

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


def work_items(
    subscriptions: Mapping[int, Sequence[bytes]], relay_block_hash: bytes, config: SubscriberConfig
) -> list[WorkItem]:
    """Flatten subscriptions into the block's processing order (keys deduplicated and ascending)."""
    order = order_publishers(list(subscriptions), relay_block_hash, config)
    return [(para, key) for para in order for key in sorted(set(subscriptions[para]))]


def rotate_to_cursor(items: Sequence[WorkItem], cursor: WorkItem | None) -> list[WorkItem]:
    """Start at the cursor's item and wrap around; an absent or stale cursor starts at the beginning."""
    if cursor is None:
        return list(items)
    try:
        start = items.index(cursor)
    except ValueError:
        return list(items)
    return list(items[start:]) + list(items[:start])


def work_segments(
    subscriptions: Mapping[int, Sequence[bytes]],
    relay_block_hash: bytes,
    config: SubscriberConfig,
    cursor: WorkItem | None,
) -> list[WorkSegment]:
    """``rotate_to_cursor(work_items(...), cursor)`` as runs of one publisher each, so that a publisher can be
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
