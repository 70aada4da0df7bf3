"""Following a realm's updates as they arrive (``pubsub consume --follow``), each one once.

The job's output is at-least-once: after a restart a micro-batch may be written again, byte-identical, so the
same update (same ``id`` header) can sit on ``<realm>.updates`` twice. ``follow`` drops a record whose id it has
seen among the last ``SEEN_WINDOW`` ids (``SeenWindow``, oldest forgotten first). A duplicate is written within
the micro-batch that is replayed, so it comes far fewer than 100,000 updates after its first copy; the window
costs a few MB at most.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import Enum

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaError, KafkaException, TopicPartition

from producers.transport.kafka_io import KafkaIOError, consumed
from producers.transport.topics import Settings, consumer_config, with_logger
from pubsub_core.stages.edge import ID_HEADER, ConsumerRecord

__all__ = ["SEEN_WINDOW", "FollowStats", "SeenWindow", "Start", "follow", "short_hex", "short_value", "update_row"]

SEEN_WINDOW = 100_000
"""How many update ids ``follow`` remembers to drop duplicates."""
_POLL_SECONDS = 0.25
_METADATA_SECONDS = 1.0
"""How long one metadata request may wait: a follower with ``stop`` set (``idle_seconds``) ends within about this."""
_UNREACHABLE = (KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError._ALL_BROKERS_DOWN)
"""The metadata errors of a broker that does not answer (yet): the follower keeps asking until stopped."""


class SeenWindow:
    """The last ``capacity`` ids seen, in arrival order; the oldest is forgotten when a new one comes."""

    def __init__(self, capacity: int = SEEN_WINDOW) -> None:
        if capacity < 1:
            raise ValueError("a seen-window holds at least one id")
        self.capacity = capacity
        self._ids: OrderedDict[bytes, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, record_id: bytes) -> bool:
        """Remember ``record_id``; True if it was not among the remembered ids (a first copy)."""
        if record_id in self._ids:
            return False
        self._ids[record_id] = None
        if len(self._ids) > self.capacity:
            self._ids.popitem(last=False)
        return True


class Start(Enum):
    """Where following starts: every record the topic holds, or only those written from now on."""

    BEGINNING = "beginning"
    NOW = "now"


@dataclass
class FollowStats:
    """What ``follow`` did so far: records shown (yielded) and duplicates dropped."""

    shown: int = 0
    duplicates: int = 0


def follow(
    settings: Settings,
    topic: str,
    stop: threading.Event,
    *,
    start: Start = Start.BEGINNING,
    key: str | None = None,
    stats: FollowStats | None = None,
    seen: SeenWindow | None = None,
    on_waiting: Callable[[str], None] | None = None,
) -> Iterator[ConsumerRecord]:
    """Yield the records of ``topic`` (every partition) as they arrive until ``stop`` is set, skipping those
    whose ``id`` header was seen already and, with ``key``, those with another key. Waits for the topic to
    exist (calling ``on_waiting(topic)`` once if it does not yet). Records without an ``id`` header are all
    shown. Kafka errors raise ``KafkaIOError``."""
    tally = stats if stats is not None else FollowStats()
    window = seen if seen is not None else SeenWindow()
    consumer = Consumer(with_logger(consumer_config(settings, f"pubsub-follow-{uuid.uuid4().hex[:8]}")))
    try:
        partitions = _await_partitions(consumer, topic, stop, on_waiting)
        offset = OFFSET_BEGINNING if start is Start.BEGINNING else OFFSET_END
        consumer.assign([TopicPartition(topic, p, offset) for p in partitions])
        while not stop.is_set():
            msg = consumer.poll(_POLL_SECONDS)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaIOError(topic, error.str())
            record = consumed(msg)
            if key is not None and record.key != key.encode():
                continue
            record_id = record.header(ID_HEADER)
            if record_id is not None and not window.add(record_id):
                tally.duplicates += 1
                continue
            tally.shown += 1
            yield record
    except KafkaException as exc:
        raise KafkaIOError(topic, str(exc)) from exc
    finally:
        consumer.close()


def _await_partitions(
    consumer: Consumer, topic: str, stop: threading.Event, on_waiting: Callable[[str], None] | None
) -> list[int]:
    """The topic's partitions once it exists (the job creates output topics when it starts). Kafka is asked at
    most ``_METADATA_SECONDS`` at a time, so that ``stop`` is seen; if it is set before Kafka ever answered,
    ``KafkaIOError`` says so (a follower with no broker ends when asked to, with the reason, and prints nothing)."""
    waiting = False
    unanswered: str | None = None
    while not stop.is_set():
        try:
            metadata = consumer.list_topics(topic, timeout=_METADATA_SECONDS).topics.get(topic)
        except KafkaException as exc:
            first = exc.args[0] if exc.args else None
            if not isinstance(first, KafkaError) or first.code() not in _UNREACHABLE:
                raise
            unanswered = first.str()
            continue
        unanswered = None
        if metadata is not None and metadata.error is None and metadata.partitions:
            return sorted(metadata.partitions)
        if not waiting and on_waiting is not None:
            on_waiting(topic)
        waiting = True
        stop.wait(1.0)
    if unanswered is not None:
        raise KafkaIOError(topic, f"Kafka did not answer ({unanswered})")
    return []


def short_hex(text: str, digits: int = 8) -> str:
    """``"d4bd7bc16ef2..."`` (or ``"0xd4bd..."``) -> ``"d4bd7bc1…"``: the first ``digits`` hex digits (all of
    them if that short)."""
    text = text.removeprefix("0x")
    return text if len(text) <= digits + 1 else text[:digits] + "…"


def short_value(hex_value: str, limit: int = 24) -> str:
    """A published value (hex, with or without ``0x``) as something to read: printable ASCII in quotes, else short hex with its length;
    ``-`` when empty (a deletion or expiry)."""
    try:
        data = bytes.fromhex(hex_value.removeprefix("0x"))
    except ValueError:
        return short_hex(hex_value, limit)
    if not data:
        return "-"
    if all(32 <= b < 127 for b in data):
        text = data.decode("ascii")
        return repr(text if len(text) <= limit else text[:limit] + "…")
    return f"{short_hex(data.hex(), 16)} ({len(data)} B)"


def update_row(value: Mapping[str, object]) -> tuple[str, str, str, str, str, str]:
    """An ``Update``'s JSON as a table row: subscriber, relay block, publisher, key (short hex), value, kind."""
    return (str(value.get("subscriber", "?")), str(value.get("relay_block_number", "?")),
            str(value.get("publisher", "?")), short_hex(str(value.get("key", ""))),
            short_value(str(value.get("value", ""))), str(value.get("kind", "?")))

