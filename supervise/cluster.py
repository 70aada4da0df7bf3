"""A Spark standalone cluster on 127.0.0.1 (one master, one worker) from the pip-installed pyspark, and spark-submit.

pip's pyspark has no start-master.sh/start-worker.sh, so the daemons are started with bin/spark-class. Used by the
cluster test; docs/operations.md shows how to submit the job to a cluster of your own.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from settings.paths import REPO_ROOT
from settings.settings import Settings
from streaming.spark_session import prepare_environment, spark_conf, worker_spark_home
from supervise.errors import ClusterError, tail
from supervise.kafka_broker import free_port

__all__ = ["StandaloneCluster"]


class StandaloneCluster:
    """Start a master and a worker as child processes, submit applications to them, stop them."""

    def __init__(self, home: Path, cores: int = 2, memory: str = "2g", start_timeout: float = 90.0) -> None:
        self.home = home
        self.cores = cores
        self.memory = memory
        self.start_timeout = start_timeout
        self.master_url = ""
        self._processes: list[subprocess.Popen[bytes]] = []

    def _env(self) -> dict[str, str]:
        prepare_environment()
        env = dict(os.environ)
        env.update(SPARK_HOME=str(worker_spark_home()), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
                   SPARK_LOG_DIR=str(self.home / "logs"), SPARK_NO_DAEMONIZE="1")
        return env

    def _launch(self, name: str, args: Sequence[str]) -> Path:
        log = self.home / f"{name}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [str(worker_spark_home() / "bin" / "spark-class"), *args], stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=self._env(), start_new_session=True,
            )
        self._processes.append(process)
        return log

    def _wait_for(self, log: Path, needle: str, what: str) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if needle in log.read_text(errors="replace"):
                return
            if any(p.poll() is not None for p in self._processes):
                raise ClusterError(f"the Spark {what} exited", log, tail(log))
            time.sleep(0.3)
        raise ClusterError(f"the Spark {what} did not report '{needle}' in {self.start_timeout:.0f}s", log, tail(log))

    def start(self) -> str:
        """Start master and worker on free loopback ports; return the master URL once the worker registered."""
        self.home.mkdir(parents=True, exist_ok=True)
        port = free_port()
        master_log = self._launch("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                             "--port", str(port), "--webui-port", str(free_port())])
        self.master_url = f"spark://127.0.0.1:{port}"
        self._wait_for(master_log, "Starting Spark master at", "master")
        worker_log = self._launch("worker", [
            "org.apache.spark.deploy.worker.Worker", self.master_url, "--host", "127.0.0.1",
            "--cores", str(self.cores), "--memory", self.memory, "--work-dir", str(self.home / "work"),
            "--webui-port", str(free_port()),
        ])
        self._wait_for(worker_log, "Successfully registered with master", "worker")
        return self.master_url

    def submit(self, settings: Settings, app: Path, app_args: Sequence[str], timeout: float = 600.0) -> str:
        """spark-submit `app` (client mode) with the project's confs and the connector jars; return its output."""
        if not self.master_url:
            raise ClusterError("the cluster is not started")
        conf = spark_conf(settings, app_name=f"rfc0160-{app.stem}")
        conf["spark.master"] = self.master_url
        command = [str(worker_spark_home() / "bin" / "spark-submit"), "--master", self.master_url]
        for key, value in sorted(conf.items()):
            command += ["--conf", f"{key}={value}"]
        command += [str(app), *app_args]
        log = self.home / f"submit-{app.stem}.log"
        try:
            done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=self._env(),
                                  cwd=REPO_ROOT, timeout=timeout, stdin=subprocess.DEVNULL, check=False)
        except subprocess.TimeoutExpired as exc:
            log.write_bytes(exc.stdout or b"")
            raise ClusterError(f"spark-submit of {app.name} did not finish in {timeout:.0f}s", log, tail(log)) from exc
        log.write_bytes(done.stdout)
        if done.returncode != 0:
            raise ClusterError(f"spark-submit of {app.name} exited with {done.returncode}", log, tail(log, 60))
        return done.stdout.decode(errors="replace")

    def stop(self) -> None:
        """Stop the worker (and its executors), then the master."""
        for process in reversed(self._processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
        self._processes.clear()
