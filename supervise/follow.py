"""A daemon thread that reads some topics from their beginning while a long run goes on (the chaos and soak
benchmarks)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Sequence
from typing import Self

from confluent_kafka import Consumer, TopicPartition

from producers.kafka_io import ConsumedRecord, consumed
from producers.topics import consumer_config
from streaming.settings import Settings

__all__ = ["TopicFollower"]


class TopicFollower:
    """Reads every partition of ``topics`` from offset 0 and hands each record to ``take`` (subclasses say what
    to keep). Survives broker restarts: until the broker answers, it retries the assignment every second, and
    errors while reading (end of partition, a broker going away) are skipped."""

    def __init__(self, settings: Settings, topics: Sequence[str], name: str) -> None:
        self.settings = settings
        self.topics = list(topics)
        self.name = name
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=name)

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(15)

    def take(self, record: ConsumedRecord) -> None:
        """One record read (not an error event)."""
        raise NotImplementedError

    def _run(self) -> None:
        config = consumer_config(self.settings, f"{self.name}-{uuid.uuid4().hex[:8]}")
        consumer = Consumer({**config, "log_level": "0"})
        try:
            assigned = False
            while not self._stop.is_set():
                if not assigned:
                    try:
                        found = consumer.list_topics(timeout=5).topics
                        consumer.assign([TopicPartition(name, partition, 0) for name in self.topics
                                         for partition in sorted(found[name].partitions)])
                        assigned = True
                    except Exception:  # noqa: BLE001 - the broker may be down, or a topic not there yet
                        time.sleep(1)
                        continue
                for message in consumer.consume(500, 0.3):
                    if message.error() is None:
                        self.take(consumed(message))
        finally:
            consumer.close()
