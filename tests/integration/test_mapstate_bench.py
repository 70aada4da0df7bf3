"""The MapState benchmark at tiny sizes, one run, on the project's Spark session (benchmarks/mapstate_bench.py).

Structure only, never timings: every batch of every pattern is measured, values read back are those written, and
the summaries have a row and a fit for every size.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from benchmarks.mapstate_bench import OPS, fits, main_rows, patterns, run_once, step_rows

pytestmark = pytest.mark.spark


def test_one_tiny_run_measures_every_pattern_and_batch(spark: SparkSession, tmp_path: Path) -> None:
    chosen = patterns(calls=5, call_bytes=16, sizes_kib=[1, 2], total_mib=0, min_values=3)
    timings = run_once(spark, tmp_path, run=0, chosen=chosen, rewrites=1)
    expected = {(p.name, step, op) for p in chosen for step, op in
                [(0, "insert"), (0, "same-batch get"), (1, "get"), (1, "update")]}
    assert {(t.pattern, t.step, t.op) for t in timings} == expected
    assert {t.op for t in timings} == set(OPS)
    assert all(t.ok for t in timings), [t for t in timings if not t.ok]  # every value read is the one written
    assert {(t.pattern, t.calls) for t in timings} == {(p.name, p.count) for p in chosen}
    assert [p.size for p in chosen] == [16, 1024, 2048]
    assert len(main_rows(timings, chosen)) == len(step_rows(timings, chosen, 1)) == len(chosen)
    assert len(fits(timings, chosen, "get")) == len(fits(timings, chosen, "update")) == 1
