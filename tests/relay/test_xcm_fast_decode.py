"""``decode_versioned_xcm``'s hand-written Publish path against the reader path it bypasses: same message, or the
same error text at the same offset, for well-formed messages and for every truncation and corruption of them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pubsub_core.xcm import Publish, Xcm, XcmDecodeError, decode_versioned_xcm, encode_versioned_xcm
from pubsub_core.xcm import types as xcm_types
from pubsub_core.xcm.types import ClearOrigin, SetTopic


@contextmanager
def reader_only() -> Iterator[None]:
    """Decode with the fast path switched off: every instruction through ``_instruction``."""
    fast = xcm_types._publish_fast
    xcm_types._publish_fast = lambda data, start, max_value_length: None
    try:
        yield
    finally:
        xcm_types._publish_fast = fast


def outcome(data: bytes, max_value_length: int) -> object:
    try:
        return decode_versioned_xcm(data, max_value_length)
    except XcmDecodeError as exc:
        return ("error", str(exc), exc.offset)


def both(data: bytes, max_value_length: int = 1024) -> tuple[object, object]:
    fast = outcome(data, max_value_length)
    with reader_only():
        slow = outcome(data, max_value_length)
    return fast, slow


INSTRUCTION = st.one_of(
    st.builds(Publish, st.binary(min_size=32, max_size=32), st.binary(max_size=300), st.integers(0, 2**32 - 1)),
    st.just(ClearOrigin()),
    st.builds(SetTopic, st.binary(min_size=32, max_size=32)),
)


@given(st.lists(INSTRUCTION, max_size=6), st.data())
@example([Publish(bytes(32), bytes(63), 5)], None)  # the largest one-byte compact length
@example([Publish(bytes(32), bytes(64), 5)], None)  # the smallest two-byte one
def test_fast_publish_decoding_equals_the_reader(instructions: list[object], data: st.DataObject | None) -> None:
    raw = encode_versioned_xcm(Xcm(tuple(instructions)))  # type: ignore[arg-type]
    fast, slow = both(raw)
    assert fast == slow == Xcm(tuple(instructions))  # type: ignore[arg-type]
    for cut in range(len(raw)):  # every truncation: the same error
        fast, slow = both(raw[:cut])
        assert fast == slow
    if data is not None and raw:
        position = data.draw(st.integers(0, len(raw) - 1))
        corrupt = raw[:position] + bytes([data.draw(st.integers(0, 255))]) + raw[position + 1 :]
        fast, slow = both(corrupt)
        assert fast == slow
        fast, slow = both(raw, data.draw(st.integers(0, 300)))
        assert fast == slow


@pytest.mark.parametrize("length_prefix", ["01", "fd00", "0100", "02000100"])
def test_odd_value_lengths_fall_back_to_the_reader(length_prefix: str) -> None:
    """Non-canonical and four-byte compact lengths: the reader's own error or value."""
    data = b"\x05\x04\x34" + bytes(32) + bytes.fromhex(length_prefix) + bytes(70)
    fast, slow = both(data)
    assert fast == slow


@pytest.mark.parametrize("length", [1, 5, 63, 64, 65, 300])
def test_the_value_bound_is_the_readers(length: int) -> None:
    """A value of exactly ``MaxPublishValueLength`` decodes, one byte more does not, on both paths."""
    raw = encode_versioned_xcm(Xcm((Publish(bytes(32), bytes(length), 1),)))
    for bound in (length - 1, length):
        fast, slow = both(raw, bound)
        assert fast == slow
        assert isinstance(fast, Xcm) == (bound == length)
