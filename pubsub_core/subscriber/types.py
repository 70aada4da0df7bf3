"""Output records of the subscriber side, with the JSON form the simulator and the Spark job carry on Kafka.

Every record is a frozen dataclass with ``to_json() -> dict`` and ``from_json(dict)``; bytes are 0x-prefixed
lowercase hex (``hex_0x``), as in every output record; ``id`` is deterministic, so a record re-emitted after a
restart is byte-identical.
docs/subscriber.md shows each JSON form.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Any

from pubsub_core.codec.hexjson import hex_0x, unhex_0x
from pubsub_core.codec.scale import encode_u32
from pubsub_core.codec.types import TtlKind, TtlState
from pubsub_core.hashing import blake2_256
from pubsub_core.subscriber.budget import Budget

__all__ = [
    "BlockOutcome",
    "EventKind",
    "PalletEvent",
    "PovRecord",
    "ProcessingResult",
    "RelayProof",
    "Update",
    "UpdateKind",
    "ttl_state_from_json",
    "ttl_state_to_json",
]

_TTL_NAMES = {TtlKind.INFINITE: "Infinite", TtlKind.VALID_FOR: "ValidFor", TtlKind.TIMED_OUT: "TimedOut"}
_TTL_KINDS = {name: kind for kind, name in _TTL_NAMES.items()}
_TTL_TEXT = {kind._value_: name for kind, name in _TTL_NAMES.items()}
"""``_TTL_NAMES`` by the member's ``_value_`` (see ``_KIND_BYTES``)."""
_JSON_STRING = json.encoder.encode_basestring_ascii
"""A JSON string as ``canonical_json`` writes it (ASCII, escaped)."""


def ttl_state_to_json(state: TtlState) -> dict[str, Any]:
    """``{"kind": "Infinite"}``, ``{"kind": "ValidFor", "remaining": n}`` or ``{"kind": "TimedOut"}``."""
    if state.kind is TtlKind.VALID_FOR:
        return {"kind": "ValidFor", "remaining": state.remaining}
    return {"kind": _TTL_NAMES[state.kind]}


def ttl_state_from_json(data: dict[str, Any]) -> TtlState:
    return TtlState(_TTL_KINDS[data["kind"]], int(data.get("remaining", 0)))


def _hex(data: bytes | None) -> str | None:
    return None if data is None else hex_0x(data)


def _unhex(data: str | None) -> bytes | None:
    return None if data is None else unhex_0x(data)


class UpdateKind(Enum):
    """What an update tells the subscriber: a new value, or that the key is gone (deleted or expired)."""

    SET = "set"
    DELETED = "deleted"
    EXPIRED = "expired"


_KIND_BYTES = {kind._value_: index.to_bytes(1, "little") for index, kind in enumerate(UpdateKind)}
"""An update kind's byte in the update id (its position in ``UpdateKind``), by the member's ``_value_``: the
per-update lookups here read ``_value_``, a plain attribute, because ``.value`` and hashing a member run enum.py's
interpreted code (about 60,000 calls a simulator run)."""


@dataclass(frozen=True, slots=True)
class Update:
    """One ``on_data_updated(publisher, key, value, ttl_state)`` delivery.

    ``kind`` SET carries the raw published bytes; DELETED and EXPIRED (the key left the child trie; EXPIRED when
    its last known TTL had run out at that relay block) carry an empty value and ``TimedOut``. ``child_root`` is
    the publisher's child root the value was read at; ``entry_hash`` the Blake2-256 of the SCALE PublishedEntry
    (zero bytes for removals). ``seq`` is the position among this block's deliveries.
    """

    subscriber: int
    relay_block_number: int
    relay_block_hash: bytes
    seq: int
    publisher: int
    key: bytes
    kind: UpdateKind
    value: bytes
    ttl_state: TtlState
    child_root: bytes
    entry_hash: bytes

    # Explicit, not generated: compiled (setup.py), it is native code; the dataclass's own stays interpreted.
    def __init__(
        self, subscriber: int, relay_block_number: int, relay_block_hash: bytes, seq: int, publisher: int, key: bytes,
        kind: UpdateKind, value: bytes, ttl_state: TtlState, child_root: bytes, entry_hash: bytes,
    ) -> None:
        object.__setattr__(self, "subscriber", subscriber)
        object.__setattr__(self, "relay_block_number", relay_block_number)
        object.__setattr__(self, "relay_block_hash", relay_block_hash)
        object.__setattr__(self, "seq", seq)
        object.__setattr__(self, "publisher", publisher)
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "ttl_state", ttl_state)
        object.__setattr__(self, "child_root", child_root)
        object.__setattr__(self, "entry_hash", entry_hash)

    @property
    def id(self) -> str:
        """Blake2-256 of (subscriber, publisher, key, relay block, child root, kind, entry hash).

        A key is delivered at most once per block, so the id is unique; a re-emitted record keeps it.
        """
        kind_byte = _KIND_BYTES[self.kind._value_]
        material = (
            b"pubsub/update"
            + encode_u32(self.subscriber)
            + encode_u32(self.publisher)
            + self.key
            + self.relay_block_number.to_bytes(8, "little")
            + self.child_root
            + kind_byte
            + self.entry_hash
        )
        return hex_0x(blake2_256(material))

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "subscriber": self.subscriber,
            "relay_block_number": self.relay_block_number,
            "relay_block_hash": hex_0x(self.relay_block_hash),
            "seq": self.seq,
            "publisher": self.publisher,
            "key": hex_0x(self.key),
            "kind": self.kind.value,
            "value": hex_0x(self.value),
            "ttl_state": ttl_state_to_json(self.ttl_state),
            "child_root": hex_0x(self.child_root),
            "entry_hash": hex_0x(self.entry_hash),
        }

    def json_text(self) -> str:
        """``canonical_json(self.to_json())``, written out (keys in sorted order): updates are the most common
        output after relay events, and building the dict to encode it again with sorted keys showed in the
        simulator's profile (docs/benchmarks.md, "Measured code choices"). Every field is a number, 0x-hex or a fixed
        name, so nothing needs escaping."""
        ttl = self.ttl_state
        ttl_text = (f'{{"kind":"ValidFor","remaining":{ttl.remaining}}}' if ttl.kind is TtlKind.VALID_FOR
                    else f'{{"kind":"{_TTL_TEXT[ttl.kind._value_]}"}}')
        return (f'{{"child_root":"0x{self.child_root.hex()}","entry_hash":"0x{self.entry_hash.hex()}",'
                f'"id":"{self.id}","key":"0x{self.key.hex()}","kind":"{self.kind._value_}",'
                f'"publisher":{self.publisher},"relay_block_hash":"0x{self.relay_block_hash.hex()}",'
                f'"relay_block_number":{self.relay_block_number},"seq":{self.seq},"subscriber":{self.subscriber},'
                f'"ttl_state":{ttl_text},"value":"0x{self.value.hex()}"}}')

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Update:
        update = cls(
            subscriber=int(data["subscriber"]),
            relay_block_number=int(data["relay_block_number"]),
            relay_block_hash=unhex_0x(data["relay_block_hash"]),
            seq=int(data["seq"]),
            publisher=int(data["publisher"]),
            key=unhex_0x(data["key"]),
            kind=UpdateKind(data["kind"]),
            value=unhex_0x(data["value"]),
            ttl_state=ttl_state_from_json(data["ttl_state"]),
            child_root=unhex_0x(data["child_root"]),
            entry_hash=unhex_0x(data["entry_hash"]),
        )
        if "id" in data and data["id"] != update.id:
            raise ValueError(f"update id {data['id']} does not match its content ({update.id})")
        return update


class EventKind(Enum):
    """Subscriber pallet events (the reference code's order, without the removed PublisherRootCleared call)."""

    DATA_PROCESSED = "DataProcessed"
    PUBLISHER_DISABLED = "PublisherDisabled"
    PUBLISHER_ENABLED = "PublisherEnabled"
    PUBLISHER_CACHE_CLEARED = "PublisherCacheCleared"


@dataclass(frozen=True, slots=True)
class PalletEvent:
    """A subscriber pallet event; ``index`` orders the events deposited at one relay block."""

    subscriber: int
    relay_block_number: int
    index: int
    kind: EventKind
    publisher: int
    key: bytes | None = None
    value_size: int | None = None
    reason: str | None = None

    # Explicit, not generated: compiled (setup.py), it is native code; the dataclass's own stays interpreted.
    def __init__(
        self, subscriber: int, relay_block_number: int, index: int, kind: EventKind, publisher: int,
        key: bytes | None = None, value_size: int | None = None, reason: str | None = None,
    ) -> None:
        object.__setattr__(self, "subscriber", subscriber)
        object.__setattr__(self, "relay_block_number", relay_block_number)
        object.__setattr__(self, "index", index)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "publisher", publisher)
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "value_size", value_size)
        object.__setattr__(self, "reason", reason)

    @property
    def id(self) -> str:
        return f"{self.subscriber}-{self.relay_block_number}-e{self.index}"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "subscriber": self.subscriber,
            "relay_block_number": self.relay_block_number,
            "index": self.index,
            "kind": self.kind.value,
            "publisher": self.publisher,
            "key": _hex(self.key),
            "value_size": self.value_size,
            "reason": self.reason,
        }

    def json_text(self) -> str:
        """``canonical_json(self.to_json())``, written out (keys in sorted order), as ``Update.json_text``: one
        ``DataProcessed`` per delivered key makes these the second most common subscriber output."""
        key = "null" if self.key is None else f'"0x{self.key.hex()}"'
        reason = "null" if self.reason is None else _JSON_STRING(self.reason)
        size = "null" if self.value_size is None else str(self.value_size)
        return (f'{{"id":"{self.id}","index":{self.index},"key":{key},"kind":"{self.kind._value_}",'
                f'"publisher":{self.publisher},"reason":{reason},"relay_block_number":{self.relay_block_number},'
                f'"subscriber":{self.subscriber},"value_size":{size}}}')

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PalletEvent:
        return cls(
            subscriber=int(data["subscriber"]),
            relay_block_number=int(data["relay_block_number"]),
            index=int(data["index"]),
            kind=EventKind(data["kind"]),
            publisher=int(data["publisher"]),
            key=_unhex(data.get("key")),
            value_size=data.get("value_size"),
            reason=data.get("reason"),
        )


class ProcessingResult(Enum):
    """``ProofProcessingResult``: every pending key was processed, or the budget ran out first."""

    COMPLETE = "complete"
    INCOMPLETE = "incomplete"


@dataclass(frozen=True, slots=True)
class RelayProof:
    """The relay state proof a collator puts in the block for pub-sub: trie nodes of the relay parent state.

    ``nodes`` is sorted and deduplicated when built by ``collate`` (like sp-trie's StorageProof); the runtime
    rejects duplicates, so adversarial proofs may carry them.
    """

    relay_block_number: int
    relay_block_hash: bytes
    relay_root: bytes
    nodes: tuple[bytes, ...]

    @property
    def size(self) -> int:
        """Proof bytes: the sum of node lengths (what the PoV pays)."""
        return sum(len(node) for node in self.nodes)

    def to_json(self) -> dict[str, Any]:
        return {
            "relay_block_number": self.relay_block_number,
            "relay_block_hash": hex_0x(self.relay_block_hash),
            "relay_root": hex_0x(self.relay_root),
            "nodes": [hex_0x(node) for node in self.nodes],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RelayProof:
        return cls(
            relay_block_number=int(data["relay_block_number"]),
            relay_block_hash=unhex_0x(data["relay_block_hash"]),
            relay_root=unhex_0x(data["relay_root"]),
            nodes=tuple(unhex_0x(node) for node in data["nodes"]),
        )


@dataclass(frozen=True, slots=True)
class PovRecord:
    """Per-block PoV metering of pub-sub: what the proof and the cache cost against the budget.

    ``proof_bytes`` / ``proof_nodes``: relay proof read (equal to the proof's size when Verify accepted it).
    ``cache_hits`` / ``cache_read_bytes``: CachedTrieNodes entries read instead of proof nodes.
    ``state_read_bytes``: other subscriber storage read (key states, refcounts, roots), part of the PoV too.
    ``consumed``: the WeightMeter at the end (ref_time, proof_size = proof + cache + state bytes).
    """

    subscriber: int
    relay_block_number: int
    relay_block_hash: bytes
    budget: Budget
    result: ProcessingResult
    proof_bytes: int
    proof_nodes: int
    value_nodes: int
    cache_hits: int
    cache_read_bytes: int
    state_read_bytes: int
    consumed_ref_time: int
    consumed_proof_size: int
    keys_processed: int
    keys_unchanged: int
    publishers_unchanged: int
    deliveries: int
    cursor_publisher: int | None
    cursor_key: bytes | None

    @property
    def id(self) -> str:
        return f"{self.subscriber}-{self.relay_block_number}-pov"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "subscriber": self.subscriber,
            "relay_block_number": self.relay_block_number,
            "relay_block_hash": hex_0x(self.relay_block_hash),
            "budget": self.budget.to_json(),
            "result": self.result.value,
            "proof_bytes": self.proof_bytes,
            "proof_nodes": self.proof_nodes,
            "value_nodes": self.value_nodes,
            "cache_hits": self.cache_hits,
            "cache_read_bytes": self.cache_read_bytes,
            "state_read_bytes": self.state_read_bytes,
            "consumed_ref_time": self.consumed_ref_time,
            "consumed_proof_size": self.consumed_proof_size,
            "keys_processed": self.keys_processed,
            "keys_unchanged": self.keys_unchanged,
            "publishers_unchanged": self.publishers_unchanged,
            "deliveries": self.deliveries,
            "cursor": None
            if self.cursor_publisher is None or self.cursor_key is None
            else {"publisher": self.cursor_publisher, "key": hex_0x(self.cursor_key)},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PovRecord:
        cursor = data.get("cursor")
        return cls(
            subscriber=int(data["subscriber"]),
            relay_block_number=int(data["relay_block_number"]),
            relay_block_hash=unhex_0x(data["relay_block_hash"]),
            budget=Budget.from_json(data["budget"]),
            result=ProcessingResult(data["result"]),
            proof_bytes=int(data["proof_bytes"]),
            proof_nodes=int(data["proof_nodes"]),
            value_nodes=int(data["value_nodes"]),
            cache_hits=int(data["cache_hits"]),
            cache_read_bytes=int(data["cache_read_bytes"]),
            state_read_bytes=int(data["state_read_bytes"]),
            consumed_ref_time=int(data["consumed_ref_time"]),
            consumed_proof_size=int(data["consumed_proof_size"]),
            keys_processed=int(data["keys_processed"]),
            keys_unchanged=int(data["keys_unchanged"]),
            publishers_unchanged=int(data["publishers_unchanged"]),
            deliveries=int(data["deliveries"]),
            cursor_publisher=None if cursor is None else int(cursor["publisher"]),
            cursor_key=None if cursor is None else unhex_0x(cursor["key"]),
        )


@dataclass(frozen=True, slots=True)
class BlockOutcome:
    """What Verify produced for one relay block: deliveries in order, pallet events, and the PoV metering."""

    result: ProcessingResult
    updates: tuple[Update, ...]
    events: tuple[PalletEvent, ...]
    pov: PovRecord

    def to_json(self) -> dict[str, Any]:
        return {
            "result": self.result.value,
            "updates": [update.to_json() for update in self.updates],
            "events": [event.to_json() for event in self.events],
            "pov": self.pov.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BlockOutcome:
        return cls(
            result=ProcessingResult(data["result"]),
            updates=tuple(Update.from_json(item) for item in data["updates"]),
            events=tuple(PalletEvent.from_json(item) for item in data["events"]),
            pov=PovRecord.from_json(data["pov"]),
        )
