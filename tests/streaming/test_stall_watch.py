"""The driver's stall watch: a batch that stays active past the stall window while the checkpoint disk has less
than the reserve free fails the job with CheckpointDiskFull; a running batch with room, an idle query, or a query
that keeps finishing batches does not. (The real hang, on a full tmpfs, is tests/integration/test_resource_bounds.py.)"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import streaming.job as job
from streaming.errors import CheckpointDiskFull


@dataclass
class QueryState:
    """What the watch reads of a StreamingQuery (whether a trigger is running), and the newest finished batch the
    driver has seen of it."""

    batch: int | None = None
    status: dict[str, Any] = field(default_factory=lambda: {"isTriggerActive": True})


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    return now


def watch_with(monkeypatch: pytest.MonkeyPatch, free: int | None) -> job._StallWatch:
    monkeypatch.setattr(job, "free_bytes", lambda _path: free)
    return job._StallWatch(Path("/checkpoint"))


def test_a_batch_stalled_on_a_full_disk_fails_the_job(monkeypatch: pytest.MonkeyPatch, clock: list[float]) -> None:
    watch, query = watch_with(monkeypatch, 100_000), QueryState(4)
    watch.check("subscribers", query, query.batch)  # type: ignore[arg-type]
    clock[0] += job._StallWatch.STALL_SECONDS - 1
    watch.check("subscribers", query, query.batch)  # type: ignore[arg-type]  # not yet
    clock[0] += 2
    with pytest.raises(CheckpointDiskFull) as raised:
        watch.check("subscribers", query, query.batch)  # type: ignore[arg-type]
    assert raised.value.free_bytes == 100_000 and "No space left on device" in str(raised.value)


@pytest.mark.parametrize("free", [None, 64 * 2**20])
def test_a_long_batch_with_room_on_the_disk_goes_on(monkeypatch: pytest.MonkeyPatch, clock: list[float],
                                                    free: int | None) -> None:
    watch, query = watch_with(monkeypatch, free), QueryState(4)
    watch.check("relay", query, query.batch)  # type: ignore[arg-type]
    clock[0] += 10 * job._StallWatch.STALL_SECONDS
    watch.check("relay", query, query.batch)  # type: ignore[arg-type]


def test_an_idle_query_or_one_that_finishes_batches_is_not_stalled(monkeypatch: pytest.MonkeyPatch,
                                                                     clock: list[float]) -> None:
    watch = watch_with(monkeypatch, 1_000)
    idle = QueryState(7, {"isTriggerActive": False})
    busy = QueryState(0)
    for batch in range(1, 6):
        watch.check("relay", idle, idle.batch)  # type: ignore[arg-type]
        watch.check("subscribers", busy, busy.batch)  # type: ignore[arg-type]
        clock[0] += job._StallWatch.STALL_SECONDS
        busy.batch = batch
