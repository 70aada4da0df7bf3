"""Subscriber-side calls (pallet index 2 of the ``extrinsics`` stream), which the relay forwards unchanged.

SCALE ``RuntimeCall``s, ``2 ‖ call index ‖ arguments``, made by the subscriber parachain itself (origin
``para:<subscriber id>``, signed with one of its collator keys):

- 0 ``set_subscriptions(Vec<(ParaId u32, Vec<[u8; 32]>)>)``: replace the stored subscriptions;
- 1 ``enable_publisher(ParaId u32)``;
- 2 ``clear_publisher_cache(ParaId u32)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pubsub_core.codec.scale import ScaleDecodeError, ScaleReader, encode_compact, encode_u32
from pubsub_core.envelope.errors import InvalidOrigin
from pubsub_core.envelope.keys import Origin, OriginKind
from pubsub_core.relay.calls import SUBSCRIBER
from pubsub_core.subscriber.errors import SubscriberCallError
from pubsub_core.subscriber.config import SubscriberConfig

__all__ = [
    "ClearPublisherCache",
    "EnablePublisher",
    "SetSubscriptions",
    "SubscriberCall",
    "decode_subscriber_call",
    "subscriber_of",
]

MAX_KEYS_PER_PUBLISHER = 1024


@dataclass(frozen=True, slots=True)
class SetSubscriptions:
    """Call 0: the subscriber's whole subscription set, publisher -> sorted distinct 32-byte keys."""

    subscriptions: tuple[tuple[int, tuple[bytes, ...]], ...]

    def encode(self) -> bytes:
        out = bytes((SUBSCRIBER, 0)) + encode_compact(len(self.subscriptions))
        for para, keys in self.subscriptions:
            out += encode_u32(para) + encode_compact(len(keys)) + b"".join(keys)
        return out

    def mapping(self) -> dict[int, tuple[bytes, ...]]:
        return dict(self.subscriptions)


@dataclass(frozen=True, slots=True)
class EnablePublisher:
    """Call 1: take ``publisher`` out of DisabledPublishers."""

    publisher: int

    def encode(self) -> bytes:
        return bytes((SUBSCRIBER, 1)) + encode_u32(self.publisher)


@dataclass(frozen=True, slots=True)
class ClearPublisherCache:
    """Call 2: free ``publisher``'s cached trie nodes."""

    publisher: int

    def encode(self) -> bytes:
        return bytes((SUBSCRIBER, 2)) + encode_u32(self.publisher)


SubscriberCall = SetSubscriptions | EnablePublisher | ClearPublisherCache


def decode_subscriber_call(data: bytes, config: SubscriberConfig) -> SubscriberCall:
    """Decode a whole call and apply its stateless checks (MaxPublishers); ``SubscriberCallError`` otherwise."""
    reader = ScaleReader(data)
    try:
        if reader.u8() != SUBSCRIBER:
            raise SubscriberCallError("Malformed", "not a subscriber call", data)
        index = reader.u8()
        call: SubscriberCall
        if index == 0:
            entries: dict[int, tuple[bytes, ...]] = {}
            for _ in range(reader.compact()):
                para, count = reader.u32(), reader.compact()
                if count > MAX_KEYS_PER_PUBLISHER:
                    raise SubscriberCallError("Malformed", f"{count} keys exceed {MAX_KEYS_PER_PUBLISHER}", data)
                keys = tuple(reader.take(32) for _ in range(count))
                entries[para] = tuple(sorted(set(entries.get(para, ())) | set(keys)))
                if len(entries) > config.max_publishers:
                    raise SubscriberCallError(
                        "SubscriptionError", f"more than MaxPublishers={config.max_publishers} publishers", data
                    )
            call = SetSubscriptions(tuple(sorted(entries.items())))
        elif index == 1:
            call = EnablePublisher(reader.u32())
        elif index == 2:
            call = ClearPublisherCache(reader.u32())
        else:
            raise SubscriberCallError("Malformed", f"unknown subscriber call index {index}", data)
        reader.finish()
    except ScaleDecodeError as exc:
        raise SubscriberCallError("Malformed", str(exc), data) from exc
    return call


def subscriber_of(origin: str, data: bytes) -> int:
    """The subscriber a forwarded call belongs to: the para of a ``para:<id>`` origin; ``BadOrigin`` otherwise."""
    try:
        parsed = Origin.parse("extrinsics", origin)
    except InvalidOrigin as exc:
        raise SubscriberCallError("BadOrigin", str(exc), data) from exc
    if parsed.kind is not OriginKind.PARA:
        raise SubscriberCallError("BadOrigin", f"subscriber calls need a para origin, not {parsed.kind.value}", data)
    return parsed.para_id
