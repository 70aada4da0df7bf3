"""Storage proofs: minimal node sets, the three read outcomes, tracking, walking, and sources with a cache."""

from __future__ import annotations

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from pubsub_core.trie import (
    AccessTracker,
    DuplicateNodeError,
    IncompleteProofError,
    LayeredSource,
    Layout,
    ProofDB,
    Trie,
    UnusedNodesError,
    ValueMismatchError,
    lookup,
    next_key,
    nodes_on_paths,
    proof_size,
    read_proof,
    verify_proof,
    walk_path,
)
from pubsub_core.hashing import blake2_256
from tests.trie.conftest import each_layout
from tests.trie.strategies import entries, keys

non_empty = entries.filter(bool)


def _trie(model: dict[bytes, bytes], layout: Layout) -> Trie:
    trie = Trie(layout=layout)
    trie.apply(model)
    return trie


@each_layout
@given(model=entries, probes=st.lists(keys, max_size=6))
def test_proof_reads_give_values_and_proven_absences(
    layout: Layout, model: dict[bytes, bytes], probes: list[bytes]
) -> None:
    trie = _trie(model, layout)
    wanted = list(model)[:5] + probes
    proof = trie.prove(wanted)
    expected = {key: model.get(key) for key in wanted}
    assert read_proof(trie.root, proof, wanted) == expected
    verify_proof(trie.root, proof, expected)
    assert proof_size(proof) == ProofDB(proof).size


@each_layout
@given(model=non_empty, data=st.data())
def test_dropping_a_proof_node_makes_exactly_the_reads_that_need_it_incomplete(
    layout: Layout, model: dict[bytes, bytes], data: st.DataObject
) -> None:
    trie = _trie(model, layout)
    wanted = list(model)[:4] + [b"\x10\x10\x10"]
    proof = trie.prove(wanted)
    dropped = data.draw(st.sampled_from(proof))
    remaining = [node for node in proof if node != dropped]
    for key in wanted:
        if dropped in trie.prove([key]):
            with pytest.raises(IncompleteProofError) as caught:
                read_proof(trie.root, remaining, [key])
            assert caught.value.node_hash == blake2_256(dropped)
            assert caught.value.root == trie.root and caught.value.key == key
        else:
            assert read_proof(trie.root, remaining, [key]) == {key: model.get(key)}


@each_layout
@given(model=non_empty, data=st.data())
def test_an_extra_node_trips_ensure_no_unused_nodes(layout: Layout, model: dict[bytes, bytes], data: st.DataObject) -> None:
    trie = _trie(model, layout)
    key = data.draw(st.sampled_from(sorted(model)))
    proof = trie.prove([key])
    everything = trie.prove(list(model))
    extras = [node for node in everything if node not in proof]
    assume(extras)
    extra = data.draw(st.sampled_from(extras))
    with pytest.raises(UnusedNodesError) as caught:
        verify_proof(trie.root, proof + [extra], {key: model[key]})
    assert caught.value.node_hashes == {blake2_256(extra)}


def test_verify_proof_reports_a_different_value() -> None:
    trie = _trie({b"\x01": b"one", b"\x02": b"two"}, Layout("V1", blake2_256, 33))
    proof = trie.prove([b"\x01"])
    with pytest.raises(ValueMismatchError) as caught:
        verify_proof(trie.root, proof, {b"\x01": b"uno"})
    assert (caught.value.key, caught.value.expected, caught.value.actual) == (b"\x01", b"uno", b"one")


def test_a_node_listed_twice_is_a_duplicate() -> None:
    trie = _trie({bytes([i]) * 4: b"v" * 40 for i in range(20)}, Layout("V1", blake2_256, 33))
    proof = trie.prove([b"\x01" * 4])
    with pytest.raises(DuplicateNodeError) as caught:
        read_proof(trie.root, proof + [proof[0]], [b"\x01" * 4])
    assert caught.value.node == proof[0]
    assert len(ProofDB(proof + [proof[0]], allow_duplicates=True)) == len(proof)


def test_a_proof_without_the_root_is_incomplete() -> None:
    trie = _trie({b"\x01" * 40: b"v" * 40}, Layout("V1", blake2_256, 33))
    with pytest.raises(IncompleteProofError) as caught:
        read_proof(trie.root, [], [b"\x01"])
    assert caught.value.node_hash == trie.root


def test_a_missing_value_node_is_incomplete_not_absent() -> None:
    trie = _trie({b"\x01": b"v" * 40, b"\x02": b"w" * 40}, Layout("V1", blake2_256, 33))
    proof = [node for node in trie.prove([b"\x01"]) if node != b"v" * 40]
    with pytest.raises(IncompleteProofError) as caught:
        read_proof(trie.root, proof, [b"\x01"])
    assert caught.value.node_hash == blake2_256(b"v" * 40)


def test_the_empty_root_needs_no_nodes() -> None:
    trie = Trie()
    assert read_proof(trie.root, [], [b"k"]) == {b"k": None}
    assert read_proof(trie.root, trie.prove([b"k"]), [b"k"]) == {b"k": None}


@each_layout
@given(model=non_empty, probe=keys)
def test_walker_yields_each_path_node_once_and_ends_where_the_read_ends(
    layout: Layout, model: dict[bytes, bytes], probe: bytes
) -> None:
    trie = _trie(model, layout)
    db = ProofDB(trie.prove(list(model)))
    steps = list(walk_path(db, trie.root, probe))
    assert [s.index for s in steps] == list(range(len(steps)))
    assert [s.ends_path for s in steps] == [False] * (len(steps) - 1) + [True]
    assert steps[-1].holds_key == (probe in model)
    last = steps[-1].node
    value_nodes = {model[probe]} if last is not None and last.value_hashed and steps[-1].holds_key else set()
    assert {s.encoded for s in steps if s.node_hash is not None} | value_nodes == set(trie.prove([probe]))
    for before, after in zip(steps, steps[1:]):
        assert after.depth == before.child_depth
        assert before.next_ref == (after.node_hash if after.node_hash is not None else after.encoded)
    # Resuming at any hashed node gives the rest of the path.
    for step in steps:
        if step.node_hash is not None:
            resumed = list(walk_path(db, step.node_hash, probe, depth=step.depth, root=trie.root))
            assert [s.encoded for s in resumed] == [s.encoded for s in steps[step.index :]]


@each_layout
@given(model=non_empty, data=st.data())
def test_cache_behind_a_pruned_proof_serves_nodes_and_they_never_count_as_proof_nodes(
    layout: Layout, model: dict[bytes, bytes], data: st.DataObject
) -> None:
    trie = _trie(model, layout)
    key = data.draw(st.sampled_from(sorted(model)))
    full = trie.prove([key])
    cached = data.draw(st.sets(st.sampled_from(full)))
    proof = ProofDB(node for node in full if node not in cached)
    cache = ProofDB(cached)
    tracker = AccessTracker()
    assert lookup(LayeredSource(proof, cache), trie.root, key, tracker) == model[key]
    tracker.ensure_no_unused_nodes(proof)
    assert set(tracker.accessed) == {blake2_256(n) for n in full}


@each_layout
@given(model=non_empty, probes=st.lists(keys, min_size=1, max_size=4))
def test_nodes_on_paths_are_the_minimal_proof(layout: Layout, model: dict[bytes, bytes], probes: list[bytes]) -> None:
    trie = _trie(model, layout)
    everything = ProofDB(trie.prove(list(model)))
    on_paths = nodes_on_paths(everything, trie.root, probes)
    assert sorted(on_paths.values()) == trie.prove(probes)
    assert all(blake2_256(node) == h for h, node in on_paths.items())


@each_layout
@given(model=entries, before=keys, prefix=st.sampled_from([b"", b"\x01", b"\x10", b"\xff"]), or_equal=st.booleans())
@example(
    # next_key once fetched the subtrees lying wholly before key_before, so a minimal proof (the paths to
    # key_before, the prefix and the answer) raised IncompleteProofError on the hashed leaf under 0x00.
    model={b"\x00": b"y" * 70, b"\x10": b"y" * 70, b"\x11": b"y" * 70},
    before=b"\x10",
    prefix=b"",
    or_equal=False,
)
def test_next_key_is_the_smallest_following_key_with_the_prefix_from_a_minimal_proof(
    layout: Layout, model: dict[bytes, bytes], before: bytes, prefix: bytes, or_equal: bool
) -> None:
    trie = _trie(model, layout)
    following = [k for k in sorted(model) if (k >= before if or_equal else k > before) and k.startswith(prefix)]
    answer = following[0] if following else None
    # The paths to key_before, to the prefix and to the answer are all a proof of the answer needs.
    proof = ProofDB(trie.prove([before, prefix] + ([answer] if answer is not None else [])))
    assert next_key(proof, trie.root, before, or_equal=or_equal, prefix=prefix) == answer
