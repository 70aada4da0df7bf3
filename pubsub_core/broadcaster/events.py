"""The broadcaster pallet's events: frozen records with their SCALE encoding and a JSON form.

SCALE: the variant index (the reference code's order) then the fields in order; ``ParaId`` and counts are u32
little-endian, accounts and keys 32 raw bytes. JSON: ``{"pallet": "Broadcaster", "event": <name>, <fields>}``
with bytes as ``0x``-prefixed lowercase hex.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar, Union

from pubsub_core.codec.scale import ScaleDecodeError, ScaleReader, encode_u32

__all__ = [
    "BroadcasterEvent",
    "DataCleanedUp",
    "DataPublished",
    "KeyExpired",
    "KeysDeleted",
    "KeysForcedDeleted",
    "PublisherDeregistered",
    "PublisherRegistered",
    "decode_event",
    "event_from_json",
]

PALLET = "Broadcaster"


class _Event:
    """Shared SCALE and JSON code: ints are u32, bytes are 32 raw bytes."""

    INDEX: ClassVar[int]

    def _field_names(self) -> tuple[str, ...]:
        """The event's field names, found once per class (``dataclasses.fields`` builds them on every call)."""
        cls = type(self)
        names = _FIELD_NAMES.get(cls)
        if names is None:
            names = _FIELD_NAMES[cls] = tuple(field.name for field in fields(self))  # type: ignore[arg-type]
        return names

    def encode(self) -> bytes:
        out = bytearray((self.INDEX,))
        for name in self._field_names():
            value = getattr(self, name)
            out += value if isinstance(value, bytes) else encode_u32(value)
        return bytes(out)

    def to_json(self) -> dict[str, object]:
        body: dict[str, object] = {"pallet": PALLET, "event": type(self).__name__}
        for name in self._field_names():
            value = getattr(self, name)
            body[name] = "0x" + value.hex() if isinstance(value, bytes) else value
        return body


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


@dataclass(frozen=True, slots=True)
class DataPublished(_Event):
    """A publisher stored a key; the single-key Publish always reports ``items_count`` 1."""

    INDEX: ClassVar[int] = 0
    publisher: int
    items_count: int


@dataclass(frozen=True, slots=True)
class PublisherRegistered(_Event):
    INDEX: ClassVar[int] = 1
    para_id: int
    manager: bytes


@dataclass(frozen=True, slots=True)
class PublisherDeregistered(_Event):
    INDEX: ClassVar[int] = 2
    para_id: int


@dataclass(frozen=True, slots=True)
class DataCleanedUp(_Event):
    """All of a publisher's keys were wiped (cleanup, deregistration or offboarding)."""

    INDEX: ClassVar[int] = 3
    para_id: int


@dataclass(frozen=True, slots=True)
class KeyExpired(_Event):
    INDEX: ClassVar[int] = 4
    publisher: int
    key: bytes


@dataclass(frozen=True, slots=True)
class KeysDeleted(_Event):
    INDEX: ClassVar[int] = 5
    publisher: int
    count: int


@dataclass(frozen=True, slots=True)
class KeysForcedDeleted(_Event):
    INDEX: ClassVar[int] = 6
    publisher: int
    count: int


BroadcasterEvent = Union[
    DataPublished, PublisherRegistered, PublisherDeregistered, DataCleanedUp, KeyExpired, KeysDeleted,
    KeysForcedDeleted,
]

_BY_INDEX: dict[int, type[_Event]] = {
    cls.INDEX: cls
    for cls in (
        DataPublished, PublisherRegistered, PublisherDeregistered, DataCleanedUp, KeyExpired, KeysDeleted,
        KeysForcedDeleted,
    )
}
_BY_NAME: dict[str, type[_Event]] = {cls.__name__: cls for cls in _BY_INDEX.values()}


def decode_event(data: bytes) -> BroadcasterEvent:
    """Decode one SCALE-encoded event (whole input) or raise ScaleDecodeError."""
    reader = ScaleReader(data)
    index = reader.u8()
    cls = _BY_INDEX.get(index)
    if cls is None:
        raise ScaleDecodeError(f"the broadcaster has no event {index}", data, 0)
    values = [reader.take(32) if f.name in ("manager", "key") else reader.u32() for f in fields(cls)]  # type: ignore[arg-type]
    reader.finish()
    event: BroadcasterEvent = cls(*values)  # type: ignore[assignment]
    return event


def event_from_json(body: dict[str, object]) -> BroadcasterEvent:
    """Inverse of ``to_json``."""
    if body.get("pallet") != PALLET or body.get("event") not in _BY_NAME:
        raise ValueError(f"not a broadcaster event: {body!r}")
    cls = _BY_NAME[str(body["event"])]
    values: list[object] = []
    for field in fields(cls):  # type: ignore[arg-type]
        raw = body[field.name]
        values.append(bytes.fromhex(str(raw)[2:]) if field.name in ("manager", "key") else int(str(raw)))
    event: BroadcasterEvent = cls(*values)  # type: ignore[assignment]
    return event
