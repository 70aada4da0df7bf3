"""`pubsub job --write-class-archive` writes a class data sharing archive that Spark's driver JVM maps: with ``-Xshare:on`` a
JVM refuses to start unless it maps every archive it is given, so a session that starts with it and runs a query
proves the archive is used. A damaged archive (cut short, as a full disk or a half copy leaves it), which a JVM would
map and die of SIGBUS at its start, is checked against its manifest and not given to the JVM: the job's session
starts without it, and says so."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

SESSION = """
import sys
from pathlib import Path
from settings.settings import load_settings
from streaming.spark_session import build_spark, spark_conf
settings = load_settings(overrides={"spark_class_archive": Path(sys.argv[1])})
given = f"-XX:SharedArchiveFile={sys.argv[1]}" in spark_conf(settings, "t")["spark.driver.extraJavaOptions"].split()
print("archive given" if given else "archive not given")
spark = build_spark(settings, app_name="rfc0160-class-archive-test", driver_options=tuple(sys.argv[2:]))
frame = spark.range(100)
print("rows", frame.groupBy((frame.id % 3).alias("k")).count().count())
"""


def _env(runtime: Path) -> dict[str, str]:
    return {**os.environ, "PUBSUB_RUNTIME_DIR": str(runtime), "COLUMNS": "400"}


def test_the_driver_jvm_maps_the_archive_the_job_wrote(tmp_path: Path) -> None:
    archive = tmp_path / "driver.jsa"
    built = subprocess.run([sys.executable, "-m", "cli.main", "job", "--write-class-archive"],
                           env={**_env(tmp_path / "runtime"), "PUBSUB_SPARK_CLASS_ARCHIVE": str(archive)}, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    assert archive.stat().st_size > 10 * 2**20 and f"Wrote {archive} (" in built.stderr
    assert not list(tmp_path.glob(".driver.jsa.*")), "no partial file left beside it"

    mapped = subprocess.run([sys.executable, "-c", SESSION, str(archive), "-Xshare:on"], env=_env(tmp_path / "runtime"),
                            capture_output=True, text=True, timeout=600)
    assert mapped.returncode == 0 and mapped.stdout.split("\n")[:2] == ["archive given", "rows 3"], mapped.stderr[-2000:]

    damaged = tmp_path / "damaged.jsa"
    damaged.write_bytes(archive.read_bytes()[: 2**20])
    (tmp_path / "damaged.jsa.json").write_bytes((tmp_path / "driver.jsa.json").read_bytes())
    (tmp_path / "cwd").mkdir()
    unused = subprocess.run([sys.executable, "-c", SESSION, str(damaged)], env=_env(tmp_path / "runtime"),
                            cwd=tmp_path / "cwd", capture_output=True, text=True, timeout=600)
    assert unused.returncode == 0 and unused.stdout.split("\n")[:2] == ["archive not given", "rows 3"], \
        unused.stderr[-2000:]
    assert not list((tmp_path / "cwd").glob("hs_err_pid*.log")), "the JVM did not crash on the damaged archive"
    assert f"class archive {damaged} not used: it holds {2**20} bytes, its manifest says " in unused.stderr
