"""Recording which nodes a read touched: passed into lookups, never a mode of the trie (as trie-db's Recorder)."""

from __future__ import annotations

from collections.abc import Iterable

from pubsub_core.trie.errors import UnusedNodesError

__all__ = ["AccessTracker"]


class AccessTracker:
    """Records every node and value node read by hash, in first-access order, with its encoding.

    ``ensure_no_unused_nodes`` compares sets of hashes, not counts, so nodes served from a cache instead of
    the proof neither count as used proof nodes nor hide an unused one (the reference's count-based check
    breaks exactly there).
    """

    __slots__ = ("accessed",)

    def __init__(self) -> None:
        self.accessed: dict[bytes, bytes] = {}
        """Hash -> encoded node (or raw value for a value node), in the order first read."""

    def record(self, node_hash: bytes, encoded: bytes) -> None:
        """Note that the node with this hash was read."""
        self.accessed.setdefault(node_hash, encoded)

    @property
    def encoded_nodes(self) -> list[bytes]:
        """The recorded nodes, in access order: a proof of every read made so far."""
        return list(self.accessed.values())

    @property
    def size(self) -> int:
        """Total bytes of the recorded nodes (the proof size of the reads)."""
        return sum(len(node) for node in self.accessed.values())

    def unused(self, proof_hashes: Iterable[bytes]) -> set[bytes]:
        """The hashes in ``proof_hashes`` that no read recorded here touched."""
        return {h for h in proof_hashes if h not in self.accessed}

    def ensure_no_unused_nodes(self, proof_hashes: Iterable[bytes]) -> None:
        """Raise UnusedNodesError if the proof (given by its node hashes) holds a node no read needed."""
        unused = self.unused(proof_hashes)
        if unused:
            raise UnusedNodesError(unused)
