"""The stages' Kafka writer: each Python worker writes its operator's records to Kafka itself, in place of Spark's
Kafka sink, and hands Spark only a count per topic (``streaming.operators.BatchSummary``).

Why: through Spark's sink every record crossed from the Python worker to the JVM as Arrow, became a row and was
sent by Spark's Java producer, on two cores that the protocol needs; with librdkafka in the worker the job
uses less CPU and ends sooner (docs/benchmarks.md, "Measured defaults").

The guarantees are the sink's: records reach Kafka before the batch commits (``flush`` waits for every delivery
and raises if one failed, which fails the task, so the batch is run again: at least once), in order per partition
(idempotent producer), on the partition Spark's sink chose (the Java client's murmur2 of the key), with the ``id``
header.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaException, Producer

from producers.transport.topics import producer_config
from pubsub_core.stages.edge import ProducerRecord
from pubsub_core.stages.limits import WRITER_REQUEST_BYTES
from settings.settings import Settings
from streaming.errors import RecordWriteError

__all__ = ["METADATA_REFRESH_SECONDS", "WRITER_LIMITS", "RecordWriter", "record_writer", "writer_config"]

WRITER_LIMITS: dict[str, str] = {
    # the Java client's partitioner (Spark's sink): a key lands where it did, and where the seam's readers expect it
    "partitioner": "murmur2_random",
    "compression.type": "lz4",
    # Record batches up to 1 MiB per partition: a view (about 17 KB on the standard workload) fills Kafka's default
    # 16 KiB batch alone, each batch its own compression frame and request
    # (docs/benchmarks.md, "Measured code choices").
    "batch.size": str(1024 * 1024),
    # A record waits up to 25 ms for others to share its request (the project's producer: 5 ms). ``flush`` sends at
    # once, so a batch's last records wait for nothing; only records written while the task still runs (Stage R's
    # events while it works on later blocks) leave up to 20 ms later. Fewer, larger requests cost the job
    # and the broker less CPU; a longer linger gains nothing more (docs/benchmarks.md, "Measured defaults").
    "linger.ms": "25",
    # What a worker holds unsent before ``write`` waits for deliveries (librdkafka's default: 1 GiB): a large batch's
    # records stay within a bounded buffer, as in Spark's sink (the Java producer's 32 MiB); two of the largest
    # records fit.
    "queue.buffering.max.kbytes": str(64 * 1024),
}
"""What the writer sets beyond the project's producer (``producers.transport.topics.producer_config``: idempotent, so each
partition keeps its order through retries, ``acks=all``), with a longer linger."""

METADATA_REFRESH_SECONDS = 1.0
"""How long a topic's partition count, once asked for, serves the writer before it asks again (at its next record
for the topic). librdkafka asks every five minutes, and a topic deleted and made again with fewer
partitions (a realm reset) would fail every record it places on a partition that is gone."""

FLUSH_STEP_SECONDS = 1.0
"""``flush`` waits this long per step until nothing is in flight; librdkafka fails a record that it could not
deliver within ``message.timeout.ms`` (5 minutes by default), so the wait ends."""


def writer_config(settings: Settings) -> dict[str, str]:
    """The writer's librdkafka configuration: the project's producer over the settings' connection, and the limits."""
    return {**producer_config(settings, WRITER_REQUEST_BYTES), **WRITER_LIMITS}


class RecordWriter:
    """One producer per worker process, kept across batches: ``write`` queues records, ``flush`` delivers them."""

    def __init__(self, config: Mapping[str, str]) -> None:
        failures: list[tuple[str, str]] = []

        def delivered(err: Any, msg: Any) -> None:  # a closure, not a method: the producer holds no cycle to us
            if err is not None:
                failures.append((msg.topic() or "?", err.str()))

        # Delivery reports for failures only: a report per record was a Python callback per record (27,340 for
        # Stage R on the standard workload).
        self._producer = Producer({**config, "on_delivery": delivered, "delivery.report.only.error": True})
        self._failures = failures
        self._asked: set[str] = set()  # topics whose partition count was asked for since ``_asked_at``
        self._asked_at = time.monotonic()

    def write(self, records: Iterable[ProducerRecord]) -> None:
        """Queue records; a full queue is drained by serving deliveries."""
        if time.monotonic() - self._asked_at >= METADATA_REFRESH_SECONDS:
            self._asked.clear()
            self._asked_at = time.monotonic()
        produce, poll, asked = self._producer.produce, self._producer.poll, self._asked
        for topic, key, value, headers in records:
            if topic not in asked:
                self._ask_partitions(topic)
            while True:
                try:
                    produce(topic, value, key, headers=list(headers))
                    break
                except BufferError:
                    poll(0.05)
                except KafkaException as exc:  # refused before queueing (the client's own checks)
                    raise RecordWriteError(topic, str(exc), 1) from exc
        poll(0)

    def _ask_partitions(self, topic: str) -> None:
        """Ask the broker for ``topic``'s partitions (librdkafka places the next records by the answer)."""
        try:
            self._producer.list_topics(topic, timeout=10)
        except KafkaException:
            pass  # the broker is away for a moment: the records wait in the queue, placed by the count known
        self._asked.add(topic)

    def flush(self) -> None:
        """Wait until every queued record is delivered; ``RecordWriteError`` if any was not (the batch fails)."""
        while self._producer.flush(FLUSH_STEP_SECONDS) > 0:
            pass
        if self._failures:
            (topic, reason), failed = self._failures[0], len(self._failures)
            self._failures.clear()
            raise RecordWriteError(topic, reason, failed)


_WRITERS: dict[frozenset[tuple[str, str]], RecordWriter] = {}


def record_writer(config: Mapping[str, str]) -> RecordWriter:
    """This process's writer for ``config`` (made on first use): its connections and threads serve every batch."""
    key = frozenset(config.items())
    writer = _WRITERS.get(key)
    if writer is None:
        writer = _WRITERS[key] = RecordWriter(config)
    return writer
