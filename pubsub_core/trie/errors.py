"""Errors of the trie engine: one branch under PubSubError, each error carrying the data that caused it."""

from __future__ import annotations

from collections.abc import Collection

from pubsub_core.errors import PubSubError

__all__ = [
    "DuplicateNodeError",
    "IncompleteProofError",
    "InvalidChildRootError",
    "MalformedNodeError",
    "MissingNodeError",
    "TrieError",
    "UnusedNodesError",
    "ValueMismatchError",
]


class TrieError(PubSubError):
    """Base class for every error raised by pubsub_core.trie."""


class MalformedNodeError(TrieError):
    """Bytes that are not a valid Substrate trie node; carries the bytes and where decoding stopped."""

    def __init__(self, data: bytes, reason: str, offset: int = 0) -> None:
        shown = data[:48].hex() + ("..." if len(data) > 48 else "")
        super().__init__(f"Invalid trie node: {reason} at offset {offset} of {len(data)} bytes (0x{shown}).")
        self.data = data
        self.reason = reason
        self.offset = offset


class MissingNodeError(TrieError):
    """A node (or V1 value node) needed to follow a key is not in the node store."""

    def __init__(self, node_hash: bytes, root: bytes, key: bytes | None, what: str = "trie node") -> None:
        about = f" while reading key 0x{key.hex()}" if key is not None else ""
        super().__init__(f"The {what} 0x{node_hash.hex()} under root 0x{root.hex()} is missing{about}.")
        self.node_hash = node_hash
        self.root = root
        self.key = key


class IncompleteProofError(MissingNodeError):
    """A proof lacks a node (or value node) that reading the key requires: neither a value nor an absence."""


class DuplicateNodeError(TrieError):
    """A proof lists the same encoded node twice (a StorageProof is a set)."""

    def __init__(self, node: bytes, node_hash: bytes) -> None:
        super().__init__(f"The proof contains node 0x{node_hash.hex()} ({len(node)} bytes) more than once.")
        self.node = node
        self.node_hash = node_hash


class UnusedNodesError(TrieError):
    """A proof carries nodes that no read needed (an extraneous node inflates the proof for nothing)."""

    def __init__(self, node_hashes: Collection[bytes]) -> None:
        ordered = sorted(node_hashes)
        listed = ", ".join("0x" + h.hex() for h in ordered[:4]) + (", ..." if len(ordered) > 4 else "")
        super().__init__(f"The proof contains {len(ordered)} node(s) that no read accessed: {listed}.")
        self.node_hashes = frozenset(ordered)


class InvalidChildRootError(TrieError):
    """The main-trie entry of a child trie does not hold a 32-byte root."""

    def __init__(self, storage_key: bytes, value: bytes) -> None:
        super().__init__(
            f"The child trie entry 0x{storage_key.hex()} holds {len(value)} bytes, not a 32-byte child root."
        )
        self.storage_key = storage_key
        self.value = value


class ValueMismatchError(TrieError):
    """A proof proves a value for a key other than the one expected."""

    def __init__(self, key: bytes, expected: bytes | None, actual: bytes | None) -> None:
        def show(v: bytes | None) -> str:
            return "absent" if v is None else f"0x{v.hex()}"

        super().__init__(f"The proof gives {show(actual)} for key 0x{key.hex()}, expected {show(expected)}.")
        self.key = key
        self.expected = expected
        self.actual = actual
