"""The Router's records as frozen dataclasses, each with its SCALE encoding (as polkadot-sdk lays them out).

The HRMP request record adds two fields to the Router Module's struct: ``limit_message_size`` (the Router
Module sets it in hrmp_init_open_channel, and Polkadot stores it as ``max_message_size``) and
``recipient_deposit`` (the amount actually reserved on acceptance, so refunds match reserves even if the config
changes in between).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pubsub_core.codec.scale import ScaleReader, encode_bytes, encode_compact, encode_u8, encode_u32, encode_u128
from pubsub_core.hashing import blake2_256

__all__ = [
    "ZERO_HASH",
    "CandidateCommitments",
    "HrmpChannel",
    "HrmpChannelId",
    "HrmpOpenChannelRequest",
    "InboundDownwardMessage",
    "InboundHrmpMessage",
    "OutboundHrmpMessage",
    "decode_vec",
    "encode_vec",
    "mqc_extend",
]

ZERO_HASH = bytes(32)
"""The MQC head of a queue that never received a message."""

T = TypeVar("T")


def encode_vec(items: Sequence[T], encode_item: Callable[[T], bytes]) -> bytes:
    """A SCALE ``Vec<T>``: compact length, then each item."""
    return encode_compact(len(items)) + b"".join(encode_item(item) for item in items)


def decode_vec(reader: ScaleReader, decode_item: Callable[[ScaleReader], T]) -> list[T]:
    """Read a SCALE ``Vec<T>`` from ``reader``."""
    return [decode_item(reader) for _ in range(reader.compact())]


def mqc_extend(prev_head: bytes, sent_at: int, message: bytes) -> bytes:
    """One link of a message queue chain, as polkadot's MessageQueueChain::extend_{downward,hrmp}.

    head = blake2_256(SCALE(prev_head, sent_at: u32, blake2_256(SCALE(message: Vec<u8>)))); the message hash
    is ``BlakeTwo256::hash_of(&msg)``, which hashes the SCALE encoding, compact length prefix included.
    """
    return blake2_256(prev_head + encode_u32(sent_at) + blake2_256(encode_bytes(message)))


@dataclass(frozen=True, slots=True, order=True)
class HrmpChannelId:
    """A unidirectional HRMP channel designator (sender, recipient); orders like Polkadot's (sender, recipient)."""

    sender: int
    recipient: int

    def encode(self) -> bytes:
        return encode_u32(self.sender) + encode_u32(self.recipient)

    @staticmethod
    def read(reader: ScaleReader) -> HrmpChannelId:
        return HrmpChannelId(reader.u32(), reader.u32())

    def is_participant(self, para: int) -> bool:
        """Whether ``para`` is either end of the channel."""
        return para in (self.sender, self.recipient)


@dataclass(frozen=True, slots=True)
class InboundDownwardMessage:
    """A downward message as stored in a para's queue: the relay block it was sent at, and its bytes."""

    sent_at: int
    msg: bytes

    def encode(self) -> bytes:
        return encode_u32(self.sent_at) + encode_bytes(self.msg)

    @staticmethod
    def read(reader: ScaleReader) -> InboundDownwardMessage:
        return InboundDownwardMessage(reader.u32(), reader.bytes_vec())


@dataclass(frozen=True, slots=True)
class InboundHrmpMessage:
    """A horizontal message as stored in a channel: the relay block it was sent at, and its bytes."""

    sent_at: int
    data: bytes

    def encode(self) -> bytes:
        return encode_u32(self.sent_at) + encode_bytes(self.data)

    @staticmethod
    def read(reader: ScaleReader) -> InboundHrmpMessage:
        return InboundHrmpMessage(reader.u32(), reader.bytes_vec())


@dataclass(frozen=True, slots=True)
class OutboundHrmpMessage:
    """A horizontal message as a candidate commits it: the recipient para and the bytes."""

    recipient: int
    data: bytes


@dataclass(frozen=True, slots=True)
class HrmpOpenChannelRequest:
    """A pending request to open an HRMP channel (the Router Module's HrmpOpenChannelRequest, plus two fields)."""

    confirmed: bool
    age: int
    sender_deposit: int
    limit_used_places: int
    limit_used_bytes: int
    limit_message_size: int
    recipient_deposit: int

    def encode(self) -> bytes:
        return (
            encode_u8(1 if self.confirmed else 0)
            + encode_u32(self.age)
            + encode_u128(self.sender_deposit)
            + encode_u32(self.limit_used_places)
            + encode_u32(self.limit_used_bytes)
            + encode_u32(self.limit_message_size)
            + encode_u128(self.recipient_deposit)
        )

    @staticmethod
    def decode(data: bytes) -> HrmpOpenChannelRequest:
        reader = ScaleReader(data)
        request = HrmpOpenChannelRequest(
            reader.u8() == 1, reader.u32(), reader.u128(), reader.u32(), reader.u32(), reader.u32(), reader.u128()
        )
        reader.finish()
        return request


@dataclass(frozen=True, slots=True)
class HrmpChannel:
    """An open HRMP channel: deposits, limits, current use and the head of its message queue chain.

    Invariant: used_places <= limit_used_places and used_bytes <= limit_used_bytes.
    """

    sender_deposit: int
    recipient_deposit: int
    limit_used_places: int
    limit_used_bytes: int
    limit_message_size: int
    used_places: int
    used_bytes: int
    mqc_head: bytes

    def encode(self) -> bytes:
        return (
            encode_u128(self.sender_deposit)
            + encode_u128(self.recipient_deposit)
            + encode_u32(self.limit_used_places)
            + encode_u32(self.limit_used_bytes)
            + encode_u32(self.limit_message_size)
            + encode_u32(self.used_places)
            + encode_u32(self.used_bytes)
            + self.mqc_head
        )

    @staticmethod
    def decode(data: bytes) -> HrmpChannel:
        reader = ScaleReader(data)
        channel = HrmpChannel(
            reader.u128(),
            reader.u128(),
            reader.u32(),
            reader.u32(),
            reader.u32(),
            reader.u32(),
            reader.u32(),
            reader.take(32),
        )
        reader.finish()
        return channel


@dataclass(frozen=True, slots=True)
class CandidateCommitments:
    """The messaging part of a candidate's commitments that the Router checks and enacts.

    ``hrmp_watermark`` is the relay block number up to which the para processed its inbound HRMP messages.
    """

    upward_messages: tuple[bytes, ...] = ()
    horizontal_messages: tuple[OutboundHrmpMessage, ...] = ()
    processed_downward_messages: int = 0
    hrmp_watermark: int = 0
