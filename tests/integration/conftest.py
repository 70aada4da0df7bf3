"""Fixtures for tests against real infrastructure: one Kafka broker per session, one local Spark session.

- `kafka_settings` (session): Settings pointing at a serving cluster. $PUBSUB_KAFKA_BOOTSTRAP if set; else, with
  PUBSUB_TEST_KAFKA=testcontainers and a Docker engine, testcontainers' Kafka; else the embedded KRaft broker from
  jvm/lib/kafka, started in a temporary folder and stopped at the end of the session.
- `spark` (session): the project's local Spark session (streaming.spark_session.build_spark).
- `wheel`, `installed` (session): the wheel built from the checkout, and a fresh venv with it installed
  (tests.support.package).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from settings.settings import Settings, load_settings
from supervise.kafka_broker import EmbeddedKafka
from tests.support.package import build_wheel, install

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _testcontainers_kafka() -> Iterator[str]:
    """Kafka in Docker via testcontainers (optional path; needs `pip install -e '.[docker]'` and a Docker engine)."""
    from testcontainers.kafka import KafkaContainer

    with KafkaContainer().with_kraft() as container:
        yield container.get_bootstrap_server()


@pytest.fixture(scope="session")
def kafka_settings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    base = load_settings()
    if base.kafka_bootstrap is not None:
        yield base
        return
    if os.environ.get("PUBSUB_TEST_KAFKA") == "testcontainers":
        for bootstrap in _testcontainers_kafka():
            yield base.with_bootstrap(bootstrap)
        return
    broker = EmbeddedKafka(home=tmp_path_factory.mktemp("kafka"))
    info = broker.start()
    try:
        yield base.with_bootstrap(info.bootstrap)
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def spark(kafka_settings: Settings) -> Iterator[SparkSession]:
    from streaming.spark_session import build_spark

    session = build_spark(kafka_settings, app_name="rfc0160-tests")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("build"))


@pytest.fixture(scope="session")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install(wheel, tmp_path_factory.mktemp("installed") / "venv")
