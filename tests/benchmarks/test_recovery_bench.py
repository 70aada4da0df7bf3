"""The recovery benchmark's split of a restart into phases, from the job's start-up lines."""

from __future__ import annotations

from pathlib import Path

from benchmarks.recovery_bench import first_batches, phases_of, split


def test_a_restart_splits_into_the_phases_the_job_logged_then_the_first_batch_and_the_catch_up(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text("Starting the job\n"
                   "INFO streaming.job: start-up: interpreter and imports at 1.00s (+1.00s)\n"
                   "INFO streaming.job: start-up: Kafka and topics at 1.20s (+0.20s)\n"
                   "relay batch 3: 30 rows in\n"
                   "INFO streaming.job: start-up: Spark's launcher at 1.70s (+0.50s)\n"
                   "INFO streaming.job: start-up: JVM start at 3.70s (+2.00s)\n"
                   "INFO streaming.job: start-up: Spark session at 5.00s (+1.30s)\n"
                   "INFO streaming.job: start-up: queries started at 6.00s (+1.00s)\n"
                   "INFO streaming.job: start-up: subscribers first batch at 9.50s (+3.50s) (batch 4, ...)\n"
                   "INFO streaming.job: start-up: relay first batch at 9.00s (+-0.50s) (batch 3, ...)\n")
    phases = phases_of(log)
    assert phases["relay first batch"] == 9.0 and phases["subscribers first batch"] == 9.5
    assert split(phases, 12.0) == {"interpreter and imports": 1.0, "Kafka and topics": 0.2, "Spark's launcher": 0.5,
                                   "JVM start": 2.0, "Spark session": 1.3, "queries started": 1.0,
                                   "first batch": 3.0, "catch-up": 3.0}


def test_a_fused_job_has_one_first_batch_a_split_one_two(tmp_path: Path) -> None:
    fused, split_job, unsaid = tmp_path / "fused.log", tmp_path / "split.log", tmp_path / "unsaid.log"
    fused.write_text("INFO streaming.job: stages fused: one query, subscribers in the relay batch (checkpoint c)\n")
    split_job.write_text("INFO streaming.job: stages split: two queries joined by the seam topic (checkpoint c)\n")
    unsaid.write_text("INFO streaming.job: start-up: interpreter and imports at 1.00s (+1.00s)\n")
    assert first_batches(fused) == ("relay first batch",)
    assert first_batches(split_job) == first_batches(unsaid) == ("relay first batch", "subscribers first batch")


def test_a_standby_take_over_counts_from_the_kill_on_its_own_clock(tmp_path: Path) -> None:
    """A standby started 30 s before the kill: its phases from the kill (origin 30.0 on its clock), not from its
    start, and none of the start-up it did before."""
    log = tmp_path / "standby.log"
    log.write_text("INFO streaming.job: start-up: interpreter and imports at 1.00s (+1.00s)\n"
                   "INFO streaming.job: start-up: Spark session at 5.00s (+4.00s)\n"
                   "INFO streaming.job: standby: Spark is up; waiting for the job on c (pid 7) to end\n"
                   "INFO streaming.job: start-up: standby took over at 30.05s (+25.05s)\n"
                   "INFO streaming.job: start-up: queries started at 30.55s (+0.50s)\n"
                   "INFO streaming.job: start-up: relay first batch at 33.55s (+3.00s) (batch 9, ...)\n")
    assert split(phases_of(log), 34.0, origin=30.0) == {"standby took over": 0.05, "queries started": 0.5,
                                                        "first batch": 3.0, "catch-up": 0.45}
