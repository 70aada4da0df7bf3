"""A balances ledger with holds, over the state interface: free balance per account, held amounts per reason.

Only what the pallets need: mint (genesis), transfer, withdraw/deposit (XCM asset transactor), hold,
release and slash of held funds. No existential deposit: an account with zero balance simply has no entry.
"""

from __future__ import annotations

from state import StateTransaction

from pubsub_core.broadcaster.errors import InsufficientBalance
from pubsub_core.codec.scale import encode_u128

__all__ = ["Balances", "FREE_NAMESPACE", "HELD_NAMESPACE", "PUBLISHER_DEPOSIT"]

FREE_NAMESPACE = "balances.Free"
HELD_NAMESPACE = "balances.Held"
PUBLISHER_DEPOSIT = b"Broadcaster.PublisherDeposit"
"""The hold reason of a publisher's registration deposit (``HoldReason::PublisherDeposit``)."""


def _read(txn: StateTransaction, namespace: str, key: bytes) -> int:
    raw = txn.get(namespace, key)
    return 0 if raw is None else int.from_bytes(raw, "little")


def _write(txn: StateTransaction, namespace: str, key: bytes, amount: int) -> None:
    if amount == 0:
        txn.delete(namespace, key)
    else:
        txn.put(namespace, key, encode_u128(amount))


def _check(account: bytes, amount: int) -> None:
    if len(account) != 32:
        raise ValueError(f"an account id is 32 bytes, got {len(account)}")
    if amount < 0:
        raise ValueError(f"amounts are non-negative, got {amount}")


class Balances:
    """Free and held balances of 32-byte accounts; every method applies fully or raises."""

    @staticmethod
    def free(txn: StateTransaction, account: bytes) -> int:
        return _read(txn, FREE_NAMESPACE, account)

    @staticmethod
    def held(txn: StateTransaction, account: bytes, reason: bytes) -> int:
        return _read(txn, HELD_NAMESPACE, account + reason)

    @staticmethod
    def mint(txn: StateTransaction, account: bytes, amount: int) -> None:
        """Create ``amount`` in ``account`` (genesis endowment)."""
        _check(account, amount)
        _write(txn, FREE_NAMESPACE, account, Balances.free(txn, account) + amount)

    @staticmethod
    def withdraw(txn: StateTransaction, account: bytes, amount: int) -> None:
        """Remove ``amount`` of free balance (it moves to an XCM holding register or is burned)."""
        _check(account, amount)
        free = Balances.free(txn, account)
        if free < amount:
            raise InsufficientBalance(account, amount, free)
        _write(txn, FREE_NAMESPACE, account, free - amount)

    @staticmethod
    def transfer(txn: StateTransaction, source: bytes, dest: bytes, amount: int) -> None:
        Balances.withdraw(txn, source, amount)
        Balances.mint(txn, dest, amount)

    @staticmethod
    def hold(txn: StateTransaction, account: bytes, reason: bytes, amount: int) -> None:
        """Move ``amount`` from free to held under ``reason``; ``InsufficientBalance`` if free cannot cover it."""
        Balances.withdraw(txn, account, amount)
        _write(txn, HELD_NAMESPACE, account + reason, Balances.held(txn, account, reason) + amount)

    @staticmethod
    def release(txn: StateTransaction, account: bytes, reason: bytes, amount: int) -> None:
        """Move exactly ``amount`` from held back to free (``Precision::Exact``)."""
        Balances._take_held(txn, account, reason, amount)
        Balances.mint(txn, account, amount)

    @staticmethod
    def slash_held(txn: StateTransaction, account: bytes, reason: bytes, amount: int) -> None:
        """Burn exactly ``amount`` of the funds held under ``reason``."""
        Balances._take_held(txn, account, reason, amount)

    @staticmethod
    def _take_held(txn: StateTransaction, account: bytes, reason: bytes, amount: int) -> None:
        _check(account, amount)
        held = Balances.held(txn, account, reason)
        if held < amount:
            raise InsufficientBalance(account, amount, held)
        _write(txn, HELD_NAMESPACE, account + reason, held - amount)
