"""A unit of protocol work over a backend: lazy batched reads, nested atomic sections, one write at commit.

Pallets run each call inside ``txn.atomic()``: if the call raises, every write it made is discarded,
so a call applies fully or not at all. ``commit()`` sends all surviving changes to the backend in one call.

Layout (the read and write paths are on every pallet call: 1.1 M get/put calls in the simulator's standard
workload). Writes go into one overlay, ``namespace -> key -> value`` (None for a delete), so a read is one
lookup in the overlay and one in the loaded working set, whatever the nesting depth. An atomic section
records, in one shared undo log, the overlay's previous value of each key it writes; leaving the section
normally keeps the log for the enclosing section, failing replays it backwards down to the section's mark.
Invariant: the overlay equals the old stack of per-section layers merged bottom to top with ``dict.update``,
key order included (a key keeps its place when overwritten and is appended when new; undoing a key the
section introduced removes it, and a namespace left empty goes with it), so ``pending_changes`` is unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import TracebackType
from enum import Enum
from typing import Final, cast

from state.errors import TransactionClosedError
from state.interface import StateBackend

__all__ = ["StateTransaction", "TransactionStatus", "VALUE_KEY"]

VALUE_KEY = b""
"""Single values live in their namespace under the empty key."""

_ABSENT = None


class _Missing:
    """The marker for 'no entry' where None already means 'deleted' or 'absent from the backend'."""


_MISSING: Final = _Missing()

_UndoEntry = tuple[str, dict[bytes, "bytes | None"], bytes, "bytes | None | _Missing"]
"""(namespace, its overlay entries, key, the overlay's value before the write or _MISSING)."""


class TransactionStatus(Enum):
    OPEN = "open"
    COMMITTED = "committed"
    ROLLED_BACK = "rolled back"


class StateTransaction:
    """Reads through a cached working set; writes into one overlay, undone per failed atomic section."""

    def __init__(self, backend: StateBackend) -> None:
        self._backend = backend
        self._loaded: dict[str, dict[bytes, bytes | None]] = {}
        self._scanned: set[str] = set()
        self._overlay: dict[str, dict[bytes, bytes | None]] = {}
        self._undo: list[_UndoEntry] = []
        self._marks: list[int] = []  # per open atomic section, innermost last: the undo log's length at entry
        self._section = _AtomicSection(self)
        # The hot methods test this bool instead of comparing ``status`` to an enum member (one attribute load
        # instead of a global, an attribute and a comparison); ``_close`` keeps the two in step.
        self._open = True
        self.status = TransactionStatus.OPEN

    # -- reads -------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if not self._open:
            raise TransactionClosedError(self.status.value)

    def _close(self, status: TransactionStatus) -> None:
        self.status = status
        self._open = False

    def prefetch(self, namespace: str, keys: Iterable[bytes]) -> None:
        """Load the keys not yet in the working set with one backend call."""
        if not self._open:
            raise TransactionClosedError(self.status.value)
        if namespace in self._scanned:
            return
        loaded = self._loaded.get(namespace)
        if loaded is None:
            loaded = self._loaded[namespace] = {}
        # One pass filters and deduplicates (a dict of the missing keys, all None), and two C-level updates record
        # them as found or absent; replaces dict.fromkeys + a list comprehension + a Python loop of loaded[key] =
        # found.get(key) (docs/benchmarks.md, "Measured code choices").
        missing: dict[bytes, bytes | None] = {key: None for key in keys if key not in loaded}
        if not missing:
            return
        missing.update(self._backend.read_many(namespace, missing.keys()))
        loaded.update(missing)

    def get(self, namespace: str, key: bytes) -> bytes | None:
        # Hand-written hot path (694,734 calls in the simulator workload): replaces _check_open + a walk over
        # the write layers returning a tuple + setdefault + a prefetch of a one-key tuple on a miss.
        if not self._open:
            raise TransactionClosedError(self.status.value)
        entries = self._overlay.get(namespace)
        if entries is not None:
            written = entries.get(key, _MISSING)
            if written is not _MISSING:
                return written  # type: ignore[return-value]
        loaded = self._loaded.get(namespace)
        if loaded is None:
            loaded = self._loaded[namespace] = {}
        else:
            value = loaded.get(key, _MISSING)
            if value is not _MISSING:
                return value  # type: ignore[return-value]
        if namespace in self._scanned:
            return None
        value = self._backend.read_many(namespace, [key]).get(key)
        loaded[key] = value
        return value

    def get_many(self, namespace: str, keys: Iterable[bytes]) -> dict[bytes, bytes]:
        """The present values of ``keys`` as this transaction sees them (absent and deleted keys left out), with
        at most one backend call: ``prefetch`` then ``get`` of each, without a method call per key."""
        keys = list(keys)
        self.prefetch(namespace, keys)
        written = self._overlay.get(namespace, {})
        loaded = self._loaded.get(namespace, {})
        found: dict[bytes, bytes] = {}
        for key in keys:
            value = written.get(key, _MISSING)
            if value is _MISSING:
                value = loaded.get(key)
            if value is not None:
                found[key] = value  # type: ignore[assignment]
        return found

    def contains(self, namespace: str, key: bytes) -> bool:
        return self.get(namespace, key) is not None

    def load(self, namespace: str) -> None:
        """Read a whole namespace into the working set with one backend scan (once per transaction): ``items``
        without building its view, for a caller that will read keys of it, present or not, without more calls."""
        self._check_open()
        if namespace not in self._scanned:
            # The scan's dict becomes the working set as it is (it holds every stored entry, so whatever was
            # loaded before is superseded): no copy of it (a refcount scan per changed publisher and block).
            self._loaded[namespace] = cast("dict[bytes, bytes | None]", self._backend.scan(namespace))
            self._scanned.add(namespace)

    def items(self, namespace: str) -> dict[bytes, bytes]:
        """Every entry of a namespace as this transaction sees it (one backend scan, then cached)."""
        self.load(namespace)
        view = {k: v for k, v in self._loaded[namespace].items() if v is not None}
        for key, value in self._overlay.get(namespace, {}).items():
            if value is None:
                view.pop(key, None)
            else:
                view[key] = value
        return view

    def get_value(self, namespace: str) -> bytes | None:
        return self.get(namespace, VALUE_KEY)

    # -- writes ------------------------------------------------------------------------------
    def put(self, namespace: str, key: bytes, value: bytes) -> None:
        # Hot path (440,770 puts): one overlay write, plus one undo entry only inside an atomic section; written
        # out here and in delete (no shared helper call) for the same reason as get.
        if not self._open:
            raise TransactionClosedError(self.status.value)
        entries = self._overlay.get(namespace)
        if entries is None:
            entries = self._overlay[namespace] = {}
        if self._marks:
            self._undo.append((namespace, entries, key, entries.get(key, _MISSING)))
        entries[key] = value

    def delete(self, namespace: str, key: bytes) -> None:
        if not self._open:
            raise TransactionClosedError(self.status.value)
        entries = self._overlay.get(namespace)
        if entries is None:
            entries = self._overlay[namespace] = {}
        if self._marks:
            self._undo.append((namespace, entries, key, entries.get(key, _MISSING)))
        entries[key] = _ABSENT

    def set_value(self, namespace: str, value: bytes | None) -> None:
        if value is None:
            self.delete(namespace, VALUE_KEY)
        else:
            self.put(namespace, VALUE_KEY, value)

    def _undo_to(self, mark: int) -> None:
        """Restore the overlay as it was when the undo log was ``mark`` entries long."""
        undo = self._undo
        overlay = self._overlay
        while len(undo) > mark:
            namespace, entries, key, previous = undo.pop()
            if previous is _MISSING:
                del entries[key]
                if not entries and overlay.get(namespace) is entries:
                    del overlay[namespace]
            else:
                entries[key] = previous  # type: ignore[assignment]

    def atomic(self) -> _AtomicSection:
        """A section whose writes are kept only if it exits without an exception (use as ``with txn.atomic():``)."""
        self._check_open()
        return self._section

    def _enter_section(self) -> None:
        self._marks.append(len(self._undo))

    def _exit_section(self, failed: bool) -> None:
        mark = self._marks.pop()
        if failed:
            self._undo_to(mark)
        elif not self._marks:
            self._undo.clear()  # nothing encloses the section any more: its writes are final

    # -- end ---------------------------------------------------------------------------------
    def pending_changes(self) -> dict[str, dict[bytes, bytes | None]]:
        """The changes commit would write, with writes that restore the loaded value dropped."""
        changes: dict[str, dict[bytes, bytes | None]] = {}
        for namespace in self._overlay:
            kept = self.pending_changes_in(namespace)
            if kept:
                changes[namespace] = kept
        return changes

    def pending_changes_in(self, namespace: str) -> dict[bytes, bytes | None]:
        """``pending_changes().get(namespace, {})`` without the other namespaces' (the relay machine reads one
        namespace's changes of a block's whole transaction)."""
        entries = self._overlay.get(namespace)
        if entries is None:
            return {}
        loaded = self._loaded.get(namespace)
        if loaded is None:
            return dict(entries)
        # One lookup per key (_MISSING equals no value, None included): 40 k namespaces a simulator run.
        return {k: v for k, v in entries.items() if loaded.get(k, _MISSING) != v}

    def commit(self) -> int:
        """Write every change in one backend call (none if nothing changed); return the keys written."""
        self._check_open()
        if self._marks:
            raise RuntimeError("commit() inside an atomic() section")
        changes = self.pending_changes()
        if changes:
            self._backend.write_many(changes)
        self._close(TransactionStatus.COMMITTED)
        return sum(len(entries) for entries in changes.values())

    def rollback(self) -> None:
        self._check_open()
        self._close(TransactionStatus.ROLLED_BACK)


class _AtomicSection:
    """What ``atomic()`` returns. A class instead of ``@contextmanager`` (116 k sections a simulator run): one
    object per transaction, reused by every section, since the nesting lives in the transaction's marks; the
    generator-based manager cost a generator and a wrapper object per section (state_bench: pallet-call and
    nested patterns)."""

    __slots__ = ("_txn",)

    def __init__(self, txn: StateTransaction) -> None:
        self._txn = txn

    def __enter__(self) -> StateTransaction:
        self._txn._enter_section()
        return self._txn

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._txn._exit_section(exc_type is not None)
