"""Deterministic work order: system paras first (ascending), then the others in a shuffle seeded by the block hash.

The shuffle sorts non-system paras by ``blake2_256(relay_block_hash ‖ u32_le(para))``: a permutation that no
party chooses, that changes every block, and that Prune and Verify compute identically. Keys of a publisher are
processed in ascending byte order. A cursor left by an Incomplete block rotates the list (wrap-around).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pubsub_core.codec.scale import encode_u32
from pubsub_core.hashing import blake2_256
from pubsub_core.subscriber.config import SubscriberConfig

__all__ = ["WorkItem", "order_publishers", "rotate_to_cursor", "work_items"]

WorkItem = tuple[int, bytes]
"""One unit of proof processing: (publisher para id, 32-byte subscribed key)."""


def order_publishers(publishers: Sequence[int], relay_block_hash: bytes, config: SubscriberConfig) -> list[int]:
    """System paras ascending, then non-system paras by their block-hash-seeded shuffle key."""
    unique = sorted(set(publishers))
    system = [para for para in unique if config.is_system(para)]
    others = [para for para in unique if not config.is_system(para)]
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
