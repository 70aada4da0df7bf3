"""A real Prometheus server (Debian's ``prometheus`` package) scrapes the live job on loopback: the job's gauges
and Spark's own servlet; its HTTP API answers with the relay height and the lag per input partition.

The live job drains a generated log in small batches (``--max-offsets-per-trigger``), so the inputs lag behind at
first; the relay height Prometheus reports at the end is the log's last block, read from the log itself. The job
restarts its queries on their checkpoints every 18 s meanwhile (``state_reopen = "periodic"``), and its outputs
still equal the simulator's. Then `pubsub status` reads the same facts from the running job's endpoint.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from producers.workload import WorkloadSpec, generate
from tests.support.paths import REPO_ROOT
from tests.support.prometheus import prometheus_server, query
from settings.settings import Settings
from supervise.kafka_broker import free_ports
from supervise.verify import check_outputs, produce_log

pytestmark = [pytest.mark.kafka, pytest.mark.spark]



def _log(realm: str) -> list[bytes]:
    spec = WorkloadSpec(seed=36, blocks=40, subscribers=2, keys=8, subscribed_keys=5, update_rate=0.5,
                        bad_records=0.0, quiet_blocks=2, realm=realm)
    return [line.encode() for block in generate(spec) for line in block]


def _last_block(lines: list[bytes], realm: str) -> int:
    """The log's newest block number (the author writes block n at position n - 1)."""
    blocks = [json.loads(line) for line in lines if json.loads(line)["topic"] == f"{realm}.blocks"]
    return max(int(b["value"]["position"]) for b in blocks) + 1


def _until(check: Callable[[], bool], seconds: float, what: str, job: subprocess.Popen[bytes], log: Path) -> None:
    end = time.monotonic() + seconds
    while not check():
        if job.poll() is not None:
            pytest.fail(f"the job exited ({job.returncode}) before {what}:\n{log.read_text()[-3000:]}")
        if time.monotonic() > end:
            pytest.fail(f"not within {seconds:.0f}s: {what}\n{log.read_text()[-3000:]}")
        time.sleep(1)


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[tuple[int, int, int]]:
    """A Prometheus server scraping two targets every second; yields (its port, the job's metrics port, Spark's
    UI port)."""
    job_port, ui_port = free_ports(2)
    with prometheus_server(tmp_path, {"pubsub": ("/metrics", job_port), "spark": ("/metrics/prometheus", ui_port)}) \
            as port:
        yield port, job_port, ui_port


def test_prometheus_scrapes_the_live_job_and_answers_relay_height_and_lag(
        kafka_settings: Settings, tmp_path: Path, prometheus: tuple[int, int, int]) -> None:
    port, job_port, ui_port = prometheus
    realm = "promtest"
    lines = _log(realm)
    produce_log(lines, kafka_settings, reset_topics=True)
    height = _last_block(lines, realm)
    log = tmp_path / "job.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PUBSUB_RUNTIME_DIR": str(tmp_path / "runtime"),
           "PUBSUB_SPARK_UI_PORT": str(ui_port)}
    with open(log, "wb") as out:
        job = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "job", "--bootstrap", str(kafka_settings.kafka_bootstrap),
             "--realm", realm, "--checkpoint", str(tmp_path / "checkpoint"), "--trigger-seconds", "0.5",
             "--max-offsets-per-trigger", "15", "--metrics-port", str(job_port), "--state-reopen-minutes", "0.3"],
            stdout=out, stderr=subprocess.STDOUT, cwd=REPO_ROOT, env=env, start_new_session=True)
    try:
        relay = f'pubsub_relay_height{{realm="{realm}"}}'
        _until(lambda: [float(r["value"][1]) for r in query(port, relay)] == [height], 600,
               f"Prometheus reports relay height {height}", job, log)
        lag_query = f'pubsub_input_lag_records{{query="relay",topic=~"{realm}[.].*"}}'
        _until(lambda: all(float(r["value"][1]) == 0 for r in query(port, lag_query)), 120,
               "Prometheus reports no lag left", job, log)  # the batch after the last block's may still read
        lag = query(port, lag_query)
        assert {(r["metric"]["topic"], r["metric"]["partition"]) for r in lag} >= {
            (f"{realm}.blocks", "0"), (f"{realm}.upward", "0")}
        behind = query(port, f'max(max_over_time(pubsub_input_lag_records{{query="relay",'
                              f'topic=~"{realm}[.].*"}}[10m]))')
        assert float(behind[0]["value"][1]) > 0  # while it drained in batches of 15, the inputs lagged
        waiting = query(port, f'pubsub_blocks_waiting{{realm="{realm}"}}')
        assert [float(r["value"][1]) for r in waiting] == [0]
        assert [float(r["value"][1]) for r in query(port, f'pubsub_author_height{{realm="{realm}"}}')] == [height]
        pov = query(port, f'pubsub_pov_budget_bytes{{realm="{realm}"}}')
        assert {r["metric"]["subscriber"] for r in pov} == {"3000", "3001"}
        assert query(port, 'up{job="spark"}')[0]["value"][1] == "1"  # Spark's own servlet, scraped too
        for process in ("pubsub_driver", "pubsub_driver_jvm"):  # open descriptors, against the limit
            fds = float(query(port, f"{process}_process_open_fds")[0]["value"][1])
            assert 0 < fds < float(query(port, f"{process}_process_max_fds")[0]["value"][1])
        jvm_memory = float(query(port, "pubsub_driver_jvm_process_resident_memory_bytes")[0]["value"][1])
        assert jvm_memory > float(query(port, "pubsub_driver_process_resident_memory_bytes")[0]["value"][1])
        # the queries were restarted on their checkpoints meanwhile (every 18 s), and the outputs are exact
        _until(lambda: any(float(r["value"][1]) >= 1 for r in query(port, "pubsub_state_reopens_total")), 120,
               "Prometheus counts a restart of the queries", job, log)
        # the subscribers' query may still be writing the last block's outputs when the relay's lag is 0
        _until(lambda: all(t.ok for t in check_outputs(lines, kafka_settings, [realm]).topics), 180,
               "the job's outputs equal the simulator's", job, log)
        status = subprocess.run(
            [sys.executable, "-m", "cli.main", "status", "--realm", realm, "--metrics-url",
             f"http://127.0.0.1:{job_port}/metrics"], capture_output=True, text=True, cwd=REPO_ROOT, timeout=60)
        assert status.returncode == 0, status.stderr
        assert f"relay height      {height}" in status.stdout, status.stdout
        job.send_signal(signal.SIGTERM)
        assert job.wait(120) == 0
        # no job now: the same facts from the topics' tails and the checkpoint's newest offsets
        status = subprocess.run(
            [sys.executable, "-m", "cli.main", "status", "--realm", realm, "--bootstrap",
             str(kafka_settings.kafka_bootstrap), "--checkpoint", str(tmp_path / "checkpoint"),
             "--metrics-url", f"http://127.0.0.1:{job_port}/metrics"],
            capture_output=True, text=True, cwd=REPO_ROOT, timeout=60)
        assert status.returncode == 0, status.stderr
        assert "reading the topics instead" in status.stderr
        lines_out = status.stdout.splitlines()
        assert f"relay height      {height}" in lines_out and f"author height     {height}" in lines_out
        assert "blocks waiting    0" in lines_out
        lag_line = next(line for line in lines_out if line.startswith("input lag"))
        assert f"{realm}.blocks/0 0" in lag_line and f"{realm}.upward/0 0" in lag_line, lag_line
        assert any(line.startswith("PoV 3000") for line in lines_out), status.stdout
    finally:
        job.send_signal(signal.SIGTERM)
        try:
            job.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
