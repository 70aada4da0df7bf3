"""Stage R's buffer of records waiting for their block: what it stores, and that a state written before the
binary format (the record's JSON) still reads."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pubsub_core.relay import canonical_json
from pubsub_core.relay.records import InputRecord
from pubsub_core.stages.relay_stage import _Book
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
    book = _Book(StateTransaction(MemoryBackend()))
    for record in buffered:
        book.buffer(record)
    for record in buffered:
        assert book.buffered_at(record.stream, record.origin, record.position) == record
        assert book.has_buffered(record.stream, record.origin, record.position)
    assert sorted(book.buffered(), key=repr) == sorted(buffered, key=repr)
    assert not book.has_buffered("blocks", "para:2000", 0)  # a stream no record here uses
    assert book.buffered_at("blocks", "para:2000", 0) is None


def test_a_record_buffered_as_json_by_an_earlier_version_still_reads() -> None:
    record = InputRecord("upward", "para:2000", 7, b"\x01\x02envelope")
    book = _Book(StateTransaction(MemoryBackend()))
    key = b"upward\x00para:2000\x00" + (7).to_bytes(8, "big")
    book.txn.put(book.BUFFER, key, canonical_json(record.to_json()).encode())
    assert book.buffered_at("upward", "para:2000", 7) == record
    assert book.buffered() == [record]
