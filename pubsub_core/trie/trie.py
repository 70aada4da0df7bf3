"""A Substrate trie over a node store, changed in batches: one root recomputation per batch.

``apply`` sorts the batch's changes once and merges them into the trie top-down: only nodes on changed
paths are loaded (level by level, in few store calls, when the store is remote), each changed node is
encoded and hashed exactly once, and the store receives every changed node and value in one write.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence

from pubsub_core.trie.errors import MissingNodeError
from pubsub_core.trie.layout import HASH_LEN, V1, Layout
from pubsub_core.trie.node import Node, decode_node, nibble_index
from pubsub_core.trie.root import common_prefix_len
from pubsub_core.trie.store import MemoryNodeStore, NodeStore

__all__ = ["Trie"]

_NIBBLES = "0123456789abcdef"
_Spec = tuple[bytes, bool]
"""A value as a node stores it: (inline value or value hash, whether it is a hash)."""


def _after(prefix: str) -> str:
    """The smallest nibble string greater than every string starting with ``prefix`` (non-empty)."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


class Trie:
    """A mutable Substrate trie (layout V1 by default) whose nodes live in ``store`` (in memory by default)."""

    __slots__ = ("_root_hash", "_root_node", "layout", "store")

    def __init__(self, store: NodeStore | None = None, layout: Layout = V1) -> None:
        self.store: NodeStore = MemoryNodeStore() if store is None else store
        self.layout = layout
        self._root_node = self.store.get("")
        self._root_hash = layout.hasher(self._root_node.encoded) if self._root_node else layout.empty_root

    @property
    def root(self) -> bytes:
        """The trie root (the empty root when the trie holds nothing)."""
        return self._root_hash

    @property
    def root_node(self) -> Node | None:
        """The decoded root node; None for the empty trie."""
        return self._root_node

    def is_empty(self) -> bool:
        return self._root_node is None

    # -- writes ------------------------------------------------------------------------------
    def apply(self, changes: Mapping[bytes, bytes | None]) -> bytes:
        """Set (bytes) or delete (None) every key in ``changes`` at once; return the new root."""
        if not changes:
            return self._root_hash
        batch = _Batch(self, changes)
        if self.store.batched:
            batch.prefetch()
        new_root = batch.apply(self._root_node, 0, 0, len(batch.keys))
        batch.writes[""] = new_root
        self.store.write(batch.finish(), batch.value_writes)
        self._root_node = new_root
        self._root_hash = self.layout.hasher(new_root.encoded) if new_root else self.layout.empty_root
        return self._root_hash

    def insert(self, key: bytes, value: bytes) -> bytes:
        """Set one key (a batch of one); return the new root."""
        return self.apply({key: value})

    def delete(self, key: bytes) -> bytes:
        """Delete one key (a batch of one); return the new root."""
        return self.apply({key: None})

    # -- reads -------------------------------------------------------------------------------
    def get(self, key: bytes) -> bytes | None:
        """The value stored under ``key``, or None."""
        return self.get_many([key])[bytes(key)]

    def get_many(self, keys: Iterable[bytes]) -> dict[bytes, bytes | None]:
        """The values of ``keys`` (None where absent), with the store calls of one batch."""
        reader = _Reader(self, [bytes(k) for k in keys])
        found: dict[bytes, bytes | None] = {}
        hashed: list[bytes] = []
        for key in reader.keys:
            node = reader.node_of(key, None)
            if node is None or node.value is None:
                found[key] = None
            elif node.value_hashed:
                hashed.append(key)
            else:
                found[key] = node.value
        if hashed:
            values = self.store.fetch_values(hashed)
            for key in hashed:
                if key not in values:
                    raise MissingNodeError(self._value_hash(key), self._root_hash, key, what="value node")
                found[key] = values[key]
        return found

    def _value_hash(self, key: bytes) -> bytes:
        node = _Reader(self, [key]).node_of(key, None)
        assert node is not None and node.value is not None
        return node.value

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        """Every (key, value) pair in key order (loads the whole trie, one store call per level)."""
        nodes = self._load_all()
        entries: list[tuple[str, Node]] = []
        if self._root_node is not None:
            self._collect(self._root_node, "", nodes, entries)
        hashed = [bytes.fromhex(path) for path, node in entries if node.value_hashed]
        values = self.store.fetch_values(hashed) if hashed else {}
        for path, node in entries:
            key = bytes.fromhex(path)
            assert node.value is not None
            yield key, values[key] if node.value_hashed else node.value

    def __iter__(self) -> Iterator[bytes]:
        """The keys, in order."""
        return (key for key, _ in self.items())

    def _load_all(self) -> dict[str, Node]:
        nodes: dict[str, Node] = {}
        frontier = [("", self._root_node)] if self._root_node is not None else []
        while frontier:
            wanted: dict[str, bytes] = {}
            following: list[tuple[str, Node]] = []
            for path, node in frontier:
                nodes[path] = node
                if node.children is None:
                    continue
                base = path + node.partial
                for index, ref in enumerate(node.children):
                    if ref is None:
                        continue
                    child_path = base + _NIBBLES[index]
                    if len(ref) < HASH_LEN:
                        inline = decode_node(ref)
                        assert inline is not None
                        following.append((child_path, inline))
                    else:
                        wanted[child_path] = ref
            if wanted:
                fetched = self.store.fetch(wanted)
                for path, ref in wanted.items():
                    if path not in fetched:
                        raise MissingNodeError(ref, self._root_hash, None, what=f"trie node at nibble path '{path}'")
                    following.append((path, fetched[path]))
            frontier = following
        return nodes

    def _collect(self, node: Node, path: str, nodes: dict[str, Node], out: list[tuple[str, Node]]) -> None:
        full = path + node.partial
        if node.value is not None:
            out.append((full, node))
        if node.children is not None:
            for index, ref in enumerate(node.children):
                if ref is not None:
                    child_path = full + _NIBBLES[index]
                    self._collect(nodes[child_path], child_path, nodes, out)

    # -- proofs ------------------------------------------------------------------------------
    def prove(self, keys: Iterable[bytes]) -> list[bytes]:
        """The minimal StorageProof of ``keys`` (present or absent): encoded nodes and value nodes, sorted."""
        return sorted(self.prove_each([keys])[0])

    def prove_each(self, key_sets: Sequence[Iterable[bytes]]) -> list[set[bytes]]:
        """The proof nodes of each key set (what ``prove`` gives for it, unsorted), loading the nodes on all their
        paths once: Stage R proves every subscriber's keys over the same tries each block."""
        return [set(proof) for proof in self.prove_each_hashed(key_sets)]

    def prove_each_hashed(self, key_sets: Sequence[Iterable[bytes]]) -> list[dict[bytes, bytes]]:
        """``prove_each`` with each proof node's Blake2-256 hash (node -> hash), taken from the reference that
        led to it (the root's from the trie, a value node's from its leaf) rather than hashed again: Stage R's
        seam keeps the hashes of every proof (49,000 hashes a simulator run)."""
        sets = [[bytes(k) for k in keys] for keys in key_sets]
        reader = _Reader(self, list(dict.fromkeys(key for keys in sets for key in keys)))
        proofs: list[dict[bytes, bytes]] = []
        hashed: list[list[tuple[bytes, bytes]]] = []  # per key set: (key, value node hash) of its hashed values
        for keys in sets:
            proof: dict[bytes, bytes] = {}
            with_value_node: list[tuple[bytes, bytes]] = []
            for key in keys:
                node = reader.node_of(key, proof)
                if node is not None and node.value_hashed and node.value is not None:
                    with_value_node.append((key, node.value))
            proofs.append(proof)
            hashed.append(with_value_node)
        wanted = list(dict.fromkeys(key for pairs in hashed for key, _ in pairs))
        if wanted:
            values = self.store.fetch_values(wanted)
            for proof, pairs in zip(proofs, hashed):
                for key, value_hash in pairs:
                    if key not in values:
                        raise MissingNodeError(value_hash, self._root_hash, key, what="value node")
                    proof[values[key]] = value_hash
        return proofs


class _Reader:
    """Read-side path following for one set of keys, over nodes loaded once per call."""

    __slots__ = ("keys", "nodes", "trie")

    def __init__(self, trie: Trie, keys: list[bytes]) -> None:
        self.trie = trie
        self.keys = keys
        self.nodes: dict[str, Node] = {}
        if trie.store.batched and keys and trie.root_node is not None:
            self.nodes = _prefetch(trie.store, trie.root_node, [k.hex() for k in keys])

    def node_of(self, key: bytes, proof: dict[bytes, bytes] | None) -> Node | None:
        """The node holding ``key``'s value, or None; adds every hash-referenced node passed to ``proof`` (node ->
        its hash)."""
        node = self.trie.root_node
        if node is None:
            if proof is not None:
                proof[b"\x00"] = self.trie.root
            return None
        if proof is not None:
            proof[node.encoded] = self.trie.root
        nibbles = key.hex()
        depth = 0
        while True:
            partial = node.partial
            if not nibbles.startswith(partial, depth):
                return None
            end = depth + len(partial)
            if end == len(nibbles):
                return node if node.value is not None else None
            if node.children is None:
                return None
            ref = node.children[nibble_index[nibbles[end]]]
            if ref is None:
                return None
            path = nibbles[: end + 1]
            if len(ref) < HASH_LEN:
                child = decode_node(ref)
                assert child is not None
            else:
                found = self.nodes.get(path)
                if found is None:
                    found = self.trie.store.get(path)
                    if found is None:
                        raise MissingNodeError(ref, self.trie.root, key)
                    self.nodes[path] = found
                child = found
                if proof is not None:
                    proof[child.encoded] = ref
            node = child
            depth = end + 1


def _prefetch(store: NodeStore, root: Node, keys: Iterable[str]) -> dict[str, Node]:
    """Load the stored nodes on the paths of ``keys`` (nibble strings) breadth-first: one call per level."""
    loaded: dict[str, Node] = {}
    pending: list[tuple[str, Node, int]] = [(key, root, 0) for key in dict.fromkeys(keys)]
    while pending:
        need: dict[str, list[tuple[str, int]]] = {}
        for key, node, depth in pending:
            while True:
                end = depth + len(node.partial)
                if node.children is None or end >= len(key) or not key.startswith(node.partial, depth):
                    break
                ref = node.children[nibble_index[key[end]]]
                if ref is None:
                    break
                path = key[: end + 1]
                if len(ref) < HASH_LEN:
                    inline = decode_node(ref)
                    assert inline is not None
                    node, depth = inline, end + 1
                    continue
                known = loaded.get(path)
                if known is None:
                    need.setdefault(path, []).append((key, end + 1))
                    break
                node, depth = known, end + 1
        if not need:
            break
        fetched = store.fetch(list(need))
        loaded.update(fetched)
        pending = [(key, fetched[path], depth) for path, waiting in need.items() if path in fetched for key, depth in waiting]
    return loaded


class _Batch:
    """The working state of one ``apply``: sorted changes, loaded nodes, and the writes to make."""

    __slots__ = ("hasher", "keys", "loaded", "raws", "root", "specs", "stale", "store", "value_writes", "writes")

    def __init__(self, trie: Trie, changes: Mapping[bytes, bytes | None]) -> None:
        layout = trie.layout
        self.hasher = layout.hasher
        self.store = trie.store
        self.root = trie.root
        ordered = sorted((bytes(k).hex(), v) for k, v in changes.items())
        self.keys = [k for k, _ in ordered]
        self.raws = [v for _, v in ordered]
        self.value_writes: dict[bytes, bytes | None] = {}
        specs: list[_Spec | None] = []
        threshold = layout.max_inline_value
        for key, value in ordered:
            if value is None:
                specs.append(None)
            elif threshold is not None and len(value) >= threshold:
                specs.append((self.hasher(value), True))
                self.value_writes[bytes.fromhex(key)] = bytes(value)
            else:
                specs.append((bytes(value), False))
        self.specs = specs
        self.loaded: dict[str, Node] = {}
        if trie.root_node is not None:
            self.loaded[""] = trie.root_node
        self.writes: dict[str, Node | None] = {}
        self.stale: set[str] = set()

    def prefetch(self) -> None:
        """Load every stored node on the changed paths, level by level."""
        root = self.loaded.get("")
        if root is not None:
            self.loaded.update(_prefetch(self.store, root, self.keys))

    def finish(self) -> dict[str, Node | None]:
        """The node writes: new nodes by path, removals of vacated paths, nodes equal to the stored ones left out."""
        writes = self.writes
        for path in self.stale:
            if path not in writes:
                writes[path] = None
        loaded = self.loaded
        changed: dict[str, Node | None] = {}
        for path, node in writes.items():
            old = loaded.get(path)
            if old is None or node is None or old.encoded != node.encoded:
                changed[path] = node
        return changed

    def child(self, ref: bytes, path: str) -> Node:
        """The child node behind ``ref`` (decoded in place when inline, else loaded from the store)."""
        if len(ref) < HASH_LEN:
            node = decode_node(ref)
            assert node is not None
            return node
        node = self.loaded.get(path)
        if node is None:
            node = self.store.get(path)
            if node is None:
                raise MissingNodeError(ref, self.root, None, what=f"trie node at nibble path '{path}'")
            self.loaded[path] = node
        return node

    def place(self, path: str, node: Node) -> bytes:
        """Put a finished node at ``path``; return the reference its parent stores (inline or hash)."""
        encoded = node.encoded
        if len(encoded) < HASH_LEN:
            return encoded
        self.writes[path] = node
        return self.hasher(encoded)

    def apply(self, node: Node | None, depth: int, lo: int, hi: int) -> Node | None:
        """The node replacing ``node`` (which starts at nibble ``depth``) once changes lo..hi are merged in."""
        if node is None:
            return self.build_inserts(depth, lo, hi)
        keys = self.keys
        first = keys[lo]
        path = first[:depth]
        self.stale.add(path)
        partial = node.partial
        if node.children is None:
            return self.update_leaf(node, path + partial, depth, lo, hi)
        if first.startswith(partial, depth) and keys[hi - 1].startswith(partial, depth):
            return self.update_branch(node, path, depth, lo, hi)
        # Some change leaves the path inside this branch's partial key: update what lies below it,
        # then build the new top from the outside inserts around the (possibly changed) branch.
        full = path + partial
        inner_lo = bisect_left(keys, full, lo, hi)
        inner_hi = bisect_left(keys, _after(full), inner_lo, hi)
        inner = node if inner_lo == inner_hi else self.update_branch(node, path, depth, inner_lo, inner_hi)
        ks: list[str] = []
        vs: list[_Spec | Node] = []
        self.collect_inserts(lo, inner_lo, ks, vs)
        if inner is not None:
            ks.append(path + inner.partial)
            vs.append(inner)
        self.collect_inserts(inner_hi, hi, ks, vs)
        return self.build(depth, ks, vs, 0, len(ks)) if ks else None

    def collect_inserts(self, lo: int, hi: int, ks: list[str], vs: list[_Spec | Node]) -> None:
        keys, specs = self.keys, self.specs
        for i in range(lo, hi):
            spec = specs[i]
            if spec is not None:
                ks.append(keys[i])
                vs.append(spec)

    def build_inserts(self, depth: int, lo: int, hi: int) -> Node | None:
        """A fresh subtree from the inserts among changes lo..hi (deletes of absent keys are no-ops)."""
        ks: list[str] = []
        vs: list[_Spec | Node] = []
        self.collect_inserts(lo, hi, ks, vs)
        return self.build(depth, ks, vs, 0, len(ks)) if ks else None

    def update_leaf(self, leaf: Node, full: str, depth: int, lo: int, hi: int) -> Node | None:
        """Merge changes into a leaf whose key is ``full``: its entry joins the inserts unless overridden."""
        keys, specs = self.keys, self.specs
        if hi - lo == 1 and keys[lo] == full:
            # The common update: a new value (or a delete) for exactly this leaf's key.
            spec = specs[lo]
            if leaf.value_hashed and (spec is None or not spec[1]):
                self.value_writes[bytes.fromhex(full)] = None
            return None if spec is None else Node.make(leaf.partial, spec[0], spec[1], None)
        ks: list[str] = []
        vs: list[_Spec | Node] = []
        pos = bisect_left(keys, full, lo, hi)
        self.collect_inserts(lo, pos, ks, vs)
        if pos < hi and keys[pos] == full:
            spec = specs[pos]
            if leaf.value_hashed and (spec is None or not spec[1]):
                self.value_writes[bytes.fromhex(full)] = None
            if spec is not None:
                ks.append(full)
                vs.append(spec)
            pos += 1
        else:
            assert leaf.value is not None
            ks.append(full)
            vs.append((leaf.value, leaf.value_hashed))
        self.collect_inserts(pos, hi, ks, vs)
        return self.build(depth, ks, vs, 0, len(ks)) if ks else None

    def update_branch(self, node: Node, path: str, depth: int, lo: int, hi: int) -> Node | None:
        """Merge changes lo..hi, all below this branch's partial key, into the branch."""
        keys, specs = self.keys, self.specs
        partial = node.partial
        end = depth + len(partial)
        value, hashed = node.value, node.value_hashed
        index = lo
        if len(keys[lo]) == end:
            spec = specs[lo]
            if hashed and (spec is None or not spec[1]):
                self.value_writes[bytes.fromhex(keys[lo])] = None
            value, hashed = (None, False) if spec is None else spec
            index += 1
        assert node.children is not None
        children = list(node.children)
        fresh: dict[int, Node] = {}
        full = path + partial
        loaded = self.loaded
        shrunk = value is None and node.value is not None
        same_value = value is node.value and hashed == node.value_hashed
        swaps: list[tuple[bytes, bytes]] | None = [] if same_value else None
        while index < hi:
            nibble = keys[index][end]
            upper = index + 1
            if upper < hi and keys[upper][end] == nibble:
                upper = bisect_left(keys, full + chr(ord(nibble) + 1), upper, hi)
            slot = nibble_index[nibble]
            ref = children[slot]
            child_path = full + nibble
            if ref is None:
                old = None
            else:
                old = loaded.get(child_path) if len(ref) == HASH_LEN else None
                if old is None:
                    old = self.child(ref, child_path)
            if old is not None and old.children is None and upper == index + 1:
                # The common update, inlined: one change, under a leaf; exactly the leaf's key or not.
                key = keys[index]
                if key.startswith(old.partial, end + 1) and len(key) == end + 1 + len(old.partial):
                    self.stale.add(child_path)
                    spec = specs[index]
                    if old.value_hashed and (spec is None or not spec[1]):
                        self.value_writes[bytes.fromhex(key)] = None
                    new = None if spec is None else Node.make(old.partial, spec[0], spec[1], None)
                else:
                    new = self.apply(old, end + 1, index, upper)
            else:
                new = self.apply(old, end + 1, index, upper)
            if new is None:
                shrunk = shrunk or ref is not None
                children[slot] = None
            else:
                new_ref = children[slot] = self.place(child_path, new)
                fresh[slot] = new
                if swaps is not None:
                    if ref is None:
                        swaps = None
                    elif ref != new_ref:
                        swaps.append((ref, new_ref))
            index = upper
        if not shrunk:
            # Nothing was removed, so the branch keeps at least what made it a valid branch before.
            if swaps is not None:
                return node.with_children(tuple(children), swaps)
            return Node.make(partial, value, hashed, tuple(children))
        present = [slot for slot in range(16) if children[slot] is not None]
        if not present:
            return None if value is None else Node.make(partial, value, hashed, None)
        if value is None and len(present) == 1:
            # A branch with no value and one child merges into that child.
            slot = present[0]
            child_path = full + _NIBBLES[slot]
            ref = children[slot]
            assert ref is not None
            only = fresh.get(slot) or self.child(ref, child_path)
            self.writes.pop(child_path, None)
            self.stale.add(child_path)
            return Node.make(partial + _NIBBLES[slot] + only.partial, only.value, only.value_hashed, only.children)
        return Node.make(partial, value, hashed, tuple(children))

    def build(self, depth: int, ks: list[str], vs: list[_Spec | Node], lo: int, hi: int) -> Node:
        """A subtree from sorted items lo..hi starting at nibble ``depth``; an item may be an existing node."""
        first = ks[lo]
        if hi - lo == 1:
            item = vs[lo]
            if isinstance(item, Node):
                partial = first[depth:]
                if partial == item.partial:
                    return item
                return Node.make(partial, item.value, item.value_hashed, item.children)
            return Node.make(first[depth:], item[0], item[1], None)
        split = common_prefix_len(first, ks[hi - 1], depth)
        value: bytes | None = None
        hashed = False
        index = lo
        if len(first) == split:
            item = vs[lo]
            assert not isinstance(item, Node)
            value, hashed = item
            index += 1
        children: list[bytes | None] = [None] * 16
        prefix = first[:split]
        while index < hi:
            nibble = ks[index][split]
            upper = bisect_left(ks, prefix + chr(ord(nibble) + 1), index, hi)
            child = self.build(split + 1, ks, vs, index, upper)
            children[nibble_index[nibble]] = self.place(prefix + nibble, child)
            index = upper
        return Node.make(first[depth:split], value, hashed, tuple(children))

