"""Stage R's buffer of records waiting for their block: what it stores reads back whole."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pubsub_core.relay.records import InputRecord
from pubsub_core.stages.relay_state import RelayBook
from state import MemoryBackend, StateTransaction

records = st.builds(
    InputRecord,
    st.sampled_from(["upward", "horizontal", "extrinsics"]),
    st.text(min_size=1, max_size=12),
    st.integers(0, 2**64 - 1),
    st.binary(max_size=64),
)


def _encodable(record: InputRecord) -> bool:
    try:
        record.origin.encode()
    except UnicodeEncodeError:
        return False
    return True


@given(st.lists(records.filter(_encodable), max_size=8, unique_by=lambda r: (r.stream, r.origin, r.position)))
def test_buffered_records_read_back_whole_by_position_and_all_together(buffered: list[InputRecord]) -> None:
    book = RelayBook(StateTransaction(MemoryBackend()))
    for record in buffered:
        book.buffer(record)
    for record in buffered:
        assert book.buffered_at(record.stream, record.origin, record.position) == record
        assert book.has_buffered(record.stream, record.origin, record.position)
    assert sorted(book.buffered(), key=repr) == sorted(buffered, key=repr)
    assert not book.has_buffered("blocks", "para:2000", 0)  # a stream no record here uses
    assert book.buffered_at("blocks", "para:2000", 0) is None
