"""The pipeline benchmark's runs table (benchmarks/render.py) over repeated runs: medians, ranges, per-pair ratios."""

from __future__ import annotations

from typing import Any

from benchmarks.render import runs_table


def _run(sim: float, job: float, live_sim: float, live: float, ok: bool = True,
         jit: tuple[float, float] | None = None) -> dict[str, Any]:
    return {"simulator_seconds": sim, "job_seconds": job, "job_ok": ok, "live_simulator_seconds": live_sim,
            "live_seconds": live, "live_ok": True, "live": {},
            **({} if jit is None else {"job_jit_seconds": jit[0], "live_jit_seconds": jit[1]})}


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_each_ratio_is_taken_per_pair_and_the_row_gives_median_and_range() -> None:
    results = {"runs": 3, "logs": {"standard": {"runs": [_run(2.0, 4.0, 2.0, 5.0), _run(3.0, 5.0, 1.0, 4.0),
                                                        _run(2.5, 10.0, 2.0, 2.0)]}}}
    cells = _cells(runs_table(results).strip().splitlines()[-1])
    assert cells[0] == "standard" and cells[1] == "3"
    assert cells[2] == "2.00 (1.00-3.00)"  # the six simulator runs: 2, 3, 2.5, 2, 1, 2
    assert cells[3] == "5.00 (4.00-10.00)"
    assert cells[4] == "0.50x (0.25-0.60)"  # 2/4, 3/5, 2.5/10 per pair, not the medians' ratio
    assert cells[5] == "4.00 (2.00-5.00)"
    assert cells[6] == "0.40x (0.25-1.00)"  # 2/5, 1/4, 2/2
    assert cells[7] == "-"  # no JIT figures recorded
    assert cells[8] == "yes"


def test_a_run_whose_outputs_differ_marks_the_row_and_one_run_has_no_range() -> None:
    results = {"runs": 1, "logs": {"busy": {"runs": [_run(1.0, 2.0, 3.0, 4.0, ok=False)]}, "other": {}}}
    table = runs_table(results)
    cells = _cells(table.strip().splitlines()[-1])
    assert cells[2] == "2.00 (1.00-3.00)"  # one run still has two simulator runs beside it
    assert cells[3:7] == ["2.00", "0.50x", "4.00", "0.75x"]
    assert cells[8] == "**NO**"
    assert "other" not in table
    assert runs_table({"logs": {"x": {}}}) == ""


def test_warm_up_pairs_get_their_own_row_before_the_measured_one_with_the_jit_seconds_per_pair() -> None:
    results = {"runs": 2, "warmup": 1, "logs": {"standard": {
        "warmup_runs": [_run(2.0, 8.0, 2.0, 8.0, jit=(1.5, 2.5))],
        "runs": [_run(2.0, 4.0, 2.0, 4.0, jit=(0.25, 0.5)), _run(2.0, 5.0, 2.0, 5.0, jit=(0.5, 0.75))]}}}
    table = runs_table(results)
    warm, measured = (_cells(line) for line in table.strip().splitlines()[-2:])
    assert warm[0] == "standard, warm-up" and warm[1] == "1" and warm[4] == "0.25x" and warm[7] == "4.00"
    assert measured[0] == "standard" and measured[1] == "2" and measured[4] == "0.45x (0.40-0.50)"
    assert measured[7] == "1.00 (0.75-1.25)"  # 0.25 + 0.5 and 0.5 + 0.75, per pair
    assert "after 1 warm-up pair on the same JVM" in table
