"""The simulator's records: event-log input lines, the Stage R -> Stage S relay view, and output lines.

An event-log line is ``{"topic": "<realm>.<stream>", "key": ..., "value": ...}``; an output line is
``{"topic": "<realm>.<kind>", "key": ..., "id": ..., "value": ...}`` in canonical JSON (sorted keys, no
spaces), so two runs compare byte for byte. docs/simulator.md lists every topic and value schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pubsub_core.codec.hexjson import hex_0x, unhex_0x
from pubsub_core.envelope import KeyRegistry
from pubsub_core.relay import ForwardedCall, Genesis, InputRecord, canonical_json
from pubsub_core.stages.errors import IngestError

__all__ = [
    "GenesisRecord",
    "INPUT_STREAMS",
    "LogRecord",
    "OutputRecord",
    "RelayView",
    "SimOutcome",
    "SubscriberCallFailed",
    "decode_value",
    "split_topic",
]

INPUT_STREAMS = ("upward", "horizontal", "extrinsics")
"""Streams carrying ``InputRecord`` values; ``blocks`` carries headers and ``genesis`` the realm's set-up."""

_STREAMS = (*INPUT_STREAMS, "blocks", "genesis")


@dataclass(frozen=True, slots=True)
class GenesisRecord:
    """A realm's set-up (topic ``<realm>.genesis``): who may sign for whom, balances and para managers."""

    registry: KeyRegistry
    genesis: Genesis

    def to_json(self) -> dict[str, object]:
        return {"registry": self.registry.to_json(), **self.genesis.to_json()}

    @classmethod
    def from_json(cls, body: object) -> GenesisRecord:
        if not isinstance(body, dict) or not isinstance(body.get("registry", {}), dict):
            raise ValueError("a genesis value is a JSON object with a registry object")
        if not all(isinstance(body.get(name, {}), dict) for name in ("endowments", "para_managers")):
            raise ValueError("endowments and para_managers are JSON objects")
        return cls(KeyRegistry.from_json(body.get("registry", {})), Genesis.from_json(body))


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
    realm, dot, stream = topic.rpartition(".")
    if not dot or not realm or stream not in _STREAMS:
        raise IngestError("UnknownTopic", f"{topic!r} is not <realm>.<{'|'.join(_STREAMS)}>", topic)
    return realm, stream


def decode_value(realm: str, stream: str, key: str, value: object) -> InputRecord | GenesisRecord:
    """Decode a value of ``stream``; ``IngestError`` (``MalformedRecord`` or ``KeyMismatch``) if it is not one."""
    try:
        decoded: InputRecord | GenesisRecord
        if stream == "genesis":
            decoded = GenesisRecord.from_json(value)
        else:
            decoded = InputRecord.from_json(value)
    except (KeyError, TypeError, ValueError) as exc:
        raise IngestError("MalformedRecord", f"not a {stream} value: {type(exc).__name__}: {exc}") from exc
    if isinstance(decoded, InputRecord):
        if decoded.stream != stream or decoded.origin != key:
            raise IngestError(
                "KeyMismatch", f"record {decoded.record_id} on topic {realm}.{stream} with key {key!r}"
            )
        if decoded.position < 0:
            raise IngestError("MalformedRecord", f"negative position {decoded.position}")
    return decoded


@dataclass(frozen=True, slots=True)
class SimOutcome:
    """An outcome decided by the simulator rather than the block machine: a line refused at ingest (``block``
    None, ``record`` the line's ``<topic>@<offset>``), or, at the end of the input, a record no block included
    or a block that never got its records. Same JSON shape as the relay's ``RecordOutcome``."""

    block: int | None
    record: str
    status: str
    reason: str
    detail: str

    def to_json(self) -> dict[str, object]:
        return {"block": self.block, "record": self.record, "status": self.status, "reason": self.reason,
                "detail": self.detail}


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
    ``calls`` the subscriber calls this block included, applied after the proof.
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

    def to_json(self) -> dict[str, object]:
        return {
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
        return cls(
            str(body["realm"]), int(body["subscriber"]), int(body["number"]), unhex_0x(body["hash"]),
            unhex_0x(body["relay_root"]), int(body["max_pov_size"]), tuple(int(s) for s in body["dmq_sizes"]),
            tuple(int(s) for s in body["hrmp_sizes"]), tuple(unhex_0x(n) for n in body["nodes"]),
            tuple(ForwardedCall.from_json(c) for c in body["calls"]),
        )


@dataclass(frozen=True, slots=True)
class OutputRecord:
    """One output line: topic ``<realm>.<kind>``, key, deterministic id, and the record's JSON value."""

    topic: str
    key: str
    id: str
    value: Mapping[str, Any]

    def to_json(self) -> dict[str, object]:
        return {"topic": self.topic, "key": self.key, "id": self.id, "value": dict(self.value)}

    def to_line(self) -> str:
        """The canonical JSON line (no trailing newline)."""
        return canonical_json(self.to_json())
