"""The driver's side of a realm's health records: where the job's ``Stalled`` and ``Resumed`` records go, and what
earlier runs declared.

The job declares a stall in its driver (``streaming.job.RealmWaits``, rule ``pubsub_core.stages.stall.declare``),
the only place that sees how far each batch read its input topics; the records go to ``<realm>.health`` through
the stages' writer, so they are the records Stage R's would have been (key, value, ``id`` header). A restarted job
reads back, from the end of each realm's health topic, the block it declared and has not seen resumed, so its
``Resumed`` record still comes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from producers.transport.kafka_io import KafkaIOError, scan_topic
from pubsub_core.stages.edge import to_kafka
from pubsub_core.stages.records import OutputRecord
from pubsub_core.stages.stall import HEALTH, Declared
from pubsub_core.stages.topics import topic
from settings.settings import Settings
from streaming.record_writer import RecordWriter, writer_config

__all__ = ["TAIL_RECORDS", "declared_stalls", "health_publisher"]

TAIL_RECORDS = 64
"""Records read back from the end of each partition of a realm's health topic at start: the last ``Stalled`` or
``Resumed`` of the realm is among them (a realm writes one ``Voided`` per void order between the two)."""


def health_publisher(settings: Settings) -> Callable[[list[OutputRecord]], None]:
    """Writes health records and waits until Kafka has them (``RecordWriteError`` otherwise). Its own producer,
    closed with the job's driver state (not the workers' cached one)."""
    writer = RecordWriter(writer_config(settings))

    def publish(records: list[OutputRecord]) -> None:
        writer.write([to_kafka(r) for r in records])
        writer.flush()

    return publish


def declared_stalls(settings: Settings, realms: Iterable[str]) -> dict[str, Declared]:
    """Per realm whose health topic ends with a ``Stalled`` record (no ``Resumed`` after it): that block."""
    declared: dict[str, Declared] = {}
    for realm in realms:
        last: dict[str, object] | None = None
        try:
            tail = sorted(scan_topic(settings, topic(realm, HEALTH), timeout=10, offset=-TAIL_RECORDS),
                          key=lambda r: (r.partition, r.offset))
        except KafkaIOError:
            continue  # no health topic yet: nothing was declared
        for record in tail:
            try:
                body = json.loads(record.value or b"")
            except ValueError:
                continue
            if isinstance(body, dict) and body.get("realm") == realm and body.get("kind") in ("Stalled", "Resumed"):
                last = body
        if last is not None and last.get("kind") == "Stalled":
            declared[realm] = Declared(int(str(last["block"])), str(last["block_record"]))
    return declared
