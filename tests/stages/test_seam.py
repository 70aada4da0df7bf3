"""The seam's wire format (pubsub_core/stages/seam.py): a view survives the round trip byte for byte, its nodes travel raw
(half their hex size), and a record is refused as ``ForgedView`` unless its MAC matches the key, as
``MalformedView`` if authentic but not a view. (The operators' use of it: tests/streaming/test_operators.py.)"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import struct

import pytest

from pubsub_core.relay import canonical_json
from pubsub_core.stages import RelayView
from pubsub_core.stages.seam import MAC_BYTES, SeamRecordError, decode_view, encode_view, seam_mac, split_record

KEY = bytes(range(32))


def a_view(nodes: tuple[bytes, ...] = (b"\x80" + bytes(range(40)), b"", bytes(200))) -> RelayView:
    return RelayView("polkadot", 3000, 7, b"\x11" * 32, b"\x22" * 32, 5 * 2**20, (12, 0), (3,), nodes, (), 6, False)


@pytest.mark.parametrize("nodes", [(), (b"",), (b"\x00" * 3, bytes(range(256)) * 8)])
def test_a_view_survives_the_round_trip(nodes: tuple[bytes, ...]) -> None:
    view = a_view(nodes)
    decoded, digest = decode_view(encode_view(view, KEY), KEY)
    assert decoded == view
    assert digest == hashlib.blake2b(encode_view(view, KEY)[MAC_BYTES:], digest_size=32).digest()


def test_the_nodes_travel_raw_beside_the_rest_as_canonical_json() -> None:
    view = a_view(tuple(bytes([i]) * 532 for i in range(20)))
    value = encode_view(view, KEY)
    meta, nodes = split_record(value)
    assert nodes == list(view.nodes)
    assert canonical_json(meta) == canonical_json(dataclasses.replace(view, nodes=()).to_json())
    as_json = canonical_json(view.to_json()).encode()  # the nodes in hex
    assert len(value) < 0.55 * len(as_json)


def test_any_changed_byte_or_another_key_makes_a_forged_view() -> None:
    value = encode_view(a_view(), KEY)
    for at in (0, MAC_BYTES - 1, MAC_BYTES, MAC_BYTES + 9, len(value) - 1):
        changed = bytearray(value)
        changed[at] ^= 0x01
        with pytest.raises(SeamRecordError) as refused:
            decode_view(bytes(changed), KEY)
        assert refused.value.reason == "ForgedView"
    for other in (encode_view(a_view(), b"k" * 32), value[:-1], value[:MAC_BYTES], b"", b"{}"):
        with pytest.raises(SeamRecordError, match="^ForgedView: "):
            decode_view(other, KEY)


def _signed(body: bytes) -> bytes:
    return seam_mac(KEY, body) + body


@pytest.mark.parametrize("body", [
    b"",  # no counts
    struct.pack(">II", 10, 0) + b"{}",  # less meta than announced
    struct.pack(">III", 2, 1, 5) + b"{}" + b"abc",  # node shorter than announced
    struct.pack(">III", 2, 1, 1) + b"{}" + b"abc",  # bytes after the last node
    struct.pack(">II", 3, 0) + b"{x}",  # meta not JSON
    struct.pack(">II", 2, 0) + b"[]",  # meta not an object
    struct.pack(">II", 2, 0) + b"{}",  # meta without the view's fields
])
def test_an_authentic_record_that_is_not_a_view_is_malformed(body: bytes) -> None:
    with pytest.raises(SeamRecordError) as refused:
        decode_view(_signed(body), KEY)
    assert refused.value.reason == "MalformedView"


def test_a_delta_is_never_taken_for_a_full_proof() -> None:
    meta = dataclasses.replace(a_view(), nodes=()).to_json()
    del meta["full"]
    encoded = json.dumps(meta).encode()
    with pytest.raises(SeamRecordError, match="^MalformedView: "):
        decode_view(_signed(struct.pack(">II", len(encoded), 0) + encoded), KEY)
