"""The block author's snapshot (``<realm>.author-state``): what ``BlockAuthor`` knows after a block, so a restart
reads only what came after it instead of the topics' whole history.

A snapshot holds the chain head (number, hash and the head block's offset on ``<realm>.blocks``), each author
key's seqno watermark, every included position, the seqno watermark of every (stream, origin, sender) Stage R
received, the positions buffered but not yet included (with their envelope bytes) and, per input topic, the
offset to read next. None of it grows with the realm's age: the watermarks are one number per (stream, origin,
key) of the genesis registry (Stage R's seqno rule keeps the highest seqno, not a set), and what is buffered is
what arrived since the last block plus what waits behind a gap, which Stage R holds as well.

The author writes it in the same Kafka transaction as the block it describes, so a committed block always comes
with its snapshot. The topic is compacted (one key, ``author``): its size stays that of one snapshot plus the
segments not yet cleaned. Anyone may write to a topic, so a snapshot is a signed envelope (stream
``author-state``, origin ``author``, seqno = the block number) and a reader keeps only those an author key of
the genesis signed. Any genuine snapshot is a consistent state of the author at some block: an older one
replayed by a third party only makes the restart read more.

The snapshot's JSON carries its format version (``SNAPSHOT_VERSION``) and, from version 2 on, the release that
wrote it. Version 1 (release 0.1.0) is version 2 without ``release``; ``from_json`` reads it through
``_v1_to_v2``. A genuine snapshot of a newer version stops the author (``FormatTooNewError``): it is never read by
guesswork nor skipped as if forged (the author would then rebuild from an older one, or from the topics).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pubsub_core.envelope import Envelope, Signer, Topic, verify_signature
from pubsub_core.envelope.errors import EnvelopeDecodeError
from pubsub_core.relay import canonical_json
from pubsub_core.release import RELEASE
from state.formats import FormatTooNewError

__all__ = ["AUTHOR_STATE", "SNAPSHOT_FORMAT", "SNAPSHOT_KEY", "SNAPSHOT_VERSION", "AuthorSnapshot", "open_snapshot", "snapshot_record"]

AUTHOR_STATE = "author-state"
"""The snapshot topic's name within the realm (``<realm>.author-state``)."""
SNAPSHOT_KEY = b"author"
"""The one key of the compacted topic: a realm has one author state."""
SNAPSHOT_VERSION = 2
SNAPSHOT_FORMAT = "author snapshot (author-state)"

Slot = tuple[str, str]


@dataclass(frozen=True, slots=True)
class AuthorSnapshot:
    """The author's state right after block ``number`` (see the module docstring)."""

    number: int
    hash: bytes
    block_offset: int
    """Offset of block ``number`` on ``<realm>.blocks``; a restart replays the blocks after it."""
    watermarks: Mapping[bytes, int]
    """Author key -> seqno of its last block."""
    included: Mapping[Slot, int]
    """(stream, origin) -> last included position."""
    received: Mapping[tuple[str, str, bytes], int]
    """(stream, origin, sender) -> highest seqno received (Stage R's ``Duplicate`` watermark)."""
    buffered: Mapping[Slot, Mapping[int, int]]
    """(stream, origin) -> position -> envelope bytes, for positions above the last included one."""
    offsets: Mapping[str, int]
    """Input stream -> next offset to read on ``<realm>.<stream>``."""

    def to_json(self) -> dict[str, object]:
        return {
            "version": SNAPSHOT_VERSION,
            "release": RELEASE,
            "number": self.number,
            "hash": self.hash.hex(),
            "block_offset": self.block_offset,
            "watermarks": sorted([key.hex(), seqno] for key, seqno in self.watermarks.items()),
            "included": sorted([s, o, last] for (s, o), last in self.included.items()),
            "received": sorted([s, o, sender.hex(), seqno] for (s, o, sender), seqno in self.received.items()),
            "buffered": sorted([s, o, sorted([p, n] for p, n in positions.items())]
                               for (s, o), positions in self.buffered.items() if positions),
            "offsets": dict(sorted(self.offsets.items())),
        }

    @classmethod
    def from_json(cls, body: Mapping[str, object]) -> AuthorSnapshot:
        """Inverse of ``to_json`` (an older version migrated first); ``FormatTooNewError`` for a newer version,
        ``ValueError``/``TypeError``/``KeyError`` on anything else."""
        version = _int(body["version"])
        if version > SNAPSHOT_VERSION:
            raise FormatTooNewError(SNAPSHOT_FORMAT, version, str(body.get("release", "?")), SNAPSHOT_VERSION,
                                    RELEASE)
        if version < 1:
            raise ValueError(f"snapshot version {version}")
        if version == 1:
            body = _v1_to_v2(body)
        return cls(
            _int(body["number"]),
            bytes.fromhex(str(body["hash"])),
            _int(body["block_offset"]),
            {bytes.fromhex(str(k)): _int(n) for k, n in _rows(body["watermarks"], 2)},
            {(str(s), str(o)): _int(n) for s, o, n in _rows(body["included"], 3)},
            {(str(s), str(o), bytes.fromhex(str(k))): _int(n) for s, o, k, n in _rows(body["received"], 4)},
            {(str(s), str(o)): {_int(p): _int(n) for p, n in _rows(rows, 2)}
             for s, o, rows in _rows(body["buffered"], 3)},
            {str(s): _int(n) for s, n in _mapping(body["offsets"]).items()},
        )


def _v1_to_v2(body: Mapping[str, object]) -> Mapping[str, object]:
    """Version 1 (release 0.1.0) to 2: the same fields, and the release that wrote it."""
    return {**body, "version": 2, "release": "0.1.0"}


def snapshot_record(realm: str, signer: Signer, snapshot: AuthorSnapshot) -> bytes:
    """The Kafka value of ``snapshot``: its canonical JSON signed by the author (seqno = block number)."""
    data = canonical_json(snapshot.to_json()).encode()
    return signer.sign(Topic(realm, AUTHOR_STATE, SNAPSHOT_KEY.decode()), snapshot.number, data).encode()


def open_snapshot(realm: str, author_keys: frozenset[bytes], value: bytes | None) -> AuthorSnapshot | None:
    """The snapshot in a Kafka value when an author key of the genesis signed it for this realm, else None
    (forged, malformed or another realm's: a reader skips it)."""
    if value is None:
        return None
    try:
        envelope = Envelope.decode(value)
    except EnvelopeDecodeError:
        return None
    if (envelope.sender not in author_keys or envelope.topic != Topic(realm, AUTHOR_STATE, SNAPSHOT_KEY.decode())
            or not verify_signature(envelope)):
        return None
    try:
        body = json.loads(envelope.data)
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    try:
        snapshot = AuthorSnapshot.from_json(body)
    except (ValueError, TypeError, KeyError):
        return None
    return snapshot if snapshot.number == envelope.seqno else None


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"not an integer: {value!r}")
    return value


def _rows(value: object, width: int) -> Iterable[list[object]]:
    if not isinstance(value, list):
        raise TypeError("not a list")
    for row in value:
        if not isinstance(row, list) or len(row) != width:
            raise TypeError(f"not a row of {width}: {row!r}")
        yield row


def _mapping(value: object) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise TypeError("not an object")
    return value

