"""`pubsub job`: run the Spark Structured Streaming job (local mode by default)."""

from __future__ import annotations

import argparse
from typing import Any

from cli.commands.common import console
from settings.job_flags import add_job_arguments, settings_from_args


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "job",
        help="run the protocol job (Kafka -> Stage R -> relay-views -> Stage S -> Kafka)",
        description=(
            "Run the Spark job: read every realm's input topics (<realm>.genesis|upward|horizontal|extrinsics|blocks), "
            "run the relay chain per realm (Stage R) and every subscriber (Stage S) in transformWithState on RocksDB, "
            "and write <realm>.updates|events|rejected|pov|seals. It resumes from its checkpoints. One line per "
            "micro-batch: rows in, records out per topic, relay height per realm, lag, the phases of the batch that "
            "took 0.1 s or more (Spark's names: addBatch, queryPlanning, stateCommit, ...) and its time."
        ),
        epilog="Examples: pubsub job --available-now; pubsub job --realm polkadot (until Ctrl-C); "
               "pubsub job --write-class-archive (once, for quicker restarts); "
               "pubsub job --master spark://host:7077 --checkpoint /shared/checkpoints. "
               "Details: docs/operations.md, 'The Spark job'.",
    )
    add_job_arguments(parser)
    parser.add_argument("--write-class-archive", action="store_true",
                        help="instead of running the job: run a Spark session once and write the class archive its "
                             "driver's JVM then maps at each start, for a quicker (re)start (to spark_class_archive, "
                             "default jvm/spark-driver.jsa in the runtime folder; docs/operations.md, 'After a crash')")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.write_class_archive:
        return write_class_archive(args)
    from state.native import build_name
    from streaming.job import run_job
    from supervise.kafka_broker import ensure_kafka

    settings, _broker = ensure_kafka(settings_from_args(args))  # the embedded broker keeps serving after the job
    console.print(f"Starting the job on {settings.spark_master}, checkpoint {settings.checkpoint_dir}, "
                  f"the {build_name()} protocol on the driver")

    summary = run_job(settings, available_now=args.available_now, run_seconds=args.run_seconds,
                      on_batch=lambda report: console.print(report.line(), highlight=False),
                      say=lambda line: console.print(line, highlight=False))
    out = ", ".join(f"{kind} {n}" for kind, n in sorted(summary.records_out.items()) if n) or "no records"
    heights = ", ".join(f"{realm} {n}" for realm, n in sorted(summary.heights.items()))
    ended = "Job done" if summary.stopped_by is None else f"Job stopped by {summary.stopped_by}"
    console.print(f"{ended}: {summary.batches} batches, {summary.input_rows} input rows, {out}"
                  + (f"; relay height {heights}" if heights else "") + f" in {summary.seconds:.1f}s.")
    return 0


def write_class_archive(args: argparse.Namespace) -> int:
    """Write the class archive of Spark's driver JVM (``streaming.class_archive_build``); starts no broker."""
    from streaming.class_archive_build import build_class_archive

    settings = settings_from_args(args)
    path = build_class_archive(settings, settings.spark_class_archive)
    console.print(f"Wrote {path} ({path.stat().st_size / 2**20:.0f} MiB): the job's driver JVM maps it at each start.",
                  highlight=False)
    return 0
