"""The decode memo behind ``decode_node_cached`` and the state store's pages: bounded, two generations, and never
a different answer than decoding; pages are shared copy-on-write between stores."""

from __future__ import annotations

import pytest

from pubsub_core.trie import RelayTries, StateNodeStore, Trie
from pubsub_core.codec.memo import DecodeMemo
from pubsub_core.trie.node import NODE_MEMO, decode_node, decode_node_cached
from pubsub_core.trie.store import _PAGE_MEMO, _decode_page
from state import MemoryBackend, StateTransaction


def test_a_memo_holds_at_most_its_size_and_keeps_what_is_used() -> None:
    memo: DecodeMemo[int] = DecodeMemo(4)  # two generations of two
    for i in range(4):
        memo.remember(bytes([i]), i)  # 0, 1 fill the newer half; 2 pushes them to the older one; then 3
    assert len(memo) == 4
    assert memo.get(b"\x00") == 0  # a hit in the older half moves 0 up: 2, 3 become the older half, 1 is gone
    assert memo.get(b"\x01") is None
    memo.remember(b"\x09", 9)  # newer half: 0, 9
    assert [memo.get(bytes([i])) for i in (0, 9, 2)] == [0, 9, 2]  # 2 moves up: 0, 9 become the older half
    assert memo.get(b"\x03") is None and len(memo) == 3
    for i in range(100):
        memo.remember(i.to_bytes(2, "big"), i)
        assert len(memo) <= 4
    assert memo.get((99).to_bytes(2, "big")) == 99 and memo.get(b"\x00") is None
    memo.clear()
    assert len(memo) == 0


def test_a_memo_needs_room_for_two() -> None:
    with pytest.raises(ValueError):
        DecodeMemo(1)


def test_cached_decoding_equals_decoding_and_skips_the_empty_node() -> None:
    trie = Trie()
    trie.apply({bytes([i]) * 32: bytes([i]) * 40 for i in range(20)})
    node = trie.root_node
    assert node is not None
    NODE_MEMO.clear()
    assert decode_node_cached(node.encoded) == decode_node(node.encoded)
    assert NODE_MEMO.get(node.encoded) == node
    assert decode_node_cached(b"\x00") is None and NODE_MEMO.get(b"\x00") is None


def test_pages_a_store_writes_are_read_back_shared_and_copied_before_a_change() -> None:
    """The views after a relay block read the pages the block wrote from the memo; a store changing a page works
    on its own copy, so a page another store (or the memo) holds never changes under it."""
    backend = MemoryBackend()
    txn = StateTransaction(backend)
    first = RelayTries(lambda space: StateNodeStore(txn, "relay." + space.hex()))
    first.apply(child_changes={2000: {bytes([i]) * 32: bytes([i]) * 40 for i in range(40)}})
    txn.commit()
    stored = {key: raw for key, raw in backend.scan("relay." + b"pubsub\xd0\x07\x00\x00".hex()).items()}
    assert stored and all(_PAGE_MEMO.get(raw) == _decode_page(raw) for raw in stored.values())
    before = {key: dict(_decode_page(raw)) for key, raw in stored.items()}

    reader_txn, writer_txn = StateTransaction(backend), StateTransaction(backend)
    reader = RelayTries(lambda space: StateNodeStore(reader_txn, "relay." + space.hex()))
    writer = RelayTries(lambda space: StateNodeStore(writer_txn, "relay." + space.hex()))
    keys = [bytes([i]) * 32 for i in range(40)]
    proof_before = reader.prove(child_keys={2000: keys})
    writer.apply(child_changes={2000: {bytes([i]) * 32: b"changed" * 9 for i in range(0, 40, 3)}})
    assert {key: _PAGE_MEMO.get(raw) for key, raw in stored.items()} == before  # the shared pages are unchanged
    assert reader.prove(child_keys={2000: keys}) == proof_before
    assert writer.child(2000).get(b"\x03" * 32) == b"changed" * 9
    writer_txn.commit()
    assert RelayTries(lambda space: StateNodeStore(StateTransaction(backend), "relay." + space.hex())).child(
        2000).get(b"\x03" * 32) == b"changed" * 9
