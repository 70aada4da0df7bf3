"""The edge where bytes become records: one event-log line routed to its Kafka topic, and one Kafka record
decoded into a stage input. The simulator, ``pubsub produce`` and the Spark job all go through these two
functions, so a line refused here gets the same rejection (same id, reason and detail) wherever it is read.

A line ``{"topic": "<realm>.<stream>", "key": k, "value": v}`` is routed to ``ProducerRecord(topic, key, value)``:
the key as UTF-8 text (none when null), the value as the bytes a Kafka record carries (a string value as its
UTF-8 text, anything else as canonical JSON). ``decode_record`` then reads those bytes exactly as the job
reads them from Kafka.

Whatever the bytes, the outcome is a record or one typed ``IngestError``, never another exception: the work a
line or record can cause is capped before parsing (``max_record_bytes``, by default ``limits.MAX_INPUT_BYTES``,
and a nesting depth found by a scan that does not recurse), and every decoding step turns its failures into a
reason (docs/threat-model.md).
"""

from __future__ import annotations

import json
import re

from pubsub_core.relay import RecordOutcome, Status, canonical_json
from pubsub_core.stages.edge import ProducerRecord
from pubsub_core.stages.errors import IngestError
from pubsub_core.stages.limits import MAX_INPUT_BYTES
from pubsub_core.stages.records import LogRecord, OutputRecord, decode_value, rejection, short, split_topic
from pubsub_core.stages.topics import realm_of

__all__ = [
    "LineParser",
    "MAX_JSON_DEPTH",
    "decode_record",
    "ingest_record",
    "is_blank",
    "refused",
]

MAX_JSON_DEPTH = 32
"""The deepest nesting of arrays and objects a line or a value may have (ours have at most 5)."""

_KAFKA_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
"""A legal Kafka topic name; a line naming anything else is numbered within ``?``."""

_STRING = re.compile(r'"(?:[^"\\]++|\\.?)*+"?', re.S)
"""A JSON string, or an unterminated one up to the end: it always matches, so nothing is scanned twice."""
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_INNERMOST = re.compile(r"\[\]|\{\}")
_OPENINGS = re.compile(r"[\[{]+")


def is_blank(line: str | bytes) -> bool:
    """Whether a line holds only JSON whitespace (skipped, not an input). The same rule for text and bytes, so
    reading a log as text or as bytes sees the same inputs."""
    return not (line.strip(" \t\r\n") if isinstance(line, str) else line.strip(b" \t\r\n"))


def _too_deep(text: str, limit: int) -> bool:
    """Whether arrays and objects nest deeper than ``limit`` outside strings, without recursion (``json.loads``
    recurses) and at C speed (whole strings, then everything but brackets, are removed by regular expressions
    that never rescan; then each pass removes the innermost pairs, one level per pass). For text that is not
    balanced JSON, the levels removed plus the longest run of openings left are counted."""
    if text.count("[") + text.count("{") <= limit:
        return False  # fewer openings than the limit, in strings or not: no nesting can exceed it
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    for level in range(limit + 1):
        if not brackets:
            return False
        reduced = _INNERMOST.sub("", brackets)
        if reduced == brackets:
            return level + max(map(len, _OPENINGS.findall(brackets)), default=0) > limit
        brackets = reduced
    return True


def _text(data: str | bytes, what: str, reason: str, max_bytes: int) -> str:
    """``data`` as text within the size cap: ``RecordTooLarge`` beyond ``max_bytes``, ``reason`` if not UTF-8."""
    if isinstance(data, bytes):
        size = len(data)
    elif len(data) > max_bytes or len(data) * 4 <= max_bytes:
        size = len(data)
    else:
        size = len(data.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise IngestError("RecordTooLarge", f"{what} exceeds the {max_bytes}-byte limit")
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IngestError(reason, f"{what} is not UTF-8: {exc.reason} at byte {exc.start}") from exc


def _json(text: str, what: str, reason: str) -> object:
    """Parse JSON text whose size is already capped: ``reason`` if it nests too deep or does not parse."""
    if _too_deep(text, MAX_JSON_DEPTH):
        raise IngestError(reason, f"{what} nests deeper than {MAX_JSON_DEPTH} levels", text)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, and int() beyond its digit limit
        raise IngestError(reason, f"{what} is not JSON: {exc}", text) from exc


def _utf8(text: str) -> bytes:
    """Text as the bytes a Kafka record carries; a lone surrogate (a ``\\ud800`` escape) stays as it is, so the
    record is refused as not UTF-8 where it is decoded, as it would be in Kafka."""
    return text.encode("utf-8", "surrogatepass")


def refused(realm: str, key: str, log_id: str, error: IngestError) -> OutputRecord:
    """The ``rejected`` record of an input refused at the edge: id ``ingest/<log_id>``, no block."""
    return rejection(realm, key, f"ingest/{log_id}", RecordOutcome(None, log_id, Status.REJECTED, error.reason,
                                                                   error.detail))


class LineParser:
    """Routes event-log lines, numbering each routed line within its topic (its Kafka offset once produced) and
    counting every line of the log (blank ones too) from 1, so that a line it cannot route (not UTF-8 or not JSON,
    no Kafka topic name, a stream we do not read, too large) gets the id ``ingest/line-<n>``: its line number in
    the file, the same in ``pubsub simulate`` and ``pubsub produce`` (both route with this class; the job never
    sees such a line, only the rejection produce sends). The rejection goes to the line's realm when its topic
    names one, else to ``default_realm``.

    ``max_record_bytes`` caps a line before anything parses it (``RecordTooLarge``)."""

    def __init__(self, default_realm: str, max_record_bytes: int = MAX_INPUT_BYTES) -> None:
        self.default_realm = default_realm
        self.max_record_bytes = max_record_bytes
        self.offsets: dict[str, int] = {}
        self.line = 0
        """The number of the last line seen (1 for the first line of the log)."""

    def _next(self, topic: str) -> int:
        offset = self.offsets.get(topic, 0)
        self.offsets[topic] = offset + 1
        return offset

    def _parse(self, line: str | bytes) -> tuple[str, str | None, object]:
        """The (topic, key, value) of one line; ``IngestError`` if it is too large, not UTF-8, too deep, not
        JSON, or not an object with a string topic, a string or null key and a value."""
        text = _text(line, "the line", "MalformedJson", self.max_record_bytes)
        entry = _json(text, "the line", "MalformedJson")
        if not isinstance(entry, dict) or not isinstance(entry.get("topic"), str) or "value" not in entry:
            raise IngestError("MalformedJson", "expected an object with a string topic and a value", text)
        key = entry.get("key")
        if key is not None and not isinstance(key, str):
            raise IngestError("MalformedJson", f"the key is a JSON {type(key).__name__}, not a string or null", text)
        return entry["topic"], key, entry["value"]

    def feed(self, raw: str | bytes) -> tuple[ProducerRecord, int] | OutputRecord | None:
        """The next line of the log as read (its line break, if any, is dropped; so is a UTF-8 byte order mark at
        the start of line 1): None if it is blank, else what ``route`` gives."""
        text = raw.rstrip("\r\n") if isinstance(raw, str) else raw.rstrip(b"\r\n")
        if self.line == 0:
            text = text.removeprefix("\ufeff") if isinstance(text, str) else text.removeprefix(_BOM)
        if is_blank(text):
            self.line += 1
            return None
        return self.route(text)

    def route(self, text: str | bytes) -> tuple[ProducerRecord, int] | OutputRecord:
        """The next line, not blank, as (its Kafka record, its offset in that topic), or the rejection in its
        place."""
        self.line += 1
        try:
            topic, key, value = self._parse(text)
        except IngestError as exc:
            return self._refuse(self.default_realm, "", exc)
        key_text = "" if key is None else key
        if not _KAFKA_TOPIC.fullmatch(topic):
            error = IngestError("UnknownTopic", f"{short(topic, 80)!r} is not a Kafka topic name", topic)
            return self._refuse(self.default_realm, key_text, error)
        try:
            split_topic(topic)
        except IngestError as exc:
            realm = realm_of(topic)
            return self._refuse(realm if realm and _KAFKA_TOPIC.fullmatch(realm + _LONGEST_SUFFIX) else
                                self.default_realm, key_text, exc)
        raw = value if isinstance(value, str) else canonical_json(value)
        return ProducerRecord(topic, None if key is None else _utf8(key_text), _utf8(raw)), self._next(topic)

    def _refuse(self, realm: str, key: str, error: IngestError) -> OutputRecord:
        return refused(realm, key, f"line-{self.line}", error)


_BOM = b"\xef\xbb\xbf"
"""UTF-8's byte order mark, which some editors put at the start of a file."""
_LONGEST_SUFFIX = ".relay-views"
"""The longest suffix of a realm's topics: a realm is usable for a rejection if its topics are all legal names."""


def decode_record(topic: str, key: bytes | None, value: bytes | None, offset: int, *,
                  max_record_bytes: int = MAX_INPUT_BYTES) -> LogRecord:
    """A Kafka record of an input topic as the stage input it carries; ``IngestError`` if it carries none
    (whatever the bytes: ``max_record_bytes`` caps the value before it is parsed)."""
    realm, stream = split_topic(topic)
    if value is None:
        raise IngestError("MalformedRecord", "the record has no value")
    text = _text(value, "the value", "MalformedRecord", max_record_bytes)
    key_text = "" if key is None else _text(key, "the key", "MalformedRecord", max_record_bytes)
    body = _json(text, "the value", "MalformedRecord")
    return LogRecord(realm, stream, key_text, offset, decode_value(realm, stream, key_text, body))


def ingest_record(topic: str, key: bytes | None, value: bytes | None, offset: int, default_realm: str, *,
                  max_record_bytes: int = MAX_INPUT_BYTES) -> LogRecord | OutputRecord:
    """``decode_record``, or the rejection that takes the record's place (on its realm's ``rejected`` topic)."""
    try:
        return decode_record(topic, key, value, offset, max_record_bytes=max_record_bytes)
    except IngestError as exc:
        realm = realm_of(topic) or default_realm
        key_text = "" if key is None else key.decode("utf-8", errors="replace")
        return refused(realm, key_text, f"{topic}@{offset}", exc)
