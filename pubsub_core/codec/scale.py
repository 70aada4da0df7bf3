"""SCALE primitives (compact integers, fixed-width little-endian integers, byte vectors).

Written by hand because they sit on the hottest paths (every trie node header and every stored
entry); scalecodec's generic objects cost microseconds per call where these cost nanoseconds.
"""

from __future__ import annotations

from pubsub_core.errors import PubSubError

__all__ = [
    "ScaleDecodeError",
    "ScaleReader",
    "decode_compact",
    "encode_bytes",
    "encode_compact",
    "encode_u8",
    "encode_u16",
    "encode_u32",
    "encode_u64",
    "encode_u128",
]



class ScaleDecodeError(PubSubError):
    """Bytes that are not a valid SCALE encoding of the expected type."""

    def __init__(self, message: str, data: bytes = b"", offset: int = 0) -> None:
        super().__init__(f"{message} (at offset {offset} of {len(data)} bytes)")
        self.data = data
        self.offset = offset


def encode_compact(value: int) -> bytes:
    """SCALE compact encoding of an unsigned integer (single-byte, two-byte, four-byte or big-integer mode)."""
    if value < 0:
        raise ValueError(f"compact integers are unsigned, got {value}")
    if value < 1 << 6:
        return bytes((value << 2,))
    if value < 1 << 14:
        return ((value << 2) | 0b01).to_bytes(2, "little")
    if value < 1 << 30:
        return ((value << 2) | 0b10).to_bytes(4, "little")
    length = (value.bit_length() + 7) // 8
    if length > 67:
        raise ValueError(f"integer too large for compact encoding: {value}")
    return bytes((((length - 4) << 2) | 0b11,)) + value.to_bytes(length, "little")


def decode_compact(data: bytes, offset: int = 0) -> tuple[int, int]:
    """Decode a compact integer at ``offset``; return (value, offset after it). Rejects non-canonical forms."""
    if offset >= len(data):
        raise ScaleDecodeError("compact integer: no bytes left", data, offset)
    first = data[offset]
    mode = first & 0b11
    if mode == 0b00:
        return first >> 2, offset + 1
    if mode == 0b01:
        if offset + 2 > len(data):
            raise ScaleDecodeError("compact integer: truncated two-byte form", data, offset)
        value = int.from_bytes(data[offset : offset + 2], "little") >> 2
        if value < 1 << 6:
            raise ScaleDecodeError("compact integer: non-canonical two-byte form", data, offset)
        return value, offset + 2
    if mode == 0b10:
        if offset + 4 > len(data):
            raise ScaleDecodeError("compact integer: truncated four-byte form", data, offset)
        value = int.from_bytes(data[offset : offset + 4], "little") >> 2
        if value < 1 << 14:
            raise ScaleDecodeError("compact integer: non-canonical four-byte form", data, offset)
        return value, offset + 4
    length = (first >> 2) + 4
    end = offset + 1 + length
    if end > len(data):
        raise ScaleDecodeError("compact integer: truncated big-integer form", data, offset)
    value = int.from_bytes(data[offset + 1 : end], "little")
    if value < 1 << 30 or data[end - 1] == 0:
        raise ScaleDecodeError("compact integer: non-canonical big-integer form", data, offset)
    return value, end


def _fixed(value: int, width: int) -> bytes:
    if not 0 <= value < 1 << (8 * width):
        raise ValueError(f"{value} does not fit in u{8 * width}")
    return value.to_bytes(width, "little")


def encode_u8(value: int) -> bytes:
    return _fixed(value, 1)


def encode_u16(value: int) -> bytes:
    return _fixed(value, 2)


def encode_u32(value: int) -> bytes:
    return _fixed(value, 4)


def encode_u64(value: int) -> bytes:
    return _fixed(value, 8)


def encode_u128(value: int) -> bytes:
    return _fixed(value, 16)


def encode_bytes(value: bytes) -> bytes:
    """A SCALE ``Vec<u8>``: compact length, then the bytes."""
    return encode_compact(len(value)) + value


class ScaleReader:
    """A cursor over SCALE bytes; every read raises ScaleDecodeError rather than IndexError."""

    __slots__ = ("data", "offset")

    def __init__(self, data: bytes, offset: int = 0) -> None:
        self.data = data
        self.offset = offset

    def remaining(self) -> int:
        return len(self.data) - self.offset

    def take(self, count: int) -> bytes:
        end = self.offset + count
        if count < 0 or end > len(self.data):
            raise ScaleDecodeError(f"wanted {count} bytes, {self.remaining()} left", self.data, self.offset)
        chunk = self.data[self.offset : end]
        self.offset = end
        return chunk

    def u8(self) -> int:
        return self.take(1)[0]

    def u16(self) -> int:
        return int.from_bytes(self.take(2), "little")

    def u32(self) -> int:
        return int.from_bytes(self.take(4), "little")

    def u64(self) -> int:
        return int.from_bytes(self.take(8), "little")

    def u128(self) -> int:
        return int.from_bytes(self.take(16), "little")

    def compact(self) -> int:
        value, self.offset = decode_compact(self.data, self.offset)
        return value

    def bytes_vec(self, max_len: int | None = None) -> bytes:
        length = self.compact()
        if max_len is not None and length > max_len:
            raise ScaleDecodeError(f"byte vector of {length} bytes exceeds the bound {max_len}", self.data, self.offset)
        return self.take(length)

    def finish(self) -> None:
        """Raise unless every byte was consumed (SCALE values are decoded whole, with no trailing bytes)."""
        if self.offset != len(self.data):
            raise ScaleDecodeError(f"{self.remaining()} trailing bytes", self.data, self.offset)
