"""Unit behaviour of the Trie over a store: missing nodes, no-op batches, iteration, one write per batch."""

from __future__ import annotations

import pytest

from pubsub_core.trie import EMPTY_ROOT, V1, MemoryNodeStore, MissingNodeError, Trie, trie_root


def _big_trie() -> Trie:
    trie = Trie(MemoryNodeStore(), V1)
    trie.apply({bytes([i, j]) * 8: bytes([i]) * 40 for i in range(4) for j in range(4)})
    return trie


def test_a_node_missing_from_the_store_raises_missing_node_with_its_hash() -> None:
    trie = _big_trie()
    assert isinstance(trie.store, MemoryNodeStore)
    path, node = next((p, n) for p, n in trie.store.nodes.items() if p)
    del trie.store.nodes[path]
    key = bytes.fromhex(path + "0" * (32 - len(path) % 32))[:16]
    with pytest.raises(MissingNodeError) as caught:
        list(trie.items())
    assert caught.value.root == trie.root
    assert caught.value.node_hash == V1.hasher(node.encoded)
    with pytest.raises(MissingNodeError):
        trie.get_many([bytes.fromhex(path[: len(path) // 2 * 2]) + key])


def test_deleting_absent_keys_keeps_the_root_and_writes_no_node() -> None:
    trie = _big_trie()
    root = trie.root
    assert isinstance(trie.store, MemoryNodeStore)
    before = trie.store.stats.nodes_written
    assert trie.apply({b"\x00\x00": None, b"\xff" * 16: None}) == root
    assert trie.store.stats.nodes_written - before == 0


def test_each_batch_is_one_store_write() -> None:
    trie = _big_trie()
    assert isinstance(trie.store, MemoryNodeStore)
    writes = trie.store.stats.write_calls
    trie.apply({bytes([1, 2]) * 8: b"new" * 20, b"\x09": b"x"})
    assert trie.store.stats.write_calls == writes + 1


def test_items_iterate_in_key_order_and_single_key_helpers_work() -> None:
    trie = Trie()
    assert trie.root == EMPTY_ROOT and trie.is_empty()
    trie.insert(b"b", b"2")
    trie.insert(b"a", b"1" * 40)
    trie.insert(b"ab", b"3")
    assert list(trie) == [b"a", b"ab", b"b"]
    assert trie.get(b"a") == b"1" * 40
    trie.delete(b"a")
    assert list(trie.items()) == [(b"ab", b"3"), (b"b", b"2")]
    assert trie.root == trie_root([(b"ab", b"3"), (b"b", b"2")])
    trie.apply({b"ab": None, b"b": None})
    assert trie.root == EMPTY_ROOT and trie.get(b"b") is None


def test_reopening_a_store_resumes_at_its_root() -> None:
    store = MemoryNodeStore()
    Trie(store).apply({b"k": b"v" * 50})
    again = Trie(store)
    assert again.root == trie_root([(b"k", b"v" * 50)])
    assert again.get(b"k") == b"v" * 50
