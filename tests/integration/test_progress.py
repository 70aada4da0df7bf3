"""The job follows a query's progress from its newest entry: every batch reported once, in order, on a real query
(local Spark), whether a poll finds no new batch, one, or several."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from rich.console import Console

from benchmarks import progress_bench
from streaming.job import BatchReport, JobSummary, _Follower, new_progress, ran

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _batches_run(query: Any, at_least: int) -> None:
    """Wait until batch ``at_least`` has run (an idle trigger's entry may carry its id before it does)."""
    deadline = time.monotonic() + 120
    while not any(ran(progress) and progress["batchId"] >= at_least for progress in query.recentProgress):
        assert time.monotonic() < deadline, f"batch {at_least} did not run"
        time.sleep(0.05)


def test_new_progress_gives_the_batches_after_the_one_named_oldest_first(spark: SparkSession, tmp_path: Path) -> None:
    query = progress_bench.stateful_query(spark, "progress-new", tmp_path / "checkpoint")
    try:
        _batches_run(query, 6)
    finally:
        query.stop()
    kept = [progress["batchId"] for progress in query.recentProgress]
    newest = kept[-1]
    assert [p["batchId"] for p in new_progress(query, -1)] == kept
    assert [p["batchId"] for p in new_progress(query, 2)] == [batch for batch in kept if batch > 2]
    assert [p["batchId"] for p in new_progress(query, newest - 1)] == [newest]
    assert new_progress(query, newest) == []


def test_the_follower_reports_each_batch_once_however_often_it_polls(spark: SparkSession, tmp_path: Path) -> None:
    reports: list[BatchReport] = []
    summary = JobSummary()
    follower = _Follower(summary, reports.append)
    query = progress_bench.stateful_query(spark, "progress-follow", tmp_path / "checkpoint")
    try:
        _batches_run(query, 0)
        for pause in (0.0, 0.05, 1.2, 0.0, 1.5, 0.1, 0.8, 0.0):  # several new batches (0.3 s each), one, none
            time.sleep(pause)
            follower.poll(query, "relay", every_batch=True)
    finally:
        query.stop()
    follower.poll(query, "relay", every_batch=True)
    kept = [progress["batchId"] for progress in query.recentProgress]
    assert [report.batch for report in reports] == kept == sorted(set(kept))
    assert summary.batches == len(kept) >= 3
    assert summary.input_rows == sum(progress["numInputRows"] for progress in query.recentProgress)


def test_the_benchmark_times_both_ways_on_the_entries_asked_for(spark: SparkSession, tmp_path: Path) -> None:
    results = progress_bench.measure(spark, entries=8, polls=3, checkpoint=tmp_path / "checkpoint",
                                     console=Console(quiet=True))
    assert results["entries"] >= 7 and results["entry_json_bytes"] > 0  # Spark keeps the last 8, or 7
    assert set(results["ms_per_poll"]) == {"recentProgress", "new_progress, nothing new",
                                           "new_progress, one new batch"}
    assert all(ms > 0 for ms in results["ms_per_poll"].values())
    assert spark.conf.get(progress_bench.KEPT_ENTRIES, None) is None  # the session's setting is back


def test_a_batch_after_an_idle_spell_is_reported_though_idle_entries_carry_its_id(spark: SparkSession,
                                                                                   tmp_path: Path) -> None:
    """A trigger that finds no data adds a progress entry (every noDataProgressEventInterval) with the id of the
    batch that will run next: that batch, when it runs, is still reported."""
    folder = tmp_path / "in"
    folder.mkdir()
    reports: list[BatchReport] = []
    follower = _Follower(JobSummary(), reports.append)
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "100ms")
    try:
        query = (spark.readStream.schema("v long").json(str(folder)).groupBy("v").count().writeStream
                 .format("noop").outputMode("update").option("checkpointLocation", str(tmp_path / "checkpoint"))
                 .trigger(processingTime="100 milliseconds").start())
    finally:
        spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")
    try:
        for batch in (0, 1):
            (folder / f"{batch}.json").write_text(json.dumps({"v": batch}) + "\n")
            _batches_run(query, batch)
            deadline = time.monotonic() + 60
            while ran(query.lastProgress):  # until an idle entry, carrying the next batch's id, is the newest
                assert time.monotonic() < deadline, "no idle progress entry"
                time.sleep(0.05)
            follower.poll(query, "relay", every_batch=False)
    finally:
        query.stop()
    idle = [p["batchId"] for p in query.recentProgress if not ran(p)]
    assert 1 in idle and 2 in idle
    assert [(report.batch, report.rows_in) for report in reports] == [(0, 1), (1, 1)]
