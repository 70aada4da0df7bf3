"""A bounded memo of decoded bytes (trie nodes, store pages, stored calls) that callers may also fill with what they
encoded.

Not ``functools.lru_cache``: it builds a key tuple for every call with a bytes
argument and cannot be told a result it did not compute. A store that writes a page already holds its decoded
form, and the views after a relay block read those very pages and nodes back, so ``remember`` lets the writer
leave them here. Two generations instead of an exact LRU order: an entry lives until two fills of
``size // 2`` new entries pass without a hit, and a hit in the older generation moves it to the newer one. What is
remembered never changes a result: every value is what decoding its key gives.
"""

from __future__ import annotations

from typing import Generic, TypeVar

__all__ = ["DecodeMemo"]

V = TypeVar("V")


class DecodeMemo(Generic[V]):
    """Values by the bytes they decode from, at most ``size`` of them (two generations of ``size // 2``)."""

    __slots__ = ("_half", "_older", "_recent")

    def __init__(self, size: int) -> None:
        if size < 2:
            raise ValueError(f"a decode memo holds at least 2 entries, not {size}")
        self._half = size // 2
        self._recent: dict[bytes, V] = {}
        self._older: dict[bytes, V] = {}

    def __len__(self) -> int:
        return len(self._recent) + len(self._older)

    def get(self, data: bytes) -> V | None:
        """The value remembered for ``data``, or None."""
        found = self._recent.get(data)
        if found is None:
            found = self._older.get(data)
            if found is not None:
                self.remember(data, found)
        return found

    def remember(self, data: bytes, value: V) -> None:
        """Keep ``value`` as what ``data`` decodes to (the caller's promise), dropping the older generation
        when the newer one is full."""
        recent = self._recent
        if len(recent) >= self._half:
            self._older = recent
            recent = self._recent = {}
        recent[data] = value

    def clear(self) -> None:
        self._recent = {}
        self._older = {}
