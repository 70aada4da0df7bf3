"""`pubsub job --write-class-archive` writes a class data sharing archive that Spark's driver JVM maps: with ``-Xshare:on`` a
JVM refuses to start unless it maps every archive it is given, so a session that starts with it and runs a query
proves the archive is used; a damaged archive under the same flag stops the JVM (the check can fail)."""

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
assert f"-XX:SharedArchiveFile={sys.argv[1]}" in spark_conf(settings, "t")["spark.driver.extraJavaOptions"].split()
spark = build_spark(settings, app_name="rfc0160-class-archive-test", driver_options=("-Xshare:on",))
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

    mapped = subprocess.run([sys.executable, "-c", SESSION, str(archive)], env=_env(tmp_path / "runtime"),
                            capture_output=True, text=True, timeout=600)
    assert mapped.returncode == 0 and "rows 3" in mapped.stdout, mapped.stderr[-2000:]

    damaged = tmp_path / "damaged.jsa"
    damaged.write_bytes(archive.read_bytes()[: 2**20])
    refused = subprocess.run([sys.executable, "-c", SESSION, str(damaged)], env=_env(tmp_path / "runtime"),
                             capture_output=True, text=True, timeout=600)
    assert refused.returncode != 0 and "rows" not in refused.stdout
