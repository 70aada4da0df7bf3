"""The storage contract behind every pallet: namespaced maps of bytes to bytes, reached in few, large calls.

A backend call may be expensive (on Spark, each MapState/ValueState call is a JVM round trip of about
80 us), so protocol code never calls a backend directly: it works on a StateTransaction that loads a
working set lazily, in batches, and writes every change back in one call at commit.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["BackendStats", "Changes", "StateBackend"]

Changes = Mapping[str, Mapping[bytes, bytes | None]]
"""Per namespace, the new value of each changed key; None deletes the key."""


@dataclass
class BackendStats:
    """How often a backend was called and how many bytes moved: the cost model benchmarks report."""

    read_calls: int = 0
    write_calls: int = 0
    scan_calls: int = 0
    bytes_read: int = 0
    bytes_written: int = 0

    @property
    def calls(self) -> int:
        return self.read_calls + self.write_calls + self.scan_calls


@runtime_checkable
class StateBackend(Protocol):
    """Durable namespaced byte maps. Iteration order is never relied upon: scans return a mapping."""

    stats: BackendStats

    def read_many(self, namespace: str, keys: Collection[bytes]) -> dict[bytes, bytes]:
        """One call: the stored values of those keys that exist (absent keys are left out)."""
        ...

    def scan(self, namespace: str) -> dict[bytes, bytes]:
        """One call: every entry of a namespace (use for small namespaces or rare whole-namespace work), in a new
        dict the caller owns (a transaction keeps it as its working set)."""
        ...

    def write_many(self, changes: Changes) -> None:
        """One call: apply all changes (puts and deletes) atomically."""
        ...
