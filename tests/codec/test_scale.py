"""SCALE primitives against values known from parity-scale-codec."""

import pytest
from hypothesis import given, strategies as st

from pubsub_core.codec import ScaleDecodeError, ScaleReader, decode_compact, encode_compact


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, "00"),
        (1, "04"),
        (63, "fc"),
        (64, "0101"),
        (16383, "fdff"),
        (16384, "02000100"),
        (1073741823, "feffffff"),
        (1073741824, "0300000040"),
        ((1 << 32) - 1, "03ffffffff"),
        (1 << 32, "070000000001"),
    ],
)
def test_compact_matches_parity_scale_codec(value: int, encoded: str) -> None:
    assert encode_compact(value).hex() == encoded
    assert decode_compact(bytes.fromhex(encoded)) == (value, len(encoded) // 2)


@given(st.integers(min_value=0, max_value=(1 << 128) - 1))
def test_compact_round_trips(value: int) -> None:
    data = encode_compact(value)
    assert decode_compact(data) == (value, len(data))


@pytest.mark.parametrize("encoded", ["0100", "02000000", "0300000000", ""])
def test_non_canonical_or_truncated_compact_is_a_typed_error(encoded: str) -> None:
    with pytest.raises(ScaleDecodeError):
        decode_compact(bytes.fromhex(encoded))


def test_reader_reports_trailing_bytes() -> None:
    reader = ScaleReader(bytes.fromhex("0c616263ff"))
    assert reader.bytes_vec() == b"abc"
    with pytest.raises(ScaleDecodeError):
        reader.finish()
