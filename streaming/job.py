"""The streaming job: Kafka source -> transformWithState (RocksDB) -> Kafka sink.

Run it with `pubsub job`, `python -m streaming.job`, or spark-submit (this file is the application). With
--available-now it processes everything in the input topic and stops; otherwise it runs one micro-batch per
trigger interval until SIGTERM/SIGINT stops the query; the checkpoint makes a restart, even after SIGKILL,
continue where the last committed batch ended.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from streaming.kafka_broker import create_topics, ensure_kafka
from streaming.settings import Settings, load_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

__all__ = ["JobSummary", "add_job_arguments", "build_query", "main", "run_job", "settings_from_args"]


@dataclass(frozen=True)
class JobSummary:
    """What one run of the job did."""

    batches: int
    input_rows: int
    seconds: float


def build_query(
    spark: SparkSession, settings: Settings, available_now: bool = False, query_name: str | None = None
) -> StreamingQuery:
    """Start the skeleton query on `spark`; topics must exist (create_topics) before."""
    from pyspark.sql import functions as F

    from streaming.skeleton import OUTPUT_SCHEMA, SkeletonProcessor

    kafka = settings.spark_kafka_options()
    reader = spark.readStream.format("kafka").options(**kafka)
    reader = reader.option("subscribe", settings.input).option("startingOffsets", "earliest")
    reader = reader.option("failOnDataLoss", "true")
    if settings.max_offsets_per_trigger is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(settings.max_offsets_per_trigger))
    source = reader.load().select(
        "topic", "partition", "offset", F.col("key").cast("string").alias("key"), "value"
    )
    processed = source.groupBy("key").transformWithState(
        statefulProcessor=SkeletonProcessor(settings.output, settings.rejected),
        outputStructType=OUTPUT_SCHEMA,
        outputMode="Update",
        timeMode="None",
    )
    writer = (
        processed.writeStream.format("kafka")
        .options(**kafka)
        .option("kafka.acks", "all")
        .option("checkpointLocation", str(settings.checkpoint_dir))
        .outputMode("update")
    )
    if query_name:
        writer = writer.queryName(query_name)
    if available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{settings.trigger_seconds} seconds")
    return writer.start()


def run_job(
    settings: Settings,
    available_now: bool = False,
    run_seconds: float | None = None,
    on_batch: Callable[[dict[str, Any]], None] | None = None,
) -> JobSummary:
    """Ensure Kafka and the topics, start Spark and the query, and run until done, stopped or `run_seconds`."""
    from streaming.spark_session import build_spark

    settings, _broker = ensure_kafka(settings)
    create_topics(settings, [settings.input, settings.output, settings.rejected])
    spark = build_spark(settings, app_name="rfc0160-pubsub-skeleton")
    started = time.monotonic()
    query = build_query(spark, settings, available_now=available_now)
    stop_requested: list[int] = []

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        stop_requested.append(signum)

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    seen_batch, batches, rows = -1, 0, 0
    try:
        while query.isActive and not stop_requested:
            if run_seconds is not None and time.monotonic() - started >= run_seconds:
                break
            query.awaitTermination(0.5)
            for progress in query.recentProgress:
                if progress["batchId"] > seen_batch:
                    seen_batch = progress["batchId"]
                    if progress["numInputRows"] or available_now:
                        batches += 1
                        rows += int(progress["numInputRows"])
                        if on_batch:
                            on_batch(progress)
        if query.exception() is not None:
            raise query.exception()  # type: ignore[misc]
    finally:
        if query.isActive:
            query.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return JobSummary(batches=batches, input_rows=rows, seconds=time.monotonic() - started)


def add_job_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags shared by `pubsub job` and `python -m streaming.job`."""
    parser.add_argument("--config", type=Path, metavar="FILE", help="TOML settings file (default: $PUBSUB_CONFIG)")
    parser.add_argument("--bootstrap", metavar="HOST:PORT", help="external Kafka host:port (default: $PUBSUB_KAFKA_BOOTSTRAP, else embedded)")
    parser.add_argument("--master", metavar="URL", help="Spark master URL (default: local[2]; $PUBSUB_SPARK_MASTER)")
    parser.add_argument("--topic-prefix", metavar="PREFIX", help="realm prefix of every topic (default: polkadot.)")
    parser.add_argument("--input-topic", metavar="NAME", help="input topic, without the prefix (default: skeleton-in)")
    parser.add_argument("--output-topic", metavar="NAME", help="output topic, without the prefix (default: skeleton-out)")
    parser.add_argument("--rejected-topic", metavar="NAME", help="topic for rejected input, without the prefix (default: rejected)")
    parser.add_argument("--checkpoint", type=Path, metavar="DIR", help="checkpoint folder (default: .runtime/checkpoints/skeleton)")
    parser.add_argument("--trigger-seconds", type=float, metavar="S", help="micro-batch interval in seconds (default: 1)")
    parser.add_argument("--max-offsets-per-trigger", type=int, metavar="N", help="at most this many input records per batch")
    parser.add_argument("--available-now", action="store_true", help="process what is in the topic, then stop")
    parser.add_argument("--run-seconds", type=float, metavar="S", help="stop after this many seconds (default: run until stopped)")


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Settings from the flags above over $PUBSUB_* and the TOML file."""
    return load_settings(
        overrides={
            "kafka_bootstrap": args.bootstrap,
            "spark_master": args.master,
            "topic_prefix": args.topic_prefix,
            "input_topic": args.input_topic,
            "output_topic": args.output_topic,
            "rejected_topic": args.rejected_topic,
            "checkpoint_dir": args.checkpoint,
            "trigger_seconds": args.trigger_seconds,
            "max_offsets_per_trigger": args.max_offsets_per_trigger,
        },
        config_file=args.config,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for `python -m streaming.job` and spark-submit."""
    parser = argparse.ArgumentParser(prog="streaming.job", description=__doc__.splitlines()[0])
    add_job_arguments(parser)
    args = parser.parse_args(argv)
    settings = settings_from_args(args)

    def report(progress: dict[str, Any]) -> None:
        print(f"batch {progress['batchId']}: {progress['numInputRows']} input rows", flush=True)

    summary = run_job(settings, available_now=args.available_now, run_seconds=args.run_seconds, on_batch=report)
    print(f"job done: {summary.batches} batches, {summary.input_rows} input rows, {summary.seconds:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
