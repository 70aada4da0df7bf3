"""work_segments is rotate_to_cursor(work_items(...)) grouped by publisher: the engine's processing order against
the naive one (tests.support.ordering)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as stg

from pubsub_core.subscriber import SubscriberConfig
from pubsub_core.subscriber.ordering import work_segments

from tests.support.ordering import rotate_to_cursor, work_items

paras = stg.sampled_from((5, 1000, 1999, 2000, 2001, 3000, 4242))
keys = stg.binary(min_size=32, max_size=32) | stg.sampled_from([bytes([b]) * 32 for b in range(4)])
subscriptions = stg.dictionaries(paras, stg.lists(keys, min_size=1, max_size=6, unique=True).map(sorted), max_size=5)


@settings(max_examples=300, deadline=None)
@given(subscriptions, stg.binary(min_size=32, max_size=32), stg.data())
def test_segments_flatten_to_the_rotated_work_items(
    subs: dict[int, list[bytes]], block_hash: bytes, data: stg.DataObject
) -> None:
    config = SubscriberConfig()
    items = work_items(subs, block_hash, config)
    # A cursor on an item (any position, including the first and last), a stale one, or none.
    cursor = data.draw(stg.one_of(stg.none(), stg.sampled_from(items) if items else stg.none(),
                                  stg.tuples(paras, keys)))
    segments = work_segments(subs, block_hash, config, cursor)
    flattened = [(para, subs[para][index]) for para, start, stop in segments for index in range(start, stop)]
    assert flattened == rotate_to_cursor(items, cursor)
    assert all(start < stop for _, start, stop in segments), "no empty segment"


def test_the_cursor_splits_its_publisher_in_two() -> None:
    subs = {1000: [b"a" * 32, b"b" * 32, b"c" * 32], 1500: [b"d" * 32]}  # system paras: ascending order
    segments = work_segments(subs, bytes(32), SubscriberConfig(), (1000, b"b" * 32))
    assert segments == [(1000, 1, 3), (1500, 0, 1), (1000, 0, 1)]
