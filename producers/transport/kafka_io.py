"""Typed Kafka clients for the commands and the tests: route an event log, send records, read topics back.

They send ``ProducerRecord``s and read ``ConsumerRecord``s (``pubsub_core.stages.edge``, where the wire format of
an output record is: ``to_kafka`` writes it, ``output_line`` reads it back into the simulator's line, so Kafka's
outputs and ``pubsub simulate``'s compare line for line).
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from producers.errors import ProducerError
from producers.interrupts import ctrl_c
from producers.transport.topics import Settings, consumer_config, producer_config, refusal, with_logger
from pubsub_core.stages import LineParser, OutputRecord
from pubsub_core.stages.edge import ConsumerRecord, ProducerRecord, output_line
from pubsub_core.stages.limits import MAX_MESSAGE_BYTES

__all__ = [
    "KafkaIOError",
    "Refusal",
    "SendInterrupted",
    "SendReport",
    "TOO_LARGE",
    "consumed",
    "start_offset",
    "produce",
    "read_from_start",
    "read_outputs",
    "read_topic",
    "route_event_log",
    "scan_topic",
    "send",
    "topic_size",
    "wait_for_sizes",
]

TOO_LARGE = "RecordTooLarge"
"""The rejection reason of a record Kafka (broker or client) refuses for its size."""


class KafkaIOError(ProducerError):
    """A produce or consume against Kafka failed; carries the topic and the reason."""

    def __init__(self, topic: str, reason: str) -> None:
        super().__init__(f"Kafka I/O on topic {topic} failed: {reason}")
        self.topic = topic
        self.reason = reason


def route_event_log(
    lines: Iterable[bytes], router: LineParser
) -> Iterator[tuple[ProducerRecord, int] | OutputRecord]:
    """Each non-blank line of an event log (read in binary) as (its Kafka record, its offset in that topic) or
    as the rejection record the simulator writes for it (not UTF-8, not JSON, too large, no usable topic...);
    blank lines are skipped, as the simulator skips them."""
    for raw in lines:
        routed = router.feed(raw)
        if routed is None:
            continue
        if isinstance(routed, OutputRecord):
            yield routed
        else:
            yield routed


@dataclass(frozen=True)
class Refusal:
    """A record Kafka did not take: its index in the sent sequence, the record, a typed reason and the detail."""

    index: int
    record: ProducerRecord
    reason: str
    detail: str


@dataclass
class SendReport:
    """What ``send`` did: records delivered per topic, and the refusals in the order they were noticed."""

    delivered: Counter[str] = field(default_factory=Counter)
    refused: list[Refusal] = field(default_factory=list)


def send(
    settings: Settings,
    records: Iterable[ProducerRecord],
    *,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    on_sent: Callable[[int], None] | None = None,
    timeout: float = 120.0,
) -> SendReport:
    """Send records with an idempotent, zstd-compressing producer (acks=all) and wait for every delivery. A record
    the client or the broker refuses for its size is a ``Refusal`` (reason ``RecordTooLarge``); any other failure
    raises ``KafkaIOError``. Records of one partition keep their order."""
    producer = Producer(with_logger(producer_config(settings, max_message_bytes)))
    report = SendReport()
    failures: list[tuple[str, str]] = []

    def delivery(index: int, record: ProducerRecord) -> Callable[[KafkaError | None, Message], None]:
        def delivered(err: KafkaError | None, _msg: Message) -> None:
            if err is None:
                report.delivered[record.topic] += 1
            elif err.code() == KafkaError.MSG_SIZE_TOO_LARGE:
                report.refused.append(Refusal(index, record, TOO_LARGE, f"the broker refused it: {err.str()}"))
            else:
                failures.append((record.topic, err.str()))
        return delivered

    sent = 0
    with ctrl_c() as interrupt:
        try:
            for index, record in enumerate(records):
                with interrupt.deferring():
                    _produce_one(producer, index, record, report, delivery)
                sent += 1
                if on_sent is not None:
                    on_sent(sent)
                with interrupt.deferring():
                    producer.poll(0)
            deadline = time.monotonic() + timeout
            remaining = 1
            while remaining and time.monotonic() < deadline:
                with interrupt.deferring():
                    remaining = producer.flush(0.5)
        except KeyboardInterrupt:  # Ctrl-C: deliver what the client holds, then say how far it got
            interrupt.deferred = True  # a second Ctrl-C does not cut this short
            remaining = producer.flush(_INTERRUPT_FLUSH_SECONDS)
            raise SendInterrupted(report, sent, remaining) from None
    if remaining:
        raise KafkaIOError("*", f"{remaining} records not delivered after {timeout:.0f}s")
    if failures:
        if (refused := refusal(settings, "Write", *failures[0])) is not None:
            raise refused
        raise KafkaIOError(failures[0][0], f"{len(failures)} deliveries failed, first: {failures[0][1]}")
    return report


_INTERRUPT_FLUSH_SECONDS = 10.0


class SendInterrupted(ProducerError):
    """``send`` was interrupted (Ctrl-C) after handing ``sent`` records to the client; ``report`` has what was
    delivered, ``undelivered`` how many were still in the client when it gave up waiting."""

    def __init__(self, report: SendReport, sent: int, undelivered: int) -> None:
        delivered = sum(report.delivered.values())
        super().__init__(f"interrupted: {delivered} records delivered of {sent} sent"
                         + (f", {undelivered} not confirmed" if undelivered else ""))
        self.report = report
        self.sent = sent
        self.undelivered = undelivered


def _produce_one(
    producer: Producer,
    index: int,
    record: ProducerRecord,
    report: SendReport,
    delivery: Callable[[int, ProducerRecord], Callable[[KafkaError | None, Message], None]],
) -> None:
    """Hand one record to the client, waiting while its queue is full; a record the client refuses for its size
    is a ``Refusal``, any other refusal a ``KafkaIOError``."""
    while True:
        try:
            producer.produce(record.topic, value=record.value, key=record.key, headers=list(record.headers),
                             on_delivery=delivery(index, record))
            return
        except BufferError:
            producer.poll(0.1)
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() != KafkaError.MSG_SIZE_TOO_LARGE:
                raise KafkaIOError(record.topic, error.str()) from exc
            report.refused.append(Refusal(index, record, TOO_LARGE, f"the client refused it: {error.str()}"))
            return


def produce(settings: Settings, records: Iterable[ProducerRecord]) -> int:
    """``send`` that tolerates no refusal: returns how many records were delivered, else ``KafkaIOError``."""
    report = send(settings, records)
    if report.refused:
        first = report.refused[0]
        raise KafkaIOError(first.record.topic, f"{len(report.refused)} records refused, first: {first.detail}")
    return sum(report.delivered.values())


def topic_size(settings: Settings, topic: str) -> int:
    """How many records ``topic`` holds now (the sum over its partitions of high minus low watermark)."""
    consumer = Consumer(with_logger(consumer_config(settings, f"pubsub-reader-{uuid.uuid4().hex[:8]}")))
    try:
        return _size(consumer, topic)
    except KafkaException as exc:
        raise KafkaIOError(topic, str(exc)) from exc
    finally:
        consumer.close()


def wait_for_sizes(settings: Settings, sizes: Mapping[str, int], timeout: float, every: float = 0.1) -> bool:
    """Wait until each topic of ``sizes`` holds at least that many records (one reader for the whole wait, its
    watermarks asked every ``every`` seconds); False if ``timeout`` passes first."""
    consumer = Consumer(with_logger(consumer_config(settings, f"pubsub-reader-{uuid.uuid4().hex[:8]}")))
    deadline = time.monotonic() + timeout
    try:
        waiting = {name: n for name, n in sizes.items() if _size(consumer, name) < n}
        while waiting:
            if time.monotonic() > deadline:
                return False
            time.sleep(every)
            waiting = {name: n for name, n in waiting.items() if _size(consumer, name) < n}
        return True
    except KafkaException as exc:
        raise KafkaIOError(", ".join(sizes), str(exc)) from exc
    finally:
        consumer.close()


def scan_topic(
    settings: Settings,
    topic: str,
    timeout: float = 30.0,
    limit: int | None = None,
    *,
    partitions: Iterable[int] | None = None,
    offset: str | int = "beginning",
    group: str | None = None,
) -> Generator[ConsumerRecord, None, None]:
    """Every record of ``topic`` from ``offset`` to the end offsets seen at the start (at most ``limit``, the
    first ones of each partition), with headers, one at a time: each partition in offset order, partitions
    interleaved as they arrive. ``KafkaIOError`` if no record comes for ``timeout`` seconds before the end.

    ``partitions``: only these (default: all). ``offset``: where each partition starts, as kcat's ``-o``:
    ``beginning``, ``end``, an offset (``5``) or a count back from the end (``-5``). ``group``: a consumer group
    whose committed offsets, where it has them, take precedence over ``offset``; the offset after each record
    yielded is committed when the scan ends or is closed, so the next scan of the group resumes there."""
    consumer = Consumer(with_logger(consumer_config(settings, group or f"pubsub-reader-{uuid.uuid4().hex[:8]}")))
    positions: dict[int, int] = {}
    try:
        try:
            marks = _watermarks(consumer, topic, timeout)
        except KafkaIOError as exc:
            if (refused := refusal(settings, "Read", topic, exc.reason)) is not None:
                raise refused from exc
            raise
        if partitions is not None:
            wanted = set(partitions)
            unknown = wanted - set(marks)
            if unknown:
                raise KafkaIOError(topic, f"no partition {min(unknown)} (it has {len(marks)})")
            marks = {p: mark for p, mark in marks.items() if p in wanted}
        starts = {p: start_offset(offset, low, high) for p, (low, high) in marks.items()}
        if group is not None:
            committed = consumer.committed([TopicPartition(topic, p) for p in marks], timeout=10)
            starts |= {c.partition: c.offset for c in committed if c.offset >= 0}
        ends = {p: high for p, (low, high) in marks.items() if high > starts[p]}
        if not ends or limit == 0:
            return
        consumer.assign([TopicPartition(topic, p, starts[p]) for p in sorted(ends)])
        done: set[int] = set()
        count = 0
        deadline = time.monotonic() + timeout
        while len(done) < len(ends) and (limit is None or count < limit):
            if time.monotonic() > deadline:
                raise KafkaIOError(topic, f"no record for {timeout:.0f}s after {count} records")
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            deadline = time.monotonic() + timeout
            error = msg.error()
            partition, at = msg.partition(), msg.offset()
            if error is not None and error.code() != KafkaError._PARTITION_EOF:
                if (refused := refusal(settings, "Read", topic, error.str())) is not None:
                    raise refused
                raise KafkaIOError(topic, error.str())
            if partition is None or at is None:
                raise KafkaIOError(topic, "a fetched message has no partition or offset")
            if error is not None:  # end of a partition
                if at >= ends.get(partition, 0):
                    done.add(partition)
                continue
            if at < ends[partition]:
                count += 1
                positions[partition] = at + 1
                yield consumed(msg)
                deadline = time.monotonic() + timeout  # time spent by the caller is not waiting
            if at + 1 >= ends[partition]:
                done.add(partition)
    except KafkaException as exc:
        raise KafkaIOError(topic, str(exc)) from exc
    finally:
        try:
            if group is not None and positions:
                consumer.commit(offsets=[TopicPartition(topic, p, at) for p, at in sorted(positions.items())],
                                asynchronous=False)
        finally:
            consumer.close()


def start_offset(spec: str | int, low: int, high: int) -> int:
    """Where a partition with watermarks ``low``..``high`` starts for an offset spec (kcat's ``-o``):
    ``beginning``, ``end``, an offset (clamped to the partition), or ``-N``, N records before the end."""
    if spec == "beginning":
        return low
    if spec == "end":
        return high
    try:
        number = int(spec)
    except ValueError:
        raise KafkaIOError("*", f"offset {spec!r} is not beginning, end, N or -N") from None
    return max(low, high + number) if number < 0 else min(max(number, low), high)


def read_topic(
    settings: Settings, topic: str, timeout: float = 30.0, limit: int | None = None
) -> list[ConsumerRecord]:
    """``scan_topic`` from the beginning as a list in partition/offset order."""
    return sorted(scan_topic(settings, topic, timeout, limit), key=lambda r: (r.partition, r.offset))


def consumed(msg: Message) -> ConsumerRecord:
    """A fetched message (not an error event) as a ``ConsumerRecord``."""
    headers = tuple((str(h[0]), h[1] if isinstance(h[1], bytes) else None) for h in msg.headers() or ())
    partition, offset = msg.partition(), msg.offset()
    if partition is None or offset is None:
        raise KafkaIOError(msg.topic() or "?", "a fetched message has no partition or offset")
    return ConsumerRecord(msg.topic() or "", partition, offset, msg.key(), msg.value(), headers, _timestamp(msg))


def _timestamp(msg: Message) -> int | None:
    kind, millis = msg.timestamp()
    return None if kind == TIMESTAMP_NOT_AVAILABLE else millis


def _size(consumer: Consumer, topic: str) -> int:
    """How many records ``topic`` holds now: high minus low watermark, summed over its partitions."""
    return sum(high - low for low, high in _watermarks(consumer, topic).values())


def _watermarks(consumer: Consumer, topic: str, timeout: float = 10.0) -> dict[int, tuple[int, int]]:
    """Low and high watermark of each partition of ``topic``; ``KafkaIOError`` if it does not exist, or if Kafka
    does not answer within ``timeout`` seconds."""
    try:
        metadata = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
    except KafkaException as exc:
        raise KafkaIOError(topic, f"Kafka did not answer within {timeout:g} s "
                                  f"({_reason(exc)})") from exc
    if metadata is None or metadata.error is not None:
        raise KafkaIOError(topic, f"topic not found ({metadata.error.str() if metadata and metadata.error else 'no metadata'})")
    return {p: _watermark(consumer, topic, p, timeout) for p in metadata.partitions}


def _reason(exc: KafkaException) -> str:
    first = exc.args[0] if exc.args else None
    return first.str() if isinstance(first, KafkaError) else str(exc)


_RETRIABLE = (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.UNKNOWN_TOPIC_OR_PART,
              KafkaError._UNKNOWN_PARTITION)  # the client's own metadata behind the answer of a topic made again


def _watermark(consumer: Consumer, topic: str, partition: int, timeout: float = 10.0) -> tuple[int, int]:
    """A partition's watermarks, retried while the client's metadata lags a topic just created."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
            return low, high
        except KafkaException as exc:
            if exc.args[0].code() not in _RETRIABLE or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def read_from_start(settings: Settings, topics: Sequence[str], group: str,
                    stopped: Callable[[], bool]) -> Iterator[ConsumerRecord]:
    """Every record of every partition of ``topics`` from offset 0 on, until ``stopped()``: what a long run's
    watcher reads. Survives broker restarts: until the broker answers, it retries the assignment every second, and
    errors while reading (end of partition, a broker going away) are skipped."""
    consumer = Consumer({**consumer_config(settings, f"{group}-{uuid.uuid4().hex[:8]}"), "log_level": "0"})
    try:
        assigned = False
        while not stopped():
            if not assigned:
                try:
                    found = consumer.list_topics(timeout=5).topics
                    consumer.assign([TopicPartition(name, partition, 0) for name in topics
                                     for partition in sorted(found[name].partitions)])
                    assigned = True
                except Exception:  # noqa: BLE001 - the broker may be down, or a topic not there yet
                    time.sleep(1)
                    continue
            for message in consumer.consume(500, 0.3):
                if message.error() is None:
                    yield consumed(message)
    finally:
        consumer.close()


def read_outputs(settings: Settings, topics: Iterable[str]) -> list[str]:
    """The simulator output lines (``output_line``) of every record of ``topics``, topic by topic in partition and
    offset order. Kafka's order across topics and partitions is not the simulator's: sort both to compare."""
    return [output_line(record) for name in topics for record in read_topic(settings, name)]
