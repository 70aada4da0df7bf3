"""The embedded KRaft broker: start on a free loopback port, reuse while it runs, stop cleanly; topics and clients."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from producers.transport.kafka_io import produce, read_topic
from producers.transport.topics import is_serving
from pubsub_core.stages.edge import ProducerRecord
from settings.settings import Settings, load_settings
from supervise.errors import BrokerError
from supervise.kafka_broker import EmbeddedKafka, create_topics, ensure_kafka

pytestmark = pytest.mark.kafka


def test_a_broker_starts_on_loopback_is_reused_and_stops(tmp_path: Path) -> None:
    broker = EmbeddedKafka(home=tmp_path / "kafka")
    info = broker.start()
    try:
        assert broker.started_here and info.bootstrap.startswith("127.0.0.1:")
        assert "listeners=PLAINTEXT://127.0.0.1:" in (tmp_path / "kafka" / "server.properties").read_text()
        command = Path(f"/proc/{info.pid}/cmdline").read_bytes().split(b"\0")
        assert b"-XX:TieredStopAtLevel=1" in command  # C1 only: the broker leaves the cores to the job
        again = EmbeddedKafka(home=tmp_path / "kafka")
        assert again.start() == info and not again.started_here
        assert again.status() == info
    finally:
        assert broker.stop()
    assert not is_serving(info.bootstrap, timeout=1.0)
    assert EmbeddedKafka(home=tmp_path / "kafka").status() is None
    assert not broker.stop()


def test_an_external_cluster_that_does_not_answer_is_a_typed_error() -> None:
    settings = load_settings(overrides={"kafka_bootstrap": "127.0.0.1:1"}, environ={})
    with pytest.raises(BrokerError, match="127.0.0.1:1"):
        ensure_kafka(settings)


def test_records_round_trip_in_partition_and_offset_order(kafka_settings: Settings) -> None:
    settings = load_settings(overrides={"kafka_bootstrap": kafka_settings.kafka_bootstrap, "topic_prefix": "rt."})
    topic = settings.topic("round-trip")
    create_topics(settings, [topic], partitions=3)
    create_topics(settings, [topic], partitions=3)  # idempotent
    sent = [ProducerRecord(topic, f"k{i % 7}".encode(), json.dumps({"i": i}).encode()) for i in range(50)]
    assert produce(settings, sent) == 50
    got = read_topic(settings, topic)
    assert sorted(r.value or b"" for r in got) == sorted(r.value or b"" for r in sent)
    assert [(r.partition, r.offset) for r in got] == sorted((r.partition, r.offset) for r in got)
    assert len({r.partition for r in got}) > 1
