"""A stop waits for the batch in flight: ``finish_batches`` returns once every query has finished the batch it was
running (a newer progress entry) or gone idle, and gives up after the grace period on a batch that never ends.
(The real thing: the live job test in tests/integration/test_pipeline.py counts the batch that a stop lands in.)"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

import streaming.job as job


@dataclass
class ScriptedQuery:
    """What ``finish_batches`` reads of a StreamingQuery; the batch in flight finishes after ``polls_left`` reads of
    its status (then its progress entry appears and its trigger goes idle), or never when ``polls_left`` is None."""

    batch: int | None
    polls_left: int | None
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
        if self.polls_left is not None:
            if self.polls_left == 0:
                self.batch = 0 if self.batch is None else self.batch + 1
                self.polls_left = None
                return {"isTriggerActive": False}
            self.polls_left -= 1
        return {"isTriggerActive": self.polls_left is not None or self.batch is None}


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """A clock that moves only when the wait sleeps."""
    now = [50.0]
    monkeypatch.setattr(job.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(job.time, "sleep", lambda seconds: now.__setitem__(0, now[0] + seconds))
    return now


def test_the_stop_waits_until_the_batch_in_flight_has_its_progress_entry(clock: list[float]) -> None:
    relay, subscribers = ScriptedQuery(batch=3, polls_left=2), ScriptedQuery(batch=None, polls_left=5)
    job.finish_batches([relay, subscribers])  # type: ignore[list-item]
    assert (relay.batch, subscribers.batch) == (4, 0)
    assert clock[0] - 50.0 < 1.0


def test_an_idle_or_stopped_query_is_not_waited_for(clock: list[float]) -> None:
    idle = ScriptedQuery(batch=7, polls_left=None)
    stopped = ScriptedQuery(batch=2, polls_left=None, active=False)
    job.finish_batches([idle, stopped])  # type: ignore[list-item]
    assert clock[0] == 50.0
    assert (idle.status_reads, stopped.status_reads) == (1, 0)


def test_a_batch_that_never_ends_is_given_up_after_the_grace(clock: list[float]) -> None:
    stuck = ScriptedQuery(batch=None, polls_left=None)  # trigger active, no batch ever finishes
    job.finish_batches([stuck], grace=2.0)  # type: ignore[list-item]
    assert 2.0 <= clock[0] - 50.0 < 2.1
    assert stuck.batch is None
