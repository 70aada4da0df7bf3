"""HeldDeposits: HRMP deposits as balance holds on sovereign accounts."""

from __future__ import annotations

from pubsub_core.broadcaster import Balances
from pubsub_core.router import Router
from pubsub_core.router.adapter import HRMP_DEPOSIT, HeldDeposits
from pubsub_core.xcm.executor import sovereign_account
from state import MemoryBackend, StateTransaction
from tests.router.helpers import SMALL, Recorder, Registry


def test_held_deposits_hold_and_release_on_the_sovereign_account() -> None:
    txn = StateTransaction(MemoryBackend())
    account = sovereign_account(1000)
    Balances.mint(txn, account, 500)
    ledger = HeldDeposits()
    router = Router(SMALL, Registry(), ledger, Recorder())
    Balances.mint(txn, sovereign_account(1001), 500)
    router.hrmp_init_open_channel(txn, 1000, 1001, 1, 1)
    assert ledger.free_balance(txn, 1000) == 400
    assert Balances.held(txn, account, HRMP_DEPOSIT) == 100
    router.on_session_change(txn)
    router.on_session_change(txn)  # the unconfirmed request expires at the TTL of 2
    assert Balances.held(txn, account, HRMP_DEPOSIT) == 0
    assert ledger.free_balance(txn, 1000) == 500
