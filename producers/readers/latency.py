"""Block-to-update latency from Kafka timestamps: no wall clock enters the protocol or its outputs.

A relay block's latency to a subscriber is the time from the block record's Kafka timestamp on
``<realm>.blocks`` (when the author wrote it) to the Kafka timestamp of each ``on_data_updated`` record on
``<realm>.updates`` whose ``relay_block_number`` is that block (when the job wrote it). Both are the
timestamps Kafka stores with the records (producer create time by default), so measuring reads the topics only;
the records themselves carry no time, and the job's outputs stay a function of its inputs.

This module is pure: it takes (block number, timestamp in ms) pairs and gives percentiles.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["LatencySummary", "block_times", "latencies", "percentile", "summarize"]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0 <= q <= 100) of ``values``, linearly interpolated between closest ranks (numpy's
    default). ``ValueError`` for no values or a ``q`` out of range."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is not within 0..100")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def block_times(blocks: Iterable[tuple[int, int]]) -> dict[int, int]:
    """Block number -> the earliest timestamp among the records carrying it (a block is written once; a record
    replayed by hand would only come later)."""
    first: dict[int, int] = {}
    for number, millis in blocks:
        if number not in first or millis < first[number]:
            first[number] = millis
    return first


def latencies(blocks: Iterable[tuple[int, int]], updates: Iterable[tuple[int, int]]) -> tuple[list[int], int]:
    """Milliseconds from each update's block to the update, in the order of ``updates``, and how many updates
    name a block not among ``blocks`` (not counted). ``blocks`` and ``updates`` are (block number, Kafka timestamp
    in ms) pairs; give each update once (dedupe the at-least-once output's copies by record id first)."""
    written = block_times(blocks)
    out: list[int] = []
    unmatched = 0
    for number, millis in updates:
        start = written.get(number)
        if start is None:
            unmatched += 1
            continue
        out.append(millis - start)
    return out, unmatched


@dataclass(frozen=True)
class LatencySummary:
    """Percentiles of block-to-update latency, in milliseconds, over ``count`` updates."""

    count: int
    unmatched: int
    p50: float
    p95: float
    p99: float
    max: float

    def line(self) -> str:
        """``p50 1210 ms, p95 1840 ms, p99 1950 ms, max 2004 ms over 5321 updates``."""
        if not self.count:
            return "no updates to measure"
        return (f"p50 {self.p50:.0f} ms, p95 {self.p95:.0f} ms, p99 {self.p99:.0f} ms, max {self.max:.0f} ms "
                f"over {self.count} updates")

    def to_json(self) -> Mapping[str, float | int]:
        return {"count": self.count, "unmatched": self.unmatched, "p50_ms": self.p50, "p95_ms": self.p95,
                "p99_ms": self.p99, "max_ms": self.max}


def summarize(blocks: Iterable[tuple[int, int]], updates: Iterable[tuple[int, int]]) -> LatencySummary:
    """``latencies`` as p50, p95, p99 and max (all 0 when no update matched a block)."""
    values, unmatched = latencies(blocks, updates)
    if not values:
        return LatencySummary(0, unmatched, 0.0, 0.0, 0.0, 0.0)
    return LatencySummary(len(values), unmatched, percentile(values, 50), percentile(values, 95),
                          percentile(values, 99), float(max(values)))
