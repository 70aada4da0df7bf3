"""A batch that waits forever: the job's test for a micro-batch whose tasks no longer run.

A task can wait without end inside Spark: a transformWithState task whose Python worker waits on a state server
that will never answer (a state call that failed in the JVM ends the server's thread without a reply), or on a
Python worker that does not come. Spark then neither fails the batch nor finishes it, and an available-now job
never ends. A batch that works uses CPU in Spark's JVM or its Python workers, or at least has a thread waiting
for a core (on a busy machine); a batch waiting on Kafka is failed by Spark itself within minutes (its offset
fetches and polls time out). So a batch that has been running for ``stuck_batch_seconds`` while the JVM and its
Python workers together used less than ``IDLE_SHARE`` of one core and had a thread running or runnable in fewer
than ``RUNNABLE_SHARE`` of the driver's looks is stuck: the job ends with ``BatchStuck``. Local mode only: there
the JVM runs the tasks and its Python workers are its descendants (Linux ``/proc``); elsewhere the watch reads
nothing and stays quiet.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable
from pathlib import Path

from streaming.errors import BatchStuck

__all__ = ["IDLE_SHARE", "RUNNABLE_SHARE", "StuckBatchWatch", "tree_activity"]

IDLE_SHARE = 0.15
"""CPU below this share of one core, over the whole window, is a batch that does nothing: a local JVM whose tasks
wait, with the driver's polls, used 0.5% to 4.7% (tests/integration/test_stuck_batch.py), a batch that works most of a
core."""

RUNNABLE_SHARE = 0.2
"""A batch is stuck only if fewer than this share of the looks over the window found a thread of the JVM or its
Python workers running or waiting for a core (``R`` in /proc): a batch starved of CPU on a busy machine has one."""

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _task_files(pid: int, name: str) -> list[Path]:
    """``/proc/<pid>/task/*/<name>``: none once the process is gone, also when it exits while its threads are
    listed (the listing then fails, and a process of a running job exits whenever Spark ends a Python worker)."""
    try:
        return list(Path(f"/proc/{pid}/task").glob(f"*/{name}"))
    except OSError:
        return []


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in _task_files(pid, "children"):
        try:
            found += [int(child) for child in task.read_text().split()]
        except (OSError, ValueError):
            continue
    return found


def _fields(stat: str) -> list[str]:
    return stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state is field 3, utime 14, stime 15


def _process(pid: int) -> tuple[int, bool] | None:
    """(CPU ticks used, whether one of its threads is running or runnable); None if it is gone."""
    try:
        fields = _fields(Path(f"/proc/{pid}/stat").read_text())
        ticks = int(fields[11]) + int(fields[12])
    except (OSError, ValueError, IndexError):
        return None
    runnable = False
    for task in _task_files(pid, "stat"):
        try:
            runnable = runnable or _fields(task.read_text())[0] == "R"
        except (OSError, ValueError, IndexError):
            continue
    return ticks, runnable


def tree_activity(pid: int) -> tuple[float, bool] | None:
    """CPU seconds (user and system) used so far by ``pid`` and its living descendants, and whether one of their
    threads is running or runnable now; None if ``pid`` is gone or /proc cannot say."""
    root = _process(pid)
    if root is None:
        return None
    (ticks, runnable), pending = root, _children(pid)
    while pending:
        child = pending.pop()
        ticks_child, runnable_child = _process(child) or (0, False)
        ticks, runnable = ticks + ticks_child, runnable or runnable_child
        pending += _children(child)
    return ticks / _TICKS, runnable


class StuckBatchWatch:
    """Raises ``BatchStuck`` when a query's batch has been running for ``seconds``, a stage of it still runs, and,
    over the last ``seconds``, the JVM ``pid`` with its descendants used less than ``IDLE_SHARE`` of a core and was
    seen with a runnable thread in fewer than ``RUNNABLE_SHARE`` of the looks."""

    def __init__(self, pid: int, seconds: float, stages_running: Callable[[], bool] = lambda: True,
                 activity: Callable[[int], tuple[float, bool] | None] = tree_activity) -> None:
        """``stages_running``: whether Spark runs a stage now (its status tracker), asked before raising: a
        trigger that only plans (its offsets fetched from Kafka, no task) is never taken for stuck."""
        self.pid = pid
        self.seconds = seconds
        self.stages_running = stages_running
        self.activity = activity
        self.samples: dict[str, deque[tuple[float, float, bool]]] = {}
        """query -> (seconds into its running batch, CPU seconds then, a thread runnable then), oldest first."""

    def check(self, query: str, finished: int | None, pending: float) -> None:
        """``pending``: how long ``query``'s running batch has run (0: none runs); ``finished``: the newest batch
        of it the driver saw finish (None: none yet in this run)."""
        if pending <= 0:
            self.samples.pop(query, None)
            return
        now = self.activity(self.pid)
        if now is None:
            return
        used, runnable = now
        samples = self.samples.setdefault(query, deque())
        if samples and samples[-1][0] > pending:  # another batch started since the last look
            samples.clear()
        samples.append((pending, used, runnable))
        while len(samples) > 1 and samples[1][0] <= pending - self.seconds:
            samples.popleft()  # keep one sample at least ``seconds`` old
        since, before, _ = samples[0]
        if pending - since < self.seconds:
            return
        share = (used - before) / (pending - since)
        busy = sum(1 for _, _, r in samples if r) / len(samples)
        if share < IDLE_SHARE and busy < RUNNABLE_SHARE and self.stages_running():
            raise BatchStuck(query, None if finished is None else finished + 1, pending, share)
