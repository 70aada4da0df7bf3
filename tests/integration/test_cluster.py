"""The same job submitted with spark-submit to a standalone master + worker on 127.0.0.1."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest

from producers.kafka_io import produce, read_topic, synthetic_records
from streaming.cluster import StandaloneCluster
from streaming.paths import REPO_ROOT
from streaming.settings import Settings
from tests.integration.helpers import as_outputs, expected_outputs

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.cluster]


def test_job_on_a_standalone_cluster(job_settings: Settings, tmp_path: Path) -> None:
    produce(job_settings, synthetic_records(job_settings.input, 200, keys=4))
    cluster = StandaloneCluster(tmp_path / "cluster", cores=2, memory="2g")
    try:
        master = cluster.start()
        settings = dataclasses.replace(job_settings, spark_master=master)
        log = cluster.submit(
            settings,
            REPO_ROOT / "streaming" / "job.py",
            [
                "--master", master,
                "--bootstrap", str(settings.kafka_bootstrap),
                "--topic-prefix", settings.topic_prefix,
                "--checkpoint", str(settings.checkpoint_dir),
                "--available-now",
            ],
        )
    finally:
        cluster.stop()
    assert "job done: " in log and "200 input rows" in log
    app_logs = list((tmp_path / "cluster" / "work").glob("app-*/*/stderr"))
    assert app_logs, "the work ran in an executor launched by the worker"
    output = as_outputs(read_topic(job_settings, job_settings.output))
    assert Counter(output) == Counter(expected_outputs(job_settings))
