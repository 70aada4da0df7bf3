"""The pub-sub PoV budget: what remains of 85% of max_pov_size after downward then horizontal messages.

Follows parachain-system's ``into_abridged(&mut size_limit)`` pattern (the pub-sub design, "Decision 4: Budget
Allocation"). The message sizes are plain inputs, in the router's consumption order, so this module depends on no router
code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pubsub_core.subscriber.config import SubscriberConfig

__all__ = ["Budget", "pubsub_budget"]


@dataclass(frozen=True, slots=True)
class Budget:
    """How one block's PoV was shared: allowed size, messages taken, and the pub-sub remainder."""

    max_pov_size: int
    allowed_pov_size: int
    dmq_taken: int
    dmq_bytes: int
    hrmp_taken: int
    hrmp_bytes: int
    remaining: int
    floor: int
    pubsub: int

    def to_json(self) -> dict[str, Any]:
        return {
            "max_pov_size": self.max_pov_size,
            "allowed_pov_size": self.allowed_pov_size,
            "dmq_taken": self.dmq_taken,
            "dmq_bytes": self.dmq_bytes,
            "hrmp_taken": self.hrmp_taken,
            "hrmp_bytes": self.hrmp_bytes,
            "remaining": self.remaining,
            "floor": self.floor,
            "pubsub": self.pubsub,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Budget:
        return cls(**{name: int(data[name]) for name in cls.__dataclass_fields__})


def _into_abridged(sizes: Sequence[int], size_limit: int) -> tuple[int, int, int]:
    """Take messages in order while each fits; return (count taken, bytes taken, size_limit left)."""
    taken = 0
    used = 0
    for size in sizes:
        if size < 0:
            raise ValueError(f"a message size cannot be negative, got {size}")
        if size > size_limit:
            break
        size_limit -= size
        used += size
        taken += 1
    return taken, used, size_limit


def pubsub_budget(
    max_pov_size: int, dmq_sizes: Sequence[int], hrmp_sizes: Sequence[int], config: SubscriberConfig
) -> Budget:
    """The bytes left for pub-sub proofs in a block, with the configured floor (default 0) applied."""
    if max_pov_size < 0:
        raise ValueError(f"max_pov_size cannot be negative, got {max_pov_size}")
    allowed = max_pov_size * config.pov_percent // 100
    collection_limit = config.messages_collection_size_limit
    if collection_limit is None:
        collection_limit = allowed // 2
    dmq_taken, dmq_bytes, size_limit = _into_abridged(dmq_sizes, collection_limit)
    size_limit += collection_limit
    hrmp_taken, hrmp_bytes, size_limit = _into_abridged(hrmp_sizes, size_limit)
    remaining = min(size_limit, max(0, allowed - dmq_bytes - hrmp_bytes))
    return Budget(
        max_pov_size=max_pov_size,
        allowed_pov_size=allowed,
        dmq_taken=dmq_taken,
        dmq_bytes=dmq_bytes,
        hrmp_taken=hrmp_taken,
        hrmp_bytes=hrmp_bytes,
        remaining=remaining,
        floor=config.min_pubsub_budget,
        pubsub=max(remaining, config.min_pubsub_budget),
    )
