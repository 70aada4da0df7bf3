"""Child tries as the relay chain keeps them: one default child trie per publisher, rooted in the main trie.

A child trie's root is stored in the main trie under ``:child_storage:default:`` + its storage key; when
the child trie becomes empty that entry is removed rather than set to the empty root (sp-state-machine
``full_storage_root``). Children are updated first, then the main trie once, so a block costs one main
root recomputation however many publishers changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from pubsub_core.trie.layout import V1, Layout
from pubsub_core.trie.store import MemoryNodeStore, NodeStore
from pubsub_core.trie.trie import Trie

__all__ = [
    "CHILD_STORAGE_PREFIX",
    "RelayTries",
    "StoreFactory",
    "child_storage_key",
    "prefixed_child_storage_key",
]

CHILD_STORAGE_PREFIX = b":child_storage:default:"
"""well_known_keys::DEFAULT_CHILD_STORAGE_KEY_PREFIX."""

StoreFactory = Callable[[bytes], NodeStore]
"""Makes the node store of one trie: called with b"" for the main trie, else with the child storage key."""


def child_storage_key(para_id: int) -> bytes:
    """The pub-sub child trie's storage key of a parachain: ``(b"pubsub", para_id).encode()``."""
    if not 0 <= para_id < 1 << 32:
        raise ValueError(f"A ParaId is a u32; {para_id} is out of range.")
    return b"pubsub" + para_id.to_bytes(4, "little")


def prefixed_child_storage_key(para_id: int) -> bytes:
    """The main-trie key holding that child trie's root."""
    return CHILD_STORAGE_PREFIX + child_storage_key(para_id)


class RelayTries:
    """The relay state: a main trie plus one pub-sub child trie per publishing parachain."""

    __slots__ = ("_children", "_factory", "layout", "main")

    def __init__(self, store_factory: StoreFactory | None = None, layout: Layout = V1) -> None:
        self._factory: StoreFactory = store_factory if store_factory is not None else _memory_store
        self.layout = layout
        self.main = Trie(self._factory(b""), layout)
        self._children: dict[int, Trie] = {}

    @property
    def relay_root(self) -> bytes:
        """The main trie's root, which commits to every child root."""
        return self.main.root

    def child(self, para_id: int) -> Trie:
        """The child trie of ``para_id`` (opened on first use)."""
        trie = self._children.get(para_id)
        if trie is None:
            trie = self._children[para_id] = Trie(self._factory(child_storage_key(para_id)), self.layout)
        return trie

    def child_root(self, para_id: int) -> bytes | None:
        """The child trie's root, or None while it is empty (it then has no main-trie entry)."""
        trie = self.child(para_id)
        return None if trie.is_empty() else trie.root

    def apply(
        self,
        main_changes: Mapping[bytes, bytes | None] | None = None,
        child_changes: Mapping[int, Mapping[bytes, bytes | None]] | None = None,
    ) -> bytes:
        """Apply child-trie changes per para, then main-trie changes and the new child roots; return the relay root.

        Main-trie changes may not touch ``:child_storage:`` keys: child roots are maintained here.
        """
        updates: dict[bytes, bytes | None] = {}
        for key, value in (main_changes or {}).items():
            if bytes(key).startswith(b":child_storage:"):
                raise ValueError(f"Main-trie key 0x{bytes(key).hex()} is reserved for child trie roots.")
            updates[bytes(key)] = value
        for para_id, changes in (child_changes or {}).items():
            if not changes:
                continue
            trie = self.child(para_id)
            trie.apply(changes)
            updates[prefixed_child_storage_key(para_id)] = None if trie.is_empty() else trie.root
        return self.main.apply(updates)

    def apply_child_changes(self, para_id: int, changes: Mapping[bytes, bytes | None]) -> bytes | None:
        """Change one child trie and the main trie; return the new child root, None when it became empty."""
        self.apply(child_changes={para_id: changes})
        return self.child_root(para_id)

    def set_main(self, changes: Mapping[bytes, bytes | None]) -> bytes:
        """Change other main-trie entries; return the relay root."""
        return self.apply(main_changes=changes)

    def prove(
        self, main_keys: Iterable[bytes] = (), child_keys: Mapping[int, Iterable[bytes]] | None = None
    ) -> list[bytes]:
        """One StorageProof of main-trie keys and child-trie keys (with the main-trie paths to their roots)."""
        return self.prove_each([child_keys or {}], [main_keys])[0]

    def prove_each(
        self, child_keys: Sequence[Mapping[int, Iterable[bytes]]], main_keys: Sequence[Iterable[bytes]] = ()
    ) -> list[list[bytes]]:
        """``prove(main_keys[i], child_keys[i])`` for each i, loading each trie's nodes once for all of them
        (Stage R proves every subscriber's keys each block, over the same tries)."""
        return [sorted(proof) for proof in self.prove_each_hashed(child_keys, main_keys)]

    def prove_each_hashed(
        self, child_keys: Sequence[Mapping[int, Iterable[bytes]]], main_keys: Sequence[Iterable[bytes]] = ()
    ) -> list[dict[bytes, bytes]]:
        """``prove_each`` unsorted, with each node's hash (node -> Blake2-256, as ``Trie.prove_each_hashed``)."""
        requests = [{para_id: [bytes(k) for k in keys] for para_id, keys in request.items()} for request in child_keys]
        main: list[list[bytes]] = [[bytes(k) for k in keys] for keys in main_keys]
        main += [[] for _ in range(len(requests) - len(main))]
        nodes: list[dict[bytes, bytes]] = [{} for _ in requests]
        for i, request in enumerate(requests):
            main[i] += [prefixed_child_storage_key(para_id) for para_id in request]
        for para_id in sorted({para_id for request in requests for para_id in request}):
            trie = self.child(para_id)
            if trie.is_empty():
                continue
            asking = [i for i, request in enumerate(requests) if para_id in request]
            for i, proof in zip(asking, trie.prove_each_hashed([requests[i][para_id] for i in asking])):
                nodes[i].update(proof)
        for i, proof in enumerate(self.main.prove_each_hashed(main)):
            nodes[i].update(proof)
        return nodes


def _memory_store(space: bytes) -> NodeStore:
    return MemoryNodeStore()
