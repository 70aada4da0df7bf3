"""The seam's wire format: one relay view per record of ``<realm>.relay-views``, written by Stage R, read by Stage S.

    value  = mac || body                     mac: keyed BLAKE2b-256 of body (the job's seam key)
    body   = u8 version || u8 r || release (r bytes, ASCII) || layout      version: SEAM_FORMAT (2)
    layout = u32 m || u32 n || u32 len(node_1) .. u32 len(node_n) || meta (m bytes) || node_1 .. node_n

Version 1 (release 0.1.0) has no version byte: its body is the layout alone, whose first byte, the top byte of
``m``, is always 0 (a record is below 16 MiB). So the body's first byte selects the version: 0 is version 1, 2 is
version 2, anything above is a newer release's record (``FormatTooNewError``: Stage S stops rather than guess), 1
is malformed. Every version from 2 on starts with its version and the release that wrote it, so a reader names
both when it refuses a newer one. Both versions carry the same layout, and a view's digest is that of its layout, so a view replayed
across an upgrade has the digest it had.

``meta`` is the canonical JSON of the view without its nodes (``RelayView.to_json`` with ``nodes: []``); the
integers are big-endian. Binary rather than JSON because the nodes are nearly all of a view: as raw bytes they are
half their hex size, and every byte crosses the worker, the broker, Spark's Kafka source, its shuffle and Arrow
(docs/benchmarks.md, "Measured defaults").
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import struct
from typing import Any

from state.formats import FormatTooNewError

from pubsub_core.relay import canonical_json
from pubsub_core.release import RELEASE
from pubsub_core.stages.errors import SeamRecordError
from pubsub_core.stages.records import RelayView

__all__ = ["MAC_BYTES", "SEAM_FORMAT", "SeamRecordError", "decode_view", "encode_view", "seam_mac", "split_record"]

MAC_BYTES = 32
SEAM_FORMAT = 2
"""The seam record's format version this code writes (the body's first byte)."""
_V1_FIRST_BYTE = 0
"""What a version 1 body (release 0.1.0) starts with: the top byte of its meta length."""
_COUNTS = struct.Struct(">II")


_HEADER = bytes([SEAM_FORMAT, len(RELEASE)]) + RELEASE.encode()
"""What a body this code writes starts with."""


def _layout_start(value: bytes) -> int:
    """Where the layout starts in a seam record's value, by its version (see the module docstring);
    ``FormatTooNewError`` for a version above ``SEAM_FORMAT``."""
    first = value[MAC_BYTES] if len(value) > MAC_BYTES else None
    if first == _V1_FIRST_BYTE:
        return MAC_BYTES
    if first is not None and first >= SEAM_FORMAT and len(value) > MAC_BYTES + 1:
        start = MAC_BYTES + 2 + value[MAC_BYTES + 1]
        if first > SEAM_FORMAT:
            release = value[MAC_BYTES + 2:start].decode("ascii", "replace")
            raise FormatTooNewError("seam record (relay-views)", first, release, SEAM_FORMAT, RELEASE)
        if start <= len(value):
            return start
    raise SeamRecordError("MalformedView", f"a seam record of {len(value)} bytes, version byte {first!r}")


def _layout(value: bytes) -> memoryview:
    """The layout of a seam record's value, whatever its version."""
    return memoryview(value)[_layout_start(value):]


def seam_mac(seam_key: bytes, body: bytes) -> bytes:
    """Keyed BLAKE2b over a record's body: the seam topic is as untrusted as any other, and only the job's Stage R
    holds the key."""
    return hashlib.blake2b(body, key=seam_key, digest_size=MAC_BYTES).digest()


def encode_view(view: RelayView, seam_key: bytes) -> bytes:
    """``view`` as a seam record's value."""
    meta = canonical_json(dataclasses.replace(view, nodes=()).to_json()).encode()
    lengths = struct.pack(f">{len(view.nodes)}I", *map(len, view.nodes))
    body = b"".join((_HEADER, _COUNTS.pack(len(meta), len(view.nodes)), lengths, meta, *view.nodes))
    return seam_mac(seam_key, body) + body


def split_record(value: bytes) -> tuple[dict[str, Any], list[bytes]]:
    """The meta and the nodes of a record's value, its MAC not checked (for readers that only look: the live
    monitor, the benchmark); ``SeamRecordError`` if it has not a seam record's shape."""
    body = _layout(value)
    if len(body) < _COUNTS.size:
        raise SeamRecordError("MalformedView", f"a seam record of {len(value)} bytes")
    meta_length, count = _COUNTS.unpack_from(body)
    start = _COUNTS.size + 4 * count
    if start + meta_length > len(body):
        raise SeamRecordError("MalformedView", f"{count} nodes and {meta_length} bytes of meta in {len(body)}")
    lengths = struct.unpack_from(f">{count}I", body, _COUNTS.size)
    at = start + meta_length
    if at + sum(lengths) != len(body):
        raise SeamRecordError("MalformedView", f"node lengths sum to {sum(lengths)}, {len(body) - at} bytes follow")
    try:
        meta = json.loads(bytes(body[start:at]))
    except (ValueError, RecursionError) as exc:
        raise SeamRecordError("MalformedView", f"meta: {type(exc).__name__}: {exc}") from exc
    if not isinstance(meta, dict):
        raise SeamRecordError("MalformedView", "meta is not a JSON object")
    nodes = []
    for length in lengths:
        nodes.append(bytes(body[at:at + length]))
        at += length
    return meta, nodes


def decode_view(value: bytes, seam_key: bytes) -> tuple[RelayView, bytes]:
    """The view of a seam record's value and the digest of its body (what Stage S compares a replay with);
    ``SeamRecordError``: ``ForgedView`` unless the MAC matches, then ``MalformedView`` if it is not a view."""
    mac, body = value[:MAC_BYTES], value[MAC_BYTES:]
    if len(mac) != MAC_BYTES or not hmac.compare_digest(mac, seam_mac(seam_key, body)):
        raise SeamRecordError("ForgedView", "the MAC does not match the job's seam key")
    meta, nodes = split_record(value)
    try:
        view = RelayView.from_json(meta)
    except ValueError as exc:
        raise SeamRecordError("MalformedView", str(exc)) from exc
    return dataclasses.replace(view, nodes=tuple(nodes)), hashlib.blake2b(_layout(value), digest_size=32).digest()
