"""Typed Kafka clients for the commands and the tests: route an event log, send records, read topics back.

Wire format of an output record (docs/operations.md): Kafka key = the simulator line's ``key`` (UTF-8), value =
``canonical_json`` of its ``value``, header ``id`` = its ``id``. ``ProducedRecord.from_output`` writes it and
``output_line`` reads it back into the simulator's line, so Kafka's outputs and ``pubsub simulate``'s compare
line for line.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from producers.topics import MAX_MESSAGE_BYTES, Settings, consumer_config, producer_config
from pubsub_core.errors import PubSubError
from pubsub_core.relay import canonical_json
from pubsub_core.stages import LineRouter, OutputRecord
from pubsub_core.stages.ingest import is_blank

__all__ = [
    "ConsumedRecord",
    "KafkaIOError",
    "ProducedRecord",
    "Refusal",
    "SendReport",
    "TOO_LARGE",
    "output_line",
    "produce",
    "read_outputs",
    "read_topic",
    "route_event_log",
    "send",
]

TOO_LARGE = "RecordTooLarge"
"""The rejection reason of a record Kafka (broker or client) refuses for its size."""
ID_HEADER = "id"


class KafkaIOError(PubSubError):
    """A produce or consume against Kafka failed; carries the topic and the reason."""

    def __init__(self, topic: str, reason: str) -> None:
        super().__init__(f"Kafka I/O on topic {topic} failed: {reason}")
        self.topic = topic
        self.reason = reason


@dataclass(frozen=True)
class ProducedRecord:
    """A record to send: key and value as bytes (None for a null key), and headers."""

    topic: str
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...] = ()

    @classmethod
    def from_output(cls, record: OutputRecord) -> ProducedRecord:
        """An output line as its Kafka record: key as UTF-8, canonical JSON value, header ``id``."""
        return cls(record.topic, record.key.encode(), canonical_json(dict(record.value)).encode(),
                   ((ID_HEADER, record.id.encode()),))


@dataclass(frozen=True)
class ConsumedRecord:
    """A record read back, with its coordinates and headers."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()

    def header(self, name: str) -> bytes | None:
        """The first header called ``name``, or None."""
        return next((data for header, data in self.headers if header == name), None)

    def to_json(self) -> str:
        """The debugging line (``pubsub consume --raw``): coordinates, key, header id and value."""
        body = {"topic": self.topic, "partition": self.partition, "offset": self.offset, "key": _text(self.key),
                "id": _text(self.header(ID_HEADER)), "value": _json_or_text(self.value)}
        return canonical_json(body)


def output_line(record: ConsumedRecord) -> str:
    """The simulator's output line of a record: canonical ``{"id", "key", "topic", "value"}``. A record without
    an ``id`` header gets ``"id": null``; a value that is not JSON is given as text (never an error)."""
    return canonical_json(
        {"id": _text(record.header(ID_HEADER)), "key": _text(record.key), "topic": record.topic,
         "value": _json_or_text(record.value)}
    )


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="replace")


def _json_or_text(data: bytes | None) -> object:
    if data is None:
        return None
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return data.decode("utf-8", errors="replace")


def route_event_log(
    lines: Iterable[bytes], router: LineRouter
) -> Iterator[tuple[ProducedRecord, int] | OutputRecord]:
    """Each non-blank line of an event log (read in binary) as (its Kafka record, its offset in that topic) or
    as the rejection record the simulator writes for it (not UTF-8, not JSON, too large, no usable topic...);
    blank lines are skipped, as the simulator skips them."""
    for raw in lines:
        line = raw.rstrip(b"\r\n")
        if is_blank(line):
            continue
        routed = router.route(line)
        if isinstance(routed, OutputRecord):
            yield routed
        else:
            record, offset = routed
            yield ProducedRecord(record.topic, record.key, record.value), offset


@dataclass(frozen=True)
class Refusal:
    """A record Kafka did not take: its index in the sent sequence, the record, a typed reason and the detail."""

    index: int
    record: ProducedRecord
    reason: str
    detail: str


@dataclass
class SendReport:
    """What ``send`` did: records delivered per topic, and the refusals in the order they were noticed."""

    delivered: Counter[str] = field(default_factory=Counter)
    refused: list[Refusal] = field(default_factory=list)


def send(
    settings: Settings,
    records: Iterable[ProducedRecord],
    *,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    on_sent: Callable[[int], None] | None = None,
    timeout: float = 120.0,
) -> SendReport:
    """Send records with an idempotent, zstd-compressing producer (acks=all) and wait for every delivery. A record
    the client or the broker refuses for its size is a ``Refusal`` (reason ``RecordTooLarge``); any other failure
    raises ``KafkaIOError``. Records of one partition keep their order."""
    producer = Producer(producer_config(settings, max_message_bytes))
    report = SendReport()
    failures: list[tuple[str, str]] = []

    def delivery(index: int, record: ProducedRecord) -> Callable[[KafkaError | None, Message], None]:
        def delivered(err: KafkaError | None, _msg: Message) -> None:
            if err is None:
                report.delivered[record.topic] += 1
            elif err.code() == KafkaError.MSG_SIZE_TOO_LARGE:
                report.refused.append(Refusal(index, record, TOO_LARGE, f"the broker refused it: {err.str()}"))
            else:
                failures.append((record.topic, err.str()))
        return delivered

    sent = 0
    for index, record in enumerate(records):
        while True:
            try:
                producer.produce(record.topic, value=record.value, key=record.key, headers=list(record.headers),
                                 on_delivery=delivery(index, record))
                break
            except BufferError:
                producer.poll(0.1)
            except KafkaException as exc:
                error = exc.args[0]
                if error.code() != KafkaError.MSG_SIZE_TOO_LARGE:
                    raise KafkaIOError(record.topic, error.str()) from exc
                report.refused.append(Refusal(index, record, TOO_LARGE, f"the client refused it: {error.str()}"))
                break
        sent += 1
        if on_sent is not None:
            on_sent(sent)
        producer.poll(0)
    remaining = producer.flush(timeout)
    if remaining:
        raise KafkaIOError("*", f"{remaining} records not delivered after {timeout:.0f}s")
    if failures:
        raise KafkaIOError(failures[0][0], f"{len(failures)} deliveries failed, first: {failures[0][1]}")
    return report


def produce(settings: Settings, records: Iterable[ProducedRecord]) -> int:
    """``send`` that tolerates no refusal: returns how many records were delivered, else ``KafkaIOError``."""
    report = send(settings, records)
    if report.refused:
        first = report.refused[0]
        raise KafkaIOError(first.record.topic, f"{len(report.refused)} records refused, first: {first.detail}")
    return sum(report.delivered.values())


def read_topic(
    settings: Settings, topic: str, timeout: float = 30.0, limit: int | None = None
) -> list[ConsumedRecord]:
    """Every record of `topic` from the beginning to the end offsets seen at the start (at most `limit`, the
    first ones of each partition), with headers, in partition/offset order."""
    consumer = Consumer(consumer_config(settings, f"pubsub-reader-{uuid.uuid4().hex[:8]}"))
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if metadata is None or metadata.error is not None:
            raise KafkaIOError(topic, f"topic not found ({metadata.error if metadata else 'no metadata'})")
        ends: dict[int, int] = {}
        for partition in metadata.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            if high > low:
                ends[partition] = high
        if not ends or limit == 0:
            return []
        consumer.assign([TopicPartition(topic, p, 0) for p in sorted(ends)])
        records: list[ConsumedRecord] = []
        done: set[int] = set()
        deadline = time.monotonic() + timeout
        while len(done) < len(ends) and (limit is None or len(records) < limit):
            if time.monotonic() > deadline:
                raise KafkaIOError(topic, f"read only {len(records)} records in {timeout:.0f}s")
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            error = msg.error()
            partition, offset = msg.partition(), msg.offset()
            if error is not None and error.code() != KafkaError._PARTITION_EOF:
                raise KafkaIOError(topic, error.str())
            if partition is None or offset is None:
                raise KafkaIOError(topic, "a fetched message has no partition or offset")
            if error is not None:  # end of a partition
                if offset >= ends.get(partition, 0):
                    done.add(partition)
                continue
            if offset < ends[partition]:
                headers = tuple((str(h[0]), h[1] if isinstance(h[1], bytes) else None) for h in msg.headers() or ())
                records.append(ConsumedRecord(topic, partition, offset, msg.key(), msg.value(), headers))
            if offset + 1 >= ends[partition]:
                done.add(partition)
        return sorted(records, key=lambda r: (r.partition, r.offset))
    except KafkaException as exc:
        raise KafkaIOError(topic, str(exc)) from exc
    finally:
        consumer.close()


def read_outputs(settings: Settings, topics: Iterable[str]) -> list[str]:
    """The simulator output lines (``output_line``) of every record of ``topics``, topic by topic in partition and
    offset order. Kafka's order across topics and partitions is not the simulator's: sort both to compare."""
    return [output_line(record) for name in topics for record in read_topic(settings, name)]
