"""RouterStorage's hand-written list decoders against the reader path: the same list, or the same error, for
encoded lists, their truncations and arbitrary bytes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pubsub_core.codec.scale import ScaleDecodeError, encode_bytes, encode_u32
from pubsub_core.router.records import decode_vec, encode_vec
from pubsub_core.router.storage import _decode, _decode_bytes_list, _decode_u32_list, _read_bytes, _read_u32


def outcome(decode: object, data: bytes) -> object:
    try:
        return decode(data)  # type: ignore[operator]
    except ScaleDecodeError as exc:
        return ("error", str(exc))


def reader_bytes(data: bytes) -> list[bytes]:
    return _decode(data, lambda r: decode_vec(r, _read_bytes))


def reader_u32(data: bytes) -> list[int]:
    return _decode(data, lambda r: decode_vec(r, _read_u32))


@given(st.lists(st.binary(max_size=300), max_size=8), st.binary(max_size=3))
def test_bytes_lists_decode_as_the_reader_does(messages: list[bytes], tail: bytes) -> None:
    data = encode_vec(messages, encode_bytes)
    assert _decode_bytes_list(data) == messages
    for cut in range(len(data)):
        assert outcome(_decode_bytes_list, data[:cut]) == outcome(reader_bytes, data[:cut])
    assert outcome(_decode_bytes_list, data + tail) == outcome(reader_bytes, data + tail)


@given(st.lists(st.integers(0, 2**32 - 1), max_size=70), st.binary(max_size=3))
def test_u32_lists_decode_as_the_reader_does(paras: list[int], tail: bytes) -> None:
    data = encode_vec(paras, encode_u32)
    assert _decode_u32_list(data) == paras
    for cut in range(len(data)):
        assert outcome(_decode_u32_list, data[:cut]) == outcome(reader_u32, data[:cut])
    assert outcome(_decode_u32_list, data + tail) == outcome(reader_u32, data + tail)


@given(st.binary(max_size=64))
def test_arbitrary_bytes_decode_as_the_reader_does(data: bytes) -> None:
    assert outcome(_decode_bytes_list, data) == outcome(reader_bytes, data)
    assert outcome(_decode_u32_list, data) == outcome(reader_u32, data)
