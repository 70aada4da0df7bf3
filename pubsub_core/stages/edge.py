"""The records at the Kafka edge: one type for a record going to Kafka, one for a record coming from it, and the
one encoding of an output line as a Kafka record (and back).

Every writer (``pubsub produce``, the live producers, the block author, the job's stages) sends
``ProducerRecord``s and every reader (the job's operators, ``pubsub consume``, the client API, export, verify)
reads ``ConsumerRecord``s. Both are named tuples: the job's stages make tens of thousands per micro-batch.

Wire format of an output record (docs/operations.md): Kafka key = the simulator line's ``key`` (UTF-8), value =
its ``value`` as canonical JSON, header ``id`` = its ``id``; ``output_line`` reads the same line back.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from pubsub_core.relay import canonical_json
from pubsub_core.stages.records import OutputRecord

__all__ = ["ID_HEADER", "ConsumerRecord", "ProducerRecord", "output_line", "to_kafka"]

ID_HEADER = "id"
"""The output records' header carrying the simulator line's id."""


class ProducerRecord(NamedTuple):
    """A record going to Kafka: topic, key (None: a null key), value and headers, as bytes."""

    topic: str
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...] = ()

    def header(self, name: str) -> bytes | None:
        """The first header called ``name``, or None."""
        return next((data for header, data in self.headers if header == name), None)

    @property
    def id(self) -> str | None:
        """The ``id`` header as text, None if absent."""
        return _text(self.header(ID_HEADER))


class ConsumerRecord(NamedTuple):
    """A record coming from Kafka: its place (topic, partition, offset), key and value as bytes (None when null),
    headers and Kafka's timestamp in milliseconds (create or log-append time; None if the broker gave none)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp: int | None = None

    def header(self, name: str) -> bytes | None:
        """The first header called ``name``, or None."""
        return next((data for header, data in self.headers if header == name), None)

    @property
    def key_text(self) -> str | None:
        """The key as text (None for a null key; bytes that are not UTF-8 replaced)."""
        return _text(self.key)

    @property
    def id(self) -> str | None:
        """The ``id`` header as text, None if absent."""
        return _text(self.header(ID_HEADER))

    def parsed_value(self) -> object:
        """The value as parsed JSON, or as text when it is not JSON; None for a null value."""
        return _json_or_text(self.value)

    def to_json(self) -> str:
        """The debugging line (``pubsub consume --raw``): coordinates, key, header id and value."""
        return canonical_json({"topic": self.topic, "partition": self.partition, "offset": self.offset,
                               "key": self.key_text, "id": self.id, "value": self.parsed_value()})


def to_kafka(record: OutputRecord) -> ProducerRecord:
    """An output line as its Kafka record: key as UTF-8, canonical JSON value, header ``id``."""
    return ProducerRecord(record.topic, record.key.encode(), record.value_json().encode(),
                          ((ID_HEADER, record.id.encode()),))


def output_line(record: ConsumerRecord) -> str:
    """The simulator's output line of a record: canonical ``{"id", "key", "topic", "value"}``. A record without
    an ``id`` header gets ``"id": null``; a value that is not JSON is given as text (never an error)."""
    return canonical_json({"id": record.id, "key": record.key_text, "topic": record.topic,
                           "value": record.parsed_value()})


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="replace")


def _json_or_text(data: bytes | None) -> object:
    if data is None:
        return None
    try:
        return json.loads(data)
    except (UnicodeDecodeError, ValueError):
        return data.decode("utf-8", errors="replace")
