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

from collections.abc import Collection, Iterable

from pubsub_core.trie.errors import MissingNodeError
from pubsub_core.trie.layout import HASH_LEN
from pubsub_core.trie.node import Node, nibble_index
from pubsub_core.trie.trie import Trie

__all__ = ["Entries", "PathProver", "affected_prefixes", "is_affected"]

Entries = dict[bytes, tuple[bytes, bytes]]
"""Position (``b"n" + nibbles`` or ``b"v" + key``) -> (node hash, node bytes)."""

_EMPTY_NODE = b"\x00"
"""The encoded empty trie: the one node the proof of any key in an empty (main) trie holds."""


def affected_prefixes(modified: Iterable[bytes]) -> frozenset[str]:
    """Every nibble prefix (the empty one included) of the modified keys: position p is affected iff p is the
    root's ("") or p[:-1] is in this set."""
    prefixes: set[str] = set()
    for key in modified:
        nibbles = key.hex()
        prefixes.update(nibbles[:i] for i in range(len(nibbles) + 1))
    return frozenset(prefixes)


def is_affected(position: bytes, prefixes: Collection[str], modified: Collection[bytes]) -> bool:
    """Whether the entry at ``position`` may differ after the block whose modified keys gave ``prefixes``."""
    if position[:1] == b"v":
        return position[1:] in modified
    return len(position) == 1 or position[1:-1].decode() in prefixes


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

    def entries(self, keys: Iterable[bytes], affected: Collection[str] | None = None,
                modified: Collection[bytes] = ()) -> Entries:
        """The entries of the proof of ``keys``: all of them (``affected`` None: as many distinct node bytes as
        ``Trie.prove(keys)`` gives), or only those at affected positions (p == "" or p[:-1] in ``affected``)
        and the value nodes of ``modified`` keys."""
        trie = self.trie
        root = trie.root_node
        out: Entries = {}
        if root is None:
            if self.empty_node and any(True for _ in keys):
                out[b"n"] = (trie.layout.hasher(_EMPTY_NODE), _EMPTY_NODE)
            return out
        root_entry = (trie.root, root.encoded)
        nodes = self._nodes
        hashed: list[tuple[bytes, bytes]] = []
        for key in keys:
            out[b"n"] = root_entry
            nibbles = key.hex()
            node = root
            depth = 0
            while True:
                partial = node.partial
                if not nibbles.startswith(partial, depth):
                    break
                end = depth + len(partial)
                if end == len(nibbles):
                    if node.value_hashed and node.value is not None and (affected is None or key in modified):
                        hashed.append((key, node.value))
                    break
                children = node.children
                if children is None:
                    break
                ref = children[nibble_index[nibbles[end]]]
                # An inline child (under 32 bytes) holds neither hash references nor a value hash: nothing
                # below it is a proof node.
                if ref is None or len(ref) < HASH_LEN:
                    break
                if affected is not None and nibbles[:end] not in affected:
                    break  # unaffected: this node and everything below it are as they were
                path = nibbles[: end + 1]
                child = nodes.get(path)
                if child is None:
                    child = trie.store.get(path)
                    if child is None:
                        raise MissingNodeError(ref, trie.root, key)
                    nodes[path] = child
                out[b"n" + path.encode()] = (ref, child.encoded)
                node = child
                depth = end + 1
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
