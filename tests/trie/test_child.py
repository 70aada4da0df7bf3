"""Child tries and the relay root: keys, root entries (removed when empty), proofs through the main trie."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pubsub_core.trie import (
    AccessTracker,
    EMPTY_ROOT,
    InvalidChildRootError,
    Layout,
    RelayTries,
    StateNodeStore,
    child_storage_key,
    prefixed_child_storage_key,
    read_child_proof,
    read_proof,
    trie_root_for,
)
from pubsub_core.hashing import blake2_256
from state import MemoryBackend, StateTransaction
from tests.trie.conftest import each_layout
from tests.trie.strategies import changes, keys

paras = st.sampled_from([1000, 2000, 2001, 4294967295])
child_batches = st.lists(st.tuples(paras, changes), min_size=1, max_size=6)


def test_child_storage_key_is_the_scale_encoding_of_pubsub_and_para_id() -> None:
    assert child_storage_key(2000) == b"pubsub" + bytes.fromhex("d0070000")
    assert prefixed_child_storage_key(2000) == b":child_storage:default:pubsub\xd0\x07\x00\x00"
    with pytest.raises(ValueError):
        child_storage_key(-1)
    with pytest.raises(ValueError):
        child_storage_key(1 << 32)


@each_layout
@given(batches=child_batches, main=st.dictionaries(keys, st.binary(max_size=40), max_size=4))
def test_relay_root_commits_to_child_roots_and_drops_empty_children(
    layout: Layout, batches: list[tuple[int, dict[bytes, bytes | None]]], main: dict[bytes, bytes]
) -> None:
    relay = RelayTries(layout=layout)
    relay.set_main(main)
    models: dict[int, dict[bytes, bytes]] = {}
    for para, batch in batches:
        model = models.setdefault(para, {})
        for key, value in batch.items():
            if value is None:
                model.pop(key, None)
            else:
                model[key] = value
        child_root = relay.apply_child_changes(para, batch)
        assert child_root == (trie_root_for(model.items(), layout) if model else None)
    expected_main = dict(main)
    for para, model in models.items():
        if model:
            expected_main[prefixed_child_storage_key(para)] = trie_root_for(model.items(), layout)
    assert relay.relay_root == trie_root_for(expected_main.items(), layout)
    assert dict(relay.main.items()) == expected_main


@given(batches=child_batches, probes=st.lists(keys, max_size=3))
def test_child_proof_reads_through_the_main_trie(
    batches: list[tuple[int, dict[bytes, bytes | None]]], probes: list[bytes]
) -> None:
    relay = RelayTries()
    relay.apply(child_changes=dict(batches))
    for para in {p for p, _ in batches}:
        trie = relay.child(para)
        wanted = [k for k, _ in trie.items()][:3] + probes
        proof = relay.prove(child_keys={para: wanted})
        expected = trie.get_many(wanted)
        assert read_child_proof(relay.relay_root, proof, child_storage_key(para), wanted) == expected
        root_entry = read_proof(relay.relay_root, proof, [prefixed_child_storage_key(para)])
        assert root_entry == {prefixed_child_storage_key(para): relay.child_root(para)}


@given(batches=child_batches, probes=st.lists(keys, max_size=3), picks=st.lists(
    st.dictionaries(paras, st.tuples(st.integers(0, 4), st.integers(0, 3)), max_size=3), min_size=1, max_size=4))
def test_proving_several_key_sets_at_once_gives_each_its_minimal_proof(
    batches: list[tuple[int, dict[bytes, bytes | None]]], probes: list[bytes],
    picks: list[dict[int, tuple[int, int]]],
) -> None:
    """Stage R proves every subscriber's keys in one pass: each proof is exactly the nodes that reading its keys
    through the main trie touches (read from a proof of everything, by ``lookup``, not by the prover)."""
    relay = RelayTries()
    relay.apply(child_changes=dict(batches))
    stored = {para: [k for k, _ in relay.child(para).items()] for para in {p for p, _ in batches}}
    requests = [{para: stored.get(para, [])[:taken] + probes[:probed] for para, (taken, probed) in pick.items()}
                for pick in picks]
    everything = set(relay.prove(child_keys={para: keys_ for para, keys_ in stored.items()}) + relay.prove(
        child_keys={para: probes for request in requests for para in request}))
    proofs = relay.prove_each(requests)
    assert len(proofs) == len(requests)
    for request, proof in zip(requests, proofs):
        tracker = AccessTracker()
        for para, wanted in request.items():
            read_child_proof(relay.relay_root, everything, child_storage_key(para), wanted, tracker)
        assert proof == sorted(tracker.accessed.values())


def test_apply_refuses_main_changes_to_child_root_entries() -> None:
    with pytest.raises(ValueError):
        RelayTries().set_main({prefixed_child_storage_key(7): b"\x00" * 32})


def test_empty_child_trie_has_no_root_and_no_entry() -> None:
    relay = RelayTries()
    assert relay.apply_child_changes(2000, {b"k": b"v"}) is not None
    assert relay.apply_child_changes(2000, {b"k": None}) is None
    assert relay.relay_root == EMPTY_ROOT
    assert read_child_proof(relay.relay_root, relay.prove(child_keys={2000: [b"k"]}), child_storage_key(2000), [b"k"]) == {
        b"k": None
    }


def test_a_child_root_entry_that_is_not_32_bytes_is_rejected() -> None:
    relay = RelayTries()
    relay.main.apply({prefixed_child_storage_key(5): b"short"})
    proof = relay.main.prove([prefixed_child_storage_key(5)])
    with pytest.raises(InvalidChildRootError) as caught:
        read_child_proof(relay.relay_root, proof, child_storage_key(5), [b"k"])
    assert caught.value.value == b"short"


def test_relay_tries_over_state_store_persist_across_transactions() -> None:
    backend = MemoryBackend()

    def open_relay(txn: StateTransaction) -> RelayTries:
        return RelayTries(lambda space: StateNodeStore(txn, "relay." + space.hex()))

    txn = StateTransaction(backend)
    first = open_relay(txn)
    root = first.apply({b":code": b"wasm"}, {2000: {b"a" * 32: b"x" * 50}, 2001: {b"b" * 32: b"y"}})
    txn.commit()
    txn = StateTransaction(backend)
    again = open_relay(txn)
    assert again.relay_root == root
    assert again.child(2000).get(b"a" * 32) == b"x" * 50
    again.apply_child_changes(2001, {b"b" * 32: None})
    txn.commit()
    memory = RelayTries()
    memory.apply({b":code": b"wasm"}, {2000: {b"a" * 32: b"x" * 50}})
    assert open_relay(StateTransaction(backend)).relay_root == memory.relay_root


@given(batches=child_batches, probes=st.lists(keys, max_size=3), over_state=st.booleans())
def test_hashed_proofs_name_each_node_by_its_blake2_hash(
    batches: list[tuple[int, dict[bytes, bytes | None]]], probes: list[bytes], over_state: bool
) -> None:
    """``prove_each_hashed`` takes each node's hash from the reference that led to it (Stage R's seam keeps
    them): the same nodes as ``prove_each``, each with its true Blake2-256, over memory and over state pages."""
    if over_state:
        txn = StateTransaction(MemoryBackend())
        relay = RelayTries(lambda space: StateNodeStore(txn, "relay." + space.hex()))
    else:
        relay = RelayTries()
    relay.apply(child_changes=dict(batches))
    stored = {para: [k for k, _ in relay.child(para).items()] + probes for para in {p for p, _ in batches}}
    requests = [stored, {para: wanted[:1] for para, wanted in stored.items()}, {}]
    hashed = relay.prove_each_hashed(requests, [probes, [], [b":code"]])
    assert [sorted(proof) for proof in hashed] == relay.prove_each(requests, [probes, [], [b":code"]])
    for proof in hashed:
        assert proof and all(node_hash == blake2_256(node) for node, node_hash in proof.items())


def test_the_empty_trie_proves_with_the_empty_node_and_root() -> None:
    assert RelayTries().prove_each_hashed([{}], [[b"k"]]) == [{b"\x00": EMPTY_ROOT}]
