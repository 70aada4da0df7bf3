"""The newest facts of a realm read from the tails of its topics: the author's height (``<realm>.blocks``), the
relay's (``<realm>.seals``) and each subscriber's latest PoV metering (``<realm>.pov``).

Reads only the last ``TAIL`` records of each partition, so its cost does not grow with the realm's age. The job's
metrics follow the tails as they grow (``RealmWatch.poll`` in a thread); ``pubsub status`` reads them once
(``read_tails``). Records that are not the expected JSON are skipped: anyone may write to a topic, and a gauge
only reports what the genuine records say (the job's outputs are its own). Imports nothing from ``streaming/``
(the ``Settings`` protocol of ``producers.transport.topics`` is all it needs).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from producers.errors import ProducerError
from producers.transport.topics import Settings, consumer_config
from pubsub_core.stages.topics import topic

__all__ = ["TAIL", "PovUse", "RealmFacts", "RealmWatch", "TailReadError", "read_tails"]

TAIL = 256
"""Records read back from each partition's end at start: more than the subscribers one ``pov`` partition holds, so
every subscriber's latest metering is among them."""

WATCHED = ("blocks", "seals", "pov")


class TailReadError(ProducerError):
    """The tails of some topics could not be read (Kafka unreachable or refusing); carries the topics and Kafka's
    reason."""

    def __init__(self, topics: Sequence[str], reason: str) -> None:
        super().__init__(f"cannot read the tails of {', '.join(topics)}: {reason}")
        self.topics = tuple(topics)
        self.reason = reason


@dataclass(frozen=True)
class PovUse:
    """A subscriber's PoV metering in its newest block: proof bytes used against its pub-sub budget."""

    block: int
    used: int
    budget: int


@dataclass
class RealmFacts:
    """What the tails of one realm's topics say now."""

    author_height: int | None = None
    relay_height: int | None = None
    pov: dict[int, PovUse] = field(default_factory=dict)
    """Subscriber para id -> its newest metering."""

    def take(self, kind: str, value: bytes | None) -> None:
        """One record of ``<realm>.<kind>``; not the expected JSON: skipped."""
        try:
            body = json.loads(value or b"")
            if kind == "blocks":
                number = int(body["position"]) + 1  # the author writes block n at position n - 1
                self.author_height = max(self.author_height or 0, number)
            elif kind == "seals":
                self.relay_height = max(self.relay_height or 0, int(body["number"]))
            elif kind == "pov":
                use = PovUse(int(body["relay_block_number"]), int(body["consumed_proof_size"]),
                             int(body["budget"]["pubsub"]))
                subscriber = int(body["subscriber"])
                if subscriber not in self.pov or self.pov[subscriber].block <= use.block:
                    self.pov[subscriber] = use
        except (ValueError, KeyError, TypeError, AttributeError):
            return

    @property
    def blocks_waiting(self) -> int | None:
        """Blocks the author wrote that the relay has not sealed yet (unread, or waiting for their records)."""
        if self.author_height is None:
            return None
        return max(0, self.author_height - (self.relay_height or 0))


class RealmWatch:
    """A consumer over the tails of some realms' ``WATCHED`` topics; ``poll`` folds what arrived into ``facts``."""

    def __init__(self, settings: Settings, realms: Iterable[str]) -> None:
        self.settings = settings
        self.realms = sorted(set(realms))
        self.facts: dict[str, RealmFacts] = {realm: RealmFacts() for realm in self.realms}
        config = consumer_config(settings, f"pubsub-watch-{uuid.uuid4().hex[:8]}")
        self.consumer = Consumer({**config, "isolation.level": "read_committed", "log_level": "0"})
        self.ends: dict[tuple[str, int], int] = {}
        """The end offset of each partition when the watch started (what ``caught_up`` waits for)."""
        self._assign()

    def _assign(self) -> None:
        names = [topic(realm, kind) for realm in self.realms for kind in WATCHED]
        found = self.consumer.list_topics(timeout=10).topics
        assignment = []
        for name in names:
            if name not in found or found[name].error is not None:
                continue
            for partition in sorted(found[name].partitions):
                low, high = self.consumer.get_watermark_offsets(TopicPartition(name, partition), timeout=10)
                self.ends[(name, partition)] = high
                assignment.append(TopicPartition(name, partition, max(low, high - TAIL)))
        self.consumer.assign(assignment)
        self._open = {key for key, high in self.ends.items() if high > 0}

    def poll(self, seconds: float) -> int:
        """Read what arrives within ``seconds``; returns the records taken."""
        taken = 0
        for message in self.consumer.consume(1000, seconds):
            taken += self._take(message)
        return taken

    def _take(self, message: Message) -> int:
        name, partition, offset = message.topic(), message.partition(), message.offset()
        error = message.error()
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF and name is not None:
                self._open.discard((name, partition or 0))
            return 0
        if name is None:
            return 0
        if offset is not None and offset + 1 >= self.ends.get((name, partition or 0), 0):
            self._open.discard((name, partition or 0))
        realm, _, kind = name.rpartition(".")
        if realm in self.facts:
            self.facts[realm].take(kind, message.value())
        return 1

    @property
    def caught_up(self) -> bool:
        """Whether every partition has been read to where it ended when the watch started."""
        return not self._open

    def close(self) -> None:
        self.consumer.close()


def read_tails(settings: Settings, realms: Iterable[str], timeout: float = 10.0) -> dict[str, RealmFacts]:
    """Each realm's facts as its topics' tails say them now (one read, up to ``timeout`` seconds); ``TailReadError``
    if Kafka cannot be read."""
    realms = sorted(set(realms))
    try:
        watch = RealmWatch(settings, realms)
    except KafkaException as exc:
        raise TailReadError([topic(realm, kind) for realm in realms for kind in WATCHED], str(exc)) from exc
    try:
        deadline = time.monotonic() + timeout
        while not watch.caught_up and time.monotonic() < deadline:
            watch.poll(0.2)
        return watch.facts
    finally:
        watch.close()
