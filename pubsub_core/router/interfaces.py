"""What the Router needs from the rest of the relay chain, as small Protocols, and what it emits.

The Router stays independent of the relay block machine: paras, balances and the XCM executor reach it
through these interfaces. Implementations that keep state should keep it in the same StateTransaction,
so a call that fails half-way discards their writes together with the Router's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from state import StateTransaction

__all__ = [
    "DepositLedger",
    "DispatchResult",
    "Dispatcher",
    "ParaRegistry",
]


@runtime_checkable
class ParaRegistry(Protocol):
    """The relay chain's view of registered paras (Polkadot's ``paras`` pallet)."""

    def is_valid_para(self, txn: StateTransaction, para: int) -> bool:
        """Whether ``para`` is a registered, not offboarded parachain or parathread."""
        ...

    def is_parachain(self, txn: StateTransaction, para: int) -> bool:
        """Whether ``para`` is a lease-holding parachain (True) or an on-demand parathread (False)."""
        ...


@runtime_checkable
class DepositLedger(Protocol):
    """Balances of para sovereign accounts, with reservations for HRMP deposits."""

    def free_balance(self, txn: StateTransaction, para: int) -> int:
        """The part of ``para``'s balance that can be reserved."""
        ...

    def reserve(self, txn: StateTransaction, para: int, amount: int) -> None:
        """Move ``amount`` from free to reserved; called only after a free_balance check succeeded."""
        ...

    def unreserve(self, txn: StateTransaction, para: int, amount: int) -> None:
        """Move ``amount`` back from reserved to free."""
        ...


@dataclass(frozen=True, slots=True)
class DispatchResult:
    """What executing one upward message cost, and whether it succeeded (failures do not stop dispatch)."""

    weight_used: int
    success: bool = True
    error: str | None = None

    def __post_init__(self) -> None:
        if self.weight_used < 0:
            raise ValueError(f"a dispatch cannot use negative weight, got {self.weight_used}")


Dispatcher = Callable[[int, bytes], DispatchResult]
"""Executes one upward message with the given para as origin (the relay chain's XCM executor)."""
