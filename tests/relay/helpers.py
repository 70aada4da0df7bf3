"""Shared fixtures for the relay-side tests: accounts, keys, a fresh state transaction."""

from __future__ import annotations

from state import MemoryBackend, StateTransaction

from pubsub_core.broadcaster import Balances, Broadcaster, BroadcasterConfig
from pubsub_core.hashing import blake2_256

ALICE = bytes([1]) * 32
BOB = bytes([2]) * 32


def key(name: str) -> bytes:
    """A published key as publishers make them: blake2_256 of a logical name."""
    return blake2_256(name.encode())


def fresh_txn() -> StateTransaction:
    return StateTransaction(MemoryBackend())


def setup(config: BroadcasterConfig | None = None, endow: int = 10_000) -> tuple[Broadcaster, StateTransaction]:
    """A pallet and a transaction where ALICE and BOB hold ``endow`` and ALICE manages paras 2000..2009."""
    pallet = Broadcaster(config)
    txn = fresh_txn()
    for account in (ALICE, BOB):
        Balances.mint(txn, account, endow)
    for para in range(2000, 2010):
        Broadcaster.set_para_manager(txn, para, ALICE)
    return pallet, txn
