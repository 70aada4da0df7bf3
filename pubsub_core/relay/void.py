"""The void order: the block author's signed statement that positions a waiting block includes will never be
filled, so the block applies without them (docs/operations.md, "A stalled realm").

It travels on ``<realm>.blocks`` like a header, in an envelope signed by an author key of the genesis, and spends
the author's seqno as a header does. Its bytes start with ``VOID_TAG``, whose first four bytes read as block
number 2^32-1 to a header decoder: that number is reserved, so a header and a void order never share bytes.

Wire form (SCALE): ``VOID_TAG ‖ block u32 ‖ Vec<(stream String, origin String, first u64, last u64)>``, the
ranges sorted, disjoint and non-empty, at most ``MAX_VOID_POSITIONS`` positions in all.
"""

from __future__ import annotations

from dataclasses import dataclass

from pubsub_core.codec.scale import ScaleDecodeError, ScaleReader, encode_bytes, encode_compact, encode_u32, encode_u64
from pubsub_core.relay.records import HeaderDecodeError

__all__ = ["MAX_VOID_POSITIONS", "VOID_STREAMS", "VOID_TAG", "VoidDecodeError", "VoidOrder", "is_void"]

VOID_TAG = b"\xff\xff\xff\xffVOID"
"""The first bytes of every void order (block number 2^32-1 is reserved for it)."""

MAX_VOID_POSITIONS = 4096
"""Positions one void order may name in all: each becomes one ``Voided`` outcome record, so the work is bounded."""

VOID_STREAMS = ("upward", "horizontal", "extrinsics")
"""Streams whose positions a void order may name: those a manifest includes records of."""


class VoidDecodeError(HeaderDecodeError):
    """Bytes that start as a void order but are not a well-formed one; reason code ``MalformedVoid``."""

    def __init__(self, message: str, data: bytes) -> None:
        super().__init__(message, data)
        self.args = (f"not a void order: {message}",)

    @property
    def reason_code(self) -> str:
        return "MalformedVoid"


def is_void(data: bytes) -> bool:
    """Whether the signed bytes of a ``blocks`` envelope are a void order (they start with ``VOID_TAG``)."""
    return data[:len(VOID_TAG)] == VOID_TAG


@dataclass(frozen=True, slots=True)
class VoidOrder:
    """Positions of ``block``'s manifest that are void: filled with nothing. ``ranges`` are (stream, origin, first,
    last), sorted and disjoint."""

    block: int
    ranges: tuple[tuple[str, str, int, int], ...]

    def __post_init__(self) -> None:
        if not self.ranges:
            raise ValueError("a void order names at least one position")
        if list(self.ranges) != sorted(set(self.ranges)):
            raise ValueError("ranges are sorted and unique")
        total = 0
        for index, (stream, origin, first, last) in enumerate(self.ranges):
            if stream not in VOID_STREAMS:
                raise ValueError(f"stream {stream[:40]!r} is not one of {', '.join(VOID_STREAMS)}")
            if not 0 <= first <= last < 1 << 64:
                raise ValueError(f"range {first}..{last} of {stream}/{origin[:40]} is not a u64 range, first <= last")
            if index and self.ranges[index - 1][:2] == (stream, origin) and self.ranges[index - 1][3] >= first:
                raise ValueError(f"ranges of {stream}/{origin[:40]} overlap")
            total += last - first + 1
            if total > MAX_VOID_POSITIONS:
                raise ValueError(f"more than {MAX_VOID_POSITIONS} positions")

    def positions(self) -> list[tuple[str, str, int]]:
        """Every voided (stream, origin, position), in order (at most ``MAX_VOID_POSITIONS``)."""
        return [(s, o, p) for s, o, first, last in self.ranges for p in range(first, last + 1)]

    def encode(self) -> bytes:
        entries = b"".join(encode_bytes(s.encode()) + encode_bytes(o.encode()) + encode_u64(first) + encode_u64(last)
                           for s, o, first, last in self.ranges)
        return VOID_TAG + encode_u32(self.block) + encode_compact(len(self.ranges)) + entries

    @classmethod
    def decode(cls, data: bytes) -> VoidOrder:
        """The order of ``encode``; ``VoidDecodeError`` for anything else, whatever the bytes."""
        if not is_void(data):
            raise VoidDecodeError("it does not start with the void tag", data)
        reader = ScaleReader(data, len(VOID_TAG))
        try:
            block, count = reader.u32(), reader.compact()
            if count > reader.remaining():
                raise VoidDecodeError(f"{count} ranges cannot fit", data)
            ranges = tuple((reader.bytes_vec(256).decode(), reader.bytes_vec(256).decode(), reader.u64(), reader.u64())
                           for _ in range(count))
            reader.finish()
            return cls(block, ranges)
        except (ScaleDecodeError, UnicodeDecodeError, ValueError) as exc:
            raise VoidDecodeError(str(exc), data) from exc

    def to_json(self) -> list[dict[str, object]]:
        """The ranges as ``[{"stream", "origin", "first", "last"}]`` (what health records and outcomes quote)."""
        return [{"stream": s, "origin": o, "first": first, "last": last} for s, o, first, last in self.ranges]
