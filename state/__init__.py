"""Protocol state behind one small interface: an in-memory backend now, Spark state handles in the job."""

from state.native import choose_build

choose_build()  # before any compiled module can load

from state.errors import StateError, TransactionClosedError
from state.interface import BackendStats, Changes, StateBackend
from state.memory import MemoryBackend
from state.transaction import VALUE_KEY, StateTransaction, TransactionStatus

__all__ = [
    "BackendStats",
    "Changes",
    "MemoryBackend",
    "StateBackend",
    "StateError",
    "StateTransaction",
    "TransactionClosedError",
    "TransactionStatus",
    "VALUE_KEY",
]
