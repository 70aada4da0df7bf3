"""Storage proofs: a set of encoded nodes, read against a root with three outcomes (value, absent, incomplete).

As in sp-state-machine's read_proof_check, entries are indexed by their hash and only decoded when a read
reaches them, so value nodes and stray bytes in a proof are harmless until something needs them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping

from pubsub_core.hashing import blake2_256
from pubsub_core.trie.errors import DuplicateNodeError, IncompleteProofError, InvalidChildRootError, ValueMismatchError
from pubsub_core.trie.layout import HASH_LEN
from pubsub_core.trie.node import EMPTY_NODE, decode_node
from pubsub_core.trie.recorder import AccessTracker
from pubsub_core.trie.walker import NodeSource, walk_path

__all__ = [
    "LayeredSource",
    "ProofDB",
    "lookup",
    "next_key",
    "nodes_on_paths",
    "proof_size",
    "prove_from_source",
    "read_child_proof",
    "read_proof",
    "verify_proof",
]

_CHILD_PREFIX = b":child_storage:default:"
_EMPTY_ROOT = blake2_256(EMPTY_NODE)


class ProofDB:
    """Proof nodes by hash. Rejects a node given twice unless ``allow_duplicates`` (then the copies collapse)."""

    __slots__ = ("_nodes", "size")

    def __init__(self, nodes: Iterable[bytes], *, allow_duplicates: bool = False) -> None:
        self._nodes: dict[bytes, bytes] = {}
        self.size = 0
        """Total bytes of the distinct nodes: the proof's size on the wire."""
        for node in nodes:
            node = bytes(node)
            node_hash = blake2_256(node)
            if node_hash in self._nodes:
                if not allow_duplicates:
                    raise DuplicateNodeError(node, node_hash)
                continue
            self._nodes[node_hash] = node
            self.size += len(node)

    def get(self, node_hash: bytes) -> bytes | None:
        """The node with this hash, or None."""
        return self._nodes.get(node_hash)

    def __contains__(self, node_hash: object) -> bool:
        return node_hash in self._nodes

    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self) -> Iterator[bytes]:
        """The node hashes."""
        return iter(self._nodes)

    def nodes(self) -> list[bytes]:
        """The encoded nodes, sorted (the order of a StorageProof's BTreeSet)."""
        return sorted(self._nodes.values())


class LayeredSource:
    """Looks a hash up in ``primary`` (the proof) first, then in ``fallback`` (for example a node cache)."""

    __slots__ = ("fallback", "primary")

    def __init__(self, primary: NodeSource, fallback: NodeSource) -> None:
        self.primary = primary
        self.fallback = fallback

    def get(self, node_hash: bytes) -> bytes | None:
        found = self.primary.get(node_hash)
        return self.fallback.get(node_hash) if found is None else found


def proof_size(nodes: Iterable[bytes]) -> int:
    """Total bytes of a proof's nodes (SCALE framing excluded)."""
    return sum(len(node) for node in nodes)


def lookup(source: NodeSource, root: bytes, key: bytes, tracker: AccessTracker | None = None) -> bytes | None:
    """The value of ``key`` under ``root``; None when the nodes prove it absent.

    Raises IncompleteProofError when a node or value node on the path is missing, MalformedNodeError when
    one does not decode.
    """
    last = None
    for last in walk_path(source, root, key, tracker=tracker):
        pass
    if last is None or not last.holds_key or last.node is None:
        return None
    value = last.node.value
    if value is None or not last.node.value_hashed:
        return value
    stored = source.get(value)
    if stored is None:
        raise IncompleteProofError(value, root, key, what="value node")
    if tracker is not None:
        tracker.record(value, stored)
    return stored


def read_proof(root: bytes, nodes: Iterable[bytes], keys: Iterable[bytes]) -> dict[bytes, bytes | None]:
    """Read ``keys`` from a proof against ``root``: key -> value, or None when proven absent.

    Raises IncompleteProofError if a needed node is missing, DuplicateNodeError if a node is listed twice.
    """
    db = ProofDB(nodes)
    return {bytes(key): lookup(db, root, bytes(key)) for key in keys}


def _child_key(storage_key: bytes) -> bytes:
    return storage_key if storage_key.startswith(_CHILD_PREFIX) else _CHILD_PREFIX + storage_key


def read_child_proof(
    root: bytes,
    nodes: Iterable[bytes],
    storage_key: bytes,
    keys: Iterable[bytes],
    tracker: AccessTracker | None = None,
) -> dict[bytes, bytes | None]:
    """Read keys of the default child trie ``storage_key`` (prefixed or not) from a proof against the relay root.

    A child trie with no entry in the main trie is empty, so every key reads as absent.
    """
    db = ProofDB(nodes)
    prefixed = _child_key(storage_key)
    child_root = lookup(db, root, prefixed, tracker)
    if child_root is None:
        return {bytes(key): None for key in keys}
    if len(child_root) != HASH_LEN:
        raise InvalidChildRootError(prefixed, child_root)
    return {bytes(key): lookup(db, child_root, bytes(key), tracker) for key in keys}


def verify_proof(root: bytes, nodes: Iterable[bytes], expected: Mapping[bytes, bytes | None]) -> None:
    """Check that the proof gives exactly ``expected`` (None = absent) and holds no node those reads skip."""
    db = ProofDB(nodes)
    tracker = AccessTracker()
    for key, want in expected.items():
        got = lookup(db, root, key, tracker)
        if got != want:
            raise ValueMismatchError(key, want, got)
    tracker.ensure_no_unused_nodes(db)


def nodes_on_paths(source: NodeSource, root: bytes, keys: Collection[bytes]) -> dict[bytes, bytes]:
    """Hash -> encoding of every node (and value node) on the paths to ``keys``: what proving them needs.

    A collator prunes a proof to this set; raises IncompleteProofError if ``source`` lacks one of them.
    """
    tracker = AccessTracker()
    for key in keys:
        lookup(source, root, key, tracker)
    return tracker.accessed


def prove_from_source(source: NodeSource, root: bytes, keys: Collection[bytes]) -> list[bytes]:
    """The minimal proof of ``keys`` from hash-addressed nodes, sorted as a StorageProof."""
    return sorted(nodes_on_paths(source, root, keys).values())


def next_key(
    source: NodeSource, root: bytes, key_before: bytes, *, or_equal: bool = False, prefix: bytes = b""
) -> bytes | None:
    """The first key after ``key_before`` (or equal to it, with ``or_equal``) that starts with ``prefix``.

    None when the nodes prove there is none; IncompleteProofError when a node needed to decide is missing
    (smoldot's proof_decode next_key, storage keys only).
    """
    target = key_before.hex()
    wanted = prefix.hex()
    found = _next_from(source, root, root, True, "", target, or_equal, wanted, key_before)
    return None if found is None else bytes.fromhex(found)


def _next_from(
    source: NodeSource,
    root: bytes,
    ref: bytes,
    by_hash: bool,
    path: str,
    target: str,
    or_equal: bool,
    wanted: str,
    key: bytes,
) -> str | None:
    # Every key below a node starts with its path: skip subtrees wholly before the target or off-prefix
    # before fetching them (a proof need not hold them).
    if path < target[: len(path)] or not (path.startswith(wanted) or wanted.startswith(path)):
        return None
    if by_hash:
        encoded = source.get(ref)
        if encoded is None:
            if ref != _EMPTY_ROOT:
                raise IncompleteProofError(ref, root, key)
            encoded = EMPTY_NODE
    else:
        encoded = ref
    node = decode_node(encoded)
    if node is None:
        return None
    full = path + node.partial
    if full < target[: len(full)]:
        return None
    if not (full.startswith(wanted) or wanted.startswith(full)):
        return None
    if node.value is not None and not len(full) & 1 and full.startswith(wanted):
        if full > target or (or_equal and full == target):
            return full
    if node.children is None:
        return None
    for index, child in enumerate(node.children):
        if child is not None:
            found = _next_from(
                source, root, child, len(child) == HASH_LEN, full + "0123456789abcdef"[index], target, or_equal, wanted, key
            )
            if found is not None:
                return found
    return None
