"""A StateBackend on transformWithState: namespaces split into pages, each page one MapState entry.

Every MapState call is a round trip to the JVM with a fixed cost, while a large value's bytes add little beyond it
(docs/benchmarks.md, "MapState call costs", from benchmarks/mapstate_bench.py). So a namespace is stored
as `pages` values (default 1) under the MapState key (namespace, page), each holding the page's entries in one
deterministic encoding. A read or write touches each needed page once per backend instance: a micro-batch of
protocol work for one grouping key costs a few calls per namespace, whatever the entry count.

With ``single_page_bytes`` (and the page directory, which records each namespace's page count), a new namespace
starts as one page and is split into ``default_pages`` pages once that page passes the size: most namespaces are
small, and a batch that touches a few of their keys then costs one call to read and one to write them instead of
one per page touched. The directory records where every namespace is (its page count, or its bundle), and a
reader follows it, whichever configuration wrote it: the layout is described by the store, never inferred.

With ``bundle_bytes`` as well, one-page namespaces are packed together: each lives in a bundle, one MapState
value of up to that many bytes holding several namespaces' encoded pages, and the directory records which. A
stage whose batches touch most of its many small namespaces (Stage S: a cache, key and reference namespace per
publisher followed) then reads and writes a few bundles instead of a page per namespace, the same bytes in a
fraction of the calls. A one-page namespace the directory records on its own page (written by a backend without
bundles) moves into a bundle when it is next written.

This module does not import pyspark. The stateful processor (streaming/) declares the MapState in its init():

    pages = handle.getMapState(PAGES_STATE_NAME, PAGE_KEY_SCHEMA, PAGE_VALUE_SCHEMA)

and builds one `SparkStateBackend(pages, ...)` per grouping key inside handleInputRows (Spark scopes MapState to
the current key). The page layout is part of both stages' stored formats (pubsub_core/stages/relay_state.py,
subscriber_state.py): a change to it is a new format version with its migration.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Collection, Mapping
from typing import Any, Protocol

from state.errors import StateError
from state.interface import BackendStats, Changes

__all__ = [
    "PAGES_STATE_NAME",
    "PAGE_KEY_SCHEMA",
    "PAGE_VALUE_SCHEMA",
    "CorruptPageError",
    "MapStateLike",
    "SparkStateBackend",
    "decode_page",
    "encode_page",
]

PAGES_STATE_NAME = "pubsub_pages"
PAGE_KEY_SCHEMA = "namespace string, page int"
PAGE_VALUE_SCHEMA = "data binary"
DIRECTORY_KEY = ("pubsub.directory", -1)
"""Where ``page_directory`` keeps the list of stored pages (no namespace has page -1). Each entry's value is the
namespace's page count as a u32, or empty for ``default_pages``; a
namespace in a bundle is listed with page ``BUNDLED_PAGE`` and its bundle's number as a u32."""
BUNDLE_NAMESPACE = "pubsub.bundle"
"""Bundle ``n`` is stored under (BUNDLE_NAMESPACE, -1 - n): a negative page, which no namespace's page is."""
BUNDLED_PAGE = 0xFFFFFFFF

_LEN = struct.Struct(">I")


class CorruptPageError(StateError):
    """A stored page does not decode; carries the namespace, the page number and the offending offset."""

    def __init__(self, namespace: str, page: int, offset: int) -> None:
        super().__init__(f"state page {page} of namespace {namespace!r} is corrupt at byte {offset}")
        self.namespace = namespace
        self.page = page
        self.offset = offset


class MapStateLike(Protocol):
    """The part of pyspark's MapState this backend uses (keys and values are tuples)."""

    def getValue(self, key: tuple[Any, ...], /) -> tuple[Any, ...] | None: ...

    def updateValue(self, key: tuple[Any, ...], value: tuple[Any, ...], /) -> None: ...

    def removeKey(self, key: tuple[Any, ...], /) -> None: ...


def encode_page(entries: Mapping[bytes, bytes]) -> bytes:
    """Entries sorted by key, each as u32 length + key + u32 length + value (big endian): same map, same bytes."""
    parts = [_LEN.pack(len(entries))]
    for key in sorted(entries):
        value = entries[key]
        parts += [_LEN.pack(len(key)), key, _LEN.pack(len(value)), value]
    return b"".join(parts)


def _encoded_size(entries: Mapping[bytes, bytes]) -> int:
    """``len(encode_page(entries))`` without encoding."""
    return _LEN.size * (1 + 2 * len(entries)) + sum(len(key) + len(value) for key, value in entries.items())


def decode_page(data: bytes, namespace: str = "?", page: int = 0) -> dict[bytes, bytes]:
    """The inverse of encode_page; raises CorruptPageError on truncated or trailing bytes."""
    view = memoryview(data)
    try:
        (count,), offset = _LEN.unpack_from(view, 0), _LEN.size
        entries: dict[bytes, bytes] = {}
        for _ in range(count):
            (klen,) = _LEN.unpack_from(view, offset)
            key = bytes(view[offset + 4 : offset + 4 + klen])
            offset += 4 + klen
            (vlen,) = _LEN.unpack_from(view, offset)
            value = bytes(view[offset + 4 : offset + 4 + vlen])
            offset += 4 + vlen
            if len(key) != klen or len(value) != vlen:
                raise CorruptPageError(namespace, page, offset)
            entries[key] = value
    except struct.error as exc:
        raise CorruptPageError(namespace, page, len(data)) from exc
    if offset != len(data):
        raise CorruptPageError(namespace, page, offset)
    return entries


class SparkStateBackend:
    """StateBackend over one grouping key's MapState of pages; caches the pages it has loaded."""

    def __init__(
        self,
        pages_state: MapStateLike,
        pages: Mapping[str, int] | None = None,
        default_pages: int = 1,
        defer_writes: bool = False,
        page_directory: bool = False,
        single_page_bytes: int | None = None,
        bundle_bytes: int | None = None,
    ):
        """``defer_writes`` keeps changed pages in memory until ``flush()``: a stage that commits once per
        input record then still writes each page once per micro-batch (Spark commits the batch atomically).
        ``page_directory`` keeps the list of stored pages in one MapState entry, read once per instance, so a
        page that does not exist costs no call (many small namespaces otherwise miss on most of their pages).
        ``single_page_bytes`` (needs the directory): a namespace not in ``pages`` starts as one page and is split
        into ``default_pages`` once its page would be written larger than this.
        ``bundle_bytes`` (needs ``single_page_bytes``): a one-page namespace, once written, lives in a bundle of
        up to this many bytes (bigger only if one namespace alone is). Any backend with the directory reads and
        keeps bundled namespaces; this only decides where new ones go."""
        if default_pages < 1 or any(count < 1 for count in (pages or {}).values()):
            raise ValueError("a namespace needs at least one page")
        if single_page_bytes is not None and not page_directory:
            raise ValueError("single_page_bytes needs the page directory (it records each namespace's page count)")
        if bundle_bytes is not None and single_page_bytes is None:
            raise ValueError("bundle_bytes needs single_page_bytes (only one-page namespaces are bundled)")
        self._state = pages_state
        self._pages = dict(pages or {})
        self._default_pages = default_pages
        self._cache: dict[str, list[dict[bytes, bytes] | None]] = {}
        """Each namespace's pages, None until loaded."""
        self._defer = defer_writes
        self._dirty: set[tuple[str, int]] = set()
        self._use_directory = page_directory
        self._directory: set[tuple[str, int]] | None = None
        self._single_page_bytes = single_page_bytes
        self._counts: dict[str, int] = {}
        """Page counts of the namespaces the directory records or this instance has decided (adaptive mode)."""
        self._page_memo: dict[str, dict[bytes, int]] = {}
        self._bundle_bytes = bundle_bytes
        self._bundle_of: dict[str, int] = {}
        """The bundle of each bundled namespace (from the directory, then as this instance places them)."""
        self._bundles: dict[int, dict[str, bytes | None]] = {}
        """Loaded bundles: each member's encoded page, None where the cached page is newer (encoded on write)."""
        self._stored_bundles: set[int] = set()
        """The bundles the store holds (one per number the directory names)."""
        self.stats = BackendStats()
        self.jvm_calls = 0
        """MapState calls made (the cost that matters on Spark)."""

    def page_count(self, namespace: str) -> int:
        fixed = self._pages.get(namespace)
        if fixed is not None:
            return fixed
        if not self._use_directory:
            return self._default_pages
        count = self._counts.get(namespace)
        if count is None:
            self._stored_pages()  # the directory records the page count of every stored namespace
            # Not stored: a new namespace starts as one page in adaptive mode.
            count = self._counts.setdefault(namespace, self._default_pages if self._single_page_bytes is None else 1)
        return count

    def page_of(self, namespace: str, key: bytes) -> int:
        """The page holding `key`: a stable hash (blake2b), never Python's salted hash()."""
        # Memoised per instance (one grouping key, one micro-batch): a batch of Stage R reads the same keys
        # hundreds of thousands of times (docs/benchmarks.md, "Measured code choices").
        memo = self._memo(namespace)
        page = memo.get(key)
        if page is None:
            count = self.page_count(namespace)
            page = 0 if count == 1 else int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") % count
            memo[key] = page
        return page

    def _memo(self, namespace: str) -> dict[bytes, int]:
        """The namespace's key -> page memo."""
        memo = self._page_memo.get(namespace)
        if memo is None:
            memo = self._page_memo[namespace] = {}
        return memo

    def _page_list(self, namespace: str) -> list[dict[bytes, bytes] | None]:
        """The namespace's pages by number, None where not loaded yet."""
        pages = self._cache.get(namespace)
        if pages is None:
            pages = self._cache[namespace] = [None] * self.page_count(namespace)
        return pages

    def _stored_pages(self) -> set[tuple[str, int]]:
        """The directory of stored pages (loaded on first use)."""
        if self._directory is None:
            self.jvm_calls += 1
            stored = self._state.getValue(DIRECTORY_KEY)
            data = bytes(stored[0]) if stored is not None and stored[0] is not None else b""
            self.stats.bytes_read += len(data)
            entries = decode_page(data, DIRECTORY_KEY[0], DIRECTORY_KEY[1]) if data else {}
            self._directory = set()
            for raw, count in entries.items():
                namespace, page = raw[:-4].decode(), int.from_bytes(raw[-4:], "big")
                if page == BUNDLED_PAGE:
                    self._bundle_of[namespace] = _LEN.unpack(count)[0]
                    self._counts[namespace] = 1
                    continue
                self._directory.add((namespace, page))
                self._counts.setdefault(namespace, _LEN.unpack(count)[0] if count else self._default_pages)
            self._stored_bundles = set(self._bundle_of.values())
        return self._directory

    def _load(self, namespace: str, page: int) -> dict[bytes, bytes]:
        pages = self._page_list(namespace)
        cached = pages[page]
        if cached is None:
            cached = pages[page] = self._fetch(namespace, page)
        return cached

    def _fetch(self, namespace: str, page: int) -> dict[bytes, bytes]:
        """A page from MapState or from its bundle (no call if the directory says it does not exist)."""
        if self._use_directory:
            directory = self._stored_pages()  # also learns which namespaces are bundled
            bundle = self._bundle_of.get(namespace)
            if bundle is not None:
                data = self._bundle(bundle).get(namespace)
                return decode_page(data, namespace, page) if data else {}
            if (namespace, page) not in directory:
                return {}
        self.jvm_calls += 1
        stored = self._state.getValue((namespace, page))
        data = bytes(stored[0]) if stored is not None and stored[0] is not None else b""
        self.stats.bytes_read += len(data)
        return decode_page(data, namespace, page) if data else {}

    def read_many(self, namespace: str, keys: Collection[bytes]) -> dict[bytes, bytes]:
        self.stats.read_calls += 1
        # Hand-written (Stage R reads through here 175,000 times a batch of the standard workload): the namespace's
        # page list and page memo looked up once per call, not a (namespace, key) tuple per key.
        found: dict[bytes, bytes] = {}
        pages = self._page_list(namespace)
        memo = self._memo(namespace)
        for key in keys:
            page = memo.get(key)
            if page is None:
                page = self.page_of(namespace, key)
            entries = pages[page]
            if entries is None:
                entries = self._load(namespace, page)
            value = entries.get(key)
            if value is not None:
                found[key] = value
        return found

    def scan(self, namespace: str) -> dict[bytes, bytes]:
        self.stats.scan_calls += 1
        found: dict[bytes, bytes] = {}
        for page in range(self.page_count(namespace)):
            found.update(self._load(namespace, page))
        return found

    def write_many(self, changes: Changes) -> None:
        self.stats.write_calls += 1
        touched: set[tuple[str, int]] = set()
        for namespace, entries in changes.items():
            for key, value in entries.items():
                page = self.page_of(namespace, key)
                stored = self._load(namespace, page)
                if value is None:
                    stored.pop(key, None)
                else:
                    stored[key] = value
                touched.add((namespace, page))
        if self._defer:
            self._dirty |= touched
            return
        self._store(touched)

    def flush(self) -> None:
        """Write the pages changed since the last flush (deferred mode), one call each."""
        self._store(self._dirty)
        self._dirty = set()

    def _split_if_large(self, touched: set[tuple[str, int]]) -> set[str]:
        """Split each one-page namespace of ``touched`` whose page outgrew ``single_page_bytes``: its entries
        redistributed over ``default_pages`` pages, all of them added to ``touched`` (adaptive mode; an explicit
        ``pages`` count is kept). Returns the namespaces split."""
        limit = self._single_page_bytes
        split: set[str] = set()
        if limit is None or self._default_pages == 1:
            return split
        for namespace, page in sorted(touched):
            if namespace in self._pages or self.page_count(namespace) != 1:
                continue
            entries = self._load(namespace, page)
            if _encoded_size(entries) <= limit:
                continue
            count = self._counts[namespace] = self._default_pages
            self._page_memo.pop(namespace, None)
            pages: list[dict[bytes, bytes] | None] = [{} for _ in range(count)]
            self._cache[namespace] = pages
            for key, value in entries.items():
                self._load(namespace, self.page_of(namespace, key))[key] = value
            split.add(namespace)
        touched.update((namespace, n) for namespace in split for n in range(self._default_pages))
        return split

    def _store(self, touched: set[tuple[str, int]]) -> None:
        directory = self._stored_pages() if self._use_directory else None
        before = None if directory is None else set(directory)
        bundled_before = dict(self._bundle_of)
        split = self._split_if_large(touched)
        if directory is not None:
            touched = self._store_bundled(touched, split, directory)
        for namespace, page in sorted(touched):
            stored = self._load(namespace, page)
            if stored:
                data = encode_page(stored)
                self.stats.bytes_written += len(data)
                self.jvm_calls += 1
                self._state.updateValue((namespace, page), (data,))
                if directory is not None:
                    directory.add((namespace, page))
            elif directory is None or (namespace, page) in directory:
                self.jvm_calls += 1
                self._state.removeKey((namespace, page))
                if directory is not None:
                    directory.discard((namespace, page))
        # A split namespace changed its page count, a bundled one may have moved.
        if directory is not None and (split or directory != before or self._bundle_of != bundled_before):
            self.jvm_calls += 1
            if directory or self._bundle_of:
                entries = {ns.encode() + page.to_bytes(4, "big"): self._count_entry(ns) for ns, page in directory}
                entries.update((ns.encode() + BUNDLED_PAGE.to_bytes(4, "big"), _LEN.pack(bundle))
                               for ns, bundle in self._bundle_of.items())
                self._state.updateValue(DIRECTORY_KEY, (encode_page(entries),))
            else:
                self._state.removeKey(DIRECTORY_KEY)

    # -- bundles ---------------------------------------------------------------------------------
    def _bundle(self, number: int) -> dict[str, bytes | None]:
        """Bundle ``number``'s members (loaded on first use: one call)."""
        members = self._bundles.get(number)
        if members is None:
            members = self._bundles[number] = {}
            if number in self._stored_bundles:
                self.jvm_calls += 1
                stored = self._state.getValue((BUNDLE_NAMESPACE, -1 - number))
                data = bytes(stored[0]) if stored is not None and stored[0] is not None else b""
                self.stats.bytes_read += len(data)
                raw = decode_page(data, BUNDLE_NAMESPACE, -1 - number) if data else {}
                members.update((name.decode(), page) for name, page in raw.items())
        return members

    def _member_size(self, namespace: str, data: bytes | None) -> int:
        """A member's share of its bundle's encoding: its name, its page and their two lengths."""
        page = len(data) if data is not None else _encoded_size(self._load(namespace, 0))
        return 2 * _LEN.size + len(namespace.encode()) + page

    def _bundle_size(self, number: int) -> int:
        return _LEN.size + sum(self._member_size(ns, data) for ns, data in self._bundle(number).items())

    def _bundle_with_room(self, size: int, avoid: int | None = None) -> int:
        """The newest bundle if ``size`` more bytes fit in it (and it is not ``avoid``), else a new one."""
        newest = max(self._stored_bundles.union(self._bundles), default=-1)  # every bundle a namespace is in
        limit = self._bundle_bytes or 0
        if newest >= 0 and newest != avoid and self._bundle_size(newest) + size <= limit:
            return newest
        return newest + 1

    def _store_bundled(self, touched: set[tuple[str, int]], split: set[str],
                       directory: set[tuple[str, int]]) -> set[tuple[str, int]]:
        """Write the bundles of the touched one-page namespaces (placing new ones, moving one kept on its own page
        before bundles into one, splitting a full bundle); returns the pages still to write on their own."""
        own_pages: set[tuple[str, int]] = set()
        changed: set[int] = set()
        for namespace, page in sorted(touched):
            bundle = self._bundle_of.get(namespace)
            if namespace in split and bundle is not None:  # outgrew its bundle: on its own pages now
                self._bundle(bundle).pop(namespace, None)
                del self._bundle_of[namespace]
                changed.add(bundle)
            bundling = (self._bundle_bytes is not None and namespace not in self._pages
                        and self.page_count(namespace) == 1)
            if namespace in split or (bundle is None and not bundling):
                own_pages.add((namespace, page))
                continue
            entries = self._load(namespace, 0)
            if bundle is None:
                if (namespace, 0) in directory:  # on its own page (a backend without bundles wrote it): moves
                    self.jvm_calls += 1
                    self._state.removeKey((namespace, 0))
                    directory.discard((namespace, 0))
                if not entries:
                    continue
                bundle = self._bundle_of[namespace] = self._bundle_with_room(self._member_size(namespace, None))
            members = self._bundle(bundle)
            if entries:
                members[namespace] = None
            else:
                members.pop(namespace, None)
                del self._bundle_of[namespace]
            changed.add(bundle)
        pending = sorted(changed) if self._bundle_bytes is not None else []  # others keep bundles as they are
        while pending:
            number = pending.pop(0)
            members = self._bundle(number)
            while len(members) > 1 and self._bundle_size(number) > (self._bundle_bytes or 0):
                namespace = max(members)  # the last by name moves to the newest bundle with room, or a new one
                data = members.pop(namespace)
                target = self._bundle_with_room(self._member_size(namespace, data), avoid=number)
                self._bundle(target)[namespace] = data
                self._bundle_of[namespace] = target
                if target not in pending:
                    pending.append(target)
                changed.add(target)
        for number in sorted(changed):
            self._write_bundle(number)
        return own_pages

    def _write_bundle(self, number: int) -> None:
        """Bundle ``number`` back to MapState (one call), or removed once it has no member."""
        members = self._bundle(number)
        key = (BUNDLE_NAMESPACE, -1 - number)
        if not members:
            if number in self._stored_bundles:
                self.jvm_calls += 1
                self._state.removeKey(key)
                self._stored_bundles.discard(number)
            return
        encoded: dict[bytes, bytes] = {}
        for namespace, page in members.items():
            if page is None:
                page = members[namespace] = encode_page(self._load(namespace, 0))
            encoded[namespace.encode()] = page
        data = encode_page(encoded)
        self.stats.bytes_written += len(data)
        self.jvm_calls += 1
        self._state.updateValue(key, (data,))
        self._stored_bundles.add(number)

    def _count_entry(self, namespace: str) -> bytes:
        """The directory's value for a page of ``namespace``: its page count, empty for ``default_pages``."""
        count = self.page_count(namespace)
        return b"" if count == self._default_pages else _LEN.pack(count)
