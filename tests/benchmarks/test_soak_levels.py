"""The long run's summaries: levels and slopes after warm-up, the longest output gap, batches from the job's log."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.reliability.soak import job_batches, levels, longest_gap


def test_a_straight_line_after_warm_up_has_its_slope_per_hour_and_no_error() -> None:
    samples = [{"t": 60.0 * i, "grows": 10.0 + 0.5 * i, "flat": 7.0, "label": "x"} for i in range(30)]
    out = levels(samples, warmup_minutes=10)
    assert out["grows"]["slope_per_hour"] == pytest.approx(30.0)  # 0.5 a minute
    assert out["grows"]["first"] == 15.0 and out["grows"]["last"] == 24.5
    assert out["flat"] == {"first": 7.0, "last": 7.0, "min": 7.0, "max": 7.0, "slope_per_hour": 0.0,
                           "slope_error": 0.0}
    assert "label" not in out and "t" not in out


def test_noise_around_a_level_gives_a_slope_within_its_error() -> None:
    samples = [{"t": 60.0 * i, "v": 100.0 + (3.0 if i % 2 else -3.0)} for i in range(40)]
    fit = levels(samples, warmup_minutes=0)["v"]
    assert abs(fit["slope_per_hour"]) < 2 * fit["slope_error"]


def test_too_few_samples_after_warm_up_give_no_levels() -> None:
    assert levels([{"t": 0.0, "v": 1.0}, {"t": 600.0, "v": 2.0}], warmup_minutes=5) == {}


def test_the_longest_gap_between_outputs() -> None:
    assert longest_gap([5.0, 1.0, 2.0, 9.5]) == 4.5
    assert longest_gap([3.0]) == 0.0


def test_batches_and_reopens_are_read_from_the_job_logs(tmp_path: Path) -> None:
    (tmp_path / "job.1.log").write_text(
        "Starting the job on local[2]\nrelay batch 0: 3 rows in -> seals 1 | 0.5s\n"
        "subscribers batch 4: 3 rows in -> pov 3 | 0.3s\nstate stores reopened: queries restarted on their "
        "checkpoints (1)\nrelay batch 11: 2 rows in -> seals 1 | 0.4s\n")
    (tmp_path / "job.2.log").write_text("relay batch 12: 1 rows in -> nothing | 0.2s\n")
    assert job_batches(tmp_path) == {"relay": 13, "subscribers": 5, "reopens": 1}
