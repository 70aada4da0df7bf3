"""Proof nodes by position: what Stage R needs to send a subscriber only what changed on its paths.

A StorageProof is a set of node bytes; here each node also carries where it is: ``b"n" + nibble path`` for a
trie node (the path where it starts; the root's is ``b"n"``) and ``b"v" + storage key`` for a V1 value node,
with its hash (its parent's reference, the trie root, or the value hash its leaf holds: no hashing needed).

Why positions make a delta cheap (the invariant ``RelayStage._views`` relies on). In a Substrate trie the node
starting at nibble path p is a function of the entries whose key starts with p, and whether a node starts at
p at all (p non-empty) is a function of the entries whose key starts with p[:-1] (a branch whose full key is
p[:-1] exists iff those entries number two or more and their longest common prefix is p[:-1]). So if no key
modified by a block starts with p[:-1], the node at p (or its absence) is the same before and after the block.
A position is *affected* when it is the root's or when p[:-1] is a prefix of a modified key; nothing below an
unaffected position is affected. A proof of keys K visits exactly the nodes at the positions that prefix a
key of K (hash-referenced ones; inline nodes live in their parent and hold no hashes), plus the value nodes
of K's keys, so between two blocks with the same K only the entries at affected positions (and the value
nodes of modified keys) can change, and they are what ``PathProver.entries(..., affected=...)`` walks.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence

from pubsub_core.trie.errors import MissingNodeError
from pubsub_core.trie.layout import HASH_LEN
from pubsub_core.trie.node import Node, nibble_index
from pubsub_core.trie.trie import Trie

__all__ = ["Affected", "Entries", "PathProver"]

Entries = dict[bytes, tuple[bytes, bytes]]
"""Position (``b"n" + nibbles`` or ``b"v" + key``) -> (node hash, node bytes)."""

_EMPTY_NODE = b"\x00"
"""The encoded empty trie: the one node the proof of any key in an empty (main) trie holds."""


class Affected:
    """The positions a block's modified keys (of one trie) affect: p is affected iff it is the root's ("") or
    p[:-1] is a prefix of a modified key (a binary search over the keys' sorted nibble strings)."""

    __slots__ = ("_nibbles", "modified")

    def __init__(self, modified: Iterable[bytes]) -> None:
        self.modified = frozenset(modified)
        self._nibbles = sorted(key.hex() for key in self.modified)

    def prefixes(self, nibbles: str) -> bool:
        """Whether ``nibbles`` is a prefix of some modified key."""
        keys = self._nibbles
        index = bisect_left(keys, nibbles)
        return index < len(keys) and keys[index].startswith(nibbles)

    def __contains__(self, position: object) -> bool:
        """Whether the entry at ``position`` (``b"n" + nibbles`` or ``b"v" + key``) may differ after the block."""
        assert isinstance(position, bytes)
        if position[:1] == b"v":
            return position[1:] in self.modified
        return len(position) == 1 or self.prefixes(position[1:-1].decode())


class PathProver:
    """The proof entries of one trie, each stored node loaded at most once per prover (one block's views:
    Stage R's subscribers share it, as they share the trie)."""

    __slots__ = ("_nodes", "_values", "empty_node", "trie")

    def __init__(self, trie: Trie, empty_node: bool) -> None:
        self.trie = trie
        self.empty_node = empty_node
        """Whether proving in the empty trie gives the empty node (Trie.prove) or nothing (an empty child trie,
        which RelayTries.prove leaves out: its absence is proved in the main trie)."""
        self._nodes: dict[str, Node] = {}
        self._values: dict[bytes, bytes] = {}

    def entries(self, keys: Sequence[bytes], affected: Affected | None = None) -> Entries:
        """The entries of the proof of ``keys``: all of them (``affected`` None: as many distinct node bytes as
        ``Trie.prove(keys)`` gives), or only those at affected positions and the value nodes of modified keys.
        The keys are followed together, level by level, so the nodes not yet loaded take one store call per
        level."""
        trie = self.trie
        root = trie.root_node
        out: Entries = {}
        if root is None:
            if self.empty_node and keys:
                out[b"n"] = (trie.layout.hasher(_EMPTY_NODE), _EMPTY_NODE)
            return out
        if keys:
            out[b"n"] = (trie.root, root.encoded)
        nodes = self._nodes
        hashed: list[tuple[bytes, bytes]] = []
        frontier = [(key, key.hex(), root, 0) for key in dict.fromkeys(keys)]
        while frontier:
            following: list[tuple[bytes, str, str, bytes, int]] = []  # key, nibbles, child path, ref, depth
            for key, nibbles, node, depth in frontier:
                partial = node.partial
                if not nibbles.startswith(partial, depth):
                    continue
                end = depth + len(partial)
                if end == len(nibbles):
                    if node.value_hashed and node.value is not None and (affected is None or key in affected.modified):
                        hashed.append((key, node.value))
                    continue
                children = node.children
                if children is None:
                    continue
                ref = children[nibble_index[nibbles[end]]]
                # An inline child (under 32 bytes) holds neither hash references nor a value hash: nothing
                # below it is a proof node.
                if ref is None or len(ref) < HASH_LEN:
                    continue
                if affected is not None and not affected.prefixes(nibbles[:end]):
                    continue  # unaffected: this child and everything below it are as they were
                following.append((key, nibbles, nibbles[: end + 1], ref, end + 1))
            missing = {path for _, _, path, _, _ in following if path not in nodes}
            if missing:
                nodes.update(trie.store.fetch(missing))
            frontier = []
            for key, nibbles, path, ref, depth in following:
                child = nodes.get(path)
                if child is None:
                    raise MissingNodeError(ref, trie.root, key)
                out[b"n" + path.encode()] = (ref, child.encoded)
                frontier.append((key, nibbles, child, depth))
        if hashed:
            values = self._values
            wanted = [k for k, _ in hashed if k not in values]
            if wanted:
                values.update(trie.store.fetch_values(wanted))
            for key, value_hash in hashed:
                value = values.get(key)
                if value is None:
                    raise MissingNodeError(value_hash, trie.root, key, what="value node")
                out[b"v" + key] = (value_hash, value)
        return out
