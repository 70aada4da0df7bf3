"""The protocol job's queries: two joined by Kafka (split), or one (fused).

Query R reads every realm's input topics (``subscribePattern``, so a realm whose topics appear later is picked
up), groups by realm and runs ``RelayOperator``; it writes the relay's outputs and the seam records
(``<realm>.relay-views``). Query S reads the seam topics, groups by (realm, subscriber, lane) and runs
``SubscriberOperator`` (the lane spreads a realm's subscribers evenly over the partitions: ``streaming.lanes``);
it writes updates, subscriber events and PoV records. The operators write their records to Kafka themselves
(``streaming.record_writer``); Spark gets per-batch counts, the queries' progress metrics.
Each query has its own checkpoint (``relay/``, ``subscribers/``), so each half restarts on its own, and Stage S
scales with the partitions of the seam topics. The fused query reads the same input topics, groups by realm and
runs ``FusedOperator``: Stage R and, for each block, its subscribers' Stage S in the same call, no seam between
(checkpoint ``fused/``; ``streaming.stage_layout``).
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pubsub_core.stages import ProtocolConfig
from pubsub_core.stages.limits import FETCH_BYTES
from pubsub_core.stages.topics import (
    INPUT_TOPIC_PATTERN,
    INPUTS,
    OUTPUTS,
    REALM_SQL,
    VIEWS,
    VIEWS_TOPIC_PATTERN,
    realm_of,
    realm_pattern,
)
from settings.checkpoint_location import FUSED_FOLDER, CheckpointLocation, HadoopPath
from settings.settings import Settings
from streaming.checkpoint_files import create_private, read_text
from streaming.errors import CheckpointUnreadable
from streaming.lanes import lane_column, stateful_partitions
from streaming.record_writer import writer_config

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import DataStreamWriter

__all__ = [
    "KAFKA_SOURCE_OPTIONS",
    "QueryNames",
    "fused_query",
    "relay_query",
    "seam_key",
    "served_realms",
    "subscriber_query",
]

SOURCE_FETCH_WAIT_MS = 20
KAFKA_SOURCE_OPTIONS = {
    # a view or an input may pass Kafka's 1 MB default: read records up to the topics' 16 MiB
    "kafka.max.partition.fetch.bytes": str(FETCH_BYTES), "kafka.fetch.max.bytes": str(FETCH_BYTES),
    "kafka.metadata.max.age.ms": "2000",
    # How long the broker may hold a fetch that finds nothing new (Kafka's default: 500 ms). Spark keeps its
    # consumers in a pool across batches, and a consumer's next fetch waited out this hold at every batch (a fetch
    # sent ahead at the end of the last one, parked at the log end), a delay on every batch of a few rows
    # (docs/benchmarks.md, "Measured defaults"). Spark's consumers fetch only inside a
    # task, so a short hold costs no idle traffic.
    "kafka.fetch.max.wait.ms": str(SOURCE_FETCH_WAIT_MS),
    # the block author writes each block in a transaction: an aborted (fenced, killed) block is never read
    "kafka.isolation.level": "read_committed",
}


@dataclass(frozen=True)
class QueryNames:
    relay: str = "pubsub-relay"
    subscribers: str = "pubsub-subscribers"


def seam_key(settings: Settings, spark: SparkSession) -> bytes:
    """The seam MAC key: from the settings, else made once and kept beside the checkpoints (mode 0600), through
    the session's Hadoop FileSystem when the checkpoints are not local."""
    if settings.seam_key is not None:
        return settings.seam_key.reveal().encode()
    if isinstance(settings.checkpoint_dir, HadoopPath):
        remote = settings.checkpoint_dir / "seam.key"
        create_private(spark, remote, secrets.token_hex(32))
        text = read_text(spark, remote)
        if text is None:
            raise CheckpointUnreadable(remote, "the seam key file vanished after it was written")
        return text.strip().encode()
    path = settings.checkpoint_dir / "seam.key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32))
    return path.read_text().strip().encode()


def _source(spark: SparkSession, settings: Settings, pattern: str) -> DataFrame:
    reader = spark.readStream.format("kafka").options(**settings.spark_kafka_options(), **KAFKA_SOURCE_OPTIONS)
    reader = reader.option("subscribePattern", pattern).option("startingOffsets", "earliest")
    reader = reader.option("failOnDataLoss", "true")
    if settings.max_offsets_per_trigger is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(settings.max_offsets_per_trigger))
    return reader.load()


def _observed(summary: DataFrame, name: str) -> DataFrame:
    """Per-batch counts of records written per topic kind and per topic (``topic=count``, for the metrics), the
    sealed heights (``realm:number``), Stage R's waiting status per realm (``waiting``:
    ``streaming.operators.parse_waiting``) and each operator call's spans (``streaming.spans``), from the operators'
    summaries (``streaming.operators.BatchSummary``).
    Written as SQL: the same metrics built from Column calls cost about 300 py4j round trips, 0.15 s of every
    query start."""
    from pyspark.sql import functions as F

    kind = "substring_index(topic, '.', -1)"
    counts = [F.expr(f"coalesce(sum(CASE WHEN {kind} = '{k}' THEN records END), 0) AS `{k}`") for k in (*OUTPUTS, VIEWS)]
    heights = F.expr(f"collect_set(CASE WHEN {kind} = 'seals' THEN concat(substring_index(topic, '.', 1), ':', key) END)"
                     " AS heights")
    waiting = F.expr(f"collect_set(CASE WHEN {kind} = 'waiting' THEN key END) AS waiting")
    spans = F.expr(f"collect_list(CASE WHEN {kind} = 'spans' THEN key END) AS spans")
    by_topic = F.expr(f"collect_list(CASE WHEN {kind} NOT IN ('waiting', 'spans') "
                      "THEN concat(topic, '=', CAST(records AS STRING)) END) AS by_topic")
    return summary.observe(name, *counts, heights, waiting, spans, by_topic)


def _writer(summary: DataFrame, checkpoint: CheckpointLocation, name: str, settings: Settings,
            available_now: bool) -> DataStreamWriter:
    """The query, ready to start: the records are already in Kafka (the operators write them), so the summaries go
    to the no-op sink once ``_observed`` has counted them."""
    writer = (
        summary.writeStream.format("noop")
        .option("checkpointLocation", str(checkpoint))
        .outputMode("update")
        .queryName(name)
    )
    return writer.trigger(availableNow=True) if available_now else writer.trigger(
        processingTime=f"{settings.trigger_seconds} seconds")


def relay_query(spark: SparkSession, settings: Settings, config: ProtocolConfig, key: bytes, available_now: bool,
                names: QueryNames = QueryNames()) -> DataStreamWriter:
    """Query R, planned and not started: every input topic of the served realms -> Stage R -> outputs and seam
    records."""
    from streaming.processors import OUTPUT_SCHEMA, RelayOperator

    realms = settings.realm_list()
    pattern = INPUT_TOPIC_PATTERN if realms is None else realm_pattern(realms, INPUTS)
    rows = _source(spark, settings, pattern).selectExpr(
        f"{REALM_SQL} AS realm", "topic", "partition", "offset", "key", "value")
    out = rows.groupBy("realm").transformWithStateInPandas(
        statefulProcessor=RelayOperator(config, key, writer_config(settings)), outputStructType=OUTPUT_SCHEMA,
        outputMode="Update", timeMode="None")
    return _writer(_observed(out, "relay"), settings.checkpoint_dir / "relay", names.relay, settings, available_now)


def fused_query(spark: SparkSession, settings: Settings, config: ProtocolConfig, available_now: bool,
                names: QueryNames = QueryNames()) -> DataStreamWriter:
    """The fused query, planned and not started: every input topic of the served realms -> Stage R and its
    subscribers' Stage S per realm -> outputs. It reads what query R reads and reports as ``relay`` (its progress
    line, metrics and the queries' names), so what watches query R watches it."""
    from streaming.processors import OUTPUT_SCHEMA, FusedOperator

    realms = settings.realm_list()
    pattern = INPUT_TOPIC_PATTERN if realms is None else realm_pattern(realms, INPUTS)
    rows = _source(spark, settings, pattern).selectExpr(
        f"{REALM_SQL} AS realm", "topic", "partition", "offset", "key", "value")
    out = rows.groupBy("realm").transformWithStateInPandas(
        statefulProcessor=FusedOperator(config, writer_config(settings)), outputStructType=OUTPUT_SCHEMA,
        outputMode="Update", timeMode="None")
    return _writer(_observed(out, "relay"), settings.checkpoint_dir / FUSED_FOLDER, names.relay, settings,
                   available_now)


def subscriber_query(spark: SparkSession, settings: Settings, config: ProtocolConfig, key: bytes,
                     available_now: bool, names: QueryNames = QueryNames()) -> DataStreamWriter:
    """Query S, planned and not started: every seam topic of the served realms -> Stage S per (realm, subscriber,
    lane) -> outputs."""
    from streaming.processors import OUTPUT_SCHEMA, SubscriberOperator

    realms = settings.realm_list()
    pattern = VIEWS_TOPIC_PATTERN if realms is None else realm_pattern(realms, (VIEWS,))
    checkpoint = settings.checkpoint_dir / "subscribers"
    rows = _source(spark, settings, pattern).selectExpr(
        f"{REALM_SQL} AS realm", "CAST(key AS STRING) AS subscriber", "topic",
        "partition", "offset", "key", "value")
    rows = rows.withColumn("lane", lane_column(stateful_partitions(spark, checkpoint)))
    out = rows.groupBy("realm", "subscriber", "lane").transformWithStateInPandas(
        statefulProcessor=SubscriberOperator(config, key, writer_config(settings)), outputStructType=OUTPUT_SCHEMA,
        outputMode="Update", timeMode="None")
    return _writer(_observed(out, "subscribers"), checkpoint, names.subscribers, settings, available_now)


def served_realms(topics: Iterable[str], settings: Settings) -> list[str]:
    """Realms that have at least one input topic among ``topics`` (and that the settings serve)."""
    wanted = settings.realm_list()
    found = {realm_of(t) for t in topics if re.match(INPUT_TOPIC_PATTERN, t)}
    return sorted(r for r in found if wanted is None or r in wanted)
