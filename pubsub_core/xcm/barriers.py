"""Barriers: which messages may execute, and whether for free (``AllowPublishFrom``) or paid.

A barrier raises ``BarrierRefused`` with a ``ProcessMessageError``; a ``BarrierChain`` tries each in order, and the
first that allows the message wins, so later barriers are not evaluated (the pub-sub spec, "Barrier
combined with other barriers").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from pubsub_core.xcm.errors import BarrierRefused, BarrierRejected, ProcessMessageError
from pubsub_core.xcm.types import (
    BuyExecution,
    ClearOrigin,
    Location,
    Parachain,
    Publish,
    ReceiveTeleportedAsset,
    ReserveAssetDeposited,
    Weight,
    WithdrawAsset,
    Xcm,
)

__all__ = [
    "AllowPublishFrom",
    "AllowTopLevelPaidExecutionFrom",
    "Barrier",
    "BarrierChain",
    "BarrierPass",
    "Equals",
    "Everything",
    "OnlyParachains",
    "OriginFilter",
]


class OriginFilter(Protocol):
    """``Contains<Location>``: which origins a barrier admits."""

    def contains(self, origin: Location) -> bool: ...


@dataclass(frozen=True)
class Everything:
    """Admits every origin."""

    def contains(self, origin: Location) -> bool:
        return True


@dataclass(frozen=True)
class Equals:
    """Admits exactly one origin, e.g. ``Equals(Location.parachain(1000))``."""

    location: Location

    def contains(self, origin: Location) -> bool:
        return origin == self.location


@dataclass(frozen=True)
class OnlyParachains:
    """Admits ``(0, [Parachain(_)])`` only: direct child parachains (the Westend configuration)."""

    def contains(self, origin: Location) -> bool:
        return origin.parents == 0 and len(origin.interior) == 1 and isinstance(origin.interior[0], Parachain)


class Barrier(Protocol):
    """``ShouldExecute``: raise ``BarrierRefused`` unless the message may run; ``free`` says no fees are needed."""

    @property
    def name(self) -> str: ...

    @property
    def free(self) -> bool: ...

    def should_execute(self, origin: Location, message: Xcm, max_weight: Weight) -> None: ...


@dataclass(frozen=True)
class AllowPublishFrom:
    """Free execution for messages of 1..max_instructions ``Publish`` instructions from admitted origins.

    Checks in the reference order: origin filter (``Unsupported``), non-empty (``BadFormat``), count
    (``StackLimitReached``), every instruction a ``Publish`` (``BadFormat``).
    """

    origins: OriginFilter = Everything()
    max_instructions: int = 16
    name: str = "AllowPublishFrom"
    free: bool = True

    def should_execute(self, origin: Location, message: Xcm, max_weight: Weight) -> None:
        instructions = message.instructions
        if not self.origins.contains(origin):
            raise BarrierRefused(ProcessMessageError.UNSUPPORTED)
        if not instructions:
            raise BarrierRefused(ProcessMessageError.BAD_FORMAT)
        if len(instructions) > self.max_instructions:
            raise BarrierRefused(ProcessMessageError.STACK_LIMIT_REACHED)
        if not all(isinstance(instruction, Publish) for instruction in instructions):
            raise BarrierRefused(ProcessMessageError.BAD_FORMAT)


_FUNDING = (WithdrawAsset, ReserveAssetDeposited, ReceiveTeleportedAsset)


@dataclass(frozen=True)
class AllowTopLevelPaidExecutionFrom:
    """Paid execution: an asset-funding instruction, an optional ClearOrigin, then BuyExecution covering the weight.

    ``Unsupported`` for a refused origin, ``BadFormat`` for another shape, ``Overweight`` when the
    BuyExecution weight limit is below the message's weight.
    """

    origins: OriginFilter = Everything()
    name: str = "AllowTopLevelPaidExecutionFrom"
    free: bool = False

    def should_execute(self, origin: Location, message: Xcm, max_weight: Weight) -> None:
        if not self.origins.contains(origin):
            raise BarrierRefused(ProcessMessageError.UNSUPPORTED)
        instructions = list(message.instructions)
        if not instructions or not isinstance(instructions[0], _FUNDING):
            raise BarrierRefused(ProcessMessageError.BAD_FORMAT)
        position = 1
        if position < len(instructions) and isinstance(instructions[position], ClearOrigin):
            position += 1
        if position >= len(instructions):
            raise BarrierRefused(ProcessMessageError.BAD_FORMAT)
        buy = instructions[position]
        if not isinstance(buy, BuyExecution):
            raise BarrierRefused(ProcessMessageError.BAD_FORMAT)
        limit = buy.weight_limit.limit
        if limit is not None and not limit.all_gte(max_weight):
            raise BarrierRefused(ProcessMessageError.OVERWEIGHT)


@dataclass(frozen=True)
class BarrierPass:
    """Which barrier allowed a message, and whether execution is free."""

    barrier: str
    free: bool


class BarrierChain:
    """Barriers tried in order; the first that allows the message decides, or ``BarrierRejected`` if none does."""

    def __init__(self, barriers: Sequence[Barrier]) -> None:
        if not barriers:
            raise ValueError("a barrier chain needs at least one barrier")
        self.barriers = tuple(barriers)

    def check(self, origin: Location, message: Xcm, max_weight: Weight) -> BarrierPass:
        errors: list[tuple[str, ProcessMessageError]] = []
        for barrier in self.barriers:
            try:
                barrier.should_execute(origin, message, max_weight)
            except BarrierRefused as refusal:
                errors.append((barrier.name, refusal.error))
                continue
            return BarrierPass(barrier.name, barrier.free)
        raise BarrierRejected(tuple(errors))
