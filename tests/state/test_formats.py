"""Declared stored formats (state/formats.py): a missing step is refused at declaration, an older store is
migrated one step at a time in order and marked, a newer one is refused without being touched."""

from __future__ import annotations

import pytest

from state import MemoryBackend, StateTransaction
from state.formats import FormatError, FormatTooNewError, StoredFormat, Version


def _step(name: str) -> object:
    def migrate(txn: StateTransaction) -> None:
        steps = txn.get_value("t.steps") or b""
        txn.set_value("t.steps", steps + name.encode())
    return migrate


FORMAT = StoredFormat("test store", 3, "0.3.0", "t.Format", {1: _step("a"), 2: _step("b")})  # type: ignore[dict-item]


def test_a_format_without_a_step_from_every_older_version_is_refused() -> None:
    with pytest.raises(ValueError, match="no migration from version 2"):
        StoredFormat("test store", 3, "0.3.0", "t.Format", {1: _step("a")})  # type: ignore[dict-item]


def test_an_unmarked_store_is_version_1_and_takes_every_step_in_order() -> None:
    backend = MemoryBackend()
    FORMAT.open_store(backend)
    txn = StateTransaction(backend)
    assert txn.get_value("t.steps") == b"ab"
    assert FORMAT.stored(txn) == Version(3, "0.3.0")
    FORMAT.open_store(backend)  # current: nothing more
    assert StateTransaction(backend).get_value("t.steps") == b"ab"


def test_a_version_2_store_takes_only_the_step_from_2() -> None:
    backend = MemoryBackend()
    backend.write_many({"t.Format": {b"": Version(2, "0.2.0").encode()}})
    FORMAT.open_store(backend)
    assert StateTransaction(backend).get_value("t.steps") == b"b"


def test_a_newer_store_is_refused_in_one_line_and_an_unreadable_marker_is_an_error() -> None:
    backend = MemoryBackend()
    backend.write_many({"t.Format": {b"": Version(4, "0.4.0").encode()}})
    with pytest.raises(FormatTooNewError, match="^test store: format version 4, written by release 0.4.0; "):
        FORMAT.open_store(backend)
    assert StateTransaction(backend).get_value("t.steps") is None
    backend.write_many({"t.Format": {b"": b"{\"format\": true}"}})
    with pytest.raises(FormatError, match="does not parse"):
        FORMAT.open_store(backend)
