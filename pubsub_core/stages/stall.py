"""A realm that cannot progress, as records: the ``<realm>.health`` topic and Stage R's live waiting status.

A block waits while its manifest names positions no authentic record fills. Stage R declares the realm stalled
when its first waiting block still waits once ``stall_after_blocks`` later blocks are queued behind it: counted
in blocks, the relay chain's own clock, so the rule reads nothing but the inputs. Every ``health`` record
(key: the realm, canonical JSON) has a deterministic id:

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

from dataclasses import dataclass

from pubsub_core.relay import BlockHeader
from pubsub_core.stages.records import INPUT_STREAMS, OutputRecord

__all__ = ["AWAITS_SHOWN", "HEALTH", "WaitingStatus", "awaits", "resumed", "stalled", "voided"]

HEALTH = "health"
"""The output kind of health records: topic ``<realm>.health``."""

AWAITS_SHOWN = 64
"""A ``Stalled`` record quotes at most this many of the waiting block's ranges (a manifest may name thousands)."""


@dataclass(frozen=True, slots=True)
class WaitingStatus:
    """Stage R's first waiting block as the job shows it live: its number and ``<topic>@<offset>``, the blocks
    queued behind it, the first positions it misses now (``stream/origin/position``, at most a few), whether the
    realm is declared stalled, and what Stage R holds (records and queued blocks, and their envelope bytes)."""

    block: int
    block_record: str
    later_blocks: int
    missing: tuple[str, ...]
    stalled: bool
    held_records: int
    held_bytes: int

    def to_json(self) -> dict[str, object]:
        return {"block": self.block, "block_record": self.block_record, "later_blocks": self.later_blocks,
                "missing": list(self.missing), "stalled": self.stalled, "held_records": self.held_records,
                "held_bytes": self.held_bytes}

    @classmethod
    def from_json(cls, body: dict[str, object]) -> WaitingStatus:
        missing = body["missing"]
        assert isinstance(missing, list)
        return cls(int(str(body["block"])), str(body["block_record"]), int(str(body["later_blocks"])),
                   tuple(str(m) for m in missing), bool(body["stalled"]), int(str(body["held_records"])),
                   int(str(body["held_bytes"])))

    def line(self) -> str:
        """One line for a log or a progress line."""
        misses = ", ".join(self.missing) if self.missing else "nothing (an earlier refusal holds it)"
        state = "STALLED" if self.stalled else "waiting"
        return (f"{state}: block {self.block} ({self.block_record}) misses {misses}; {self.later_blocks} later "
                f"blocks queued; holding {self.held_records} records and blocks, {self.held_bytes} bytes")


def awaits(header: BlockHeader, included: dict[tuple[str, str], int]) -> list[dict[str, object]]:
    """The ranges of ``header``'s manifest after the positions already ``included`` (-1: none)."""
    ranges: list[dict[str, object]] = []
    for stream, origin, last in header.manifest:
        first = included.get((stream, origin), -1) + 1
        if stream in INPUT_STREAMS and first <= last and len(ranges) < AWAITS_SHOWN:
            ranges.append({"stream": stream, "origin": origin, "first": first, "last": last})
    return ranges


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
