"""The seam's wire format (pubsub_core/stages/seam.py): a view survives the round trip byte for byte, its nodes travel raw
(half their hex size), and a record is refused as ``ForgedView`` unless its MAC matches the key, as
``MalformedView`` if authentic but not a view; release 0.1.0's records (format 1) read as the same view, a newer
format's are refused. (The operators' use of it: tests/streaming/test_operators.py.)"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import struct

import pytest

from pubsub_core.relay import canonical_json
from pubsub_core.stages import RelayView
from pubsub_core.release import RELEASE
from pubsub_core.stages.seam import (
    MAC_BYTES,
    SEAM_FORMAT,
    SeamRecordError,
    decode_view,
    encode_view,
    seam_mac,
    split_record,
)
from state.formats import FormatTooNewError

KEY = bytes(range(32))


def a_view(nodes: tuple[bytes, ...] = (b"\x80" + bytes(range(40)), b"", bytes(200))) -> RelayView:
    return RelayView("polkadot", 3000, 7, b"\x11" * 32, b"\x22" * 32, 5 * 2**20, (12, 0), (3,), nodes, (), 6, False)


@pytest.mark.parametrize("nodes", [(), (b"",), (b"\x00" * 3, bytes(range(256)) * 8)])
def test_a_view_survives_the_round_trip(nodes: tuple[bytes, ...]) -> None:
    view = a_view(nodes)
    decoded, digest = decode_view(encode_view(view, KEY), KEY)
    assert decoded == view
    layout = encode_view(view, KEY)[MAC_BYTES + 2 + len(RELEASE):]  # after the version byte and the release
    assert digest == hashlib.blake2b(layout, digest_size=32).digest()


def _layout_v1(view: RelayView) -> bytes:
    """A body as release 0.1.0 wrote it (seam format 1: the layout alone, no version byte), written out here."""
    meta = canonical_json(dataclasses.replace(view, nodes=()).to_json()).encode()
    lengths = struct.pack(f">{len(view.nodes)}I", *map(len, view.nodes))
    return b"".join((struct.pack(">II", len(meta), len(view.nodes)), lengths, meta, *view.nodes))


def test_a_version_2_record_names_its_version_and_release_first() -> None:
    body = encode_view(a_view(), KEY)[MAC_BYTES:]
    assert body[0] == SEAM_FORMAT == 2
    assert body[2:2 + body[1]] == RELEASE.encode()
    assert body[2 + body[1]:] == _layout_v1(a_view())


def test_a_version_1_record_of_release_0_1_0_reads_as_the_same_view_with_the_same_digest() -> None:
    view = a_view()
    old, digest = decode_view(_signed(_layout_v1(view)), KEY)
    new, new_digest = decode_view(encode_view(view, KEY), KEY)
    assert old == new == view
    assert digest == new_digest  # a view replayed across the upgrade is recognised as the one applied
    assert split_record(_signed(_layout_v1(view)))[1] == list(view.nodes)


def test_a_record_of_a_newer_seam_format_is_refused_in_one_line_naming_it() -> None:
    layout = encode_view(a_view(), KEY)[MAC_BYTES + 2 + len(RELEASE):]
    newer = _signed(bytes([SEAM_FORMAT + 1, 5]) + b"9.1.0" + layout)
    with pytest.raises(FormatTooNewError) as refused:
        decode_view(newer, KEY)
    assert (refused.value.version, refused.value.release) == (3, "9.1.0")
    assert "\n" not in str(refused.value) and "version 3, written by release 9.1.0" in str(refused.value)


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
