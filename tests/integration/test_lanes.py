"""Stage S's lanes on real Spark: Spark's own hash partitioning puts subscriber n on partition n mod P, and a
restart with another shuffle-partition setting keeps every subscriber's state (the lanes follow the checkpoint)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from producers.transport.kafka_io import produce
from tests.support.paths import REPO_ROOT
from settings.settings import Settings
from streaming.job import run_job
from streaming.stage_layout import SPLIT_PARTITIONS
from streaming.lanes import SHUFFLE_PARTITIONS, lane_column, recorded_partitions, stateful_partitions
from supervise.verify import check_outputs, fresh_topics

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark]


@pytest.mark.parametrize("partitions", [1, 2, 3, 5, 8])
def test_spark_places_subscriber_n_on_partition_n_mod_p(spark: SparkSession, partitions: int) -> None:
    from pyspark.sql import functions as F

    subscribers = [str(2000 + i) for i in range(4 * partitions)] + [str(3369), str(2**40)]
    rows = [(realm, s) for realm in ("polkadot", "kusama") for s in subscribers] + [("polkadot", "not-a-para")]
    frame = spark.createDataFrame(rows, "realm string, subscriber string")
    placed = (frame.withColumn("lane", lane_column(partitions))
              .repartition(partitions, "realm", "subscriber", "lane")
              .select("realm", "subscriber", "lane", F.spark_partition_id().alias("partition")).collect())
    assert len(placed) == len(rows)
    numeric = [row for row in placed if row.subscriber.isdigit()]
    assert [(row.realm, row.subscriber, row.partition) for row in numeric if
            row.partition != int(row.subscriber) % partitions] == []
    assert all(0 <= row.lane < 16 * partitions for row in numeric)
    assert [row.lane for row in placed if not row.subscriber.isdigit()] == [-1]


def test_a_restart_with_other_shuffle_partitions_keeps_every_subscribers_state(
        kafka_settings: Settings, spark: SparkSession, tmp_path: Path) -> None:
    lines = (REPO_ROOT / "examples" / "small.jsonl").read_bytes().splitlines()
    records, realms = fresh_topics(lines, kafka_settings, reset_topics=True)
    settings = dataclasses.replace(kafka_settings, checkpoint_dir=tmp_path / "checkpoint", realms=",".join(realms),
                                   stages="split")  # lanes place Stage S's keys: the split job's
    half = len(records) // 2
    produce(settings, records[:half])
    run_job(settings, available_now=True)
    assert recorded_partitions(settings.checkpoint_dir / "subscribers") == SPLIT_PARTITIONS == 2

    one = spark.createDataFrame([("polkadot", "3000")], "realm string, subscriber string")
    lanes = {}
    for p in (2, 4):
        row = one.select(lane_column(p)).first()
        assert row is not None
        lanes[p] = row[0]
    assert lanes[2] != lanes[4]  # so lanes for the session's 4 partitions would give subscriber 3000 a new state key

    produce(settings, records[half:])
    try:
        run_job(dataclasses.replace(settings, shuffle_partitions=4), available_now=True)
        assert spark.conf.get(SHUFFLE_PARTITIONS) == "4"
        assert stateful_partitions(spark, settings.checkpoint_dir / "subscribers") == 2
    finally:
        spark.conf.set(SHUFFLE_PARTITIONS, str(SPLIT_PARTITIONS))
    result = check_outputs(lines, settings, realms)
    assert [t for t in result.topics if not t.ok] == []
    assert sum(t.matched for t in result.topics) == sum(t.expected for t in result.topics) > 0
