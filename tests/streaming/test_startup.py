"""The job's start-up lines (``streaming.startup``): one per phase, timed since the process started, and a query's
first batch placed at its commit as Spark's progress reports it."""

from __future__ import annotations

import logging
import re
import time

import pytest

from streaming.startup import PHASE_LINE, StartupLog, batch_end, process_started


def test_a_batch_ends_at_its_trigger_start_plus_its_trigger_time() -> None:
    progress = {"timestamp": "2026-01-02T03:04:05.250Z", "durationMs": {"triggerExecution": 1500, "addBatch": 900}}
    assert batch_end(progress) == pytest.approx(1767323045.25 + 1.5)
    assert batch_end({"timestamp": "2026-01-02T03:04:05.250Z", "durationMs": {}}) is None
    assert batch_end({"durationMs": {"triggerExecution": 10}}) is None


def test_this_process_started_before_now_and_not_long_before() -> None:
    started = process_started()
    assert started <= time.time()
    assert time.time() - started < 3600  # a test process is minutes old, not the machine's uptime


def test_each_phase_is_logged_once_with_its_time_since_the_start_and_since_the_phase_before(
        caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("test.startup")
    startup = StartupLog(log, started=1000.0)
    with caplog.at_level(logging.INFO, logger="test.startup"):
        startup.phase("interpreter and imports", 1001.25)
        startup.phase("JVM start", 1004.0, "(detail)")
        startup.phase("JVM start", 1009.0)
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 2
    found = [re.search(PHASE_LINE, line) for line in lines]
    assert [(m["phase"], float(m["at"]), float(m["step"])) for m in found if m is not None] == [
        ("interpreter and imports", 1.25, 1.25), ("JVM start", 4.0, 2.75)]
    assert lines[1].endswith(" (detail)")
