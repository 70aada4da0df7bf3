"""The Router's input formats: its extrinsic calls (pallet index 1) and the ``horizontal`` record payload.

Calls are SCALE ``RuntimeCall``s, ``1 ‖ call index ‖ arguments``; the HRMP indices follow Polkadot's
``hrmp`` pallet (0 init, 1 accept, 2 close). ``send_downward`` and ``schedule_para_cleanup`` stand in for
the relay-side senders of DMP and for the paras pallet's offboarding. A ``horizontal`` record carries the
rest of a para's candidate commitments: outbound HRMP messages, processed downward messages, watermark.
"""

from __future__ import annotations

from dataclasses import dataclass

from pubsub_core.codec.scale import ScaleDecodeError, ScaleReader, encode_bytes, encode_u32
from pubsub_core.router.errors import RouterError
from pubsub_core.router.records import HrmpChannelId, OutboundHrmpMessage, decode_vec, encode_vec

__all__ = [
    "ROUTER_PALLET",
    "AcceptOpenChannel",
    "CloseChannel",
    "HorizontalRecord",
    "InitOpenChannel",
    "MalformedRouterInput",
    "RouterCall",
    "ScheduleParaCleanup",
    "SendDownward",
    "decode_router_call",
]

ROUTER_PALLET = 1


class MalformedRouterInput(RouterError):
    """A router call or horizontal record that does not decode; carries the bytes."""

    def __init__(self, what: str, detail: str, data: bytes) -> None:
        super().__init__(f"The {what} does not decode: {detail}.")
        self.what = what
        self.detail = detail
        self.data = data


@dataclass(frozen=True, slots=True)
class InitOpenChannel:
    """Call 0, signed by a para: ``hrmp_init_open_channel(recipient, max_places, max_message_size)``."""

    recipient: int
    max_places: int
    max_message_size: int

    def encode(self) -> bytes:
        return bytes((ROUTER_PALLET, 0)) + encode_u32(self.recipient) + encode_u32(self.max_places) + encode_u32(
            self.max_message_size
        )


@dataclass(frozen=True, slots=True)
class AcceptOpenChannel:
    """Call 1, signed by a para: ``hrmp_accept_open_channel(sender)``."""

    sender: int

    def encode(self) -> bytes:
        return bytes((ROUTER_PALLET, 1)) + encode_u32(self.sender)


@dataclass(frozen=True, slots=True)
class CloseChannel:
    """Call 2, signed by a para: ``hrmp_close_channel(channel)``."""

    channel: HrmpChannelId

    def encode(self) -> bytes:
        return bytes((ROUTER_PALLET, 2)) + self.channel.encode()


@dataclass(frozen=True, slots=True)
class SendDownward:
    """Call 3, signed by Root or an account: queue a downward message for ``para``."""

    para: int
    message: bytes

    def encode(self) -> bytes:
        return bytes((ROUTER_PALLET, 3)) + encode_u32(self.para) + encode_bytes(self.message)


@dataclass(frozen=True, slots=True)
class ScheduleParaCleanup:
    """Call 4, signed by Root: offboard ``para`` at the next session change."""

    para: int

    def encode(self) -> bytes:
        return bytes((ROUTER_PALLET, 4)) + encode_u32(self.para)


RouterCall = InitOpenChannel | AcceptOpenChannel | CloseChannel | SendDownward | ScheduleParaCleanup


def _decode_call(reader: ScaleReader) -> RouterCall:
    if reader.u8() != ROUTER_PALLET:
        raise ScaleDecodeError("not a router call", reader.data, 0)
    index = reader.u8()
    if index == 0:
        return InitOpenChannel(reader.u32(), reader.u32(), reader.u32())
    if index == 1:
        return AcceptOpenChannel(reader.u32())
    if index == 2:
        return CloseChannel(HrmpChannelId.read(reader))
    if index == 3:
        return SendDownward(reader.u32(), reader.bytes_vec())
    if index == 4:
        return ScheduleParaCleanup(reader.u32())
    raise ScaleDecodeError(f"unknown router call index {index}", reader.data, 1)


def decode_router_call(data: bytes) -> RouterCall:
    """Decode a whole router call, or raise ``MalformedRouterInput``."""
    reader = ScaleReader(data)
    try:
        call = _decode_call(reader)
        reader.finish()
    except ScaleDecodeError as exc:
        raise MalformedRouterInput("router call", str(exc), data) from exc
    return call


def _read_outbound(reader: ScaleReader) -> OutboundHrmpMessage:
    return OutboundHrmpMessage(reader.u32(), reader.bytes_vec())


def _encode_outbound(message: OutboundHrmpMessage) -> bytes:
    return encode_u32(message.recipient) + encode_bytes(message.data)


@dataclass(frozen=True, slots=True)
class HorizontalRecord:
    """One ``horizontal`` record of a para: ``Vec<OutboundHrmpMessage>``, processed downward messages (u32)
    and the new HRMP watermark (u32), the non-upward part of a candidate's commitments."""

    horizontal_messages: tuple[OutboundHrmpMessage, ...] = ()
    processed_downward_messages: int = 0
    hrmp_watermark: int = 0

    def encode(self) -> bytes:
        return (
            encode_vec(self.horizontal_messages, _encode_outbound)
            + encode_u32(self.processed_downward_messages)
            + encode_u32(self.hrmp_watermark)
        )

    @staticmethod
    def decode(data: bytes) -> HorizontalRecord:
        """Decode a whole record, or raise ``MalformedRouterInput``."""
        reader = ScaleReader(data)
        try:
            record = HorizontalRecord(tuple(decode_vec(reader, _read_outbound)), reader.u32(), reader.u32())
            reader.finish()
        except ScaleDecodeError as exc:
            raise MalformedRouterInput("horizontal record", str(exc), data) from exc
        return record
