"""The batch-updated trie against the naive from-scratch builder, under V0 and V1, over both node stores."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from pubsub_core.trie import V1, Layout, MemoryNodeStore, StateNodeStore, Trie, trie_root_for
from state import MemoryBackend, StateTransaction
from tests.trie.conftest import TrieHarness, each_layout, each_store
from tests.trie.naive import naive_root
from tests.trie.strategies import batches, entries


def _naive(model: dict[bytes, bytes], layout: Layout) -> bytes:
    return naive_root(model, layout.hasher, layout.max_inline_value)


@each_layout
@each_store
@given(batches=batches)
@example(
    # A branch whose only child was deleted must merge with that child's node (collapse), and a later
    # insert under the merged partial key must split it again at the right nibble.
    batches=[{b"\x10": b"a", b"\x11": b"b", b"\x10\x01": b"c"}, {b"\x10": None}, {b"\x11": None, b"\x10\x00": b"d"}]
)
@example(
    # A value of exactly 33 bytes crosses the V1 threshold: stored by hash in V1, inline in V0.
    batches=[{b"": b"x" * 33, b"\x01": b"x" * 32}, {b"": b"x" * 32}]
)
def test_random_batches_keep_the_root_of_a_from_scratch_build(
    layout: Layout, store_kind: str, batches: list[dict[bytes, bytes | None]]
) -> None:
    harness = TrieHarness(store_kind, layout)
    model: dict[bytes, bytes] = {}
    for batch in batches:
        root = harness.apply(batch)
        for key, value in batch.items():
            if value is None:
                model.pop(key, None)
            else:
                model[key] = value
        assert root == _naive(model, harness.layout)
    reader = harness.reader()
    assert reader.root == _naive(model, harness.layout)
    assert list(reader.items()) == sorted(model.items())
    assert reader.get_many(list(model) + [b"\xaa\xbb"]) == {**model, b"\xaa\xbb": None}


@each_layout
@given(batches=batches)
def test_store_holds_exactly_the_nodes_of_a_fresh_build(layout: Layout, batches: list[dict[bytes, bytes | None]]) -> None:
    trie = Trie(MemoryNodeStore(), layout)
    model: dict[bytes, bytes] = {}
    for batch in batches:
        trie.apply(batch)
        model = {k: v for k, v in {**model, **batch}.items() if v is not None}
    fresh = Trie(MemoryNodeStore(), layout)
    fresh.apply(model)
    assert isinstance(trie.store, MemoryNodeStore) and isinstance(fresh.store, MemoryNodeStore)
    assert {p: n.encoded for p, n in trie.store.nodes.items()} == {p: n.encoded for p, n in fresh.store.nodes.items()}
    assert trie.store.values == fresh.store.values


@each_layout
@given(model=entries)
def test_trie_root_equals_naive_root(layout: Layout, model: dict[bytes, bytes]) -> None:
    assert trie_root_for(model.items(), layout) == _naive(model, layout)


@settings(max_examples=10)
@given(seed=st.integers(0, 2**32 - 1))
def test_state_store_batch_costs_few_backend_calls(seed: int) -> None:
    import random

    rnd = random.Random(seed)
    backend = MemoryBackend()
    keys = [rnd.randbytes(32) for _ in range(3000)]
    txn = StateTransaction(backend)
    Trie(StateNodeStore(txn, "t"), V1).apply({k: rnd.randbytes(40) for k in keys})
    txn.commit()
    backend.stats.read_calls = backend.stats.write_calls = 0
    txn = StateTransaction(backend)
    trie = Trie(StateNodeStore(txn, "t"), V1)
    trie.apply({k: rnd.randbytes(40) for k in rnd.sample(keys, 30)})
    txn.commit()
    # Root page + one page band per two levels (~3 levels at 3000 keys) + pages first written; one write.
    assert backend.stats.read_calls <= 5
    assert backend.stats.write_calls == 1
