"""A realm that cannot progress, as records: the ``<realm>.health`` topic and Stage R's live waiting status.

A block waits while its manifest names positions no authentic record fills. Its threshold passes when the first
waiting block still waits once ``stall_after_blocks`` later blocks are queued behind it: counted in blocks, the
relay chain's own clock, read from nothing but the inputs (Stage R keeps it, and bounds what it holds from then
on). It is declared stalled when, besides, what it misses cannot be waiting unread: the reader has read the input
topics of the streams it misses to the end offsets it saw (``declare``; the simulator, with nothing unread, declares
on the threshold alone, through Stage R; the job in its driver). Every ``health`` record (key: the realm,
canonical JSON) has a deterministic id:

- ``stalled/<block's log id>``: ``{"kind": "Stalled", "realm", "block", "block_record", "after_blocks",
  "awaits"}``. ``block_record`` is the waiting block's ``<topic>@<offset>`` (since when, in the blocks topic's
  offsets); ``awaits`` the manifest's ranges the block still has to fill (``[{"stream", "origin", "first",
  "last"}]``, at most ``AWAITS_SHOWN``), a function of the blocks applied before it.
- ``voided/<void order's log id>``: ``{"kind": "Voided", "realm", "block", "block_record", "void_record",
  "ranges"}``: an authentic void order took effect for that waiting block.
- ``resumed/<block's log id>``: ``{"kind": "Resumed", "realm", "block", "block_record"}``: the block declared
  stalled left the queue (applied, or refused by the block machine).

Which positions are missing right now depends on what has arrived, so it is not on the topic; the job shows it
live (``WaitingStatus``: progress line, log, metrics). docs/operations.md, "A stalled realm", has the procedure.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from pubsub_core.relay import BlockHeader
from pubsub_core.stages.records import INPUT_STREAMS, OutputRecord

__all__ = ["AWAITS_SHOWN", "HEALTH", "Declared", "WaitingStatus", "awaits", "declare", "is_declaration", "resumed",
           "stalled", "unfilled", "voided"]

HEALTH = "health"
"""The output kind of health records: topic ``<realm>.health``."""

AWAITS_SHOWN = 64
"""A ``Stalled`` record quotes at most this many of the waiting block's ranges (a manifest may name thousands)."""


@dataclass(frozen=True, slots=True)
class WaitingStatus:
    """Stage R's first waiting block as the job shows it live: its number and ``<topic>@<offset>``, the blocks
    queued behind it, the first positions it misses now (``stream/origin/position``, at most a few), whether it
    is stalled, what Stage R holds (records and queued blocks, and their envelope bytes) and the ranges its
    manifest still has to fill (``awaits``, as a ``Stalled`` record quotes them).

    ``stalled`` as Stage R reports it: ``stall_after_blocks`` later blocks are queued behind the block and it still
    misses records, as a reader with nothing unread would declare it (the simulator). In the job's reports it is
    the job's declaration (``declare``): that, and the input topics the block misses records of read to the end."""

    block: int
    block_record: str
    later_blocks: int
    missing: tuple[str, ...]
    stalled: bool
    held_records: int
    held_bytes: int
    awaits: tuple[tuple[str, str, int, int], ...] = ()
    streams: tuple[str, ...] = ()
    """The input streams of every range the block still has to fill (``awaits`` quotes at most
    ``AWAITS_SHOWN``), sorted: the topics to read to the end before it can be declared stalled."""

    def to_json(self) -> dict[str, object]:
        return {"block": self.block, "block_record": self.block_record, "later_blocks": self.later_blocks,
                "missing": list(self.missing), "stalled": self.stalled, "held_records": self.held_records,
                "held_bytes": self.held_bytes, "awaits": [list(r) for r in self.awaits],
                "streams": list(self.streams)}

    @classmethod
    def from_json(cls, body: dict[str, object]) -> WaitingStatus:
        missing, ranges, streams = body["missing"], body.get("awaits", []), body.get("streams", [])
        assert isinstance(missing, list) and isinstance(ranges, list) and isinstance(streams, list)
        return cls(int(str(body["block"])), str(body["block_record"]), int(str(body["later_blocks"])),
                   tuple(str(m) for m in missing), bool(body["stalled"]), int(str(body["held_records"])),
                   int(str(body["held_bytes"])),
                   tuple((str(s), str(o), int(f), int(t)) for s, o, f, t in ranges), tuple(str(s) for s in streams))

    def ranges(self) -> list[dict[str, object]]:
        """``awaits`` as a ``Stalled`` record quotes it."""
        return [{"stream": s, "origin": o, "first": f, "last": t} for s, o, f, t in self.awaits]

    def line(self) -> str:
        """One line for a log or a progress line."""
        misses = ", ".join(self.missing) if self.missing else "nothing (an earlier refusal holds it)"
        state = "STALLED" if self.stalled else "waiting"
        return (f"{state}: block {self.block} ({self.block_record}) misses {misses}; {self.later_blocks} later "
                f"blocks queued; holding {self.held_records} records and blocks, {self.held_bytes} bytes")


@dataclass(frozen=True, slots=True)
class Declared:
    """A block a reader declared stalled (its ``Stalled`` record written, no ``Resumed`` yet)."""

    block: int
    block_record: str


def declare(realm: str, status: WaitingStatus | None, declared: Declared | None, after_blocks: int,
            caught_up: bool) -> tuple[list[OutputRecord], Declared | None]:
    """The job's stall rule, after a batch: the health records to write and what is declared now.

    ``status`` is Stage R's (``stalled``: the threshold passed and records still missing); ``caught_up``: every
    partition of the input topics of ``status.streams`` was read to the end offsets seen at that batch, so what
    the block misses cannot be waiting unread. ``Resumed`` when the declared block is no longer the first waiting
    one; ``Stalled`` when Stage R's threshold holds and the reader is caught up (once per block)."""
    out: list[OutputRecord] = []
    if declared is not None and (status is None or status.block_record != declared.block_record):
        out.append(resumed(realm, declared.block, declared.block_record))
        declared = None
    if declared is None and status is not None and status.stalled and caught_up:
        out.append(stalled(realm, status.block, status.block_record, after_blocks, status.ranges()))
        declared = Declared(status.block, status.block_record)
    return out, declared


def is_declaration(record: OutputRecord) -> bool:
    """Whether a record is a ``Stalled`` or ``Resumed`` health record: in the job, the driver writes those
    (``declare``), not Stage R, since only the driver sees how far the batch read its topics."""
    return record.topic.endswith(f".{HEALTH}") and record.id.startswith(("stalled/", "resumed/"))


def unfilled(header: BlockHeader, included: dict[tuple[str, str], int]) -> Iterator[tuple[str, str, int, int]]:
    """Every (stream, origin, first, last) range of ``header``'s manifest after the positions already
    ``included`` (-1: none)."""
    for stream, origin, last in header.manifest:
        first = included.get((stream, origin), -1) + 1
        if stream in INPUT_STREAMS and first <= last:
            yield stream, origin, first, last


def awaits(header: BlockHeader, included: dict[tuple[str, str], int]) -> list[dict[str, object]]:
    """The ranges of ``header``'s manifest after the positions already ``included`` (at most ``AWAITS_SHOWN``)."""
    return [{"stream": s, "origin": o, "first": f, "last": t}
            for s, o, f, t in itertools.islice(unfilled(header, included), AWAITS_SHOWN)]


def _record(realm: str, record_id: str, value: dict[str, object]) -> OutputRecord:
    return OutputRecord(f"{realm}.{HEALTH}", realm, record_id, {"realm": realm, **value})


def stalled(realm: str, block: int, block_record: str, after_blocks: int,
            ranges: list[dict[str, object]]) -> OutputRecord:
    return _record(realm, f"stalled/{block_record}", {"kind": "Stalled", "block": block, "block_record": block_record,
                                                      "after_blocks": after_blocks, "awaits": ranges})


def voided(realm: str, block: int, block_record: str, void_record: str,
           ranges: list[dict[str, object]]) -> OutputRecord:
    return _record(realm, f"voided/{void_record}", {"kind": "Voided", "block": block, "block_record": block_record,
                                                    "void_record": void_record, "ranges": ranges})


def resumed(realm: str, block: int, block_record: str) -> OutputRecord:
    return _record(realm, f"resumed/{block_record}", {"kind": "Resumed", "block": block, "block_record": block_record})
