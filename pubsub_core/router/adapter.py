"""The balances ledger as the Router's DepositLedger: HRMP deposits are holds on sovereign accounts.

Only the adapters import the relay chain's components, so the Router itself depends on nothing but its
own Protocols.
"""

from __future__ import annotations

from pubsub_core.broadcaster.balances import Balances
from pubsub_core.xcm.executor import sovereign_account
from state import StateTransaction

__all__ = ["HRMP_DEPOSIT", "HeldDeposits"]

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
