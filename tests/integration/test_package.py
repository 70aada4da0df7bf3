"""The package as a user gets it: an sdist and a wheel built from the checkout's sources, the wheel installed with pip
into a fresh venv in a temporary folder, and `pubsub demo` run from yet another folder, with no checkout in sight:
its jars come from the wheel, its runtime folder is the per-user data folder, and its outputs equal the simulator's.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from tests.support.package import run, site_packages, user_env

pytestmark = [pytest.mark.slow, pytest.mark.kafka, pytest.mark.spark]


def test_the_sdist_and_the_wheel_carry_the_jars_and_the_spark_log_configuration(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()

    def jars(folder: str) -> list[str]:
        return [n for n in names if n.startswith(f"settings/jars/{folder}/")]

    assert any("/spark-sql-kafka-0-10_2.13-" in name for name in jars("spark-kafka"))
    assert any("/kafka_2.13-" in name for name in jars("kafka"))
    assert jars("local-fs") == ["settings/jars/local-fs/pubsub-local-fs.jar"]
    assert "streaming/conf/log4j2.properties" in names
    assert "producers/schemas/event-log-line.v1.json" in names
    assert not any("minicluster" in name for name in names), "test-only jars stay out of the wheel"


def test_the_installed_wheel_runs_the_demo_outside_any_checkout_equal_to_the_simulator(
        installed: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    home = tmp_path / "home"
    env = user_env(home)
    out = run([str(installed / "bin" / "pubsub"), "demo"], elsewhere, env)
    assert "all checks passed" in out and "job done:" in out and "every one of" in out
    runtime = home / "data" / "rfc0160-pubsub"
    assert (runtime / "checkpoints" / "demo").is_dir(), "the checkpoint is in the per-user data folder"
    assert (runtime / "kafka" / "server.properties").is_file() and (runtime / "logs" / "spark.log").is_file()
    site = site_packages(installed)
    assert not (site / ".runtime").exists() and not any(site.rglob("checkpoints")), "nothing written into the venv"
    assert not any(elsewhere.iterdir()), "nothing written into the working folder"
    imported = run([str(installed / "bin" / "python"), "-c", "import streaming; print(streaming.__file__)"],
                   elsewhere, env)
    assert Path(imported.strip()).is_relative_to(site)
