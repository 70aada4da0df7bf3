"""A daemon thread that reads some topics from their beginning while a long run goes on (the chaos and soak
benchmarks)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Self

from producers.transport.kafka_io import read_from_start
from pubsub_core.stages.edge import ConsumerRecord
from settings.settings import Settings

__all__ = ["TopicFollower"]


class TopicFollower:
    """Reads every partition of ``topics`` from offset 0 (``read_from_start``: it survives broker restarts) on a
    daemon thread and hands each record to ``take`` (subclasses say what to keep)."""

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

    def take(self, record: ConsumerRecord) -> None:
        """One record read (not an error event)."""
        raise NotImplementedError

    def _run(self) -> None:
        for record in read_from_start(self.settings, self.topics, self.name, self._stop.is_set):
            self.take(record)
