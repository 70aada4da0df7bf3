"""The job on a standalone cluster whose worker is another host: its own network namespace, joined to this one by a
veth pair with addresses the test assigns (10.200.N.1 here, 10.200.N.2 there), and its own mount namespace, in
which the checkout and the driver's venv are hidden. The worker runs from a Spark installation of its own (pyspark
installed by pip into a separate folder); the project and its dependencies reach its executors only through Spark
(``--ship archive``: the driver's venv packed in ``spark.archives``). Kafka advertises the host-side address, the
driver binds there, and the executors connect back to it (block manager and file server included).

The checkpoint is on HDFS (tests/support/hdfs.py): a NameNode and a DataNode bound to and advertising the host-side
address, their files hidden from the worker's mount namespace, so the executors write the state stores across the
veth pair. Mid-stream the worker is SIGKILLed (with its executors) and comes back, then the driver is SIGKILLed and
the job is started again on its checkpoint; the outputs equal the simulator's record for record, and the state
stores' files are on HDFS.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from settings.settings import Settings, load_settings
from supervise.cluster import StandaloneCluster
from supervise.kafka_broker import EmbeddedKafka
from supervise.verify import check_outputs, produce_log
from tests.support.hdfs import Hdfs, running_hdfs
from tests.support.package import BASE_PYTHON, run, site_packages, user_env
from tests.support.paths import REPO_ROOT

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.cluster]

BATCH = re.compile(r"\b(relay|subscribers) batch \d+: ")


@dataclass(frozen=True)
class OtherHost:
    namespace: str
    here: str
    """This side's address (the driver, the master and Kafka bind to it)."""
    there: str
    """The worker's address, inside the namespace."""


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@pytest.fixture
def other_host() -> Iterator[OtherHost]:
    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("unshare") is None:
        pytest.skip("network and mount namespaces need root, iproute2 and unshare")
    n = 100 + os.getpid() % 100
    host = OtherHost(f"pubsub-w{n}", f"10.200.{n}.1", f"10.200.{n}.2")
    outer, inner = f"psh{n}", f"psw{n}"
    _ip("netns", "add", host.namespace)
    try:
        _ip("link", "add", outer, "type", "veth", "peer", "name", inner)
        _ip("link", "set", inner, "netns", host.namespace)
        _ip("addr", "add", f"{host.here}/30", "dev", outer)
        _ip("link", "set", outer, "up")
        for args in (("addr", "add", f"{host.there}/30", "dev", inner), ("link", "set", inner, "up"),
                     ("link", "set", "lo", "up")):
            _ip("netns", "exec", host.namespace, "ip", *args)
        yield host
    finally:
        subprocess.run(["ip", "link", "del", outer], capture_output=True, timeout=30, check=False)
        subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True, timeout=30, check=False)


@pytest.fixture
def hdfs(other_host: OtherHost, tmp_path: Path) -> Iterator[Hdfs]:
    with running_hdfs(tmp_path / "hdfs", host=other_host.here) as cluster:
        yield cluster


class _Job:
    """`pubsub job` from the installed venv, in its own session, its output read line by line."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> None:
        self.batches = 0
        self.log = log
        self.process = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        with open(self.log, "a") as out:
            for line in self.process.stdout:
                out.write(line)
                out.flush()
                if BATCH.search(line):
                    self.batches += 1

    def wait_for_batches(self, count: int, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while self.batches < count:
            assert self.process.poll() is None, f"the job exited {self.process.returncode}:\n{self.log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"no {count} batches in {timeout}s:\n{self.log.read_text()[-3000:]}"
            time.sleep(0.5)

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self._reader.join(timeout=10)

    def wait(self, timeout: float = 600) -> int:
        code = self.process.wait(timeout=timeout)
        self._reader.join(timeout=10)
        return code


def test_the_job_with_its_worker_on_another_host_survives_worker_and_driver_kills_equal_to_the_simulator(
        installed: Path, other_host: OtherHost, hdfs: Hdfs, tmp_path: Path) -> None:
    worker_spark = tmp_path / "worker-spark"
    version = next(site_packages(installed).glob("pyspark-*.dist-info")).name.split("-")[1].removesuffix(".dist")
    run([str(BASE_PYTHON), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
         "--target", str(worker_spark), f"pyspark=={version}"], tmp_path)
    broker = EmbeddedKafka(home=tmp_path / "kafka", host=other_host.here)
    cluster = StandaloneCluster(tmp_path / "cluster", host=other_host.here,
                                spark_home=site_packages(installed) / "pyspark")
    try:
        settings: Settings = replace(load_settings(environ={}), kafka_bootstrap=broker.start().bootstrap)
        lines = (REPO_ROOT / "examples" / "small.jsonl").read_bytes().splitlines()
        realms = produce_log(lines, settings, reset_topics=True)
        master = cluster.start_master()
        hidden = [str(REPO_ROOT), str(installed), str(hdfs.storage)]
        prefix = ["ip", "netns", "exec", other_host.namespace, "unshare", "--mount", "--propagation", "private", "--",
                  "/bin/sh", "-c", 'for d in "$@"; do [ "$d" = -- ] && break; mount -t tmpfs tmpfs "$d"; shift; '
                  'done; shift; exec "$@"', "hide", *hidden, "--"]
        worker_env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(tmp_path),
                      "SPARK_HOME": str(worker_spark / "pyspark"), "SPARK_LOCAL_IP": other_host.there,
                      "SPARK_NO_DAEMONIZE": "1", "SPARK_LOG_DIR": str(tmp_path / "cluster" / "worker-logs")}

        def start_worker(name: str) -> subprocess.Popen[bytes]:
            return cluster.start_worker(name, host=other_host.there, spark_home=worker_spark / "pyspark",
                                        prefix=prefix, env=worker_env)

        worker = start_worker("worker")
        env = {**user_env(tmp_path / "home"), "PUBSUB_RUNTIME_DIR": str(tmp_path / "runtime"),
               "PUBSUB_SPARK_DRIVER_HOST": other_host.here, "PUBSUB_SPARK_DRIVER_BIND_ADDRESS": other_host.here}
        argv = [str(installed / "bin" / "pubsub"), "job", "--master", master, "--bootstrap", str(settings.kafka_bootstrap),
                *[a for realm in realms for a in ("--realm", realm)], "--checkpoint", f"{hdfs.uri}/pubsub/checkpoint",
                "--max-offsets-per-trigger", "8", "--ship", "archive", "--available-now"]
        (tmp_path / "driver").mkdir()
        job = _Job(argv, env, tmp_path / "driver", tmp_path / "job.log")
        job.wait_for_batches(3)
        cluster.kill(worker)
        start_worker("worker-again")
        job.wait_for_batches(job.batches + 3)
        job.kill()
        again = _Job(argv, env, tmp_path / "driver", tmp_path / "job.log")
        assert again.wait() == 0, (tmp_path / "job.log").read_text()[-3000:]
        assert "Job done:" in (tmp_path / "job.log").read_text()
        result = check_outputs(lines, settings, realms)
    finally:
        cluster.stop()
        broker.stop()
    executors = [p for p in (tmp_path / "cluster" / "work").glob("app-*/*/") if (p / "environment").is_dir()]
    assert len(executors) >= 3, "executors ran from the shipped archive: before and after the worker's restart, and " \
                                "for the restarted driver"
    listing = hdfs.shell("-ls", "-R", "/pubsub/checkpoint")
    assert "/pubsub/checkpoint/fused/state/" in listing and ".changelog" in listing, listing[-3000:]
    assert not list(tmp_path.glob("**/hdfs:*")), "nothing of the checkpoint in a local folder"
    bad = [t for t in result.topics if not t.ok]
    assert not bad, f"differences: {bad}"
    assert sum(t.matched for t in result.topics) == sum(t.expected for t in result.topics) > 0
