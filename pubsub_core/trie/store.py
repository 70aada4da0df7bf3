"""Node stores: where a Trie keeps its nodes between batches, addressed by nibble path.

A node lives at the nibble path where it starts (its parent's path + partial key + child index), so the
nodes on a key's path are found without hashes, a moved subtree keeps its descendants in place, and no
reference counting is needed. Inline nodes (encoding under 32 bytes) live only inside their parent; the
root always lives at the empty path. V1 value nodes live apart, keyed by their storage key.

Every call may be a round trip (on Spark about 80 us), so the protocol is batch-shaped and counts calls.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Final, Protocol

from pubsub_core.codec.scale import ScaleDecodeError, decode_compact, encode_compact
from pubsub_core.codec.memo import DecodeMemo
from pubsub_core.trie.node import NODE_MEMO, Node, decode_node_cached
from state.transaction import StateTransaction

__all__ = ["MemoryNodeStore", "NodeStore", "StateNodeStore", "StoreStats"]


@dataclass(slots=True)
class StoreStats:
    """Calls made to a node store and nodes moved: the cost model the benchmark reports per batch."""

    fetch_calls: int = 0
    value_calls: int = 0
    write_calls: int = 0
    nodes_fetched: int = 0
    nodes_written: int = 0

    @property
    def calls(self) -> int:
        return self.fetch_calls + self.value_calls + self.write_calls


class NodeStore(Protocol):
    """Trie nodes by nibble path plus V1 value nodes by storage key, read and written in batches."""

    stats: StoreStats

    @property
    def batched(self) -> bool:
        """True when calls are costly, so the trie should load a batch's paths level by level in few calls."""
        ...

    def fetch(self, paths: Collection[str]) -> dict[str, Node]:
        """One call: the nodes stored at these paths (absent paths are left out)."""
        ...

    def get(self, path: str) -> Node | None:
        """One call: the node stored at one path, or None."""
        ...

    def fetch_values(self, keys: Collection[bytes]) -> dict[bytes, bytes]:
        """One call: the value nodes of these storage keys (absent keys are left out)."""
        ...

    def write(self, nodes: Mapping[str, Node | None], values: Mapping[bytes, bytes | None]) -> None:
        """One call: store or (None) remove nodes by path and value nodes by storage key."""
        ...


class MemoryNodeStore:
    """Nodes in a dict, decoded: the default store, where a call costs a dict lookup."""

    __slots__ = ("nodes", "stats", "values")

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.values: dict[bytes, bytes] = {}
        self.stats = StoreStats()

    @property
    def batched(self) -> bool:
        return False

    def fetch(self, paths: Collection[str]) -> dict[str, Node]:
        self.stats.fetch_calls += 1
        nodes = self.nodes
        found = {path: node for path in paths if (node := nodes.get(path)) is not None}
        self.stats.nodes_fetched += len(found)
        return found

    def get(self, path: str) -> Node | None:
        self.stats.fetch_calls += 1
        node = self.nodes.get(path)
        if node is not None:
            self.stats.nodes_fetched += 1
        return node

    def fetch_values(self, keys: Collection[bytes]) -> dict[bytes, bytes]:
        self.stats.value_calls += 1
        values = self.values
        return {key: value for key in keys if (value := values.get(key)) is not None}

    def write(self, nodes: Mapping[str, Node | None], values: Mapping[bytes, bytes | None]) -> None:
        self.stats.write_calls += 1
        self.stats.nodes_written += len(nodes)
        for path, node in nodes.items():
            if node is None:
                self.nodes.pop(path, None)
            else:
                self.nodes[path] = node
        for key, value in values.items():
            if value is None:
                self.values.pop(key, None)
            else:
                self.values[key] = value


def _encode_page(page: Mapping[str, bytes]) -> bytes:
    parts = []
    for rel in sorted(page):
        encoded = page[rel]
        parts.append(bytes((len(rel),)) + rel.encode() + encode_compact(len(encoded)) + encoded)
    return b"".join(parts)


def _decode_page(data: bytes) -> dict[str, bytes]:
    """A page's nodes by relative path. By hand, replacing a ``ScaleReader`` loop, which
    page loads pay for every node (docs/benchmarks.md, "Measured code choices")."""
    page: dict[str, bytes] = {}
    pos, end = 0, len(data)
    while pos < end:
        rel_start = pos + 1
        rel_end = rel_start + data[pos]
        if rel_end > end:
            raise ScaleDecodeError("trie page: truncated relative path", data, pos)
        size, start = decode_compact(data, rel_end)
        pos = start + size
        if pos > end:
            raise ScaleDecodeError("trie page: truncated node", data, start)
        page[data[rel_start:rel_end].decode()] = data[start:pos]
    return page


_PAGE_MEMO: Final[DecodeMemo[dict[str, bytes]]] = DecodeMemo(1 << 12)
"""Decoded pages by their bytes (about the last 4,096), shared: a store copies a page before changing it."""


def _decode_page_cached(data: bytes) -> dict[str, bytes]:
    """``_decode_page`` remembered in ``_PAGE_MEMO``: a relay block and the views after it open new transactions
    over the same stored pages (and the block's writer left the pages it wrote there)."""
    page = _PAGE_MEMO.get(data)
    if page is None:
        page = _decode_page(data)
        _PAGE_MEMO.remember(data, page)
    return page


class StateNodeStore:
    """Nodes grouped into pages over a StateTransaction, so a batch costs a few backend calls.

    A page holds every node whose path length falls in one band of ``page_depth`` nibbles, under the same
    path prefix: page "" holds the top ``page_depth`` levels (the nodes every update rewrites), page "3a"
    the next band below 0x3a, and so on. Loading the pages on a batch's paths takes one call per band;
    the transaction writes every changed page in its single commit call. Value nodes live in
    ``<namespace>.values`` by storage key. Use one store per transaction.
    """

    __slots__ = ("_decoded", "_owned", "_pages", "_txn", "namespace", "page_depth", "stats", "values_namespace")

    def __init__(self, txn: StateTransaction, namespace: str, page_depth: int = 2) -> None:
        if page_depth < 1:
            raise ValueError(f"A page must span at least one nibble level, not {page_depth}.")
        self._txn = txn
        self.namespace = namespace
        self.values_namespace = namespace + ".values"
        self.page_depth = page_depth
        self.stats = StoreStats()
        # Copy on write: a loaded page is the decoded page cache's own dict, shared with every store that loaded
        # the same bytes, until this store first changes it (``_owned``: the pages copied for that). Replaces a
        # copy of every page loaded: most loads only read (every view proves over pages the block just wrote).
        self._pages: dict[str, dict[str, bytes]] = {}
        self._owned: set[str] = set()
        self._decoded: dict[str, Node] = {}

    @property
    def batched(self) -> bool:
        return True

    def _page_id(self, path: str) -> str:
        return path[: len(path) - len(path) % self.page_depth]

    def _load_pages(self, page_ids: Collection[str]) -> None:
        missing = [pid for pid in page_ids if pid not in self._pages]
        if not missing:
            return
        namespace = self.namespace
        self._txn.prefetch(namespace, [pid.encode() for pid in missing])
        for pid in missing:
            raw = self._txn.get(namespace, pid.encode())
            self._pages[pid] = {} if raw is None else _decode_page_cached(raw)

    def fetch(self, paths: Collection[str]) -> dict[str, Node]:
        self.stats.fetch_calls += 1
        self._load_pages({self._page_id(path) for path in paths})
        found: dict[str, Node] = {}
        for path in paths:
            node = self._decoded.get(path)
            if node is None:
                pid = self._page_id(path)
                encoded = self._pages[pid].get(path[len(pid) :])
                if encoded is None:
                    continue
                decoded = decode_node_cached(encoded)
                if decoded is None:
                    continue
                node = self._decoded[path] = decoded
            found[path] = node
        self.stats.nodes_fetched += len(found)
        return found

    def get(self, path: str) -> Node | None:
        return self.fetch((path,)).get(path)

    def fetch_values(self, keys: Collection[bytes]) -> dict[bytes, bytes]:
        self.stats.value_calls += 1
        namespace = self.values_namespace
        self._txn.prefetch(namespace, keys)
        return {key: value for key in keys if (value := self._txn.get(namespace, key)) is not None}

    def write(self, nodes: Mapping[str, Node | None], values: Mapping[bytes, bytes | None]) -> None:
        self.stats.write_calls += 1
        self.stats.nodes_written += len(nodes)
        self._load_pages({self._page_id(path) for path in nodes})
        dirty: set[str] = set()
        pages, owned = self._pages, self._owned
        for path, node in nodes.items():
            pid = self._page_id(path)
            page = pages[pid]
            if pid not in owned:
                page = pages[pid] = dict(page)
                owned.add(pid)
            rel = path[len(pid) :]
            if node is None:
                self._decoded.pop(path, None)
                if page.pop(rel, None) is not None:
                    dirty.add(pid)
            else:
                self._decoded[path] = node
                page[rel] = node.encoded
                NODE_MEMO.remember(node.encoded, node)
                dirty.add(pid)
        for pid in dirty:
            page = pages[pid]
            if page:
                # The page, as written, is what its bytes decode to: left in the memo for the readers after this
                # block (the views' proofs), and shared from now on, so a later write here copies it again.
                raw = _encode_page(page)
                _PAGE_MEMO.remember(raw, page)
                owned.discard(pid)
                self._txn.put(self.namespace, pid.encode(), raw)
            else:
                self._txn.delete(self.namespace, pid.encode())
        for key, value in values.items():
            if value is None:
                self._txn.delete(self.values_namespace, key)
            else:
                self._txn.put(self.values_namespace, key, value)
