"""The node codec: round trips, header boundaries, and typed errors for every malformed input."""

from __future__ import annotations

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from pubsub_core.hashing import blake2_256
from pubsub_core.trie import (
    MalformedNodeError,
    Node,
    NodeKind,
    ProofDB,
    TrieError,
    Trie,
    decode_node,
    encode_header,
    lookup,
    read_proof,
)
from tests.trie.strategies import entries

nibble_strings = st.text(alphabet="0123456789abcdef", max_size=70)
refs = st.one_of(st.none(), st.binary(min_size=32, max_size=32), st.binary(min_size=1, max_size=31))


@st.composite
def nodes(draw: st.DrawFn) -> Node:
    partial = draw(nibble_strings)
    hashed = draw(st.booleans())
    value = draw(st.binary(min_size=32, max_size=32)) if hashed else draw(st.binary(max_size=80))
    if draw(st.booleans()):
        return Node.make(partial, value, hashed, None)
    children = tuple(draw(st.lists(refs, min_size=16, max_size=16)))
    if all(c is None for c in children):
        children = (b"\x11" * 32,) + children[1:]
    branch_value = draw(st.sampled_from([None, value]))
    return Node.make(partial, branch_value, hashed and branch_value is not None, children)


@given(node=nodes())
def test_decode_inverts_encode(node: Node) -> None:
    assert decode_node(node.encoded) == node


@pytest.mark.parametrize(
    ("kind", "count", "header"),
    [
        (NodeKind.LEAF, 62, "7e"),
        (NodeKind.LEAF, 63, "7f00"),
        (NodeKind.LEAF, 63 + 255, "7fff00"),
        (NodeKind.HASHED_VALUE_LEAF, 31, "3f00"),
        (NodeKind.HASHED_VALUE_BRANCH, 15, "1f00"),
        (NodeKind.HASHED_VALUE_BRANCH, 14, "1e"),
    ],
)
def test_header_switches_to_continuation_bytes_at_the_kind_maximum(kind: NodeKind, count: int, header: str) -> None:
    assert encode_header(kind, count).hex() == header


def test_a_partial_key_of_65536_nibbles_has_no_length_cap() -> None:
    node = Node.make("a" * 65536, b"v", False, None)
    assert decode_node(node.encoded) == node


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ("", "zero bytes"),
        ("0000", "trailing"),
        ("01", "names no node kind"),
        ("0f", "names no node kind"),
        ("8000", "bitmap runs past"),
        ("80000000", "bitmap without a child"),
        ("4110", "padding nibble"),
        ("4304", "partial key of 3 nibbles runs past"),
        ("7f", "partial key length runs past"),
        ("42aa08bb", "value of 2 bytes runs past"),
        ("42aa04bbcc", "trailing"),
        ("20", "value of 32 bytes runs past"),
        ("80010000", "child 0 is an empty reference"),
        ("80010003", "child 0 length is not a valid compact"),
    ],
)
def test_malformed_node_names_the_problem(data: str, reason: str) -> None:
    with pytest.raises(MalformedNodeError) as caught:
        decode_node(bytes.fromhex(data))
    assert reason in caught.value.reason
    assert caught.value.data == bytes.fromhex(data)


@given(data=st.binary(max_size=120))
@example(data=bytes.fromhex("7fffffffffff"))
def test_random_bytes_decode_or_raise_malformed_node(data: bytes) -> None:
    try:
        decode_node(data)
    except MalformedNodeError as error:
        assert error.data == data


@given(node=nodes(), position=st.integers(min_value=0), bit=st.integers(0, 7), cut=st.integers(min_value=0))
def test_bit_flips_and_truncations_decode_or_raise_malformed_node(node: Node, position: int, bit: int, cut: int) -> None:
    flipped = bytearray(node.encoded)
    flipped[position % len(flipped)] ^= 1 << bit
    for data in (bytes(flipped), node.encoded[: cut % len(node.encoded)]):
        try:
            decode_node(data)
        except MalformedNodeError as error:
            assert error.data == data


@given(model=entries.filter(bool), data=st.data())
def test_reading_a_corrupted_proof_raises_only_trie_errors(model: dict[bytes, bytes], data: st.DataObject) -> None:
    trie = Trie()
    trie.apply(model)
    proof = trie.prove(list(model))
    victim = data.draw(st.sampled_from(proof))
    corrupted = bytearray(victim)
    corrupted[data.draw(st.integers(0, len(victim) - 1))] ^= 1 << data.draw(st.integers(0, 7))
    nodes = [bytes(corrupted) if n == victim else n for n in proof]
    for key in model:
        try:
            read_proof(trie.root, nodes, [key])
        except TrieError:
            pass


def test_an_inline_child_that_does_not_decode_is_a_malformed_node() -> None:
    root = bytes.fromhex("8001000c0102ff")  # branch, child 0 inline: the three bytes 01 02 ff
    with pytest.raises(MalformedNodeError):
        lookup(ProofDB([root]), blake2_256(root), b"\x00")


@given(node=nodes(), data=st.data())
def test_splicing_new_child_hashes_equals_encoding_from_scratch(node: Node, data: st.DataObject) -> None:
    assume(node.children is not None)
    assert node.children is not None
    children = list(node.children)
    swaps = []
    for slot, ref in enumerate(node.children):
        if ref is not None and data.draw(st.booleans()):
            new = data.draw(st.one_of(st.binary(min_size=32, max_size=32), st.just(ref[:16] + ref[:16])))
            children[slot] = new
            swaps.append((ref, new))
    spliced = node.with_children(tuple(children), swaps)
    assert spliced == Node.make(node.partial, node.value, node.value_hashed, tuple(children))
