"""The lines of an event log file, read with a bound on each line's size."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from pubsub_core.stages.limits import MAX_INPUT_BYTES

__all__ = ["event_log_lines"]


def event_log_lines(source: BinaryIO, limit: int = MAX_INPUT_BYTES) -> Iterator[tuple[bytes, int]]:
    """The log's lines as bytes (a line that is not UTF-8 is one rejection, not the end of the run), each with
    its size in the file. A line longer than ``limit`` is read no further than ``limit + 1`` bytes (enough for
    its ``RecordTooLarge`` rejection); the rest of it is skipped without being kept in memory."""
    while line := source.readline(limit + 1):
        size = len(line)
        if len(line) > limit and not line.endswith(b"\n"):
            while rest := source.readline(1 << 20):
                size += len(rest)
                if rest.endswith(b"\n"):
                    break
        yield line, size
