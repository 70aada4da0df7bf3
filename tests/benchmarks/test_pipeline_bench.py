"""The pipeline benchmark's target-2 table over repeated runs: medians, ranges and per-pair ratios."""

from __future__ import annotations

from typing import Any

from benchmarks.pipeline_bench import runs_table


def _run(sim: float, job: float, live_sim: float, live: float, ok: bool = True) -> dict[str, Any]:
    return {"simulator_seconds": sim, "job_seconds": job, "job_ok": ok, "live_simulator_seconds": live_sim,
            "live_seconds": live, "live_ok": True, "live": {}}


def test_each_ratio_is_taken_per_pair_and_the_row_gives_median_and_range() -> None:
    results = {"runs": 3, "logs": {"issue11": {"runs": [_run(2.0, 4.0, 2.0, 5.0), _run(3.0, 5.0, 1.0, 4.0),
                                                        _run(2.5, 10.0, 2.0, 2.0)]}}}
    row = runs_table(results).strip().splitlines()[-1]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[0] == "issue11" and cells[1] == "3"
    assert cells[2] == "2.00 (1.00-3.00)"  # the six simulator runs: 2, 3, 2.5, 2, 1, 2
    assert cells[3] == "5.00 (4.00-10.00)"
    assert cells[4] == "0.50x (0.25-0.60)"  # 2/4, 3/5, 2.5/10 per pair, not the medians' ratio
    assert cells[5] == "4.00 (2.00-5.00)"
    assert cells[6] == "0.40x (0.25-1.00)"  # 2/5, 1/4, 2/2
    assert cells[7] == "yes"


def test_a_run_whose_outputs_differ_marks_the_row_and_one_run_has_no_range() -> None:
    results = {"runs": 1, "logs": {"busy": {"runs": [_run(1.0, 2.0, 3.0, 4.0, ok=False)]}, "other": {}}}
    table = runs_table(results)
    cells = [c.strip() for c in table.strip().splitlines()[-1].strip("|").split("|")]
    assert cells[2] == "2.00 (1.00-3.00)"  # one run still has two simulator runs beside it
    assert cells[3:7] == ["2.00", "0.50x", "4.00", "0.75x"]
    assert cells[7] == "**NO**"
    assert "other" not in table
    assert runs_table({"logs": {"x": {}}}) == ""
