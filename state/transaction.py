"""A unit of protocol work over a backend: lazy batched reads, nested atomic sections, one write at commit.

Pallets run each call inside ``txn.atomic()``: if the call raises, every write it made is discarded,
so a call applies fully or not at all. ``commit()`` sends all surviving changes to the backend in one call.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from enum import Enum

from state.errors import TransactionClosedError
from state.interface import StateBackend

__all__ = ["StateTransaction", "TransactionStatus", "VALUE_KEY"]

VALUE_KEY = b""
"""Single values live in their namespace under the empty key."""

_ABSENT = None


class TransactionStatus(Enum):
    OPEN = "open"
    COMMITTED = "committed"
    ROLLED_BACK = "rolled back"


class StateTransaction:
    """Reads through a cached working set; writes into a stack of layers merged on success."""

    def __init__(self, backend: StateBackend) -> None:
        self._backend = backend
        self._loaded: dict[str, dict[bytes, bytes | None]] = {}
        self._scanned: set[str] = set()
        self._layers: list[dict[str, dict[bytes, bytes | None]]] = [{}]
        self.status = TransactionStatus.OPEN

    # -- reads -------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self.status is not TransactionStatus.OPEN:
            raise TransactionClosedError(self.status.value)

    def _written(self, namespace: str, key: bytes) -> tuple[bool, bytes | None]:
        for layer in reversed(self._layers):
            entries = layer.get(namespace)
            if entries is not None and key in entries:
                return True, entries[key]
        return False, _ABSENT

    def prefetch(self, namespace: str, keys: Iterable[bytes]) -> None:
        """Load the keys not yet in the working set with one backend call."""
        self._check_open()
        if namespace in self._scanned:
            return
        loaded = self._loaded.setdefault(namespace, {})
        missing = [key for key in dict.fromkeys(keys) if key not in loaded]
        if not missing:
            return
        found = self._backend.read_many(namespace, missing)
        for key in missing:
            loaded[key] = found.get(key)

    def get(self, namespace: str, key: bytes) -> bytes | None:
        self._check_open()
        written, value = self._written(namespace, key)
        if written:
            return value
        loaded = self._loaded.setdefault(namespace, {})
        if key not in loaded and namespace not in self._scanned:
            self.prefetch(namespace, (key,))
        return loaded.get(key)

    def contains(self, namespace: str, key: bytes) -> bool:
        return self.get(namespace, key) is not None

    def items(self, namespace: str) -> dict[bytes, bytes]:
        """Every entry of a namespace as this transaction sees it (one backend scan, then cached)."""
        self._check_open()
        if namespace not in self._scanned:
            stored = self._backend.scan(namespace)
            loaded = self._loaded.setdefault(namespace, {})
            loaded.clear()
            loaded.update(stored)
            self._scanned.add(namespace)
        view = {k: v for k, v in self._loaded[namespace].items() if v is not None}
        for layer in self._layers:
            for key, value in layer.get(namespace, {}).items():
                if value is None:
                    view.pop(key, None)
                else:
                    view[key] = value
        return view

    def get_value(self, namespace: str) -> bytes | None:
        return self.get(namespace, VALUE_KEY)

    # -- writes ------------------------------------------------------------------------------
    def put(self, namespace: str, key: bytes, value: bytes) -> None:
        self._check_open()
        self._layers[-1].setdefault(namespace, {})[key] = value

    def delete(self, namespace: str, key: bytes) -> None:
        self._check_open()
        self._layers[-1].setdefault(namespace, {})[key] = _ABSENT

    def set_value(self, namespace: str, value: bytes | None) -> None:
        if value is None:
            self.delete(namespace, VALUE_KEY)
        else:
            self.put(namespace, VALUE_KEY, value)

    @contextmanager
    def atomic(self) -> Iterator[StateTransaction]:
        """A section whose writes are kept only if it exits without an exception."""
        self._check_open()
        self._layers.append({})
        try:
            yield self
        except BaseException:
            self._layers.pop()
            raise
        top = self._layers.pop()
        below = self._layers[-1]
        for namespace, entries in top.items():
            below.setdefault(namespace, {}).update(entries)

    # -- end ---------------------------------------------------------------------------------
    def pending_changes(self) -> dict[str, dict[bytes, bytes | None]]:
        """The changes commit would write, with writes that restore the loaded value dropped."""
        merged: dict[str, dict[bytes, bytes | None]] = {}
        for layer in self._layers:
            for namespace, entries in layer.items():
                merged.setdefault(namespace, {}).update(entries)
        for namespace, entries in merged.items():
            loaded = self._loaded.get(namespace, {})
            for key in [k for k, v in entries.items() if k in loaded and loaded[k] == v]:
                del entries[key]
        return {ns: entries for ns, entries in merged.items() if entries}

    def commit(self) -> int:
        """Write every change in one backend call (none if nothing changed); return the keys written."""
        self._check_open()
        if len(self._layers) != 1:
            raise RuntimeError("commit() inside an atomic() section")
        changes = self.pending_changes()
        if changes:
            self._backend.write_many(changes)
        self.status = TransactionStatus.COMMITTED
        return sum(len(entries) for entries in changes.values())

    def rollback(self) -> None:
        self._check_open()
        self.status = TransactionStatus.ROLLED_BACK
