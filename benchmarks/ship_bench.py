"""Start-up of the job on a standalone cluster by the way its Python code reaches the executors (same run):

- ``shared``: the executors run the driver's venv interpreter (one host, or the same venv at the same path on every
  host): nothing is shipped;
- ``archive``: the venv packed with venv-pack2 and sent in ``spark.archives`` (``--ship archive``, the default for a
  ``spark://`` master when the project is installed from a wheel);
- ``py-files``: the project's packages zipped and sent in ``--py-files`` (the executors still need every dependency
  installed: pandas, pyarrow and the rest carry C extensions, which zipimport cannot load).

The wheel (``make dist``; pure Python unless given a compiled one) is installed into a fresh venv in the scratch
folder; the master and worker run from that venv's pyspark (a whole Spark installation, python/lib included, as a
cluster host has). Each mode runs the job available-now over examples/small.jsonl on fresh topics and a fresh
checkpoint (so each run has its own seam key), and its outputs are checked against the simulator. Figures: the pack (once per venv), then per mode the
job's wall time from launch to exit and to its first finished micro-batch.

    .venv/bin/python -m benchmarks.ship_bench --wheel dist/rfc0160_pubsub-0.1.0-*.whl
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, write_result
from settings.settings import Settings, load_settings
from supervise.cluster import StandaloneCluster
from supervise.kafka_broker import EmbeddedKafka
from supervise.verify import check_outputs, produce_log

MODES = ("shared", "archive", "py-files")
PROJECT = ("pubsub_core", "state", "streaming", "producers", "supervise", "cli")


def _venv(scratch: Path, wheel: Path, existing: Path | None) -> tuple[Path, float]:
    if existing is not None:
        return existing, 0.0
    venv = scratch / "venv"
    started = time.monotonic()
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    str(wheel)], check=True)
    return venv, time.monotonic() - started


def _site(venv: Path) -> Path:
    return next((venv / "lib").glob("python3.*/site-packages"))


def _project_zip(venv: Path, target: Path) -> Path:
    """The project's packages as installed in ``venv``, zipped for ``--py-files`` (sources only: no compiled modules,
    which zipimport cannot load, and no jars, which Spark gets through ``spark.jars``)."""
    site = _site(venv)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in PROJECT:
            for path in sorted((site / package).rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".so", ".jar"):
                    archive.write(path, path.relative_to(site))
    return target


def _pack(venv: Path, env: dict[str, str]) -> tuple[Path, float]:
    started = time.monotonic()
    done = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "from streaming.shipping import pack_environment; print(pack_environment())"],
                          env=env, capture_output=True, text=True, check=True, cwd=venv)
    # not from the checkout: `-c` puts the working folder first on the path, and the checkout's packages are
    # not the wheel's (the job refuses to pack a checkout)
    return Path(done.stdout.strip().splitlines()[-1]), time.monotonic() - started


def _run_job(venv: Path, mode: str, settings: Settings, realms: list[str], scratch: Path, env: dict[str, str],
             project_zip: Path, run: int) -> dict[str, float]:
    argv = [str(venv / "bin" / "pubsub"), "job", "--master", settings.spark_master, "--bootstrap",
            str(settings.kafka_bootstrap), *[a for realm in realms for a in ("--realm", realm)],
            "--checkpoint", str(scratch / f"checkpoint-{mode}-{run}"), "--available-now",
            "--ship", "archive" if mode == "archive" else "shared"]
    run_env = dict(env)
    if mode == "py-files":
        run_env["PYSPARK_SUBMIT_ARGS"] = f"--py-files {project_zip} pyspark-shell"
    started = time.monotonic()
    first_batch: float | None = None
    log = scratch / f"job-{mode}-{run}.log"
    with open(log, "w") as out:
        process = subprocess.Popen(argv, env=run_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   cwd=scratch)
        assert process.stdout is not None
        for line in process.stdout:
            out.write(line)
            if first_batch is None and re.search(r"\bbatch \d+: ", line):
                first_batch = time.monotonic() - started
        code = process.wait()
    seconds = time.monotonic() - started
    if code != 0:
        raise SystemExit(f"the job in mode {mode} exited {code}; see {log}")
    return {"wall_seconds": round(seconds, 1),
            "first_batch_seconds": round(first_batch, 1) if first_batch is not None else -1.0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, required=True, help="the wheel to install (make dist)")
    parser.add_argument("--runs", type=int, default=2, help="job runs per mode (default: 2), modes interleaved")
    parser.add_argument("--venv", type=Path, help="a venv with the wheel installed already (no install)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="ship-bench-"))
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("PUBSUB_", "SPARK_", "PYSPARK_", "VIRTUAL_ENV", "PYTHONPATH"))}
    env["PUBSUB_RUNTIME_DIR"] = str(scratch / "runtime")
    broker = EmbeddedKafka(home=scratch / "kafka")
    cluster: StandaloneCluster | None = None
    try:
        venv, install_seconds = _venv(scratch, args.wheel, args.venv)
        print(f"venv from {args.wheel.name} in {install_seconds:.0f}s", flush=True)
        archive, pack_seconds = _pack(venv, env)
        print(f"packed {archive.stat().st_size / 2**20:.0f} MiB in {pack_seconds:.1f}s", flush=True)
        project_zip = _project_zip(venv, scratch / "project.zip")
        bootstrap = broker.start()
        settings = dataclasses.replace(load_settings(environ={}), kafka_bootstrap=bootstrap.bootstrap)
        lines = (ROOT / "examples" / "small.jsonl").read_bytes().splitlines()
        cluster = StandaloneCluster(scratch / "cluster", spark_home=_site(venv) / "pyspark")
        settings = dataclasses.replace(settings, spark_master=cluster.start())
        runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
        for run in range(args.runs):
            for mode in MODES:
                realms = produce_log(lines, settings, reset_topics=True)  # fresh outputs: each run its own seam key
                figures = _run_job(venv, mode, settings, realms, scratch, env, project_zip, run)
                result = check_outputs(lines, settings, realms)
                figures["equal_to_simulator"] = float(result.ok)
                runs[mode].append(figures)
                print(f"{mode}: {figures}", flush=True)
        record: dict[str, Any] = {
            "wheel": args.wheel.name, "install_seconds": round(install_seconds, 1),
            "pack_seconds": round(pack_seconds, 1), "archive_mib": round(archive.stat().st_size / 2**20, 1),
            "project_zip_kib": round(project_zip.stat().st_size / 1024, 1), "runs": runs,
        }
        print(write_result("ship_bench", record, module="benchmarks.ship_bench", argv=argv))
    finally:
        if cluster is not None:
            cluster.stop()
        broker.stop()
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
