"""A stop waits for the batch in flight: ``finish_batches`` returns once every query has finished the batch it was
running (a newer progress entry) or gone idle, and gives up after the grace period on a batch that never ends.
(The real thing: the live job test in tests/integration/test_pipeline.py counts the batch that a stop lands in.)"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest

import streaming.job as job


@dataclass
class ScriptedQuery:
    """What ``finish_batches`` reads of a StreamingQuery. ``running``: a trigger is in a batch, which finishes (its
    progress entry appears, the trigger goes idle) at the ``finishes_after``-th read of the status, or never when
    that is None."""

    batch: int | None
    running: bool
    finishes_after: int | None = None
    next_follows: bool = False  # the next batch starts at once (more data waiting): the trigger stays busy
    active: bool = True
    status_reads: int = 0

    @property
    def isActive(self) -> bool:  # noqa: N802 - StreamingQuery's name
        return self.active

    @property
    def lastProgress(self) -> dict[str, Any] | None:  # noqa: N802 - StreamingQuery's name
        return None if self.batch is None else {"batchId": self.batch}

    @property
    def status(self) -> dict[str, Any]:
        self.status_reads += 1
        if self.running and self.status_reads == self.finishes_after:
            self.batch = 0 if self.batch is None else self.batch + 1
            self.running = self.next_follows
        return {"isTriggerActive": self.running}


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """A clock that moves only when the wait sleeps."""
    now = [50.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    monkeypatch.setattr(time, "sleep", lambda seconds: now.__setitem__(0, now[0] + seconds))
    return now


def test_the_stop_waits_until_the_batch_in_flight_has_its_progress_entry(clock: list[float]) -> None:
    relay = ScriptedQuery(batch=3, running=True, finishes_after=2)
    subscribers = ScriptedQuery(batch=None, running=True, finishes_after=5)
    job.finish_batches([relay, subscribers])  # type: ignore[list-item]
    assert (relay.batch, subscribers.batch) == (4, 0)
    assert clock[0] - 50.0 < 1.0


def test_the_stop_does_not_wait_for_the_batch_after_the_one_in_flight(clock: list[float]) -> None:
    busy = ScriptedQuery(batch=8, running=True, finishes_after=3, next_follows=True)
    job.finish_batches([busy])  # type: ignore[list-item]
    assert busy.batch == 9 and busy.running
    assert clock[0] - 50.0 < 1.0  # not the grace: the next batch was not waited for


def test_an_idle_or_stopped_query_is_not_waited_for(clock: list[float]) -> None:
    idle = ScriptedQuery(batch=7, running=False)
    stopped = ScriptedQuery(batch=2, running=True, active=False)
    job.finish_batches([idle, stopped])  # type: ignore[list-item]
    assert clock[0] == 50.0
    assert (idle.status_reads, stopped.status_reads) == (1, 0)


def test_a_batch_that_never_ends_is_given_up_after_the_grace(clock: list[float]) -> None:
    stuck = ScriptedQuery(batch=None, running=True)  # its batch never finishes
    job.finish_batches([stuck], grace=2.0)  # type: ignore[list-item]
    assert 2.0 <= clock[0] - 50.0 < 2.1
    assert stuck.batch is None
