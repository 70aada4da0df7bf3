"""Extrinsic calls as SCALE ``RuntimeCall``s: ``pallet index u8 ‖ call index u8 ‖ arguments``.

Pallet 0 is the broadcaster (call indices as in the reference code), pallet 1 the router (HRMP channel
calls and downward messages, decoded by the router), pallet 2 the subscriber (forwarded to the subscriber
stage). ``ParaId`` is a u32, accounts and keys 32 raw bytes, deposits u128.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from pubsub_core.codec.scale import ScaleDecodeError, ScaleReader, encode_compact, encode_u32, encode_u128
from pubsub_core.codec.types import KEY_LEN
from pubsub_core.errors import PubSubError
from pubsub_core.pallets import BROADCASTER, ROUTER, SUBSCRIBER

__all__ = ["BROADCASTER", "BroadcasterCall", "CallKind", "ROUTER", "RelayCallError", "SUBSCRIBER", "split_call"]

MAX_KEYS_PER_CALL = 1024


class RelayCallError(PubSubError):
    """An extrinsic that is not a call we know; reason code ``Malformed``."""

    def __init__(self, message: str, data: bytes) -> None:
        super().__init__(f"undecodable call: {message}")
        self.data = data

    @property
    def reason_code(self) -> str:
        return "Malformed"


class CallKind(Enum):
    """The broadcaster's calls with their call index."""

    REGISTER_PUBLISHER = 0
    FORCE_REGISTER_PUBLISHER = 1
    CLEANUP_PUBLISHED_DATA = 2
    DEREGISTER_PUBLISHER = 3
    FORCE_DEREGISTER_PUBLISHER = 4
    DELETE_KEYS = 5
    FORCE_DELETE_KEYS = 6

    @property
    def needs_root(self) -> bool:
        return self in (CallKind.FORCE_REGISTER_PUBLISHER, CallKind.FORCE_DEREGISTER_PUBLISHER, CallKind.FORCE_DELETE_KEYS)


@dataclass(frozen=True, slots=True)
class BroadcasterCall:
    """One broadcaster call; ``manager``/``deposit`` only for force_register, ``keys`` only for the deletes."""

    kind: CallKind
    para_id: int
    manager: bytes = b""
    deposit: int = 0
    keys: tuple[bytes, ...] = ()

    def encode(self) -> bytes:
        out = bytes((BROADCASTER, self.kind.value))
        if self.kind is CallKind.FORCE_REGISTER_PUBLISHER:
            out += self.manager + encode_u128(self.deposit)
        out += encode_u32(self.para_id)
        if self.kind in (CallKind.DELETE_KEYS, CallKind.FORCE_DELETE_KEYS):
            out += encode_compact(len(self.keys)) + b"".join(self.keys)
        return out

    @classmethod
    def decode(cls, data: bytes) -> BroadcasterCall:
        reader = ScaleReader(data)
        try:
            if reader.u8() != BROADCASTER:
                raise RelayCallError("not a broadcaster call", data)
            try:
                kind = CallKind(reader.u8())
            except ValueError as exc:
                raise RelayCallError("unknown broadcaster call index", data) from exc
            manager, deposit = b"", 0
            keys: tuple[bytes, ...] = ()
            if kind is CallKind.FORCE_REGISTER_PUBLISHER:
                manager, deposit = reader.take(32), reader.u128()
            para_id = reader.u32()
            if kind in (CallKind.DELETE_KEYS, CallKind.FORCE_DELETE_KEYS):
                count = reader.compact()
                if count > MAX_KEYS_PER_CALL:
                    raise RelayCallError(f"{count} keys exceed {MAX_KEYS_PER_CALL} per call", data)
                keys = tuple(reader.take(KEY_LEN) for _ in range(count))
            reader.finish()
        except ScaleDecodeError as exc:
            raise RelayCallError(str(exc), data) from exc
        return cls(kind, para_id, manager, deposit, keys)


def split_call(data: bytes) -> int:
    """The pallet index of a call; ``RelayCallError`` for an empty call or an unknown pallet."""
    if not data or data[0] not in (BROADCASTER, ROUTER, SUBSCRIBER):
        raise RelayCallError("no such pallet", data)
    return data[0]
