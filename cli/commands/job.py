"""`pubsub job`: run the Spark Structured Streaming job (local mode by default)."""

from __future__ import annotations

import argparse
from typing import Any

from cli.commands.common import console


def register(subparsers: Any) -> None:
    from streaming.job import add_job_arguments

    parser = subparsers.add_parser(
        "job",
        help="run the streaming job (Kafka -> transformWithState -> Kafka)",
        description=(
            "Run the Spark job: read the input topic, keep per-key state with transformWithState on RocksDB, write "
            "one output record per input (bad input goes to the rejected topic). It resumes from its checkpoint."
        ),
    )
    add_job_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from streaming.job import run_job, settings_from_args

    settings = settings_from_args(args)
    console.print(f"Starting the job on {settings.spark_master}, checkpoint {settings.checkpoint_dir}")

    def report(progress: dict[str, Any]) -> None:
        console.print(f"batch {progress['batchId']}: {progress['numInputRows']} input rows")

    summary = run_job(settings, available_now=args.available_now, run_seconds=args.run_seconds, on_batch=report)
    console.print(f"Job done: {summary.batches} batches, {summary.input_rows} input rows in {summary.seconds:.1f}s.")
    return 0
