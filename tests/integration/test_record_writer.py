"""The stages' Kafka writer on the real broker: where records land, what they carry, and a refusal as a typed error."""

from __future__ import annotations

import os
import time
import uuid
from typing import TYPE_CHECKING

import pytest

from producers.transport.kafka_io import read_topic
from producers.transport.topics import create_topics
from pubsub_core.stages.edge import ID_HEADER, ProducerRecord
from settings.settings import Settings
from streaming.errors import RecordWriteError
from streaming.record_writer import METADATA_REFRESH_SECONDS, RecordWriter, record_writer, writer_config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.kafka


def _kafka(rows: list[tuple[str, bytes, bytes, bytes]]) -> list[ProducerRecord]:
    """(topic, key, value, id) rows as the records the stages write."""
    return [ProducerRecord(topic, key, value, ((ID_HEADER, record_id),)) for topic, key, value, record_id in rows]


def _topic(settings: Settings, partitions: int, config: dict[str, str] | None = None) -> str:
    name = f"writer-{uuid.uuid4().hex[:8]}"
    create_topics(settings, [name], partitions, config)
    return name


@pytest.mark.spark
def test_records_land_on_the_partition_spark_s_sink_chose_in_order_with_their_id(
        kafka_settings: Settings, spark: SparkSession) -> None:
    """Each keyed record lands on the Java client's partition (Spark's Kafka sink's choice, asked in Spark's JVM),
    each partition keeps the write order, and key, value and ``id`` header arrive as written (an empty key too)."""
    name = _topic(kafka_settings, 4)
    records = [(name, b"" if i % 17 == 0 else f"subscriber-{i % 23}".encode(), f'{{"n":{i}}}'.encode(), f"id/{i}".encode())
               for i in range(300)]
    writer = RecordWriter(writer_config(kafka_settings))
    writer.write(_kafka(records[:120]))
    writer.write(_kafka(records[120:]))
    writer.flush()

    utils = spark.sparkContext._jvm.org.apache.kafka.common.utils.Utils  # type: ignore[union-attr]
    java_partition = {key: utils.toPositive(utils.murmur2(bytearray(key))) % 4 for _, key, _, _ in records}
    read = read_topic(kafka_settings, name)
    assert len(read) == len(records)
    by_id = {record.header(ID_HEADER): record for record in read}
    for _, key, value, record_id in records:
        got = by_id[record_id]
        assert (got.key, got.value, got.partition) == (key, value, java_partition[key])
    for partition in range(4):
        in_kafka = [r.header(ID_HEADER) for r in sorted(read, key=lambda r: r.offset) if r.partition == partition]
        written = [i for _, key, _, i in records if java_partition[key] == partition]
        assert in_kafka == written


def test_a_record_kafka_refuses_fails_the_flush_with_a_typed_error_and_the_writer_goes_on(
        kafka_settings: Settings) -> None:
    """A record over the topic's limit is refused by the broker: ``flush`` raises ``RecordWriteError`` naming the
    topic (so the micro-batch fails and runs again); the next batch's records are delivered."""
    small = _topic(kafka_settings, 1, {"max.message.bytes": "2048"})
    writer = RecordWriter(writer_config(kafka_settings))
    writer.write(_kafka([(small, b"k", os.urandom(6400).hex().encode(), b"too-large")]))  # 12,800 random hex characters
    with pytest.raises(RecordWriteError) as raised:
        writer.flush()
    assert raised.value.topic == small and raised.value.failed == 1
    assert "too large" in raised.value.reason.lower()

    writer.write(_kafka([(small, b"k", b"{}", b"fits")]))
    writer.flush()
    assert [r.header(ID_HEADER) for r in read_topic(kafka_settings, small)] == [b"fits"]


def test_a_batch_larger_than_the_writer_s_buffer_waits_for_deliveries_and_loses_nothing(
        kafka_settings: Settings) -> None:
    """``write`` holds at most the buffer's worth of unsent records (``queue.buffering.max.kbytes``): past it, it
    serves deliveries until there is room, so a batch of any size goes out whole and in order."""
    name = _topic(kafka_settings, 1)
    config = {**writer_config(kafka_settings), "queue.buffering.max.kbytes": "256"}
    records = [(name, b"k", os.urandom(6000), f"id/{i}".encode()) for i in range(400)]  # 2.4 MB: ten buffers' worth
    writer = RecordWriter(config)
    writer.write(_kafka(records))
    writer.flush()
    read = sorted(read_topic(kafka_settings, name), key=lambda r: r.offset)
    assert [(r.header(ID_HEADER), r.value) for r in read] == [(i, v) for _, _, v, i in records]


def test_a_worker_keeps_one_writer_per_configuration(kafka_settings: Settings) -> None:
    """Batches of a worker share the producer (its connections and threads); another cluster gets its own."""
    from streaming import record_writer as module

    config = writer_config(kafka_settings)
    try:
        assert record_writer(dict(config)) is record_writer(dict(config))
        assert record_writer({**config, "client.id": "other"}) is not record_writer(config)
    finally:
        module._WRITERS.clear()  # no producer outlives the test's broker


def test_flush_sends_at_once_whatever_the_linger(kafka_settings: Settings) -> None:
    """The writer's linger lets records share a request while a task writes; its ``flush`` at the end of the task
    must not wait it out (librdkafka ignores linger during a flush), or every batch would last a linger longer.
    With a 2-minute linger, a 10-second flush still finds every record delivered and readable."""
    name = _topic(kafka_settings, 2)
    writer = RecordWriter({**writer_config(kafka_settings), "linger.ms": str(120_000)})
    records = [(name, f"k{i}".encode(), b"v", f"id/{i}".encode()) for i in range(50)]
    writer.write(_kafka(records))
    assert writer._producer.flush(10.0) == 0  # noqa: SLF001 - one bounded wait, not the loop
    assert sorted(r.header(ID_HEADER) or b"" for r in read_topic(kafka_settings, name)) == sorted(r[3] for r in records)


def test_a_topic_made_again_with_fewer_partitions_gets_every_record_on_its_new_partition(
        kafka_settings: Settings) -> None:
    """A worker's writer outlives its batches; when a topic it wrote is deleted and made again with fewer partitions
    (a realm reset), its next batch places records by the new count instead of failing on partitions that are gone
    (librdkafka's own refresh comes every five minutes)."""
    from supervise.kafka_broker import delete_topics

    name = _topic(kafka_settings, 4)
    writer = RecordWriter(writer_config(kafka_settings))
    keys = [f"subscriber-{i}".encode() for i in range(40)]
    writer.write(_kafka([(name, key, b"before", f"before/{i}".encode()) for i, key in enumerate(keys)]))
    writer.flush()
    delete_topics(kafka_settings, [name])
    create_topics(kafka_settings, [name], 2)
    time.sleep(METADATA_REFRESH_SECONDS)  # the next batch: the writer asks for the topic's partitions again
    rows = [(name, key, f"after-{n}".encode(), f"after/{i}/{n}".encode()) for n in range(3) for i, key in enumerate(keys)]
    writer.write(_kafka(rows))
    writer.flush()

    read = read_topic(kafka_settings, name)
    assert sorted(r.header(ID_HEADER) or b"" for r in read) == sorted(record_id for _, _, _, record_id in rows)
    for key in keys:  # one partition per key, its records in the order written
        mine = sorted((r for r in read if r.key == key), key=lambda r: r.offset)
        assert len({r.partition for r in mine}) == 1 and [r.value for r in mine] == [b"after-0", b"after-1", b"after-2"]
