"""benchmarks/signatures_bench.py on a small log: both arms run, their outputs are compared, and the helper's
digests reach Stage R only in the arm that has one."""

from __future__ import annotations

import json
import os
from pathlib import Path

from rich.console import Console

from benchmarks import signatures_bench as bench


def test_both_arms_run_on_each_core_count_and_agree(tmp_path: Path) -> None:
    before = os.sched_getaffinity(0)
    results = bench.run("busy.jsonl", [1, 2], 1, Console(quiet=True))
    assert os.sched_getaffinity(0) == before  # restored
    assert results["outputs_equal"] is True and results["rows"] > bench.ahead.MIN_ROWS
    runs = {(r["cores"], r["arm"]): r for r in results["results"]}
    assert set(runs) == {(n, arm) for n in (1, 2) for arm in bench.ARMS}
    assert all(runs[(n, "in place")]["verified_ahead"] == 0 for n in (1, 2))
    assert all(runs[(n, "ahead")]["verified_ahead"] > 0 for n in (1, 2))
    lines = bench.summary(results)
    assert [line[0] for line in lines] == ["1", "2"] and all(len(line) == len(bench.HEADER) for line in lines)


def test_main_writes_the_results(tmp_path: Path) -> None:
    out = tmp_path / "signatures.json"
    assert bench.main(["--log", "busy.jsonl", "--cores", "1", "--rounds", "1", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["outputs_equal"] is True
