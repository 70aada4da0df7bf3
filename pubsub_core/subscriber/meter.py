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

    def __reduce__(self) -> tuple[type[Weight], tuple[int, int]]:
        # Configs holding a Weight travel pickled to Spark's workers; compiled (setup.py), a frozen dataclass
        # unpickles only through its constructor.
        return (Weight, (self.ref_time, self.proof_size))

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
    """Consumes weight against a fixed limit; ``can_consume`` is checked before every read.

    The consumed weight is kept as two ints rather than a ``Weight``: the traversal checks and pays once per
    read, and building a validated frozen ``Weight`` for every sum showed in the simulator's profile
    (docs/benchmarks.md, "Measured code choices"); ``fits`` and ``add`` take the components.
    """

    __slots__ = ("_proof_size", "_ref_time", "limit")

    def __init__(self, limit: Weight) -> None:
        self.limit = limit
        self._ref_time = 0
        self._proof_size = 0

    @property
    def consumed(self) -> Weight:
        return Weight(self._ref_time, self._proof_size)

    def remaining(self) -> Weight:
        return self.limit.saturating_sub(self.consumed)

    def fits(self, ref_time: int, proof_size: int) -> bool:
        """``can_consume(Weight(ref_time, proof_size))`` without building the Weight."""
        limit = self.limit
        return self._ref_time + ref_time <= limit.ref_time and self._proof_size + proof_size <= limit.proof_size

    def add(self, ref_time: int, proof_size: int) -> None:
        """``consume(Weight(ref_time, proof_size))`` without building the Weight (non-negative components)."""
        limit = self.limit
        after_ref, after_proof = self._ref_time + ref_time, self._proof_size + proof_size
        if after_ref > limit.ref_time or after_proof > limit.proof_size:
            raise OverflowError(
                f"consuming {Weight(ref_time, proof_size)} would exceed the limit {limit} (consumed {self.consumed})"
            )
        self._ref_time, self._proof_size = after_ref, after_proof

    def can_consume(self, weight: Weight) -> bool:
        return self.fits(weight.ref_time, weight.proof_size)

    def consume(self, weight: Weight) -> None:
        """Consume ``weight``; callers check ``can_consume`` first, so exceeding the limit is a bug."""
        self.add(weight.ref_time, weight.proof_size)
