"""Subscriber-side calls (pallet index 2 of the ``extrinsics`` stream): decoded by the relay's admission (step 6,
so an undecodable one is a ``Malformed`` record), then forwarded to the subscriber they address.

SCALE ``RuntimeCall``s, ``2 ‖ call index ‖ arguments``:

- 0 ``set_subscriptions(Vec<(ParaId u32, Vec<[u8; 32]>)>)``: replace the stored subscriptions; made by the
  subscriber parachain itself (origin ``para:<subscriber id>``);
- 1 ``enable_publisher(ParaId u32)`` and 2 ``clear_publisher_cache(ParaId u32)``: administrative calls, from the
  subscriber's own origin, accepted only when ``SubscriberConfig.admin_origin`` allows it;
- 3 ``governance(ParaId u32, call)``: relay governance (origin ``root``) making the administrative ``call`` (1 or
  2, encoded whole) on subscriber ``ParaId``, as an XCM ``Transact`` with a superuser origin would. This is how
  the pub-sub design's and spec's governance origin (``ClearCacheOrigin``) reaches a given subscriber.
"""

from __future__ import annotations

from dataclasses import dataclass

from pubsub_core.codec.scale import ScaleDecodeError, ScaleReader, encode_compact, encode_u32
from pubsub_core.envelope.errors import InvalidOrigin
from pubsub_core.envelope.keys import Origin, OriginKind
from pubsub_core.pallets import SUBSCRIBER
from pubsub_core.subscriber.config import SubscriberConfig
from pubsub_core.subscriber.errors import SubscriberCallError

__all__ = [
    "AdminCall",
    "ClearPublisherCache",
    "EnablePublisher",
    "GovernanceCall",
    "SetSubscriptions",
    "SubscriberCall",
    "check_subscription_limits",
    "decode_subscriber_call",
    "subscriber_of",
]

MAX_KEYS_PER_PUBLISHER = 1024
MAX_PUBLISHERS_PER_CALL = 1024
"""Structural bounds of ``set_subscriptions`` (beyond them the call does not decode); the subscriber's own
``MaxPublishers`` (``check_subscription_limits``) is lower by default."""


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


AdminCall = EnablePublisher | ClearPublisherCache
"""The calls the pub-sub design and spec reserve for governance or a configured origin."""


@dataclass(frozen=True, slots=True)
class GovernanceCall:
    """Call 3: governance (``root``) makes ``call`` on subscriber ``subscriber``."""

    subscriber: int
    call: AdminCall

    def encode(self) -> bytes:
        return bytes((SUBSCRIBER, 3)) + encode_u32(self.subscriber) + self.call.encode()


SubscriberCall = SetSubscriptions | EnablePublisher | ClearPublisherCache | GovernanceCall


def decode_subscriber_call(data: bytes) -> SubscriberCall:
    """Decode a whole call (``Malformed`` ``SubscriberCallError`` for anything else): what the relay's admission
    checks; origins and the subscriber's limits are checked where the call applies."""
    reader = ScaleReader(data)
    try:
        if reader.u8() != SUBSCRIBER:
            raise SubscriberCallError("Malformed", "not a subscriber call", data)
        call = _decode_body(reader, data)
        reader.finish()
    except ScaleDecodeError as exc:
        raise SubscriberCallError("Malformed", str(exc), data) from exc
    return call


def _decode_body(reader: ScaleReader, data: bytes) -> SubscriberCall:
    index = reader.u8()
    if index == 0:
        count = reader.compact()
        if count > MAX_PUBLISHERS_PER_CALL:
            raise SubscriberCallError("Malformed", f"{count} publishers exceed {MAX_PUBLISHERS_PER_CALL}", data)
        entries: dict[int, tuple[bytes, ...]] = {}
        for _ in range(count):
            para, keys_count = reader.u32(), reader.compact()
            if keys_count > MAX_KEYS_PER_PUBLISHER:
                raise SubscriberCallError("Malformed", f"{keys_count} keys exceed {MAX_KEYS_PER_PUBLISHER}", data)
            keys = tuple(reader.take(32) for _ in range(keys_count))
            entries[para] = tuple(sorted(set(entries.get(para, ())) | set(keys)))
        return SetSubscriptions(tuple(sorted(entries.items())))
    if index == 1:
        return EnablePublisher(reader.u32())
    if index == 2:
        return ClearPublisherCache(reader.u32())
    if index == 3:
        subscriber, pallet, inner = reader.u32(), reader.u8(), reader.u8()
        if pallet != SUBSCRIBER or inner not in (1, 2):
            raise SubscriberCallError("Malformed", "governance makes enable_publisher or clear_publisher_cache, "
                                                   f"not call {pallet}/{inner}", data)
        publisher = reader.u32()
        return GovernanceCall(subscriber, EnablePublisher(publisher) if inner == 1 else ClearPublisherCache(publisher))
    raise SubscriberCallError("Malformed", f"unknown subscriber call index {index}", data)


def check_subscription_limits(call: SubscriberCall, config: SubscriberConfig, data: bytes) -> None:
    """The subscriber's stateless limit on a decoded call (``MaxPublishers``); ``SubscriptionError`` otherwise."""
    if isinstance(call, SetSubscriptions) and len(call.subscriptions) > config.max_publishers:
        raise SubscriberCallError("SubscriptionError", f"{len(call.subscriptions)} publishers exceed "
                                                       f"MaxPublishers={config.max_publishers}", data)


def subscriber_of(origin: str, call: SubscriberCall, data: bytes) -> int:
    """The subscriber a decoded call addresses: a governance call's target when it comes from ``root``, the para
    of a ``para:<id>`` origin for the others; ``BadOrigin`` otherwise."""
    try:
        parsed = Origin.parse("extrinsics", origin)
    except InvalidOrigin as exc:
        raise SubscriberCallError("BadOrigin", str(exc), data) from exc
    if isinstance(call, GovernanceCall):
        if parsed.kind is not OriginKind.ROOT:
            raise SubscriberCallError("BadOrigin", f"governance calls need the root origin, not {parsed.kind.value}",
                                      data)
        return call.subscriber
    if parsed.kind is not OriginKind.PARA:
        raise SubscriberCallError("BadOrigin", f"subscriber calls need a para origin, not {parsed.kind.value} "
                                               "(governance uses call 3)", data)
    return parsed.para_id
