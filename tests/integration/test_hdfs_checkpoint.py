"""The job's checkpoint on HDFS: a real NameNode and DataNode (Hadoop's minicluster, one JVM on 127.0.0.1, ports
of the system's choosing, in the test's own folder); the job runs with ``--checkpoint hdfs://...``, is SIGKILLed
mid-stream and resumes from that checkpoint with another shuffle-partition setting (so Stage S's lanes must come
from the checkpoint's recorded partitions, read on HDFS): every output equals the simulator. Then the files are
where the URI says, checked with Hadoop's own shell: the seam key (mode 0600) and the offsets on HDFS, nothing in a
local ``hdfs:`` folder, the checkpoint size the metrics report equal to ``hdfs dfs -du``, and `pubsub status`
saying in one line that it reads a local checkpoint only."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
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
from supervise.kafka_broker import free_port
from supervise.verify import check_outputs, produce_log
from tests.integration.test_pipeline import _job, assert_equal
from tests.support.paths import REPO_ROOT

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.slow]

JARS = REPO_ROOT / "jvm" / "test-lib" / "hdfs-minicluster"


@dataclasses.dataclass(frozen=True)
class MiniDfs:
    uri: str
    """hdfs://127.0.0.1:<port>"""
    conf: Path
    """A folder with an empty core-site.xml: Hadoop's shell insists on finding one on its class path."""

    def shell(self, *args: str) -> str:
        """`hdfs dfs <args>` against this cluster (Hadoop's FsShell from the minicluster's jars)."""
        run = subprocess.run([_java(), "-cp", f"{self.conf}:{JARS}/*", "org.apache.hadoop.fs.FsShell", "-fs", self.uri, *args],
                             capture_output=True, text=True, timeout=120, check=False)
        assert run.returncode == 0, run.stderr[-3000:]
        return run.stdout


def _java() -> str:
    java = shutil.which("java")
    assert java is not None, "no java on PATH"
    return java


@pytest.fixture
def minidfs(tmp_path: Path) -> Iterator[MiniDfs]:
    assert any(JARS.glob("hadoop-client-minicluster-*.jar")), f"no minicluster jars in {JARS}: run `make test-jars`"
    details, log = tmp_path / "minidfs.json", tmp_path / "minidfs.log"
    args = [_java(), "-cp", f"{JARS}/*", f"-Dtest.build.data={tmp_path / 'dfs'}",
            "org.apache.hadoop.mapreduce.MiniHadoopClusterManager", "-nomr", "-format", "-nnport", "0",
            "-nnhttpport", "0", "-writeDetails", str(details)]
    with log.open("wb") as out:
        cluster = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not details.exists() or not details.read_text().strip():
            assert cluster.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "the minicluster did not start in 120 s:\n" + log.read_text()[-3000:]
            time.sleep(0.5)
        conf = tmp_path / "conf"
        conf.mkdir()
        (conf / "core-site.xml").write_text("<configuration/>\n")
        yield MiniDfs(f"hdfs://127.0.0.1:{json.loads(details.read_text())['namenode_port']}", conf)
    finally:
        os.killpg(cluster.pid, signal.SIGTERM)
        try:
            cluster.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(cluster.pid, signal.SIGKILL)
            cluster.wait(30)


def wait_for_stage_s(log: Path, count: int, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while log.read_text(errors="replace").count("subscribers batch") < count:
        assert time.monotonic() < deadline, f"fewer than {count} Stage S batches in {timeout} s:\n{log.read_text()[-3000:]}"
        time.sleep(0.5)


def test_a_job_sigkilled_mid_stream_resumes_from_its_checkpoint_on_hdfs(
        kafka_settings: Settings, spark: SparkSession, minidfs: MiniDfs, tmp_path: Path) -> None:
    lines = (REPO_ROOT / "examples" / "small.jsonl").read_bytes().splitlines()
    realms = produce_log(lines, kafka_settings, reset_topics=True)
    checkpoint, log = HadoopPath(f"{minidfs.uri}/pubsub/checkpoint"), tmp_path / "job.log"
    job = _job(kafka_settings, checkpoint, log, *[flag for realm in realms for flag in ("--realm", realm)])
    try:
        wait_for_stage_s(log, 2)  # so Stage S has state, and lanes, to keep
    finally:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait(30)
    assert recorded_partitions(checkpoint / "subscribers", spark) == kafka_settings.shuffle_partitions == 2

    port = free_port()
    settings = dataclasses.replace(kafka_settings, checkpoint_dir=checkpoint, realms=",".join(realms),
                                   shuffle_partitions=4, metrics_port=port)
    sizes: list[float] = []

    def scrape(_: BatchReport) -> None:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
            text = answer.read().decode()
        sizes.extend(float(line.split()[1]) for line in text.splitlines() if line.startswith("pubsub_checkpoint_bytes "))

    try:  # in this process: the `spark` fixture's session, now with 4 partitions
        run_job(settings, available_now=True, on_batch=scrape)
        assert spark.conf.get(SHUFFLE_PARTITIONS) == "4"
    finally:
        spark.conf.set(SHUFFLE_PARTITIONS, str(kafka_settings.shuffle_partitions))
    assert_equal(check_outputs(lines, settings, realms))

    listing = minidfs.shell("-ls", "-R", "/pubsub/checkpoint")
    key_line = next(line for line in listing.splitlines() if line.endswith("/pubsub/checkpoint/seam.key"))
    assert key_line.startswith("-rw-------"), listing
    assert "/pubsub/checkpoint/subscribers/offsets/" in listing and "/pubsub/checkpoint/relay/commits/" in listing
    assert seam_key(settings, spark) == minidfs.shell("-cat", "/pubsub/checkpoint/seam.key").strip().encode()
    assert not (REPO_ROOT / "hdfs:").exists()
    du = minidfs.shell("-du", "-s", "/pubsub/checkpoint").split()
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
