"""The simulator's records: event-log input lines, the Stage R -> Stage S relay view, and output lines.

An event-log line is ``{"topic": "<realm>.<stream>", "key": ..., "value": ...}``; an output line is
``{"topic": "<realm>.<kind>", "key": ..., "id": ..., "value": ...}`` in canonical JSON (sorted keys, no
spaces), so two runs compare byte for byte. docs/simulator.md lists every topic and value schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pubsub_core.codec.hexjson import hex_0x, unhex_0x
from pubsub_core.envelope import KeyRegistry
from pubsub_core.envelope.keys import hex32, para_id
from pubsub_core.hashing import blake2_256
from pubsub_core.relay import ForwardedCall, Genesis, InputRecord, RecordOutcome, canonical_json
from pubsub_core.stages.errors import IngestError, StageError
from pubsub_core.stages.topics import kind_of, realm_of, topic

__all__ = [
    "DETAIL_LIMIT",
    "GenesisRecord",
    "INPUT_STREAMS",
    "JsonText",
    "LogRecord",
    "MalformedViewError",
    "OutputRecord",
    "RelayView",
    "SubscriberCallFailed",
    "decode_value",
    "rejection",
    "short",
    "split_topic",
]

INPUT_STREAMS = ("upward", "horizontal", "extrinsics")
"""Streams carrying ``InputRecord`` values; ``blocks`` carries headers and ``genesis`` the realm's set-up."""

_STREAMS = (*INPUT_STREAMS, "blocks", "genesis")

DETAIL_LIMIT = 200
"""A rejection's detail (and key) is cut to this many characters: never the whole payload."""


@dataclass(frozen=True, slots=True)
class GenesisRecord:
    """A realm's set-up (topic ``<realm>.genesis``): who may sign for whom, balances and para managers."""

    registry: KeyRegistry
    genesis: Genesis

    def to_json(self) -> dict[str, object]:
        return {"registry": self.registry.to_json(), **self.genesis.to_json()}

    def digest(self) -> bytes:
        """Blake2-256 of the record's canonical JSON: what the ``trusted_genesis`` setting pins."""
        return blake2_256(canonical_json(self.to_json()).encode())

    @classmethod
    def from_json(cls, body: object) -> GenesisRecord:
        """Strict: a registry (``KeyRegistry.from_json``), endowments ``{"0x<account>": u128}`` and para
        managers ``{"<para u32>": "0x<account>"}``, nothing else; ``ValueError`` otherwise (never another
        exception, whatever the JSON)."""
        if not isinstance(body, dict):
            raise ValueError("a genesis value is a JSON object")
        unknown = sorted(set(body) - {"registry", "endowments", "para_managers"})
        if unknown:
            raise ValueError(f"unknown genesis fields {unknown[:3]}")
        endowments, managers = body.get("endowments", {}), body.get("para_managers", {})
        if not isinstance(endowments, dict) or not isinstance(managers, dict):
            raise ValueError("endowments and para_managers are JSON objects")
        for amount in endowments.values():
            if type(amount) is not int or not 0 <= amount < 1 << 128:
                raise ValueError(f"an endowment is an integer in [0, 2^128), got {str(amount)[:40]}")
        genesis = Genesis(tuple((hex32(account), amount) for account, amount in endowments.items()),
                          tuple((para_id(para), hex32(manager)) for para, manager in managers.items()))
        return cls(KeyRegistry.from_json(body.get("registry", {})), genesis)


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One parsed event-log line: realm, stream, key, ``offset`` (its index among its topic's lines) and the
    decoded value: an ``InputRecord`` (``blocks`` too: a signed header) or a ``GenesisRecord``."""

    realm: str
    stream: str
    key: str
    offset: int
    value: InputRecord | GenesisRecord

    @property
    def topic(self) -> str:
        return f"{self.realm}.{self.stream}"

    @property
    def log_id(self) -> str:
        """``<topic>@<offset>``: the line's place in its topic, stable when topics are interleaved differently."""
        return f"{self.topic}@{self.offset}"


def split_topic(topic: str) -> tuple[str, str]:
    """``"polkadot.upward"`` -> ``("polkadot", "upward")``; ``IngestError`` for a topic we do not read."""
    realm, stream = realm_of(topic), kind_of(topic)
    if not realm or stream not in _STREAMS:
        raise IngestError("UnknownTopic", f"{topic!r} is not <realm>.<{'|'.join(_STREAMS)}>", topic)
    return realm, stream


_RECORD_FIELDS = {"stream": str, "origin": str, "position": int, "value": str}


def _input_record(body: object) -> InputRecord:
    """An ``InputRecord`` from its JSON, strictly: exactly its four fields, strings where strings belong, and a
    position that is an integer (not a boolean, a float or a string) in [0, 2^64); ``ValueError`` otherwise."""
    if not isinstance(body, dict):
        raise ValueError(f"expected a JSON object, got {type(body).__name__}")
    if set(body) != set(_RECORD_FIELDS):
        raise ValueError(f"expected the fields {sorted(_RECORD_FIELDS)}, got {sorted(body)[:6]}")
    for name, kind in _RECORD_FIELDS.items():
        if type(body[name]) is not kind:
            raise ValueError(f"{name} must be a JSON {'integer' if kind is int else 'string'}")
    if not 0 <= body["position"] < 1 << 64:
        raise ValueError(f"position {str(body['position'])[:40]} is not a u64")
    return InputRecord(body["stream"], body["origin"], body["position"], unhex_0x(body["value"]))


def decode_value(realm: str, stream: str, key: str, value: object) -> InputRecord | GenesisRecord:
    """Decode a value of ``stream``; ``IngestError`` (``MalformedRecord`` or ``KeyMismatch``) if it is not one,
    whatever the JSON (wrong types, huge, negative or fractional numbers, bad hex)."""
    try:
        decoded: InputRecord | GenesisRecord
        if stream == "genesis":
            decoded = GenesisRecord.from_json(value)
        else:
            decoded = _input_record(value)
    except ValueError as exc:
        raise IngestError("MalformedRecord", f"not a {stream} value: {exc}") from exc
    if isinstance(decoded, InputRecord) and (decoded.stream != stream or decoded.origin != key):
        raise IngestError("KeyMismatch", f"record {decoded.record_id} on topic {realm}.{stream} with key {key!r}")
    return decoded


@dataclass(frozen=True, slots=True)
class SubscriberCallFailed:
    """A forwarded subscriber call that did not apply (the ``ExtrinsicFailed`` analogue): the relay included it
    (its record outcome is ``applied``); the subscriber side refused it with ``reason``."""

    block: int
    record: str
    subscriber: int | None
    reason: str
    detail: str

    @property
    def id(self) -> str:
        return f"call/{self.record}"

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "kind": "CallFailed", "block": self.block, "record": self.record,
                "subscriber": self.subscriber, "reason": self.reason, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class RelayView:
    """Stage R -> Stage S, one per subscriber per relay block (the ``relay-proofs`` record, key: subscriber).

    ``nodes`` prove, against ``relay_root``, every key the subscriber had declared before this block (main-trie
    paths to its publishers' child roots and child-trie paths to its keys); the subscriber's collator prunes
    them. ``dmq_sizes`` / ``hrmp_sizes`` are its pending inbound message sizes in into_abridged order;
    ``calls`` the subscriber calls this block included, applied after the proof. ``previous`` is the number
    of the block of this subscriber's previous view (None for its first), so Stage S can apply views in order
    and recognise a replay whatever the seam delivers.

    ``full`` says what ``nodes`` hold. True: all of P_n, the proof of every declared key against
    ``relay_root`` (a subscriber's first view, and every view under ``seam: "full"``, the checking mode).
    False: a delta, the nodes of P_n that were not in the subscriber's previous view's P_{n-1}, sorted; Stage S
    keeps the rest in its mirror of relay nodes (invariant: after view n, the mirror contains P_n).
    """

    realm: str
    subscriber: int
    number: int
    hash: bytes
    relay_root: bytes
    max_pov_size: int
    dmq_sizes: tuple[int, ...]
    hrmp_sizes: tuple[int, ...]
    nodes: tuple[bytes, ...]
    calls: tuple[ForwardedCall, ...]
    previous: int | None = None
    full: bool = True

    def to_json(self) -> dict[str, object]:
        return {
            "previous": self.previous,
            "full": self.full,
            "realm": self.realm,
            "subscriber": self.subscriber,
            "number": self.number,
            "hash": hex_0x(self.hash),
            "relay_root": hex_0x(self.relay_root),
            "max_pov_size": self.max_pov_size,
            "dmq_sizes": list(self.dmq_sizes),
            "hrmp_sizes": list(self.hrmp_sizes),
            "nodes": [hex_0x(n) for n in self.nodes],
            "calls": [c.to_json() for c in self.calls],
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> RelayView:
        """The view of ``to_json``; ``MalformedViewError`` (a ``ValueError``) for a missing field (``full``
        included: a reader must never take a delta for a full proof) or a value of the wrong kind."""
        full = body.get("full") if isinstance(body, Mapping) else None
        if type(full) is not bool:
            raise MalformedViewError(f"a relay view's 'full' is a JSON boolean, got {str(full)[:40]}")
        try:
            return cls(
                str(body["realm"]), int(body["subscriber"]), int(body["number"]), unhex_0x(body["hash"]),
                unhex_0x(body["relay_root"]), int(body["max_pov_size"]), tuple(int(s) for s in body["dmq_sizes"]),
                tuple(int(s) for s in body["hrmp_sizes"]), tuple(unhex_0x(n) for n in body["nodes"]),
                tuple(ForwardedCall.from_json(c) for c in body["calls"]),
                None if body.get("previous") is None else int(body["previous"]),
                full,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise MalformedViewError(f"not a relay view: {type(exc).__name__}: {exc}") from exc


class MalformedViewError(StageError, ValueError):
    """A relay view whose JSON lacks a field or holds a value of the wrong kind (a ``ValueError`` too, so
    readers that refuse malformed seam records with ``ValueError`` keep doing so)."""


@dataclass(frozen=True, slots=True)
class OutputRecord:
    """One output line: topic ``<realm>.<kind>``, key, deterministic id, and the record's JSON value.

    A value given as ``JsonText`` (Stage R's events, whose JSON exists as text before any output is built) is
    written out as that text: lines and Kafka values do not encode it again."""

    topic: str
    key: str
    id: str
    value: Mapping[str, Any]

    # Explicit, not generated: compiled (setup.py), it is native code; the dataclass's own stays interpreted.
    def __init__(self, topic: str, key: str, id: str, value: Mapping[str, Any]) -> None:
        object.__setattr__(self, "topic", topic)
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "value", value)

    def to_json(self) -> dict[str, object]:
        return {"topic": self.topic, "key": self.key, "id": self.id, "value": dict(self.value)}

    @property
    def value_text(self) -> str | None:
        """The value's canonical JSON when it came as text (``JsonText``), else None."""
        return self.value.text if isinstance(self.value, JsonText) else None

    def value_json(self) -> str:
        """The canonical JSON of ``value`` (the Kafka record's value)."""
        text = self.value_text
        return text if text is not None else canonical_json(dict(self.value))

    def to_line(self) -> str:
        """The canonical JSON line (no trailing newline): ``canonical_json(self.to_json())``, built from the parts
        (keys in sorted order: id, key, topic, value) so that a value's text is not encoded twice."""
        return (f'{{"id":{_JSON_STRING(self.id)},"key":{_JSON_STRING(self.key)},"topic":{_JSON_STRING(self.topic)},'
                f'"value":{self.value_json()}}}')


_JSON_STRING = json.encoder.encode_basestring_ascii
"""A JSON string as ``canonical_json`` writes it (ASCII, escaped)."""


class JsonText(Mapping[str, Any]):
    """A JSON object kept as its canonical text, parsed on first access: an event's value that most consumers
    only write out again (as ``OutputRecord.value_text``) is then never parsed."""

    __slots__ = ("_parsed", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._parsed: dict[str, Any] | None = None

    def _object(self) -> dict[str, Any]:
        if self._parsed is None:
            self._parsed = json.loads(self.text)
        return self._parsed

    def __getitem__(self, key: str) -> Any:
        return self._object()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._object())

    def __len__(self) -> int:
        return len(self._object())

    def __repr__(self) -> str:
        return f"JsonText({self.text!r})"


def short(text: str, limit: int = DETAIL_LIMIT) -> str:
    """``text`` cut to ``limit`` characters (marked with an ellipsis when cut)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def rejection(realm: str, key: str, output_id: str, outcome: RecordOutcome | Mapping[str, object]) -> OutputRecord:
    """The ``<realm>.rejected`` record of an outcome: the one builder of a rejection, wherever the record was refused
    (the ingest edge, Stage R, the job's bound on an output's size, the seam). Its key and detail are cut to
    ``DETAIL_LIMIT``: they may quote hostile input."""
    value = dict(outcome) if isinstance(outcome, Mapping) else outcome.to_json()
    value["detail"] = short(str(value["detail"]))
    return OutputRecord(topic(realm, "rejected"), short(key), output_id, value)
