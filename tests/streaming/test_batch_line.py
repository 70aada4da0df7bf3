"""The job's progress line per micro-batch: what it shows, and that the latency benchmark still reads it."""

from __future__ import annotations

from benchmarks.latency_bench import _BATCH
from streaming.job import BatchReport, _report


def _progress(duration_ms: dict[str, int], commit_ms: int) -> dict[str, object]:
    """A query progress as Spark's ``recentProgress`` gives it (the fields ``_report`` reads)."""
    return {"batchId": 7, "numInputRows": 12, "durationMs": duration_ms, "sources": [],
            "stateOperators": [{"commitTimeMs": commit_ms}], "observedMetrics": {}}


def test_the_line_names_the_slow_phases_longest_first() -> None:
    report = _report("relay", _progress({"triggerExecution": 900, "addBatch": 620, "queryPlanning": 140,
                                         "walCommit": 40, "latestOffset": 99}, commit_ms=180))
    line = report.line()
    assert line.startswith("relay batch 7: 12 rows in -> nothing")
    assert line.endswith(" | addBatch 0.6s, stateCommit 0.2s, queryPlanning 0.1s | 0.9s")
    match = _BATCH.match(line)
    assert match is not None and match.group(4) == "0.9"


def test_a_fast_batch_shows_no_phases() -> None:
    report = BatchReport("subscribers", 3, 5, {"updates": 2}, {}, 0, 0.3, {"addBatch": 0.09})
    assert report.line() == "subscribers batch 3: 5 rows in -> updates 2 | lag 0 | 0.3s"
