"""Following one key's path through hash-addressed nodes, one node at a time, from the root or any inner node.

The subscriber's dual-trie traversal walks the old and the new trie side by side and stops where both
reach the same hash; a walk can start at any node hash (with the nibble depth where that node begins),
so it can also resume from nodes the caller already holds.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Protocol

from pubsub_core.trie.errors import IncompleteProofError
from pubsub_core.trie.layout import HASH_LEN
from pubsub_core.hashing import blake2_256
from pubsub_core.trie.node import EMPTY_NODE, Node, decode_node_cached, nibble_index
from pubsub_core.trie.recorder import AccessTracker

__all__ = ["NodeSource", "PathStep", "walk_path"]

_EMPTY_ROOT = blake2_256(EMPTY_NODE)
"""Like a MemoryDB, every source implicitly holds the empty node (a proof against the empty root may be empty)."""


class NodeSource(Protocol):
    """Nodes (and V1 value nodes) by hash: a proof, a cache, or a proof with a cache behind it."""

    def get(self, node_hash: bytes) -> bytes | None:
        """The encoded node with this hash, or None when this source does not hold it."""
        ...


@dataclass(frozen=True, slots=True)
class PathStep:
    """One node on a key's path.

    ``node_hash`` is None for a node inlined in its parent. ``depth`` is the number of key nibbles consumed
    before this node's partial key; ``index`` the node's position in the walk (0 = where it started).
    ``ends_path`` is true on the last node: the key's own node (``holds_key``) or the point where the path
    proves the key absent. ``node`` is None only for the empty trie's root.
    """

    node_hash: bytes | None
    encoded: bytes
    node: Node | None
    depth: int
    index: int
    ends_path: bool
    holds_key: bool
    next_ref: bytes | None
    """The child reference the walk follows next (a hash, or an inline encoding); None on the last node."""

    # Explicit, not generated: compiled (setup.py), it is native code; the dataclass's own stays interpreted.
    def __init__(
        self, node_hash: bytes | None, encoded: bytes, node: Node | None, depth: int, index: int, ends_path: bool,
        holds_key: bool, next_ref: bytes | None,
    ) -> None:
        object.__setattr__(self, "node_hash", node_hash)
        object.__setattr__(self, "encoded", encoded)
        object.__setattr__(self, "node", node)
        object.__setattr__(self, "depth", depth)
        object.__setattr__(self, "index", index)
        object.__setattr__(self, "ends_path", ends_path)
        object.__setattr__(self, "holds_key", holds_key)
        object.__setattr__(self, "next_ref", next_ref)

    @property
    def child_depth(self) -> int:
        """The nibble depth where the next node on the path begins."""
        return self.depth + (0 if self.node is None else len(self.node.partial)) + 1


def walk_path(
    source: NodeSource,
    node_hash: bytes,
    key: bytes,
    *,
    depth: int = 0,
    tracker: AccessTracker | None = None,
    root: bytes | None = None,
) -> Generator[PathStep, None, None]:
    """Yield the nodes on ``key``'s path starting at the node ``node_hash`` (which begins at nibble ``depth``).

    Nodes are fetched lazily, as the iteration reaches them: a missing one raises IncompleteProofError
    (naming ``root``, default ``node_hash``) only when the walk needs it; undecodable bytes raise
    MalformedNodeError. Every node fetched by hash is recorded in ``tracker``.
    """
    nibbles = key.hex()
    if not 0 <= depth <= len(nibbles):
        raise ValueError(f"A walk cannot start at nibble {depth} of a {len(nibbles)}-nibble key.")
    root_hash = node_hash if root is None else root
    ref = node_hash
    by_hash = True
    index = 0
    while True:
        if by_hash:
            fetched = source.get(ref)
            if fetched is None:
                if ref != _EMPTY_ROOT:
                    raise IncompleteProofError(ref, root_hash, key)
                fetched = EMPTY_NODE
            if tracker is not None:
                tracker.record(ref, fetched)
            encoded, step_hash = fetched, ref
        else:
            encoded, step_hash = ref, None
        node = decode_node_cached(encoded)
        if node is None:
            yield PathStep(step_hash, encoded, None, depth, index, True, False, None)
            return
        partial = node.partial
        end = depth + len(partial)
        if not nibbles.startswith(partial, depth):
            yield PathStep(step_hash, encoded, node, depth, index, True, False, None)
            return
        if end == len(nibbles):
            yield PathStep(step_hash, encoded, node, depth, index, True, node.value is not None, None)
            return
        child = None if node.children is None else node.children[nibble_index[nibbles[end]]]
        if child is None:
            yield PathStep(step_hash, encoded, node, depth, index, True, False, None)
            return
        yield PathStep(step_hash, encoded, node, depth, index, False, False, child)
        ref = child
        by_hash = len(child) == HASH_LEN
        depth = end + 1
        index += 1
