"""A batch whose tasks wait forever ends the job in one line, never a silent hang: Spark's Python worker daemon is
stopped (SIGSTOP) while the job runs, so the transformWithState tasks wait on workers that never answer, as a task
waits on a state server that died without a reply. The job's driver sees the batch run with Spark's JVM and its
Python workers idle for ``stuck_batch_seconds`` and stops with ``BatchStuck``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from producers.transport.topics import ensure_realm_topics
from producers.workload import WorkloadSpec, generate
from settings.settings import Settings
from tests.integration.test_author import without_blocks
from tests.integration.test_author_snapshot import send
from tests.support.paths import REPO_ROOT

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def descendants(pid: int) -> list[int]:
    """``pid``'s living descendants (from /proc), nearest first."""
    found, pending = [], [pid]
    while pending:
        parent = pending.pop(0)
        for task in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                children = [int(c) for c in task.read_text().split()]
            except (OSError, ValueError):
                continue
            found += children
            pending += children
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_a_batch_whose_tasks_never_answer_ends_the_job_in_one_line(kafka_settings: Settings, tmp_path: Path) -> None:
    realm = f"stuck{uuid.uuid4().hex[:8]}"
    ensure_realm_topics(kafka_settings, realm)
    send(kafka_settings, realm, [line for chunk in generate(WorkloadSpec(seed=3, blocks=2, realm=realm))
                                 for line in without_blocks(chunk)])
    log = tmp_path / "job.log"
    command = [sys.executable, "-c", "import sys; from cli.main import main; sys.exit(main())", "job",
               "--bootstrap", str(kafka_settings.kafka_bootstrap), "--checkpoint", str(tmp_path / "checkpoint"),
               "--available-now", "--realm", realm]
    stopped: list[int] = []
    with log.open("ab") as out:
        job = subprocess.Popen(command, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT,
                               env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "PUBSUB_STUCK_BATCH_SECONDS": "20"})
    try:
        deadline = time.monotonic() + 240
        while job.poll() is None and time.monotonic() < deadline:
            daemons = [pid for pid in descendants(job.pid) if "pyspark.daemon" in command_line(pid)][:1]
            for pid in daemons + [p for d in daemons for p in descendants(d)]:  # the daemon, the workers it forked
                if pid not in stopped:
                    os.kill(pid, signal.SIGSTOP)
                    stopped.append(pid)
            time.sleep(0.1)
        assert job.poll() is not None, "the job did not end"
    finally:
        for pid in stopped:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        if job.poll() is None:
            job.kill()
        job.wait(30)
    text = log.read_text()
    assert stopped, text[-3000:]
    assert job.returncode != 0, text[-3000:]
    named = [line for line in text.splitlines() if "used" in line and "of a core: a task waits" in line]
    assert len(named) == 1 and "has run for" in named[0], text[-3000:]
    assert "Traceback" not in text
