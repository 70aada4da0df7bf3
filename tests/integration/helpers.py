"""What the integration tests compute to check the job: the expected output from the pure fold, per input topic."""

from __future__ import annotations

from collections import defaultdict

from producers.kafka_io import ConsumedRecord, read_topic
from streaming.settings import Settings
from streaming.skeleton import CounterState, InputRecord, OutputRecord, fold


def expected_outputs(settings: Settings) -> list[OutputRecord]:
    """The skeleton's outputs for everything now in the input topic, by the plain-Python fold, key by key."""
    by_key: dict[str | None, list[InputRecord]] = defaultdict(list)
    for r in read_topic(settings, settings.input):
        key = None if r.key is None else r.key.decode()
        by_key[key].append(InputRecord(r.topic, r.partition, r.offset, key, r.value))
    expected: list[OutputRecord] = []
    for records in by_key.values():
        _, outputs = fold(CounterState(), records, settings.output, settings.rejected)
        expected += outputs
    return expected


def as_outputs(records: list[ConsumedRecord]) -> list[OutputRecord]:
    """Consumed records in the OutputRecord form (topic, key, value text) for comparison."""
    return [
        OutputRecord(r.topic, (r.key or b"").decode(), (r.value or b"").decode()) for r in records
    ]
