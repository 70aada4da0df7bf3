"""Adapters from the relay chain's components to the Router's interfaces.

``HeldDeposits`` keeps HRMP deposits as holds in the balances ledger (on the para's sovereign account), and
``XcmDispatcher`` executes upward messages with the XCM executor, the para as origin. Only this module
imports them, so the Router itself depends on nothing but its own Protocols.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pubsub_core.broadcaster.balances import Balances
from pubsub_core.router.interfaces import DispatchResult
from pubsub_core.xcm.executor import XcmExecutor, XcmOutcome, sovereign_account
from pubsub_core.xcm.types import Location, decode_versioned_xcm
from state import StateTransaction

__all__ = ["HRMP_DEPOSIT", "HeldDeposits", "XcmDispatcher"]

HRMP_DEPOSIT = b"Hrmp.Deposit"
"""The hold reason of HRMP channel and request deposits."""


class HeldDeposits:
    """A DepositLedger over the balances ledger: a deposit is a hold on the para's sovereign account."""

    def free_balance(self, txn: StateTransaction, para: int) -> int:
        return Balances.free(txn, sovereign_account(para))

    def reserve(self, txn: StateTransaction, para: int, amount: int) -> None:
        Balances.hold(txn, sovereign_account(para), HRMP_DEPOSIT, amount)

    def unreserve(self, txn: StateTransaction, para: int, amount: int) -> None:
        Balances.release(txn, sovereign_account(para), HRMP_DEPOSIT, amount)


@dataclass
class XcmDispatcher:
    """A Dispatcher for one relay block: decodes each upward message as ``VersionedXcm`` and executes it with
    ``(0, [Parachain(para)])`` as origin; outcomes are kept, in dispatch order, for the block's events.

    Undecodable messages and barrier rejections raise, and the Router records them as failed dispatches.
    """

    txn: StateTransaction
    executor: XcmExecutor
    now: int
    outcomes: list[tuple[int, XcmOutcome]] = field(default_factory=list)

    def __call__(self, para: int, message: bytes) -> DispatchResult:
        outcome = self.executor.execute(self.txn, Location.parachain(para), decode_versioned_xcm(message), self.now)
        self.outcomes.append((para, outcome))
        error = None if outcome.error is None else f"{type(outcome.error).__name__}: {outcome.error}"
        return DispatchResult(outcome.used_weight.ref_time, outcome.complete, error)
