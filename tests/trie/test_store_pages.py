"""The StateNodeStore page codec: what ``_encode_page`` writes, ``_decode_page`` reads back, whatever the node
sizes (every compact length form), and a cut page is a typed error, never a short page."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pubsub_core.codec.scale import ScaleDecodeError
from pubsub_core.trie.store import _decode_page, _encode_page

relative_paths = st.text(alphabet="0123456789abcdef", max_size=3)
encodings = st.one_of(st.binary(max_size=80), st.binary(min_size=70, max_size=20_000))


@given(st.dictionaries(relative_paths, encodings, max_size=12))
def test_a_page_round_trips(page: dict[str, bytes]) -> None:
    assert _decode_page(_encode_page(page)) == page


def test_the_layout_is_length_path_compact_length_node() -> None:
    # Written out by hand from the layout: u8 path length, the path's ASCII, SCALE compact length, the bytes.
    assert _decode_page(b"\x01a" + b"\x0c" + b"xyz" + b"\x00" + b"\x00") == {"a": b"xyz", "": b""}
    big = bytes(range(256)) * 70  # 17,920 bytes: the four-byte compact form
    assert _decode_page(b"\x02" + b"0f" + ((len(big) << 2) | 0b10).to_bytes(4, "little") + big) == {"0f": big}


@pytest.mark.parametrize("cut", [1, 2, 4, 6])
def test_a_truncated_page_is_a_typed_error(cut: int) -> None:
    data = _encode_page({"ab": b"node-bytes", "c": b"x" * 100})
    with pytest.raises(ScaleDecodeError):
        _decode_page(data[:-cut] if cut != 6 else data[:3])
