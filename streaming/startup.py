"""Where a start of the job goes: one log line per start-up phase, with its time since the process started.

A restart after a crash is interpreter and imports, Kafka and the topics, the JVM (spark-submit's launcher, then
Spark's own JVM up to its SparkContext), the session, the queries' start, and each query's first batch (its state
stores loaded, the batch the crash left uncommitted run again, the catch-up begun). The lines read
``INFO streaming.job: start-up: <phase> at <s>s (+<s>s)``: seconds since the process started and since the phase
before; ``benchmarks/recovery_bench.py`` reads them, and an operator sees where a slow start went.
"""

from __future__ import annotations

import datetime
import logging
import os
import time
from collections.abc import Mapping
from typing import Any

__all__ = ["PHASE_LINE", "StartupLog", "batch_end", "process_started"]

PHASE_LINE = r"start-up: (?P<phase>.+?) at (?P<at>[0-9.]+)s \(\+(?P<step>-?[0-9.]+)s\)"
"""The pattern of a phase line (``re`` syntax), for the benchmark that reads them."""


def process_started() -> float:
    """When this process started, in seconds since the epoch (Linux: its start tick in /proc, 10 ms resolution;
    elsewhere: now)."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            ticks = int(stat.read().rpartition(")")[2].split()[19])
            since_boot = float(uptime.read().split()[0])
    except (OSError, ValueError, IndexError):
        return time.time()
    return time.time() - (since_boot - ticks / os.sysconf("SC_CLK_TCK"))


def batch_end(progress: Mapping[str, Any]) -> float | None:
    """When a query's batch committed, in seconds since the epoch: its progress's trigger start (``timestamp``) plus
    its ``triggerExecution`` time; None if the progress lacks either."""
    stamp, took = progress.get("timestamp"), (progress.get("durationMs") or {}).get("triggerExecution")
    if not stamp or took is None:
        return None
    began = datetime.datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    return began.timestamp() + int(took) / 1000


class StartupLog:
    """Logs each start-up phase once, at the time it ended (now, or a time Spark reports)."""

    def __init__(self, log: logging.Logger, started: float | None = None) -> None:
        self.log = log
        self.started = process_started() if started is None else started
        self.last = self.started
        self.seen: set[str] = set()

    def phase(self, name: str, at: float | None = None, detail: str = "") -> None:
        """``name`` ended at ``at`` (seconds since the epoch; default: now). A phase already logged is not again."""
        if name in self.seen:
            return
        self.seen.add(name)
        at = time.time() if at is None else at
        self.log.info("start-up: %s at %.2fs (+%.2fs)%s", name, at - self.started, at - self.last,
                      f" {detail}" if detail else "")
        self.last = max(self.last, at)
