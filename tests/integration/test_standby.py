"""One job per checkpoint on a host, and a warm standby (`pubsub job --standby`) on real Kafka and real Spark: a
second job on a running job's checkpoint is refused in one line before Spark starts; a standby starts Spark, waits,
takes over when the running job's process group is SIGKILLed, and the outputs equal the simulator; a standby
stopped while it waits exits cleanly.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from settings.settings import Settings
from producers.transport.kafka_io import produce
from supervise.verify import check_outputs, fresh_topics
from tests.integration.test_pipeline import EXAMPLES, _wait_for_batches, assert_equal
from tests.integration.test_stages import _cli_job
from tests.support.paths import REPO_ROOT

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def _wait_for(log: Path, text: str, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while text not in (log.read_text(errors="replace") if log.exists() else ""):
        assert time.monotonic() < deadline, f"no {text!r} in {timeout}s:\n{log.read_text()[-2000:]}"
        time.sleep(0.2)


def test_a_standby_takes_over_a_killed_job_and_a_second_job_is_refused(kafka_settings: Settings,
                                                                       tmp_path: Path) -> None:
    lines = (EXAMPLES / "small.jsonl").read_bytes().splitlines()
    records, realms = fresh_topics(lines, kafka_settings, reset_topics=True)
    half = len(records) // 2
    produce(kafka_settings, records[:half])  # the rest after the kill: the standby has batches of its own to run
    checkpoint = tmp_path / "checkpoint"
    active_log, standby_log, idle_log = tmp_path / "active.log", tmp_path / "standby.log", tmp_path / "idle.log"
    realm_flags = [flag for realm in realms for flag in ("--realm", realm)]
    active = _cli_job(kafka_settings, checkpoint, active_log, *realm_flags)
    standby: subprocess.Popen[bytes] | None = None
    try:
        _wait_for_batches(active_log, 2)
        second = subprocess.run(
            [sys.executable, "-m", "cli.main", "job", "--bootstrap", str(kafka_settings.kafka_bootstrap),
             "--checkpoint", str(checkpoint), "--available-now", *realm_flags],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False,
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
        assert second.returncode == 1, second.stdout[-2000:] + second.stderr[-2000:]
        last = second.stderr.strip().splitlines()[-1]
        assert last.startswith(f"pubsub: the checkpoint {checkpoint} is in use by another job (pid {active.pid}) on "
                               "this host: stop it first, or run this one with --standby"), second.stderr
        assert "start-up: JVM start" not in second.stderr  # refused before Spark started

        standby = _cli_job(kafka_settings, checkpoint, standby_log, "--standby", *realm_flags)
        _wait_for(standby_log, f"standby: Spark is up; waiting for the job on {checkpoint} (pid {active.pid}) to end")
        assert "relay batch" not in standby_log.read_text()
        os.killpg(active.pid, signal.SIGKILL)
        active.wait(30)
        produce(kafka_settings, records[half:])
        _wait_for_batches(standby_log, 2)
        text = standby_log.read_text()
        assert text.index("start-up: standby took over") < text.index("start-up: queries started")

        idle = _cli_job(kafka_settings, checkpoint, idle_log, "--standby", *realm_flags)
        _wait_for(idle_log, f"(pid {standby.pid}) to end")
        os.killpg(idle.pid, signal.SIGTERM)
        assert idle.wait(60) == 0, idle_log.read_text()[-2000:]
        assert "Job stopped by SIGTERM: 0 batches" in idle_log.read_text()
        assert standby.poll() is None  # the running job went on
    finally:
        for process in (active, standby):
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(30)
    finisher = _cli_job(kafka_settings, checkpoint, tmp_path / "finisher.log", "--available-now", *realm_flags)
    assert finisher.wait(600) == 0, (tmp_path / "finisher.log").read_text()[-3000:]
    assert_equal(check_outputs(lines, kafka_settings, realms))
