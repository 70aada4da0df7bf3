"""The job's checkpoint on HDFS: a real NameNode and DataNode (tests/support/hdfs.py: on 127.0.0.1, ports of the
system's choosing, in the test's own folder); the job runs with ``--checkpoint hdfs://...``, is SIGKILLed
mid-stream and resumes from that checkpoint with another shuffle-partition setting (so Stage S's lanes must come
from the checkpoint's recorded partitions, read on HDFS): every output equals the simulator. Then the files are
where the URI says, checked with Hadoop's own shell: the seam key (mode 0600) and the offsets on HDFS, nothing in a
local ``hdfs:`` folder, the checkpoint size the metrics report equal to ``hdfs dfs -du``, and `pubsub status`
saying in one line that it reads a local checkpoint only."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from settings.checkpoint_location import HadoopPath
from settings.settings import Settings
from streaming.checkpoint_files import space_used
from streaming.job import BatchReport, run_job
from streaming.lanes import SHUFFLE_PARTITIONS, recorded_partitions
from streaming.pipeline import seam_key
from streaming.stage_layout import SPLIT_PARTITIONS
from supervise.kafka_broker import free_port
from supervise.verify import check_outputs, produce_log
from tests.integration.test_pipeline import _job, assert_equal
from tests.support.hdfs import Hdfs, running_hdfs
from tests.support.paths import REPO_ROOT

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.slow]


@pytest.fixture
def hdfs(tmp_path: Path) -> Iterator[Hdfs]:
    with running_hdfs(tmp_path / "hdfs") as cluster:
        yield cluster


def wait_for_stage_s(log: Path, count: int, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while log.read_text(errors="replace").count("subscribers batch") < count:
        assert time.monotonic() < deadline, f"fewer than {count} Stage S batches in {timeout} s:\n{log.read_text()[-3000:]}"
        time.sleep(0.5)


def test_a_job_sigkilled_mid_stream_resumes_from_its_checkpoint_on_hdfs(
        kafka_settings: Settings, spark: SparkSession, hdfs: Hdfs, tmp_path: Path) -> None:
    lines = (REPO_ROOT / "examples" / "small.jsonl").read_bytes().splitlines()
    realms = produce_log(lines, kafka_settings, reset_topics=True)
    checkpoint, log = HadoopPath(f"{hdfs.uri}/pubsub/checkpoint"), tmp_path / "job.log"
    job = _job(kafka_settings, checkpoint, log, "--stages", "split",  # the seam key and Stage S's store on HDFS
               *[flag for realm in realms for flag in ("--realm", realm)])
    try:
        wait_for_stage_s(log, 2)  # so Stage S has state, and lanes, to keep
    finally:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait(30)
    assert recorded_partitions(checkpoint / "subscribers", spark) == SPLIT_PARTITIONS == 2

    port = free_port()
    settings = dataclasses.replace(kafka_settings, checkpoint_dir=checkpoint, realms=",".join(realms),
                                   shuffle_partitions=4, metrics_port=port)  # stages auto: the checkpoint's split
    sizes: list[float] = []

    def scrape(_: BatchReport) -> None:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
            text = answer.read().decode()
        sizes.extend(float(line.split()[1]) for line in text.splitlines() if line.startswith("pubsub_checkpoint_bytes "))

    try:  # in this process: the `spark` fixture's session, now with 4 partitions
        run_job(settings, available_now=True, on_batch=scrape)
        assert spark.conf.get(SHUFFLE_PARTITIONS) == "4"
    finally:
        spark.conf.set(SHUFFLE_PARTITIONS, str(SPLIT_PARTITIONS))
    assert_equal(check_outputs(lines, settings, realms))

    listing = hdfs.shell("-ls", "-R", "/pubsub/checkpoint")
    key_line = next(line for line in listing.splitlines() if line.endswith("/pubsub/checkpoint/seam.key"))
    assert key_line.startswith("-rw-------"), listing
    assert "/pubsub/checkpoint/subscribers/offsets/" in listing and "/pubsub/checkpoint/relay/commits/" in listing
    assert seam_key(settings, spark) == hdfs.shell("-cat", "/pubsub/checkpoint/seam.key").strip().encode()
    assert not (REPO_ROOT / "hdfs:").exists()
    du = hdfs.shell("-du", "-s", "/pubsub/checkpoint").split()
    assert space_used(spark, checkpoint) == int(du[1]) > 0
    assert sizes and max(sizes) > 0  # the metric measured the checkpoint on HDFS while the job ran

    status = subprocess.run([sys.executable, "-m", "cli.main", "status", "--realm", realms[0], "--bootstrap",
                             str(kafka_settings.kafka_bootstrap), "--checkpoint", checkpoint.uri],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False,
                            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert status.returncode == 0, status.stderr[-3000:]
    said = [line for line in status.stderr.splitlines() if checkpoint.uri in line]
    assert len(said) == 1 and "reads a local one only" in said[0], status.stderr
    assert "input lag" not in status.stdout and "relay height" in status.stdout.lower(), status.stdout


def test_a_checkpoint_whose_namenode_does_not_answer_ends_the_job_in_one_line(
        kafka_settings: Settings, tmp_path: Path) -> None:
    port = free_port()  # free, so closed: no NameNode answers there
    uri = f"hdfs://127.0.0.1:{port}/pubsub/checkpoint"
    job = subprocess.run([sys.executable, "-m", "cli.main", "job", "--bootstrap", str(kafka_settings.kafka_bootstrap),
                          "--checkpoint", uri, "--available-now"],
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, check=False,
                         env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "PUBSUB_RUNTIME_DIR": str(tmp_path)})
    assert job.returncode == 1, job.stdout[-3000:] + job.stderr[-3000:]
    said = job.stderr.strip().splitlines()
    assert said[-1].startswith(f"pubsub: cannot reach the checkpoint {uri}: its NameNode 127.0.0.1:{port} did not "
                               "answer in 3 attempts (java.net.ConnectException: Connection refused)"), job.stderr
    everything = job.stdout + job.stderr
    assert "Traceback" not in everything and "Py4JJavaError" not in everything, everything[-3000:]
    assert not [line for line in everything.splitlines() if line.lstrip().startswith(("at ", "Caused by"))], \
        everything[-3000:]
