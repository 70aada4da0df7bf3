"""Every vector of trie.json: roots, node encodings, headers, proofs (reads, absences), recorded paths."""

from __future__ import annotations

from typing import Any

import pytest
from Crypto.Hash import keccak

from pubsub_core.codec.scale import ScaleReader
from pubsub_core.hashing import blake2_256
from pubsub_core.trie import (
    V0,
    V1,
    IncompleteProofError,
    Layout,
    NodeKind,
    ProofDB,
    RelayTries,
    Trie,
    decode_node,
    encode_header,
    next_key,
    ordered_trie_root,
    read_proof,
    trie_root,
    trie_root_for,
)
from pubsub_core.trie.root import root_node_encoding
from tests.trie.conftest import load_vectors

VECTORS = load_vectors()
LAYOUTS = {"V0": [V0], "V1": [V1], "V0+V1": [V0, V1]}


def _entries(vector: dict[str, Any]) -> list[tuple[bytes, bytes]]:
    return [(bytes.fromhex(k), bytes.fromhex(v)) for k, v in vector["entries"]]


def _keccak(data: bytes) -> bytes:
    return keccak.new(data=data, digest_bits=256).digest()


def _proof_nodes(vector: dict[str, Any]) -> list[bytes]:
    return [bytes.fromhex(n) for n in vector["nodes"]]


ROOT_CASES = [(v, layout) for v in VECTORS["roots"] for layout in LAYOUTS[v["layout"]]]


@pytest.mark.parametrize(("vector", "layout"), ROOT_CASES, ids=[f"{v['id']}-{lay.name}" for v, lay in ROOT_CASES])
def test_trie_root_matches_vector(vector: dict[str, Any], layout: Layout) -> None:
    version = 0 if layout is V0 else 1
    assert trie_root(_entries(vector), version).hex() == vector["root"]


@pytest.mark.parametrize(("vector", "layout"), ROOT_CASES, ids=[f"{v['id']}-{lay.name}" for v, lay in ROOT_CASES])
def test_incremental_trie_reaches_vector_root_one_entry_per_batch(vector: dict[str, Any], layout: Layout) -> None:
    trie = Trie(layout=layout)
    for key, value in _entries(vector):
        trie.apply({key: value})
    assert trie.root.hex() == vector["root"]


@pytest.mark.parametrize("vector", [v for v in VECTORS["roots"] if "ordered_values" in v], ids=lambda v: v["id"])
def test_ordered_trie_root_matches_vector(vector: dict[str, Any]) -> None:
    values = [bytes.fromhex(v) for v in vector["ordered_values"]]
    assert ordered_trie_root(values, version=0).hex() == vector["root"]


OTHER_CASES = [(v, lay) for v in VECTORS["other_hasher_roots"] for lay in LAYOUTS[v["layout"]]]


@pytest.mark.parametrize(("vector", "base"), OTHER_CASES, ids=[f"{v['id']}-{b.name}" for v, b in OTHER_CASES])
def test_keccak_layout_root_matches_vector(vector: dict[str, Any], base: Layout) -> None:
    assert vector["hasher"] == "keccak-256"
    layout = Layout("keccak", _keccak, base.max_inline_value)
    assert trie_root_for(_entries(vector), layout).hex() == vector["root"]


def test_child_trie_vector_roots_in_main_trie() -> None:
    child = next(v for v in VECTORS["roots"] if v["id"] == "sdk-child-Child1")
    main = next(v for v in VECTORS["roots"] if v["id"] == "sdk-child-Child1-main")
    child_root = trie_root(_entries(child))
    assert child_root.hex() == child["root"]
    main_entries = dict(_entries(main))
    assert main_entries[b":child_storage:default:" + bytes.fromhex(child["child_storage_key"])] == child_root
    assert trie_root(main_entries.items()).hex() == main["root"]


@pytest.mark.parametrize(
    "vector", [e for e in VECTORS["encodings"] if e["kind"] == "root_node_of_entries"], ids=lambda e: e["id"]
)
def test_root_node_encoding_matches_vector(vector: dict[str, Any]) -> None:
    assert root_node_encoding(_entries(vector), V1).hex() == vector["encoded"]


@pytest.mark.parametrize(
    "vector", [e for e in VECTORS["encodings"] if e["kind"].startswith("node")], ids=lambda e: e["id"]
)
def test_node_vector_decodes_and_reencodes_identically(vector: dict[str, Any]) -> None:
    data = bytes.fromhex(vector["encoded"])
    node = decode_node(data)
    assert node is not None
    assert node.make(node.partial, node.value, node.value_hashed, node.children).encoded == data
    if "blake2_256" in vector:
        assert blake2_256(data).hex() == vector["blake2_256"]
    if "key" in vector:
        assert node.partial == vector["key"]
        assert node.value == bytes.fromhex(vector["value"])
    if "proof_scale_encoding" in vector:
        reader = ScaleReader(bytes.fromhex(vector["proof_scale_encoding"]))
        assert [reader.bytes_vec() for _ in range(reader.compact())] == [data]
        reader.finish()


def test_smoldot_basic_node_decodes_to_documented_fields() -> None:
    vector = next(e for e in VECTORS["encodings"] if e["id"] == "smoldot-node-basic")
    node = decode_node(bytes.fromhex(vector["encoded"]))
    decoded = vector["decoded"]
    assert node is not None and node.children is not None
    assert node.kind is NodeKind.BRANCH_WITH_VALUE
    assert node.partial == "".join(f"{n:x}" for n in decoded["partial_key_nibbles"])
    assert node.value == bytes.fromhex(decoded["value_inline"])
    expected = {int(i): bytes.fromhex(h) for i, h in decoded["children"].items()}
    assert {i: c for i, c in enumerate(node.children) if c is not None} == expected


def test_recorded_nodes_for_get_equal_our_minimal_proof() -> None:
    vector = next(e for e in VECTORS["encodings"] if e["kind"] == "recorded_nodes_for_get")
    trie = Trie(layout=V1)
    trie.apply(dict(_entries(vector)))
    for key, recorded in vector["reads"].items():
        assert sorted(trie.prove([key.encode()])) == sorted(bytes.fromhex(n) for n in recorded)
        assert blake2_256(bytes.fromhex(recorded[0])) == trie.root


HEADER_KINDS = {
    "leaf": NodeKind.LEAF,
    "branch_no_value": NodeKind.BRANCH,
    "branch_with_value": NodeKind.BRANCH_WITH_VALUE,
    "hashed_value_leaf": NodeKind.HASHED_VALUE_LEAF,
    "hashed_value_branch": NodeKind.HASHED_VALUE_BRANCH,
}


@pytest.mark.parametrize(
    "vector", VECTORS["header_encodings"], ids=lambda h: f"{h['node_type']}-{h['partial_key_nibbles']}"
)
def test_header_encoding_matches_vector(vector: dict[str, Any]) -> None:
    header = encode_header(HEADER_KINDS[vector["node_type"]], vector["partial_key_nibbles"])
    assert header.hex() == vector["header"]


@pytest.mark.parametrize("vector", VECTORS["proofs"], ids=lambda p: p["id"])
def test_proof_vector_reads_give_documented_values(vector: dict[str, Any]) -> None:
    root = bytes.fromhex(vector["root"])
    nodes = _proof_nodes(vector)
    assert blake2_256(b"") != root and root in ProofDB(nodes)
    reads = {bytes.fromhex(r["key"]): None if r["value"] is None else bytes.fromhex(r["value"]) for r in vector["reads"]}
    assert read_proof(root, nodes, reads) == reads
    for read in vector.get("incomplete_reads", []):
        with pytest.raises(IncompleteProofError):
            read_proof(root, nodes, [bytes.fromhex(read["key"] if isinstance(read, dict) else read)])


@pytest.mark.parametrize("vector", VECTORS["proofs"], ids=lambda p: p["id"])
def test_proof_vector_scale_encoding_lists_the_nodes(vector: dict[str, Any]) -> None:
    reader = ScaleReader(bytes.fromhex(vector["proof_scale_encoding"]))
    listed = [reader.bytes_vec() for _ in range(reader.compact())]
    reader.finish()
    assert sorted(listed) == sorted(_proof_nodes(vector))


def test_relay_tries_reproduce_child_vector_under_para_key() -> None:
    child = next(v for v in VECTORS["roots"] if v["id"] == "sdk-child-Child1")
    relay = RelayTries()
    child_root = relay.apply_child_changes(2000, dict(_entries(child)))
    assert child_root is not None and child_root.hex() == child["root"]


@pytest.mark.parametrize("vector", [p for p in VECTORS["proofs"] if "next_key_check" in p], ids=lambda p: p["id"])
def test_next_key_in_proof_matches_smoldot(vector: dict[str, Any]) -> None:
    check = vector["next_key_check"]
    assert not check["branch_nodes"]
    found = next_key(
        ProofDB(_proof_nodes(vector)),
        bytes.fromhex(vector["root"]),
        bytes.fromhex(check["key_before"]),
        or_equal=check["or_equal"],
        prefix=bytes.fromhex(check["prefix"]),
    )
    assert found is not None and found.hex() == check["expected_next_key"]
