"""The event-log producer (``pubsub produce``): routed lines of an event log as the Kafka records to send, each
realm's topics created on first sight, and a rejection record in place of what cannot be sent."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from producers.transport.kafka_io import TOO_LARGE, KafkaIOError, SendReport, produce
from producers.transport.topics import ensure_realm_topics, realm_is_valid, record_fits
from pubsub_core.stages import IngestError, OutputRecord
from pubsub_core.stages.edge import ProducerRecord, to_kafka
from pubsub_core.stages.ingest import refused
from pubsub_core.stages.topics import realm_of
from settings.settings import Settings

__all__ = ["INVALID_TOPIC", "EventLogSender", "Tally"]

INVALID_TOPIC = "InvalidTopicName"
"""Rejection reason of a line whose realm cannot name Kafka topics."""


@dataclass
class Tally:
    """Records sent per topic and refusals per reason, for the summary."""

    topics: Counter[str] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)


class EventLogSender:
    """Turns routed lines into Kafka records: creates each realm's topics on first sight, checks each record
    against its topic's size limit, and replaces what cannot be sent with its rejection record."""

    def __init__(self, settings: Settings, realm: str, max_message_bytes: int) -> None:
        self.settings = settings
        self.realm = realm
        self.max_message_bytes = max_message_bytes
        self.limits: dict[str, int] = {}
        self.realms: set[str] = set()
        self.origins: dict[int, tuple[str, int]] = {}
        """Index in the sent sequence -> (topic, offset) of each routed record, to name a late refusal."""
        self.tally = Tally()

    def records(self, routed: Iterable[tuple[ProducerRecord, int] | OutputRecord]) -> Iterator[ProducerRecord]:
        """The records to send, in line order."""
        index = 0
        for item in routed:
            if isinstance(item, OutputRecord):
                record = self.refuse(item)
            else:
                record, offset = item
                realm = realm_of(record.topic)
                if not realm_is_valid(realm):
                    error = IngestError(INVALID_TOPIC, f"{realm!r} cannot name Kafka topics ([A-Za-z0-9._-], <= 249)")
                    record = self.refuse(self.rejection(self.realm, record, offset, error))
                else:
                    self.ensure(realm)
                    limit = min(self.limits[record.topic], self.max_message_bytes)
                    if record_fits(record.key, record.value, record.headers, limit):
                        self.origins[index] = (record.topic, offset)
                    else:
                        size = len(record.key or b"") + len(record.value)
                        error = IngestError(TOO_LARGE, f"{size} bytes over the topic's limit of {limit} bytes")
                        record = self.refuse(self.rejection(realm, record, offset, error))
            index += 1
            yield record

    def refuse(self, rejected: OutputRecord) -> ProducerRecord:
        """A rejection as the record to send, counted by reason."""
        self.ensure(realm_of(rejected.topic))
        self.tally.refusals[str(rejected.value["reason"])] += 1
        return to_kafka(rejected)

    def ensure(self, realm: str) -> None:
        if realm not in self.realms:
            partitions = self.settings.views_partitions
            self.limits |= ensure_realm_topics(
                self.settings, realm, partitions=partitions, max_message_bytes=self.max_message_bytes
            )
            self.realms.add(realm)

    def settle(self, report: SendReport) -> None:
        """Counts what ``send`` delivered, and sends the rejection record of each routed record Kafka itself refused
        despite the size check (e.g. a lower broker limit)."""
        self.tally.topics.update(report.delivered)
        late = []
        for refusal in report.refused:
            origin = self.origins.get(refusal.index)
            if origin is None:  # a rejection record itself was refused: nowhere left to put it
                raise KafkaIOError(refusal.record.topic, f"a rejection record was refused: {refusal.detail}")
            topic, offset = origin
            error = IngestError(refusal.reason, refusal.detail)
            late.append(self.refuse(self.rejection(realm_of(topic), refusal.record, offset, error)))
        if late:
            produce(self.settings, late)
            self.tally.topics.update(record.topic for record in late)

    @staticmethod
    def rejection(realm: str, record: ProducerRecord, offset: int, error: IngestError) -> OutputRecord:
        key = (record.key or b"").decode("utf-8", errors="replace")
        return refused(realm, key, f"{record.topic}@{offset}", error)
