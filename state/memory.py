"""In-memory backend: plain dicts, used by the simulator, the protocol tests and the benchmarks."""

from __future__ import annotations

from collections.abc import Collection

from state.interface import BackendStats, Changes

__all__ = ["MemoryBackend"]


class MemoryBackend:
    """A StateBackend over dicts; it counts calls like a remote backend would cost them."""

    def __init__(self) -> None:
        self._namespaces: dict[str, dict[bytes, bytes]] = {}
        self.stats = BackendStats()

    def copy(self) -> MemoryBackend:
        """An independent backend holding the same entries (values are immutable bytes: one new dict per
        namespace), with its own call counts from zero."""
        twin = MemoryBackend()
        twin._namespaces = {namespace: dict(entries) for namespace, entries in self._namespaces.items()}
        return twin

    def read_many(self, namespace: str, keys: Collection[bytes]) -> dict[bytes, bytes]:
        self.stats.read_calls += 1
        stored = self._namespaces.get(namespace)
        if stored is None:
            return {}
        # Hand-written (called for every transaction's get miss, most of one key): one loop with one lookup per
        # key, summing sizes as it goes, instead of a dict comprehension (a frame per call in 3.11) with two
        # lookups per key and a sum over map (docs/benchmarks.md, "Measured code choices").
        found: dict[bytes, bytes] = {}
        size = 0
        get = stored.get
        for key in keys:
            value = get(key)
            if value is not None:
                found[key] = value
                size += len(value)
        self.stats.bytes_read += size
        return found

    def scan(self, namespace: str) -> dict[bytes, bytes]:
        self.stats.scan_calls += 1
        found = dict(self._namespaces.get(namespace, {}))
        self.stats.bytes_read += sum(map(len, found.values()))
        return found

    def write_many(self, changes: Changes) -> None:
        self.stats.write_calls += 1
        written = 0  # summed locally, not through self.stats per key
        for namespace, entries in changes.items():
            stored = self._namespaces.setdefault(namespace, {})
            for key, value in entries.items():
                if value is None:
                    stored.pop(key, None)
                else:
                    stored[key] = value
                    written += len(value)
            if not stored:
                del self._namespaces[namespace]
        self.stats.bytes_written += written

    def namespaces(self) -> list[str]:
        """The non-empty namespaces, sorted (for inspection and tests)."""
        return sorted(self._namespaces)
