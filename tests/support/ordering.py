"""The subscriber's processing order written the naive way, item by item: the reference that
``pubsub_core.subscriber.ordering.work_segments`` (runs of one publisher each) must flatten to."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pubsub_core.subscriber import SubscriberConfig
from pubsub_core.subscriber.ordering import WorkItem, order_publishers

__all__ = ["rotate_to_cursor", "work_items"]


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
