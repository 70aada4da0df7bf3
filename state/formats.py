"""Declared, versioned stored formats: each format the project stores has a number and the release that wrote it
is recorded next to it, so a reader knows what it holds instead of guessing from the bytes.

A ``StoredFormat`` declares one format: its name, its current version and the migrations that take each older
version one step forward. A store written before versions existed (release 0.1.0) holds no marker: that is
version 1 (``UNMARKED``), migrated like any other. A version above the current one is refused with
``FormatTooNewError``, one line naming the version and the release that wrote it; nothing reads it.

For a state backend the marker is a value namespace holding ``{"format": n, "release": "x.y.z"}`` (canonical
JSON); ``open_store`` reads it, runs the migrations in one transaction and writes the current marker.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from state.errors import StateError
from state.interface import StateBackend
from state.transaction import StateTransaction

__all__ = ["UNMARKED", "FormatError", "FormatTooNewError", "Migration", "StoredFormat", "Version"]

UNMARKED = 1
"""The version of a store that holds no version marker: everything release 0.1.0 wrote."""

Migration = Callable[[StateTransaction], None]
"""Takes a store's content from one version to the next, inside the transaction that then writes the marker."""


@dataclass(frozen=True, slots=True)
class Version:
    """A format version as stored, with the release that wrote it."""

    number: int
    release: str

    def encode(self) -> bytes:
        return json.dumps({"format": self.number, "release": self.release}, sort_keys=True,
                          separators=(",", ":")).encode()

    @classmethod
    def decode(cls, fmt: str, raw: bytes) -> Version:
        try:
            body = json.loads(raw)
            number, release = body["format"], body["release"]
        except (ValueError, TypeError, KeyError) as exc:
            raise FormatError(fmt, f"its version marker {raw[:80]!r} does not parse") from exc
        if isinstance(number, bool) or not isinstance(number, int) or number < 1 or not isinstance(release, str):
            raise FormatError(fmt, f"its version marker {raw[:80]!r} does not parse")
        return cls(number, release)


class FormatError(StateError):
    """A stored format cannot be read: carries the format's name and why."""

    def __init__(self, fmt: str, detail: str) -> None:
        super().__init__(f"{fmt}: {detail}")
        self.format = fmt
        self.detail = detail


class FormatTooNewError(FormatError):
    """A store holds a version newer than this code knows: it was written by a later release, and reading it by
    guesswork could corrupt it, so it is not read at all."""

    def __init__(self, fmt: str, version: int, release: str, known: int, current_release: str) -> None:
        super().__init__(fmt, f"format version {version}, written by release {release}; release "
                              f"{current_release} reads up to version {known} (install {release} or later, or "
                              f"restore the store kept from before the upgrade)")
        self.version = version
        self.release = release
        self.known = known
        self.current_release = current_release


@dataclass(frozen=True, slots=True)
class StoredFormat:
    """One stored format: ``migrations[n]`` takes version ``n`` to ``n + 1``; ``version`` is what this code writes.
    ``marker`` names the value namespace that holds the version in a state backend."""

    name: str
    version: int
    release: str
    marker: str = ""
    migrations: Mapping[int, Migration] = field(default_factory=dict)

    def __post_init__(self) -> None:
        missing = [n for n in range(UNMARKED, self.version) if n not in self.migrations]
        if missing:
            raise ValueError(f"{self.name}: no migration from version {missing[0]}")

    def current(self) -> Version:
        return Version(self.version, self.release)

    def check(self, found: Version) -> None:
        """Raise ``FormatTooNewError`` unless this code knows ``found``'s version."""
        if found.number > self.version:
            raise FormatTooNewError(self.name, found.number, found.release, self.version, self.release)

    def stored(self, txn: StateTransaction) -> Version:
        """The version a store holds (``UNMARKED`` without a marker), checked."""
        raw = txn.get_value(self.marker)
        found = Version(UNMARKED, "0.1.0") if raw is None else Version.decode(self.name, raw)
        self.check(found)
        return found

    def migrate(self, txn: StateTransaction, found: Version) -> None:
        """Take the store in ``txn`` from ``found`` to the current version, one declared step at a time, and
        write the current marker (the caller commits)."""
        for number in range(found.number, self.version):
            self.migrations[number](txn)
        txn.set_value(self.marker, self.current().encode())

    def open_store(self, backend: StateBackend) -> None:
        """Make ``backend`` hold the current version: refuse a newer one, migrate an older one (committed once),
        leave a current one untouched."""
        txn = StateTransaction(backend)
        found = self.stored(txn)
        if found.number == self.version:
            txn.rollback()
            return
        self.migrate(txn, found)
        txn.commit()
