"""Pub-sub SCALE types shared by the relay (broadcaster) and the subscriber, byte-identical to polkadot-sdk.

``PublishedEntry`` is the child-trie value a publisher's key maps to; ``TtlState`` is what a subscriber's
``on_data_updated`` receives; ``SubscribedKey`` is a 32-byte key as subscribers name it. Layouts follow
the reference code's ``polkadot_runtime_parachains::broadcaster`` and ``pallet-subscriber`` (docs/design.md, "Sources").
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from pubsub_core.codec.scale import ScaleDecodeError, ScaleReader, encode_bytes, encode_u32, encode_u64, encode_u128
from pubsub_core.hashing import blake2_256

__all__ = [
    "KEY_LEN",
    "PublishedEntry",
    "PublisherInfo",
    "SubscribedKey",
    "TtlKind",
    "TtlState",
    "U32_MAX",
]

KEY_LEN = 32
"""Published keys are 32 bytes: publishers hash logical names before publishing (the pub-sub design, "Decision 1: Fixed
32-byte Keys")."""

U32_MAX = (1 << 32) - 1


def _check_width(width: int) -> None:
    if width not in (4, 8):
        raise ValueError(f"block numbers are u32 (relay) or u64 (some parachains), not {width} bytes")


@dataclass(frozen=True, slots=True)
class PublishedEntry:
    """The value stored under a key in a publisher's child trie: ``{value: Vec<u8>, ttl: u32, when_inserted}``.

    ``ttl == 0`` means infinite. ``when_inserted`` is a relay block number: u32 on the relay chain, so
    ``block_number_width`` is 4 by default; 8 decodes a u64 ``BlockNumber`` as the reference subscriber mock does.
    """

    value: bytes
    ttl: int
    when_inserted: int

    # Explicit, not generated: compiled (setup.py), it is native code; the dataclass's own stays interpreted.
    def __init__(self, value: bytes, ttl: int, when_inserted: int) -> None:
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "ttl", ttl)
        object.__setattr__(self, "when_inserted", when_inserted)
        self.__post_init__()

    def __post_init__(self) -> None:
        if not 0 <= self.ttl <= U32_MAX:
            raise ValueError(f"ttl {self.ttl} does not fit in u32")
        if self.when_inserted < 0:
            raise ValueError(f"when_inserted {self.when_inserted} is negative")

    @property
    def is_infinite(self) -> bool:
        return self.ttl == 0

    def expires_at(self) -> int | None:
        """The first block at which the entry is expired (saturating at u32::MAX), None for infinite TTL."""
        if self.ttl == 0:
            return None
        return min(self.when_inserted + self.ttl, U32_MAX)

    def encode(self, block_number_width: int = 4) -> bytes:
        """SCALE: compact(len) ‖ value ‖ u32_le(ttl) ‖ when_inserted (u32 or u64 little-endian)."""
        _check_width(block_number_width)
        number = encode_u32(self.when_inserted) if block_number_width == 4 else encode_u64(self.when_inserted)
        return encode_bytes(self.value) + encode_u32(self.ttl) + number

    @classmethod
    def decode(cls, data: bytes, block_number_width: int = 4, max_value_len: int | None = None) -> PublishedEntry:
        """Decode a whole entry (no trailing bytes); raise ScaleDecodeError on anything else."""
        _check_width(block_number_width)
        reader = ScaleReader(data)
        value = reader.bytes_vec(max_value_len)
        ttl = reader.u32()
        when = reader.u32() if block_number_width == 4 else reader.u64()
        reader.finish()
        return cls(value, ttl, when)


class TtlKind(Enum):
    """Variant of ``TtlState`` with its SCALE index."""

    INFINITE = 0
    VALID_FOR = 1
    TIMED_OUT = 2


@dataclass(frozen=True, slots=True)
class TtlState:
    """``enum TtlState { Infinite, ValidFor(u32), TimedOut }``: an entry's freshness as a subscriber sees it."""

    kind: TtlKind
    remaining: int = 0

    def __post_init__(self) -> None:
        if self.kind is TtlKind.VALID_FOR:
            if not 1 <= self.remaining <= U32_MAX:
                raise ValueError(f"ValidFor needs 1..u32::MAX remaining blocks, got {self.remaining}")
        elif self.remaining != 0:
            raise ValueError(f"{self.kind.name} carries no remaining blocks, got {self.remaining}")

    @classmethod
    def infinite(cls) -> TtlState:
        return cls(TtlKind.INFINITE)

    @classmethod
    def valid_for(cls, remaining: int) -> TtlState:
        return cls(TtlKind.VALID_FOR, remaining)

    @classmethod
    def timed_out(cls) -> TtlState:
        return cls(TtlKind.TIMED_OUT)

    @classmethod
    def compute(cls, ttl: int, when_inserted: int, now: int) -> TtlState:
        """The reference's ``compute_ttl_state``: expired when ``now >= when_inserted + ttl`` (saturating)."""
        if ttl == 0:
            return cls.infinite()
        expires = when_inserted + ttl
        if now >= expires:
            return cls.timed_out()
        return cls.valid_for(min(expires - now, U32_MAX))

    def encode(self) -> bytes:
        """SCALE: 0x00 | 0x01 ‖ u32_le(remaining) | 0x02."""
        if self.kind is TtlKind.VALID_FOR:
            return b"\x01" + encode_u32(self.remaining)
        return bytes((self.kind.value,))

    @classmethod
    def decode(cls, data: bytes) -> TtlState:
        reader = ScaleReader(data)
        index = reader.u8()
        if index == 0:
            state = cls.infinite()
        elif index == 1:
            remaining = reader.u32()
            if remaining == 0:
                raise ScaleDecodeError("TtlState::ValidFor(0) is not a state the pallet produces", data, 1)
            state = cls.valid_for(remaining)
        elif index == 2:
            state = cls.timed_out()
        else:
            raise ScaleDecodeError(f"TtlState has no variant {index}", data, 0)
        reader.finish()
        return state


@dataclass(frozen=True, slots=True)
class SubscribedKey:
    """``SubscribedKey(H256)``: a 32-byte published key; encodes as the 32 raw bytes."""

    hash: bytes

    # Explicit, not generated: compiled (setup.py), it is native code; the dataclass's own stays interpreted.
    def __init__(self, hash: bytes) -> None:
        object.__setattr__(self, "hash", hash)
        self.__post_init__()

    def __post_init__(self) -> None:
        if len(self.hash) != KEY_LEN:
            raise ValueError(f"a SubscribedKey is {KEY_LEN} bytes, got {len(self.hash)}")

    @classmethod
    def from_hash(cls, hash_bytes: bytes) -> SubscribedKey:
        """Use a pre-computed 32-byte hash as-is."""
        return cls(bytes(hash_bytes))

    @classmethod
    def from_data(cls, data: bytes) -> SubscribedKey:
        """Hash arbitrary bytes with Blake2-256 (``SubscribedKey::from_data``; also ``subscribed_key!``)."""
        return cls(blake2_256(data))

    def as_bytes(self) -> bytes:
        return self.hash

    def encode(self) -> bytes:
        return self.hash

    @classmethod
    def decode(cls, data: bytes) -> SubscribedKey:
        reader = ScaleReader(data)
        key = reader.take(KEY_LEN)
        reader.finish()
        return cls(key)


@dataclass(frozen=True, slots=True)
class PublisherInfo:
    """``PublisherInfo<AccountId32, u128> { manager, deposit }``: a registered publisher's manager and held deposit."""

    manager: bytes
    deposit: int

    def __post_init__(self) -> None:
        if len(self.manager) != 32:
            raise ValueError(f"an account id is 32 bytes, got {len(self.manager)}")
        if not 0 <= self.deposit < 1 << 128:
            raise ValueError(f"deposit {self.deposit} does not fit in u128")

    def encode(self) -> bytes:
        return self.manager + encode_u128(self.deposit)

    @classmethod
    def decode(cls, data: bytes) -> PublisherInfo:
        reader = ScaleReader(data)
        manager = reader.take(32)
        deposit = reader.u128()
        reader.finish()
        return cls(manager, deposit)
