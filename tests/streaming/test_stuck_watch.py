"""The stuck-batch rule (``streaming.stuck``) on a scripted JVM: idle and never runnable for the whole window, with
a stage running, ends the job; a batch that uses CPU, one starved of CPU with a runnable thread, a trigger that runs
no stage, or a new batch, does not."""

from __future__ import annotations

import os

import pytest

from streaming.errors import BatchStuck
from streaming.stuck import StuckBatchWatch, tree_activity


def run(watch: StuckBatchWatch, script: list[tuple[float, bool]], step: float = 1.0) -> None:
    """Looks once a second at a batch running since 0: ``script`` gives (CPU seconds, runnable) at each look."""
    for n in range(len(script)):
        watch.check("relay", 4, (n + 1) * step)


def watch_of(script: list[tuple[float, bool]], stages_running: bool = True) -> StuckBatchWatch:
    looks = iter(script)
    return StuckBatchWatch(1, 30.0, lambda: stages_running, activity=lambda _pid: next(looks))


def test_an_idle_batch_ends_the_job_after_the_window_not_before() -> None:
    idle = [(0.01 * n, False) for n in range(40)]
    run(watch_of(idle[:30]), idle[:30])  # 30 s in: not a full window since the first look yet
    with pytest.raises(BatchStuck) as stuck:
        run(watch_of(idle), idle)
    assert (stuck.value.query, stuck.value.batch) == ("relay", 5)
    assert stuck.value.seconds == 31 and stuck.value.cpu_share == pytest.approx(0.01)
    assert "\n" not in str(stuck.value)


def test_a_batch_that_uses_cpu_or_waits_for_a_core_is_not_stuck() -> None:
    working = [(0.5 * n, n % 2 == 0) for n in range(100)]
    run(watch_of(working), working)
    starved = [(0.02 * n, n % 3 != 0) for n in range(100)]  # little CPU, but a thread waits for a core
    run(watch_of(starved), starved)


def test_a_trigger_that_runs_no_stage_is_not_stuck() -> None:
    idle = [(0.0, False)] * 100  # planning only: the offsets fetched from a slow Kafka, every trigger back to back
    run(watch_of(idle, stages_running=False), idle)


def test_a_new_batch_starts_a_new_window() -> None:
    looks = iter([(0.0, False)] * 100)
    watch = StuckBatchWatch(1, 30.0, lambda: True, activity=lambda _pid: next(looks))
    for n in range(25):
        watch.check("relay", 4, n + 1.0)
    watch.check("relay", 5, 0.0)  # batch 5 finished, the next one not started
    for n in range(25):
        watch.check("relay", 5, n + 1.0)


def test_this_process_is_read_from_proc() -> None:
    activity = tree_activity(os.getpid())
    assert activity is not None and activity[0] > 0
    assert tree_activity(2**22 + 7) is None  # no such process


def test_a_process_that_exits_while_its_threads_are_listed_is_read_as_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Python worker that Spark ends between the look at its stat and the listing of its threads: the listing
    fails (FileNotFoundError from the vanished /proc folder), and the watch reads it as gone, not as a job error."""
    from pathlib import Path

    real_glob = Path.glob

    def vanishing(self: Path, pattern: str) -> object:
        if self.name == "task":
            raise FileNotFoundError(2, "No such file or directory", str(self))
        return real_glob(self, pattern)

    monkeypatch.setattr(Path, "glob", vanishing)
    activity = tree_activity(os.getpid())
    assert activity is not None and activity[0] > 0 and activity[1] is False
