"""The walking skeleton's per-key logic: a running count and a digest chain per key, one output per input.

`fold` is plain Python (testable without a Spark session); `SkeletonProcessor` runs it inside transformWithState with the
key's state behind the `state/` interface (SparkStateBackend: one MapState page read and one write per key per
micro-batch). Later issues replace this module with the relay and subscriber stages.

Output records are deterministic: the id is the input's coordinates ("topic:partition:offset") and the value is
canonical JSON of the input and the state it led to, so a record re-emitted after a restart is byte-identical.
Bad input (no key, a value that is not a JSON object) becomes a record on the rejected topic and leaves the
state unchanged; it never stops the job.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Row
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

from pubsub_core.errors import PubSubError
from state.spark import PAGE_KEY_SCHEMA, PAGE_VALUE_SCHEMA, PAGES_STATE_NAME, SparkStateBackend
from state.transaction import StateTransaction

__all__ = [
    "COUNTER_NAMESPACE",
    "CounterState",
    "InputRecord",
    "OUTPUT_SCHEMA",
    "OutputRecord",
    "RejectedInputError",
    "SkeletonProcessor",
    "canonical_json",
    "fold",
]

COUNTER_NAMESPACE = "skeleton.counter"
OUTPUT_SCHEMA = "topic string, key string, value string"
_STATE = struct.Struct(">Q32s")
_GENESIS = bytes(32)


class RejectedInputError(PubSubError):
    """An input record the skeleton cannot use; carries its coordinates and the reason."""

    def __init__(self, record: InputRecord, reason: str) -> None:
        super().__init__(f"input {record.record_id} rejected: {reason}")
        self.record = record
        self.reason = reason


@dataclass(frozen=True)
class InputRecord:
    """One Kafka record as the job sees it."""

    topic: str
    partition: int
    offset: int
    key: str | None
    value: bytes | None

    @property
    def record_id(self) -> str:
        return f"{self.topic}:{self.partition}:{self.offset}"

    def payload(self) -> dict[str, Any]:
        """The value as a JSON object, or RejectedInputError."""
        if self.key is None or self.key == "":
            raise RejectedInputError(self, "the record has no key")
        try:
            decoded = json.loads(self.value or b"")
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RejectedInputError(self, f"the value is not JSON ({exc.__class__.__name__})") from exc
        if not isinstance(decoded, dict):
            raise RejectedInputError(self, f"the value is a JSON {type(decoded).__name__}, not an object")
        return decoded


@dataclass(frozen=True)
class CounterState:
    """Per key: how many records were applied, and a SHA-256 chain over their canonical payloads."""

    count: int = 0
    digest: bytes = _GENESIS

    def encode(self) -> bytes:
        return _STATE.pack(self.count, self.digest)

    @classmethod
    def decode(cls, data: bytes | None) -> CounterState:
        if not data:
            return cls()
        count, digest = _STATE.unpack(data)
        return cls(count, digest)


@dataclass(frozen=True)
class OutputRecord:
    """One record for the Kafka sink (topic column routes it to the output or the rejected topic)."""

    topic: str
    key: str
    value: str


def canonical_json(obj: object) -> str:
    """Sorted keys, no spaces, ASCII: the same object always gives the same bytes."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def fold(
    state: CounterState, records: Iterable[InputRecord], output_topic: str, rejected_topic: str
) -> tuple[CounterState, list[OutputRecord]]:
    """Apply records in (topic, partition, offset) order; return the new state and one output per input."""
    outputs: list[OutputRecord] = []
    for record in sorted(records, key=lambda r: (r.topic, r.partition, r.offset)):
        try:
            payload = record.payload()
        except RejectedInputError as err:
            body = {"id": record.record_id, "error": type(err).__name__, "reason": err.reason, "key": record.key}
            outputs.append(OutputRecord(rejected_topic, record.key or "", canonical_json(body)))
            continue
        digest = hashlib.sha256(state.digest + canonical_json(payload).encode()).digest()
        state = CounterState(state.count + 1, digest)
        body = {
            "id": record.record_id,
            "key": record.key,
            "seq": state.count,
            "digest": digest.hex(),
            "input": {"partition": record.partition, "offset": record.offset, "payload": payload},
        }
        outputs.append(OutputRecord(output_topic, record.key or "", canonical_json(body)))
    return state, outputs


class SkeletonProcessor(StatefulProcessor):  # type: ignore[misc]
    """transformWithState processor: the key's state through the state/ interface, rows sorted before folding."""

    def __init__(self, output_topic: str, rejected_topic: str) -> None:
        self.output_topic = output_topic
        self.rejected_topic = rejected_topic

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.pages = handle.getMapState(PAGES_STATE_NAME, PAGE_KEY_SCHEMA, PAGE_VALUE_SCHEMA)

    def handleInputRows(self, key: Any, rows: Iterator[Row], timerValues: Any) -> Iterator[Row]:
        records = [
            InputRecord(row.topic, row.partition, row.offset, row.key, None if row.value is None else bytes(row.value))
            for row in rows
        ]
        txn = StateTransaction(SparkStateBackend(self.pages))
        before = CounterState.decode(txn.get_value(COUNTER_NAMESPACE))
        after, outputs = fold(before, records, self.output_topic, self.rejected_topic)
        if after != before:
            txn.set_value(COUNTER_NAMESPACE, after.encode())
        txn.commit()
        for out in outputs:
            yield Row(topic=out.topic, key=out.key, value=out.value)

    def close(self) -> None:
        """Nothing to release: the state handle belongs to Spark."""
