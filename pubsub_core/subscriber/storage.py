"""Storage layout of the subscriber pallet over a StateTransaction (namespaced bytes -> bytes).

| namespace | key | value |
|---|---|---|
| ``subscriber.roots`` | u32 para | PreviousPublishedDataRoots: child root every subscribed key was processed at |
| ``subscriber.disabled`` | u32 para | DisabledPublishers: DisableReason (0 = TrieDepthExceeded) |
| ``subscriber.cursor`` | (value) | RelayProofProcessingCursor: u32 para ‖ 32-byte key |
| ``subscriber.known`` | u32 para | Blake2-256 of the key set last processed (change detection) |
| ``subscriber.progress`` | u32 para | new child root ‖ bitmap of the keys (ascending) already processed at it |
| ``subscriber.declared`` | u32 para | subscriptions declared by ``set_subscriptions`` (the stored handler) |
| ``subscriber.keys.<para>`` | key | KeyState: path at the root the key was processed at (or cleared), and its last entry |
| ``subscriber.cache.<para>`` | node hash | CachedTrieNodes: encoded structure node (never a value node) |
| ``subscriber.refs.<para>`` | node hash | u32: how many subscribed keys' paths use the cached node |

Para ids are u32 big-endian in keys so that scans sort numerically.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from pubsub_core.codec.scale import ScaleReader, encode_compact, encode_u32
from state import VALUE_KEY

__all__ = [
    "CURSOR",
    "DECLARED",
    "DISABLED",
    "EntryDigest",
    "KNOWN",
    "KeyState",
    "PROGRESS",
    "PathStep",
    "ROOTS",
    "VALUE_KEY",
    "cache_ns",
    "decode_cursor",
    "decode_keys",
    "encode_cursor",
    "encode_keys",
    "keys_ns",
    "para_key",
    "refs_ns",
]

ROOTS = "subscriber.roots"
DISABLED = "subscriber.disabled"
CURSOR = "subscriber.cursor"
KNOWN = "subscriber.known"
PROGRESS = "subscriber.progress"
DECLARED = "subscriber.declared"


def keys_ns(para: int) -> str:
    return f"subscriber.keys.{para}"


def cache_ns(para: int) -> str:
    return f"subscriber.cache.{para}"


def refs_ns(para: int) -> str:
    return f"subscriber.refs.{para}"


def para_key(para: int) -> bytes:
    return para.to_bytes(4, "big")


def encode_cursor(para: int, key: bytes) -> bytes:
    return encode_u32(para) + key


def decode_cursor(data: bytes) -> tuple[int, bytes]:
    reader = ScaleReader(data)
    para = reader.u32()
    key = reader.take(32)
    reader.finish()
    return para, key


def encode_keys(keys: list[bytes]) -> bytes:
    """A sorted key set: compact(n) ‖ n × 32 bytes."""
    return encode_compact(len(keys)) + b"".join(keys)


def decode_keys(data: bytes) -> list[bytes]:
    reader = ScaleReader(data)
    count = reader.compact()
    keys = [reader.take(32) for _ in range(count)]
    reader.finish()
    return keys


@dataclass(frozen=True, slots=True)
class PathStep:
    """One node on a key's lookup path: its hash, the nibble offset it starts at, and whether it is inline."""

    node_hash: bytes
    offset: int
    inline: bool

    # Explicit, not generated: compiled (setup.py), it is native code; the dataclass's own stays interpreted.
    def __init__(self, node_hash: bytes, offset: int, inline: bool) -> None:
        object.__setattr__(self, "node_hash", node_hash)
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "inline", inline)


@dataclass(frozen=True, slots=True)
class EntryDigest:
    """What the subscriber last delivered for a key: Blake2-256 of the SCALE PublishedEntry and its TTL fields."""

    entry_hash: bytes
    ttl: int
    when_inserted: int

    # Explicit, not generated: compiled (setup.py), it is native code; the dataclass's own stays interpreted.
    def __init__(self, entry_hash: bytes, ttl: int, when_inserted: int) -> None:
        object.__setattr__(self, "entry_hash", entry_hash)
        object.__setattr__(self, "ttl", ttl)
        object.__setattr__(self, "when_inserted", when_inserted)


@dataclass(frozen=True, slots=True)
class KeyState:
    """Per subscribed key: its lookup path at the child root it was last processed at (the path's first node;
    an empty path means the empty trie), and the last delivered entry (None: absent or never delivered).

    ``recorded`` is False after a cache clear: the path is forgotten (the next walk reads it in full) while the
    last delivered entry is kept, so nothing is delivered twice and a removal meanwhile is still reported.
    """

    path: tuple[PathStep, ...]
    entry: EntryDigest | None
    recorded: bool = True

    # Explicit, not generated: compiled (setup.py), it is native code; the dataclass's own stays interpreted.
    def __init__(self, path: tuple[PathStep, ...], entry: EntryDigest | None, recorded: bool = True) -> None:
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "entry", entry)
        object.__setattr__(self, "recorded", recorded)

    def root(self, empty_root: bytes) -> bytes | None:
        """The child root this key was processed at, None when its path was cleared."""
        if not self.recorded:
            return None
        return self.path[0].node_hash if self.path else empty_root

    def cleared(self) -> KeyState:
        return KeyState((), self.entry, recorded=False)

    def encode(self) -> bytes:
        """u8 recorded ‖ compact(n) ‖ n × (hash ‖ u8 offset·2+inline) ‖ option(entry hash ‖ u32 ttl ‖ u32 when)."""
        parts = [b"\x01" if self.recorded else b"\x00", encode_compact(len(self.path))]
        for step in self.path:
            parts += (step.node_hash, _STEP_TAIL[step.offset << 1 | step.inline])
        entry = self.entry
        if entry is None:
            parts.append(b"\x00")
        else:
            parts += (b"\x01", entry.entry_hash, _U32.pack(entry.ttl), _U32.pack(entry.when_inserted))
        return b"".join(parts)

    @classmethod
    def decode(cls, data: bytes) -> KeyState:
        """Inverse of ``encode``. Every processed key decodes its state once per run, so the usual form
        (a one-byte count, a 0 or 1 flag and option byte) is sliced by hand instead of through ScaleReader
        (docs/benchmarks.md, "Measured code choices"); anything else takes the reader, so malformed bytes fail as
        before."""
        size = len(data)
        if size >= 3 and data[0] <= 1 and not data[1] & 3:
            end = 2 + 33 * (data[1] >> 2)
            if size == end + 1 and data[end] == 0 or size == end + 41 and data[end] == 1:
                path = tuple([PathStep(data[at : at + 32], data[at + 32] >> 1, data[at + 32] & 1 == 1)
                              for at in range(2, end, 33)])
                entry = None
                if data[end] == 1:
                    ttl, when = _U32_PAIR.unpack_from(data, end + 33)
                    entry = EntryDigest(data[end + 1 : end + 33], ttl, when)
                return cls(path, entry, data[0] == 1)
        return cls._decode_with_reader(data)

    @classmethod
    def _decode_with_reader(cls, data: bytes) -> KeyState:
        reader = ScaleReader(data)
        recorded = reader.u8() == 1
        count = reader.compact()
        path = []
        for _ in range(count):
            node_hash = reader.take(32)
            packed = reader.u8()
            path.append(PathStep(node_hash, packed >> 1, bool(packed & 1)))
        entry = None
        if reader.u8() == 1:
            entry = EntryDigest(reader.take(32), reader.u32(), reader.u32())
        reader.finish()
        return cls(tuple(path), entry, recorded)


_U32 = struct.Struct("<I")
_U32_PAIR = struct.Struct("<II")
_STEP_TAIL = [bytes((packed,)) for packed in range(256)]
"""The byte after a path step's hash, by value (offset·2 + inline)."""

