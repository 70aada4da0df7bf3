"""Open file descriptors of a process against its limit, and a watch that warns before they run out.

A process that leaks descriptors fails hours or days later (``Too many open files``), far from the cause; the
job's driver JVM (in local mode the executor too) is watched so that the log says so while there is time to act.
Linux only (``/proc``); elsewhere the watch reads nothing and stays quiet.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DescriptorUse", "DescriptorWatch", "descriptor_use"]


@dataclass(frozen=True)
class DescriptorUse:
    """Descriptors a process holds open, and its soft limit (``ulimit -n``)."""

    pid: int
    open: int
    limit: int

    @property
    def share(self) -> float:
        return self.open / self.limit if self.limit > 0 else 0.0


def descriptor_use(pid: int) -> DescriptorUse | None:
    """The process's open descriptors and soft limit, from /proc; None if it is gone or /proc cannot say."""
    try:
        count = len(os.listdir(f"/proc/{pid}/fd"))
        limits = Path(f"/proc/{pid}/limits").read_text()
    except OSError:
        return None
    for line in limits.splitlines():
        if line.startswith("Max open files"):
            soft = line.split()[3]
            return DescriptorUse(pid, count, int(soft) if soft.isdigit() else 0)
    return None


class DescriptorWatch:
    """Calls ``warn`` when a process's open descriptors pass ``threshold`` of its limit, once per crossing (again
    only after they fell back below it), reading /proc at most every ``every_seconds``."""

    def __init__(self, pid: int, warn: Callable[[DescriptorUse], None], threshold: float = 0.8,
                 every_seconds: float = 30.0) -> None:
        self.pid = pid
        self.warn = warn
        self.threshold = threshold
        self.every_seconds = every_seconds
        self._next = 0.0
        self._above = False

    def check(self) -> DescriptorUse | None:
        """Read the process's use if it is due; returns it (None when not due or unreadable)."""
        now = time.monotonic()
        if now < self._next:
            return None
        self._next = now + self.every_seconds
        use = descriptor_use(self.pid)
        if use is None:
            return None
        above = use.limit > 0 and use.share >= self.threshold
        if above and not self._above:
            self.warn(use)
        self._above = above
        return use
