"""`pubsub produce`: send synthetic records or a JSON-lines event log to the input topic."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from cli.commands.common import add_kafka_arguments, console, settings_from
from producers.kafka_io import produce, read_event_log, synthetic_records
from streaming.kafka_broker import create_topics, ensure_kafka


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "produce",
        help="send synthetic records or an event log to Kafka",
        description=(
            "Send records to the job's input topic: N synthetic JSON records spread over K keys, or every line of "
            'a JSON-lines event log ({"topic": ..., "key": ..., "value": ...}; topic defaults to the input topic).'
        ),
    )
    add_kafka_arguments(parser)
    parser.add_argument("--input-topic", metavar="NAME", help="input topic without the prefix (default: skeleton-in)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--count", type=int, default=100, metavar="N", help="how many synthetic records (default: 100)")
    source.add_argument("--event-log", type=Path, metavar="FILE", help="a JSON-lines event log to send instead")
    parser.add_argument("--keys", type=int, default=8, metavar="K", help="distinct keys of the synthetic records (default: 8)")
    parser.add_argument("--start", type=int, default=0, metavar="N", help="sequence number of the first synthetic record")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings, _ = ensure_kafka(settings_from(args, input_topic=args.input_topic))
    if args.event_log is not None:
        records = list(read_event_log(args.event_log, settings.input))
    else:
        records = list(synthetic_records(settings.input, args.count, args.keys, args.start))
    create_topics(settings, sorted({r.topic for r in records} | {settings.input}))
    with Progress(TextColumn("producing"), BarColumn(), MofNCompleteColumn(), console=console) as progress:
        task = progress.add_task("produce", total=len(records))
        sent = produce(settings, records, on_sent=lambda n: progress.update(task, completed=n))
    console.print(f"Sent {sent} records to {settings.kafka_bootstrap}.")
    return 0
