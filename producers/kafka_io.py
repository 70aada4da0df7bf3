"""Thin typed Kafka clients for the commands and the tests: produce records, read a topic to its end."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from pubsub_core.errors import PubSubError

__all__ = [
    "ConsumedRecord",
    "EventLogError",
    "KafkaIOError",
    "ProducedRecord",
    "produce",
    "read_event_log",
    "read_topic",
    "synthetic_records",
]


class Settings(Protocol):
    """What the clients need of the settings object (streaming.settings.Settings has it); a Protocol, so that
    producers/ imports nothing from streaming/."""

    def kafka_client_config(self) -> Mapping[str, str]: ...


class KafkaIOError(PubSubError):
    """A produce or consume against Kafka failed; carries the topic."""

    def __init__(self, topic: str, reason: str) -> None:
        super().__init__(f"Kafka I/O on topic {topic} failed: {reason}")
        self.topic = topic
        self.reason = reason


class EventLogError(PubSubError):
    """A line of an event log is not a JSON object with topic, key and value; carries the file and line."""

    def __init__(self, path: Path, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path = path
        self.line = line


@dataclass(frozen=True)
class ProducedRecord:
    """A record to send: key and value as bytes (None for a null key)."""

    topic: str
    key: bytes | None
    value: bytes


@dataclass(frozen=True)
class ConsumedRecord:
    """A record read back, with its coordinates."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None

    def to_json(self) -> str:
        """One JSON line; the value is inlined as JSON when it is JSON, else given as text."""
        text = None if self.value is None else self.value.decode("utf-8", errors="replace")
        try:
            value: object = json.loads(text) if text is not None else None
        except json.JSONDecodeError:
            value = text
        key = None if self.key is None else self.key.decode("utf-8", errors="replace")
        body = {"topic": self.topic, "partition": self.partition, "offset": self.offset, "key": key, "value": value}
        return json.dumps(body, sort_keys=True, separators=(",", ":"))


def synthetic_records(topic: str, count: int, keys: int, start: int = 0) -> Iterator[ProducedRecord]:
    """`count` small JSON records spread round-robin over `keys` keys ("key-0".."key-{keys-1}"); deterministic."""
    for i in range(start, start + count):
        key = f"key-{i % keys}"
        value = json.dumps({"n": i, "key": key}, sort_keys=True, separators=(",", ":"))
        yield ProducedRecord(topic, key.encode(), value.encode())


def read_event_log(path: Path, default_topic: str) -> Iterator[ProducedRecord]:
    """Records of a JSON-lines event log: {"topic": ..., "key": ..., "value": ...} (value: object or string)."""
    with path.open() as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as exc:
                raise EventLogError(path, number, f"not JSON: {exc}") from exc
            if not isinstance(entry, dict) or "value" not in entry:
                raise EventLogError(path, number, "expected an object with a value")
            value = entry["value"]
            raw = value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))
            key = entry.get("key")
            yield ProducedRecord(entry.get("topic", default_topic), None if key is None else str(key).encode(), raw.encode())


def produce(
    settings: Settings, records: Iterable[ProducedRecord], on_sent: Callable[[int], None] | None = None
) -> int:
    """Send records with an idempotent producer (acks=all), wait for every delivery; return how many were sent."""
    producer = Producer(
        {**settings.kafka_client_config(), "enable.idempotence": "true", "linger.ms": "5", "log_level": "3"}
    )
    failures: list[tuple[str, str]] = []

    def delivered(err: KafkaError | None, msg: object) -> None:
        if err is not None:
            failures.append((getattr(msg, "topic", lambda: "?")(), str(err)))

    sent = 0
    for record in records:
        while True:
            try:
                producer.produce(record.topic, value=record.value, key=record.key, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.1)
        sent += 1
        if on_sent and sent % 100 == 0:
            on_sent(sent)
        producer.poll(0)
    remaining = producer.flush(60)
    if remaining:
        raise KafkaIOError("*", f"{remaining} records not delivered after 60s")
    if failures:
        raise KafkaIOError(failures[0][0], f"{len(failures)} deliveries failed, first: {failures[0][1]}")
    if on_sent:
        on_sent(sent)
    return sent


def read_topic(settings: Settings, topic: str, timeout: float = 30.0) -> list[ConsumedRecord]:
    """Every record of `topic` from the beginning to the end offsets seen at the start, in partition/offset order."""
    consumer = Consumer(
        {**settings.kafka_client_config(), "group.id": "pubsub-reader", "enable.auto.commit": "false",
         "enable.partition.eof": "true", "auto.offset.reset": "earliest", "log_level": "3"}
    )
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if metadata is None or metadata.error is not None:
            raise KafkaIOError(topic, f"topic not found ({metadata.error if metadata else 'no metadata'})")
        ends: dict[int, int] = {}
        for partition in metadata.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            if high > low:
                ends[partition] = high
        if not ends:
            return []
        consumer.assign([TopicPartition(topic, p, 0) for p in sorted(ends)])
        records: list[ConsumedRecord] = []
        done: set[int] = set()


        deadline = time.monotonic() + timeout
        while len(done) < len(ends):
            if time.monotonic() > deadline:
                raise KafkaIOError(topic, f"read only {len(records)} records in {timeout:.0f}s")
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    if msg.offset() >= ends.get(msg.partition(), 0):
                        done.add(msg.partition())
                    continue
                raise KafkaIOError(topic, str(msg.error()))
            partition, offset = msg.partition(), msg.offset()
            if offset < ends[partition]:
                records.append(ConsumedRecord(topic, partition, offset, msg.key(), msg.value()))
            if offset + 1 >= ends[partition]:
                done.add(partition)
        return sorted(records, key=lambda r: (r.partition, r.offset))
    except KafkaException as exc:
        raise KafkaIOError(topic, str(exc)) from exc
    finally:
        consumer.close()
