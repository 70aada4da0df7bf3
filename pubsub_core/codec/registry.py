"""A scalecodec type registry for the pub-sub types: the declarative definition of their SCALE layouts.

The protocol's hot paths use the hand-written codecs (``codec.types``, ``xcm.types``, ``broadcaster.events``):
profiled on this machine, encoding a ``PublishedEntry`` takes about 120 us through scalecodec against 5 us by
hand (every publish writes one and every on_idle scan reads one), and scalecodec's decoder raises untyped
errors on hostile bytes, where upward messages need typed ones. The registry stays the independent second opinion:
the tests encode every type through both and require identical bytes.
"""

from __future__ import annotations

from typing import Any

from scalecodec.base import RuntimeConfigurationObject, ScaleBytes  # type: ignore[import-untyped]
from scalecodec.type_registry import load_type_registry_preset  # type: ignore[import-untyped]

__all__ = ["PUBSUB_TYPES", "scale_decode", "scale_encode"]

PUBSUB_TYPES: dict[str, Any] = {
    "types": {
        "PublishedEntry": {
            "type": "struct",
            "type_mapping": [["value", "Bytes"], ["ttl", "u32"], ["when_inserted", "u32"]],
        },
        "PublishedEntryU64": {
            "type": "struct",
            "type_mapping": [["value", "Bytes"], ["ttl", "u32"], ["when_inserted", "u64"]],
        },
        "TtlState": {"type": "enum", "type_mapping": [["Infinite", "Null"], ["ValidFor", "u32"], ["TimedOut", "Null"]]},
        "SubscribedKey": "[u8; 32]",
        "PublisherInfo": {"type": "struct", "type_mapping": [["manager", "[u8; 32]"], ["deposit", "u128"]]},
        "PublishInstruction": {
            "type": "struct",
            "type_mapping": [["key", "[u8; 32]"], ["value", "Bytes"], ["ttl", "u32"]],
        },
        "BroadcasterEvent": {
            "type": "enum",
            "type_mapping": [
                ["DataPublished", "(u32, u32)"],
                ["PublisherRegistered", "(u32, [u8; 32])"],
                ["PublisherDeregistered", "u32"],
                ["DataCleanedUp", "u32"],
                ["KeyExpired", "(u32, [u8; 32])"],
                ["KeysDeleted", "(u32, u32)"],
                ["KeysForcedDeleted", "(u32, u32)"],
            ],
        },
    }
}


def _runtime() -> RuntimeConfigurationObject:
    runtime = RuntimeConfigurationObject()
    runtime.update_type_registry(load_type_registry_preset("legacy"))
    runtime.update_type_registry(PUBSUB_TYPES)
    return runtime


_RUNTIME = _runtime()


def scale_encode(type_name: str, value: Any) -> bytes:
    """Encode ``value`` (scalecodec's JSON-like form: hex strings for bytes) as ``type_name``."""
    encoded = _RUNTIME.create_scale_object(type_name).encode(value)
    return bytes(encoded.data)


def scale_decode(type_name: str, data: bytes) -> Any:
    """Decode ``data`` as ``type_name`` into scalecodec's JSON-like form."""
    obj = _RUNTIME.create_scale_object(type_name, data=ScaleBytes(data))
    return obj.decode()
