"""The protocol job submitted with spark-submit to a standalone master + worker on 127.0.0.1 equals the simulator."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT
from settings.settings import Settings
from supervise.cluster import StandaloneCluster
from supervise.verify import check_outputs, produce_log

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.cluster]


def test_the_protocol_job_on_a_standalone_cluster_equals_the_simulator(kafka_settings: Settings,
                                                                       tmp_path: Path) -> None:
    lines = (REPO_ROOT / "examples" / "small.jsonl").read_bytes().splitlines()
    realms = produce_log(lines, kafka_settings, reset_topics=True)
    cluster = StandaloneCluster(tmp_path / "cluster", cores=2, memory="2g")
    try:
        master = cluster.start()
        settings = dataclasses.replace(kafka_settings, spark_master=master)
        log = cluster.submit(
            settings,
            REPO_ROOT / "streaming" / "job.py",
            [
                "--master", master,
                "--bootstrap", str(settings.kafka_bootstrap),
                *[arg for realm in realms for arg in ("--realm", realm)],
                "--checkpoint", str(tmp_path / "checkpoint"),
                "--available-now",
            ],
        )
    finally:
        cluster.stop()
    assert "job done: " in log
    executor_logs = list((tmp_path / "cluster" / "work").glob("app-*/*/stderr"))
    assert executor_logs, "the work ran in an executor launched by the worker"
    result = check_outputs(lines, kafka_settings, realms)
    bad = [t for t in result.topics if not t.ok]
    assert not bad, f"differences: {bad}"
    assert sum(t.matched for t in result.topics) == sum(t.expected for t in result.topics) > 0
