"""A Spark standalone cluster on 127.0.0.1 (one master, one worker) from the pip-installed pyspark, and spark-submit.

pip's pyspark has no start-master.sh/start-worker.sh, so the daemons are started with bin/spark-class. Used by the
cluster test; docs/operations.md shows how to submit the job to a cluster of your own.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from settings.settings import Settings
from streaming.spark_session import prepare_environment, spark_conf, worker_spark_home
from supervise.errors import ClusterError, tail
from supervise.kafka_broker import free_port

__all__ = ["StandaloneCluster"]


class StandaloneCluster:
    """Start a master and a worker as child processes, submit applications to them, stop them."""

    def __init__(self, home: Path, cores: int = 2, memory: str = "2g", start_timeout: float = 90.0,
                 spark_home: Path | None = None, host: str = "127.0.0.1") -> None:
        """``spark_home``: the daemons' Spark installation (default: ``worker_spark_home``, this venv's pyspark
        without python/lib; a worker running shipped code needs a whole one, whose pyspark.zip its workers import).
        ``host``: the address master and worker bind to and advertise."""
        self.home = home
        self.cores = cores
        self.memory = memory
        self.start_timeout = start_timeout
        self.spark_home = spark_home
        self.host = host
        self.master_url = ""
        self._processes: list[subprocess.Popen[bytes]] = []

    def _env(self) -> dict[str, str]:
        prepare_environment()
        env = dict(os.environ)
        env.update(SPARK_HOME=str(self._spark_home()), SPARK_LOCAL_IP=self.host, PYSPARK_PYTHON=sys.executable,
                   SPARK_LOG_DIR=str(self.home / "logs"), SPARK_NO_DAEMONIZE="1")
        return env

    def _spark_home(self) -> Path:
        return self.spark_home or worker_spark_home()

    def _launch(self, name: str, argv: Sequence[str], env: Mapping[str, str] | None = None
                ) -> tuple[Path, subprocess.Popen[bytes]]:
        log = self.home / f"{name}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(list(argv), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       env=dict(env) if env is not None else self._env(), start_new_session=True)
        self._processes.append(process)
        return log, process

    def _wait_for(self, log: Path, process: subprocess.Popen[bytes], needle: str, what: str) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if needle in log.read_text(errors="replace"):
                return
            if process.poll() is not None:
                raise ClusterError(f"the Spark {what} exited", log, tail(log))
            time.sleep(0.3)
        raise ClusterError(f"the Spark {what} did not report '{needle}' in {self.start_timeout:.0f}s", log, tail(log))

    def start(self) -> str:
        """Start master and worker on free ports of ``host``; return the master URL once the worker registered."""
        self.start_master()
        self.start_worker()
        return self.master_url

    def start_master(self) -> str:
        """Start the master on a free port of ``host``; its URL."""
        self.home.mkdir(parents=True, exist_ok=True)
        port = free_port()
        log, process = self._launch("master", [str(self._spark_home() / "bin" / "spark-class"),
                                               "org.apache.spark.deploy.master.Master", "--host", self.host,
                                               "--port", str(port), "--webui-port", str(free_port())])
        self.master_url = f"spark://{self.host}:{port}"
        self._wait_for(log, process, "Starting Spark master at", "master")
        return self.master_url

    def start_worker(self, name: str = "worker", host: str | None = None, spark_home: Path | None = None,
                     prefix: Sequence[str] = (), env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start a worker (its log ``<name>.log``) and wait until it registered with the master. ``host``,
        ``spark_home`` and ``env``: the worker's own (default: the master's); ``prefix``: a command it runs under
        (e.g. one entering other namespaces: another host)."""
        home = spark_home or self._spark_home()
        argv = [*prefix, str(home / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker", self.master_url,
                "--host", host or self.host, "--cores", str(self.cores), "--memory", self.memory,
                "--work-dir", str(self.home / "work"), "--webui-port", str(free_port())]
        log, process = self._launch(name, argv, env)
        self._wait_for(log, process, "Successfully registered with master", "worker")
        return process

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        """SIGKILL a daemon started here and everything in its session (a worker's executors)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        self._processes.remove(process)

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
                                  cwd=self.home, timeout=timeout, stdin=subprocess.DEVNULL, check=False)
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
