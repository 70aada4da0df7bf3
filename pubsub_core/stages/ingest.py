"""The edge where bytes become records: one event-log line routed to its Kafka topic, and one Kafka record
decoded into a stage input. The simulator, ``pubsub produce`` and the Spark job all go through these two
functions, so a line refused here gets the same rejection (same id, reason and detail) wherever it is read.

A line ``{"topic": "<realm>.<stream>", "key": k, "value": v}`` is routed to ``Routed(topic, key, value)``:
the key as UTF-8 text (``str(k)``; none when null), the value as the bytes a Kafka record carries (a string
value as its UTF-8 text, anything else as canonical JSON). ``decode_record`` then reads those bytes exactly
as the job reads them from Kafka.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pubsub_core.relay import canonical_json
from pubsub_core.stages.errors import IngestError
from pubsub_core.stages.records import LogRecord, OutputRecord, SimOutcome, decode_value, split_topic

__all__ = ["LineRouter", "Routed", "decode_record", "ingest_record", "rejection"]


@dataclass(frozen=True, slots=True)
class Routed:
    """An event-log line as the Kafka record it becomes."""

    topic: str
    key: bytes | None
    value: bytes


def _parse(text: str) -> tuple[str, object, object]:
    """The (topic, key, value) of one line; ``IngestError`` (``MalformedJson``) if it is no such object."""
    try:
        entry = json.loads(text)
    except json.JSONDecodeError as exc:
        raise IngestError("MalformedJson", f"not JSON: {exc}", text) from exc
    if not isinstance(entry, dict) or not isinstance(entry.get("topic"), str) or "value" not in entry:
        raise IngestError("MalformedJson", "expected an object with a string topic and a value", text)
    return entry["topic"], entry.get("key"), entry["value"]


def rejection(realm: str, key: str, log_id: str, error: IngestError) -> OutputRecord:
    """The ``rejected`` record of an input refused at the edge."""
    outcome = SimOutcome(None, log_id, "rejected", error.reason, error.detail)
    return OutputRecord(f"{realm}.rejected", key, f"ingest/{log_id}", outcome.to_json())


class LineRouter:
    """Routes event-log lines, numbering each line within its topic (its Kafka offset once produced; lines
    that name no usable topic are numbered within ``?`` or the topic they name)."""

    def __init__(self, default_realm: str) -> None:
        self.default_realm = default_realm
        self.offsets: dict[str, int] = {}

    def _next(self, topic: str) -> int:
        offset = self.offsets.get(topic, 0)
        self.offsets[topic] = offset + 1
        return offset

    def route(self, text: str) -> tuple[Routed, int] | OutputRecord:
        """A non-blank line as (its Kafka record, its offset in that topic), or the rejection in its place."""
        try:
            topic, key, value = _parse(text)
        except IngestError as exc:
            return rejection(self.default_realm, "", f"?@{self._next('?')}", exc)
        key_text = "" if key is None else str(key)
        try:
            split_topic(topic)
        except IngestError as exc:
            return rejection(self.default_realm, key_text, f"{topic}@{self._next(topic)}", exc)
        raw = value if isinstance(value, str) else canonical_json(value)
        return Routed(topic, None if key is None else key_text.encode(), raw.encode()), self._next(topic)


def decode_record(topic: str, key: bytes | None, value: bytes | None, offset: int) -> LogRecord:
    """A Kafka record of an input topic as the stage input it carries; ``IngestError`` if it carries none."""
    realm, stream = split_topic(topic)
    key_text = "" if key is None else key.decode("utf-8", errors="replace")
    if value is None:
        raise IngestError("MalformedRecord", "the record has no value")
    try:
        body = json.loads(value)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IngestError("MalformedRecord", f"the value is not JSON: {exc}", value[:200].decode("utf-8", "replace")) from exc
    return LogRecord(realm, stream, key_text, offset, decode_value(realm, stream, key_text, body))


def ingest_record(topic: str, key: bytes | None, value: bytes | None, offset: int, default_realm: str) -> LogRecord | OutputRecord:
    """``decode_record``, or the rejection that takes the record's place (on its realm's ``rejected`` topic)."""
    try:
        return decode_record(topic, key, value, offset)
    except IngestError as exc:
        realm = topic.rpartition(".")[0] or default_realm
        key_text = "" if key is None else key.decode("utf-8", errors="replace")
        return rejection(realm, key_text, f"{topic}@{offset}", exc)
