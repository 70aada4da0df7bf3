"""Typed accessors for the Router's storage items (the Router Module's "Storage") over a StateTransaction.

Every item lives in its own namespace; map keys are SCALE-encoded (a para id as u32, a channel as
(u32, u32)) and values are SCALE-encoded. Empty vectors, zero counters and ``None`` are never stored: the
key is deleted instead, as Substrate's ValueQuery storage does. Whole-namespace listings are returned
sorted by key, never in backend order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from pubsub_core.codec.scale import ScaleReader, decode_compact, encode_bytes, encode_u32
from pubsub_core.router.records import (
    HrmpChannel,
    HrmpChannelId,
    HrmpOpenChannelRequest,
    InboundDownwardMessage,
    InboundHrmpMessage,
    decode_vec,
    encode_vec,
)
from state import VALUE_KEY, StateTransaction

__all__ = ["RouterStorage"]

T = TypeVar("T")

_PREFIX = "router."
NS_OUTGOING_PARAS = _PREFIX + "OutgoingParas"
NS_RELAY_DISPATCH_QUEUES = _PREFIX + "RelayDispatchQueues"
NS_RELAY_DISPATCH_QUEUE_SIZE = _PREFIX + "RelayDispatchQueueSize"
NS_NEEDS_DISPATCH = _PREFIX + "NeedsDispatch"
NS_NEXT_DISPATCH_ROUND_START_WITH = _PREFIX + "NextDispatchRoundStartWith"
NS_DOWNWARD_MESSAGE_QUEUES = _PREFIX + "DownwardMessageQueues"
NS_DOWNWARD_MESSAGE_QUEUE_HEADS = _PREFIX + "DownwardMessageQueueHeads"
NS_HRMP_OPEN_CHANNEL_REQUESTS = _PREFIX + "HrmpOpenChannelRequests"
NS_HRMP_OPEN_CHANNEL_REQUESTS_LIST = _PREFIX + "HrmpOpenChannelRequestsList"
NS_HRMP_OPEN_CHANNEL_REQUEST_COUNT = _PREFIX + "HrmpOpenChannelRequestCount"
NS_HRMP_ACCEPTED_CHANNEL_REQUEST_COUNT = _PREFIX + "HrmpAcceptedChannelRequestCount"
NS_HRMP_CLOSE_CHANNEL_REQUESTS = _PREFIX + "HrmpCloseChannelRequests"
NS_HRMP_CLOSE_CHANNEL_REQUESTS_LIST = _PREFIX + "HrmpCloseChannelRequestsList"
NS_HRMP_WATERMARKS = _PREFIX + "HrmpWatermarks"
NS_HRMP_CHANNELS = _PREFIX + "HrmpChannels"
NS_HRMP_INGRESS_CHANNELS_INDEX = _PREFIX + "HrmpIngressChannelsIndex"
NS_HRMP_EGRESS_CHANNELS_INDEX = _PREFIX + "HrmpEgressChannelsIndex"
NS_HRMP_CHANNEL_CONTENTS = _PREFIX + "HrmpChannelContents"
NS_HRMP_CHANNEL_DIGESTS = _PREFIX + "HrmpChannelDigests"

_VALUE_NAMESPACES = (
    NS_OUTGOING_PARAS,
    NS_NEEDS_DISPATCH,
    NS_NEXT_DISPATCH_ROUND_START_WITH,
    NS_HRMP_OPEN_CHANNEL_REQUESTS_LIST,
    NS_HRMP_CLOSE_CHANNEL_REQUESTS_LIST,
)
_PARA_NAMESPACES = (
    NS_RELAY_DISPATCH_QUEUES,
    NS_RELAY_DISPATCH_QUEUE_SIZE,
    NS_DOWNWARD_MESSAGE_QUEUES,
    NS_DOWNWARD_MESSAGE_QUEUE_HEADS,
    NS_HRMP_OPEN_CHANNEL_REQUEST_COUNT,
    NS_HRMP_ACCEPTED_CHANNEL_REQUEST_COUNT,
    NS_HRMP_WATERMARKS,
    NS_HRMP_INGRESS_CHANNELS_INDEX,
    NS_HRMP_EGRESS_CHANNELS_INDEX,
    NS_HRMP_CHANNEL_DIGESTS,
)
_CHANNEL_NAMESPACES = (
    NS_HRMP_CHANNELS,
    NS_HRMP_CHANNEL_CONTENTS,
    NS_HRMP_OPEN_CHANNEL_REQUESTS,
    NS_HRMP_CLOSE_CHANNEL_REQUESTS,
)

Digest = tuple[int, list[int]]
"""One HrmpChannelDigests entry: a relay block number and the senders that sent at that block."""


def _para_key(para: int) -> bytes:
    return encode_u32(para)


def _decode_para_key(key: bytes) -> int:
    return int.from_bytes(key, "little")


def _decode_channel_key(key: bytes) -> HrmpChannelId:
    return HrmpChannelId.read(ScaleReader(key))


def _decode(data: bytes, read: Callable[[ScaleReader], T]) -> T:
    reader = ScaleReader(data)
    value = read(reader)
    reader.finish()
    return value


def _read_u32(reader: ScaleReader) -> int:
    return reader.u32()


def _read_bytes(reader: ScaleReader) -> bytes:
    return reader.bytes_vec()


def _decode_u32_list(data: bytes) -> list[int]:
    """``Vec<u32>`` by slicing after one length check (NeedsDispatch is read for every enacted upward batch;
    (docs/benchmarks.md, "Measured code choices")); anything malformed goes through the reader, for its error."""
    count, start = decode_compact(data, 0)
    if start + 4 * count != len(data):
        return _decode(data, lambda r: decode_vec(r, _read_u32))
    return [int.from_bytes(data[i : i + 4], "little") for i in range(start, len(data), 4)]


def _decode_bytes_list(data: bytes) -> list[bytes]:
    """``Vec<Vec<u8>>`` (an upward queue) with offsets instead of a reader call per length and per message
    (docs/benchmarks.md, "Measured code choices"); anything malformed goes through the reader, for its error."""
    count, offset = decode_compact(data, 0)
    items: list[bytes] = []
    for _ in range(count):
        if offset >= len(data) or data[offset] & 0b11 == 0b11:
            return _decode(data, lambda r: decode_vec(r, _read_bytes))
        length, offset = decode_compact(data, offset)
        items.append(data[offset : offset + length])
        offset += length
    if offset != len(data):
        return _decode(data, lambda r: decode_vec(r, _read_bytes))
    return items


def _read_digest(reader: ScaleReader) -> Digest:
    return reader.u32(), decode_vec(reader, _read_u32)


def _encode_digest(digest: Digest) -> bytes:
    return encode_u32(digest[0]) + encode_vec(digest[1], encode_u32)


def _read_channel_id(reader: ScaleReader) -> HrmpChannelId:
    return HrmpChannelId.read(reader)


def _encode_channel_id(channel: HrmpChannelId) -> bytes:
    return channel.encode()


class RouterStorage:
    """The Router's storage items, read and written through one StateTransaction."""

    __slots__ = ("txn",)

    def __init__(self, txn: StateTransaction) -> None:
        self.txn = txn

    # -- generic helpers --------------------------------------------------------------------------
    def _get_list(self, namespace: str, key: bytes, read: Callable[[ScaleReader], T]) -> list[T]:
        data = self.txn.get(namespace, key)
        return [] if data is None else _decode(data, lambda r: decode_vec(r, read))

    def _put_list(self, namespace: str, key: bytes, items: list[T], encode: Callable[[T], bytes]) -> None:
        if items:
            self.txn.put(namespace, key, encode_vec(items, encode))
        else:
            self.txn.delete(namespace, key)

    def _get_u32(self, namespace: str, key: bytes) -> int:
        data = self.txn.get(namespace, key)
        return 0 if data is None else _decode(data, _read_u32)

    def _put_u32(self, namespace: str, key: bytes, value: int) -> None:
        if value:
            self.txn.put(namespace, key, encode_u32(value))
        else:
            self.txn.delete(namespace, key)

    def para_keys(self, namespace: str) -> list[int]:
        """Every para id with an entry in a para-keyed namespace, ascending."""
        return sorted(_decode_para_key(key) for key in self.txn.items(namespace))

    def channel_keys(self, namespace: str) -> list[HrmpChannelId]:
        """Every channel with an entry in a channel-keyed namespace, ascending by (sender, recipient)."""
        return sorted(_decode_channel_key(key) for key in self.txn.items(namespace))

    def prefetch_paras(self, paras: Iterable[int]) -> None:
        """Load every para-keyed item of ``paras`` and the single values, one backend call per namespace.

        On Spark each backend call is a JVM round trip, so a block prefetches the paras it will touch
        instead of reading item by item; channel-keyed items follow with ``prefetch_channels``.
        """
        keys = [_para_key(para) for para in sorted(set(paras))]
        for namespace in _PARA_NAMESPACES:
            self.txn.prefetch(namespace, keys)
        for namespace in _VALUE_NAMESPACES:
            self.txn.prefetch(namespace, (VALUE_KEY,))

    def prefetch_channels(self, channels: Iterable[HrmpChannelId]) -> None:
        """Load the channel records and contents of ``channels``, one backend call per namespace."""
        keys = [channel.encode() for channel in sorted(set(channels))]
        for namespace in _CHANNEL_NAMESPACES:
            self.txn.prefetch(namespace, keys)

    # -- general --------------------------------------------------------------------------------
    def outgoing_paras(self) -> list[int]:
        return self._get_list(NS_OUTGOING_PARAS, VALUE_KEY, _read_u32)

    def set_outgoing_paras(self, paras: list[int]) -> None:
        self._put_list(NS_OUTGOING_PARAS, VALUE_KEY, paras, encode_u32)

    # -- UMP --------------------------------------------------------------------------------------
    def relay_dispatch_queue(self, para: int) -> list[bytes]:
        data = self.txn.get(NS_RELAY_DISPATCH_QUEUES, _para_key(para))
        return [] if data is None else _decode_bytes_list(data)

    def set_relay_dispatch_queue(self, para: int, messages: list[bytes]) -> None:
        self._put_list(NS_RELAY_DISPATCH_QUEUES, _para_key(para), messages, encode_bytes)

    def relay_dispatch_queue_size(self, para: int) -> tuple[int, int]:
        """(number of messages, total payload bytes) of the para's upward queue."""
        data = self.txn.get(NS_RELAY_DISPATCH_QUEUE_SIZE, _para_key(para))
        if data is None:
            return 0, 0
        if len(data) != 8:
            return _decode(data, lambda r: (r.u32(), r.u32()))
        return int.from_bytes(data[:4], "little"), int.from_bytes(data[4:], "little")

    def set_relay_dispatch_queue_size(self, para: int, count: int, total_bytes: int) -> None:
        if count or total_bytes:
            self.txn.put(NS_RELAY_DISPATCH_QUEUE_SIZE, _para_key(para), encode_u32(count) + encode_u32(total_bytes))
        else:
            self.txn.delete(NS_RELAY_DISPATCH_QUEUE_SIZE, _para_key(para))

    def needs_dispatch(self) -> list[int]:
        data = self.txn.get(NS_NEEDS_DISPATCH, VALUE_KEY)
        return [] if data is None else _decode_u32_list(data)

    def set_needs_dispatch(self, paras: list[int]) -> None:
        self._put_list(NS_NEEDS_DISPATCH, VALUE_KEY, paras, encode_u32)

    def next_dispatch_round_start_with(self) -> int | None:
        data = self.txn.get_value(NS_NEXT_DISPATCH_ROUND_START_WITH)
        return None if data is None else _decode(data, _read_u32)

    def set_next_dispatch_round_start_with(self, para: int | None) -> None:
        self.txn.set_value(NS_NEXT_DISPATCH_ROUND_START_WITH, None if para is None else encode_u32(para))

    # -- DMP --------------------------------------------------------------------------------------
    def downward_message_queue(self, para: int) -> list[InboundDownwardMessage]:
        return self._get_list(NS_DOWNWARD_MESSAGE_QUEUES, _para_key(para), InboundDownwardMessage.read)

    def set_downward_message_queue(self, para: int, messages: list[InboundDownwardMessage]) -> None:
        self._put_list(NS_DOWNWARD_MESSAGE_QUEUES, _para_key(para), messages, InboundDownwardMessage.encode)

    def downward_message_queue_head(self, para: int) -> bytes | None:
        return self.txn.get(NS_DOWNWARD_MESSAGE_QUEUE_HEADS, _para_key(para))

    def set_downward_message_queue_head(self, para: int, head: bytes | None) -> None:
        if head is None:
            self.txn.delete(NS_DOWNWARD_MESSAGE_QUEUE_HEADS, _para_key(para))
        else:
            self.txn.put(NS_DOWNWARD_MESSAGE_QUEUE_HEADS, _para_key(para), head)

    # -- HRMP requests ------------------------------------------------------------------------------
    def open_request(self, channel: HrmpChannelId) -> HrmpOpenChannelRequest | None:
        data = self.txn.get(NS_HRMP_OPEN_CHANNEL_REQUESTS, channel.encode())
        return None if data is None else HrmpOpenChannelRequest.decode(data)

    def set_open_request(self, channel: HrmpChannelId, request: HrmpOpenChannelRequest | None) -> None:
        if request is None:
            self.txn.delete(NS_HRMP_OPEN_CHANNEL_REQUESTS, channel.encode())
        else:
            self.txn.put(NS_HRMP_OPEN_CHANNEL_REQUESTS, channel.encode(), request.encode())

    def open_requests_list(self) -> list[HrmpChannelId]:
        return self._get_list(NS_HRMP_OPEN_CHANNEL_REQUESTS_LIST, VALUE_KEY, _read_channel_id)

    def set_open_requests_list(self, channels: list[HrmpChannelId]) -> None:
        self._put_list(NS_HRMP_OPEN_CHANNEL_REQUESTS_LIST, VALUE_KEY, channels, _encode_channel_id)

    def open_request_count(self, para: int) -> int:
        return self._get_u32(NS_HRMP_OPEN_CHANNEL_REQUEST_COUNT, _para_key(para))

    def set_open_request_count(self, para: int, count: int) -> None:
        self._put_u32(NS_HRMP_OPEN_CHANNEL_REQUEST_COUNT, _para_key(para), count)

    def accepted_request_count(self, para: int) -> int:
        return self._get_u32(NS_HRMP_ACCEPTED_CHANNEL_REQUEST_COUNT, _para_key(para))

    def set_accepted_request_count(self, para: int, count: int) -> None:
        self._put_u32(NS_HRMP_ACCEPTED_CHANNEL_REQUEST_COUNT, _para_key(para), count)

    def has_close_request(self, channel: HrmpChannelId) -> bool:
        return self.txn.contains(NS_HRMP_CLOSE_CHANNEL_REQUESTS, channel.encode())

    def set_close_request(self, channel: HrmpChannelId, present: bool) -> None:
        if present:
            self.txn.put(NS_HRMP_CLOSE_CHANNEL_REQUESTS, channel.encode(), b"")
        else:
            self.txn.delete(NS_HRMP_CLOSE_CHANNEL_REQUESTS, channel.encode())

    def close_requests_list(self) -> list[HrmpChannelId]:
        return self._get_list(NS_HRMP_CLOSE_CHANNEL_REQUESTS_LIST, VALUE_KEY, _read_channel_id)

    def set_close_requests_list(self, channels: list[HrmpChannelId]) -> None:
        self._put_list(NS_HRMP_CLOSE_CHANNEL_REQUESTS_LIST, VALUE_KEY, channels, _encode_channel_id)

    # -- HRMP channels --------------------------------------------------------------------------------
    def watermark(self, para: int) -> int | None:
        data = self.txn.get(NS_HRMP_WATERMARKS, _para_key(para))
        return None if data is None else _decode(data, _read_u32)

    def set_watermark(self, para: int, block: int | None) -> None:
        if block is None:
            self.txn.delete(NS_HRMP_WATERMARKS, _para_key(para))
        else:
            self.txn.put(NS_HRMP_WATERMARKS, _para_key(para), encode_u32(block))

    def channel(self, channel: HrmpChannelId) -> HrmpChannel | None:
        data = self.txn.get(NS_HRMP_CHANNELS, channel.encode())
        return None if data is None else HrmpChannel.decode(data)

    def set_channel(self, channel: HrmpChannelId, value: HrmpChannel | None) -> None:
        if value is None:
            self.txn.delete(NS_HRMP_CHANNELS, channel.encode())
        else:
            self.txn.put(NS_HRMP_CHANNELS, channel.encode(), value.encode())

    def ingress_index(self, para: int) -> list[int]:
        """The senders of the channels into ``para``, ascending."""
        return self._get_list(NS_HRMP_INGRESS_CHANNELS_INDEX, _para_key(para), _read_u32)

    def set_ingress_index(self, para: int, senders: list[int]) -> None:
        self._put_list(NS_HRMP_INGRESS_CHANNELS_INDEX, _para_key(para), senders, encode_u32)

    def egress_index(self, para: int) -> list[int]:
        """The recipients of the channels out of ``para``, ascending."""
        return self._get_list(NS_HRMP_EGRESS_CHANNELS_INDEX, _para_key(para), _read_u32)

    def set_egress_index(self, para: int, recipients: list[int]) -> None:
        self._put_list(NS_HRMP_EGRESS_CHANNELS_INDEX, _para_key(para), recipients, encode_u32)

    def channel_contents(self, channel: HrmpChannelId) -> list[InboundHrmpMessage]:
        return self._get_list(NS_HRMP_CHANNEL_CONTENTS, channel.encode(), InboundHrmpMessage.read)

    def set_channel_contents(self, channel: HrmpChannelId, messages: list[InboundHrmpMessage]) -> None:
        self._put_list(NS_HRMP_CHANNEL_CONTENTS, channel.encode(), messages, InboundHrmpMessage.encode)

    def channel_digests(self, para: int) -> list[Digest]:
        return self._get_list(NS_HRMP_CHANNEL_DIGESTS, _para_key(para), _read_digest)

    def set_channel_digests(self, para: int, digests: list[Digest]) -> None:
        self._put_list(NS_HRMP_CHANNEL_DIGESTS, _para_key(para), digests, _encode_digest)
