"""SIGKILL the job mid-stream, restart it on its checkpoint: nothing lost, state continues, duplicates identical."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from producers.kafka_io import produce, read_topic, synthetic_records
from streaming.paths import REPO_ROOT
from streaming.settings import Settings
from tests.integration.helpers import as_outputs, expected_outputs

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

TOTAL = 1200


def _job_command(settings: Settings, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "streaming.job",
        "--bootstrap", str(settings.kafka_bootstrap),
        "--topic-prefix", settings.topic_prefix,
        "--checkpoint", str(settings.checkpoint_dir),
        *extra,
    ]


def test_sigkill_mid_stream_then_restart_loses_nothing(job_settings: Settings, tmp_path: Path) -> None:
    produce(job_settings, synthetic_records(job_settings.input, TOTAL, keys=5))
    log = tmp_path / "first-run.log"
    with log.open("wb") as out:
        first = subprocess.Popen(
            _job_command(job_settings, "--max-offsets-per-trigger", "40", "--trigger-seconds", "0.5"),
            cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 420
        seen = 0
        while seen < 200:
            assert first.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, f"only {seen} outputs after 420s\n{log.read_text()[-3000:]}"
            seen = len(read_topic(job_settings, job_settings.output))
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the Python driver and its JVM, as in a crash
        first.wait()
    before = read_topic(job_settings, job_settings.output)
    assert 0 < len(before) < TOTAL, "the kill must land mid-stream"

    second = subprocess.run(
        _job_command(job_settings, "--available-now"), cwd=REPO_ROOT, capture_output=True, timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert second.returncode == 0, second.stdout.decode()[-3000:] + second.stderr.decode()[-3000:]

    output = read_topic(job_settings, job_settings.output)
    assert set(before) <= set(output)  # the first run's records are still there, untouched
    by_id: dict[str, set[bytes]] = {}
    for record in output:
        by_id.setdefault(json.loads(record.value or b"")["id"], set()).add(record.value or b"")
    # Every input is reflected, and any duplicate (a batch replayed after the kill) is byte-identical.
    assert len(by_id) == TOTAL
    assert all(len(copies) == 1 for copies in by_id.values())
    # State continued: the distinct outputs are exactly the fold's (per-key seq 1..240, digest chains unbroken).
    assert set(as_outputs(output)) == set(expected_outputs(job_settings))
    final = Counter(json.loads(value)["key"] for value in {r.value or b"" for r in output})
    assert final == {f"key-{k}": TOTAL // 5 for k in range(5)}
