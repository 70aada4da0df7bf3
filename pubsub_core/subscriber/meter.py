"""Weight and WeightMeter (sp_weights): two-dimensional accounting of ref_time and proof_size.

The same meter runs off-chain (Prune) and on-chain (Verify), so both stop at the same point.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Weight", "WeightMeter"]


@dataclass(frozen=True, slots=True)
class Weight:
    """``Weight { ref_time, proof_size }``: picoseconds of execution and bytes of PoV."""

    ref_time: int = 0
    proof_size: int = 0

    def __post_init__(self) -> None:
        if self.ref_time < 0 or self.proof_size < 0:
            raise ValueError(f"weights are non-negative, got {self}")

    def saturating_add(self, other: Weight) -> Weight:
        return Weight(self.ref_time + other.ref_time, self.proof_size + other.proof_size)

    def saturating_sub(self, other: Weight) -> Weight:
        return Weight(max(0, self.ref_time - other.ref_time), max(0, self.proof_size - other.proof_size))

    def all_lte(self, other: Weight) -> bool:
        """True when both components are at most the other's (sp_weights ``all_lte``)."""
        return self.ref_time <= other.ref_time and self.proof_size <= other.proof_size

    def to_json(self) -> dict[str, int]:
        return {"ref_time": self.ref_time, "proof_size": self.proof_size}

    @classmethod
    def from_json(cls, data: dict[str, int]) -> Weight:
        return cls(int(data["ref_time"]), int(data["proof_size"]))


class WeightMeter:
    """Consumes weight against a fixed limit; ``can_consume`` is checked before every read."""

    __slots__ = ("_consumed", "limit")

    def __init__(self, limit: Weight) -> None:
        self.limit = limit
        self._consumed = Weight()

    @property
    def consumed(self) -> Weight:
        return self._consumed

    def remaining(self) -> Weight:
        return self.limit.saturating_sub(self._consumed)

    def can_consume(self, weight: Weight) -> bool:
        return self._consumed.saturating_add(weight).all_lte(self.limit)

    def consume(self, weight: Weight) -> None:
        """Consume ``weight``; callers check ``can_consume`` first, so exceeding the limit is a bug."""
        after = self._consumed.saturating_add(weight)
        if not after.all_lte(self.limit):
            raise OverflowError(f"consuming {weight} would exceed the limit {self.limit} (consumed {self._consumed})")
        self._consumed = after
