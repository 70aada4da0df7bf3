"""A realm's input topics back out as an event log (``pubsub export``), to replay production traffic offline.

Each record of ``<realm>.genesis|upward|horizontal|extrinsics|blocks`` becomes one line ``{"topic", "key",
"value"}`` (canonical JSON). The value is the JSON it carries when that JSON's canonical form is exactly the
record's bytes (everything ``pubsub produce`` and the live producers write), else the record's text as a JSON
string. ``LineParser`` sends a string value as its text and anything else as canonical JSON, so either way
``pubsub produce`` of the exported log writes the very same bytes again. A value that is not UTF-8, or a
record without a value, cannot be written back byte for byte: it is exported as text (with replacement
characters) or null, and counted as lossy.

Order: the simulator numbers each line within its topic and its outputs do not depend on how topics are
interleaved (docs/simulator.md, "Determinism"), only on each topic's own order. ``interleave`` merges the
topics by Kafka timestamp, then topic (in ``INPUTS`` order), then offset, never reordering a topic.
Lines that ``pubsub produce`` could not route (not JSON, unknown topic) never reached an input topic; their
rejection records are on ``<realm>.rejected`` already and are not part of the export.
"""

from __future__ import annotations

import heapq
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from producers.transport.kafka_io import scan_topic, topic_size
from producers.transport.topics import Settings
from pubsub_core.relay import canonical_json
from pubsub_core.stages.edge import ConsumerRecord
from pubsub_core.stages.topics import INPUTS, input_topics, kind_of

__all__ = ["ExportReport", "export_line", "export_realm", "interleave"]


@dataclass
class ExportReport:
    """Lines written per topic, and how many of them could not keep their bytes (see the module docstring)."""

    lines: Counter[str] = field(default_factory=Counter)
    lossy: int = 0


def export_line(record: ConsumerRecord) -> tuple[str, bool]:
    """A record as an event-log line, and whether the line loses some of its bytes."""
    key = None if record.key is None else record.key.decode("utf-8", errors="replace")
    lossy = record.value is None or (record.key is not None and key is not None and key.encode() != record.key)
    value: object = None
    if record.value is not None:
        try:
            text = record.value.decode("utf-8")
        except UnicodeDecodeError:
            text, lossy = record.value.decode("utf-8", errors="replace"), True
        value = _json_if_canonical(text)
    return canonical_json({"topic": record.topic, "key": key, "value": value}), lossy


def _json_if_canonical(text: str) -> object:
    """The JSON ``text`` carries if it is that JSON's canonical form (and not a string), else ``text`` itself."""
    try:
        body = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return text
    return body if not isinstance(body, str) and canonical_json(body) == text else text


def interleave(topics: Iterable[Iterable[ConsumerRecord]]) -> Iterator[ConsumerRecord]:
    """Merge topics (each in offset order) by (timestamp, topic's rank in ``INPUTS``, offset); each topic's
    records keep their order whatever their timestamps."""
    def order(record: ConsumerRecord) -> tuple[int, int, int]:
        stream = kind_of(record.topic)
        rank = INPUTS.index(stream) if stream in INPUTS else len(INPUTS)
        return record.timestamp if record.timestamp is not None else 0, rank, record.offset
    return heapq.merge(*topics, key=order)


def export_realm(
    settings: Settings, realm: str, on_line: Callable[[str], object], on_total: Callable[[int], None] | None = None
) -> ExportReport:
    """Read the realm's input topics to their current ends and hand each line to ``on_line`` in ``interleave``
    order; ``on_total`` first gets the number of records to come. ``KafkaIOError`` if a topic is missing."""
    names = input_topics(realm)
    if on_total is not None:
        on_total(sum(topic_size(settings, name) for name in names))
    report = ExportReport()
    for record in interleave(scan_topic(settings, name) for name in names):
        line, lossy = export_line(record)
        on_line(line)
        report.lines[record.topic] += 1
        report.lossy += lossy
    return report
