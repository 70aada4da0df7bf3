"""The block machine's hand-written paths against the plain ones they replace: event rendering and weighing."""

from __future__ import annotations

from pubsub_core.broadcaster import DataPublished, KeyExpired, PublisherRegistered
from pubsub_core.relay.machine import _event_records
from pubsub_core.relay.records import event_record
from pubsub_core.xcm import Publish, Weight, Xcm
from pubsub_core.xcm.executor import ExecutorConfig
from pubsub_core.xcm.types import ClearOrigin, SetTopic


def test_event_records_equal_rendering_each_event() -> None:
    events: list[object] = [
        DataPublished(2000, 1), DataPublished(2001, 1), DataPublished(2000, 1), KeyExpired(2000, bytes(32)),
        DataPublished(2000, 2), PublisherRegistered(2002, bytes([7]) * 32), DataPublished(2001, 1),
    ]
    records = _event_records(12, events)
    assert records == tuple(event_record(12, i, event) for i, event in enumerate(events))
    assert [r.index for r in records] == list(range(len(events)))
    assert '"publisher":2001' in records[6].body and '"items_count":2' in records[4].body


def test_weigh_counts_publishes_and_other_instructions() -> None:
    config = ExecutorConfig(instruction_weight=Weight(3, 5), publish_weight=Weight(100, 7))
    message = Xcm((Publish(bytes(32), b"v", 0), ClearOrigin(), Publish(bytes(32), b"w", 1), SetTopic(bytes(32))))
    assert config.weigh(message) == Weight(2 * 100 + 2 * 3, 2 * 7 + 2 * 5)
    assert config.weigh(Xcm(())) == Weight(0, 0)
