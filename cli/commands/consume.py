"""`pubsub consume`: print the records of a topic (the job's output by default) as JSON lines."""

from __future__ import annotations

import argparse
from typing import Any

from cli.commands.common import add_kafka_arguments, console, settings_from
from producers.kafka_io import read_topic
from streaming.kafka_broker import ensure_kafka


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "consume",
        help="print a topic's records as JSON lines",
        description=(
            "Read a topic from the beginning to its current end and print one JSON object per record on stdout: "
            "topic, partition, offset, key and value (inlined when it is JSON)."
        ),
    )
    add_kafka_arguments(parser)
    parser.add_argument("--topic", metavar="NAME", help="topic without the prefix (default: the job's output topic)")
    parser.add_argument("--rejected", action="store_true", help="read the rejected-input topic instead")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings, _ = ensure_kafka(settings_from(args))
    topic = settings.rejected if args.rejected else settings.topic(args.topic) if args.topic else settings.output
    records = read_topic(settings, topic)
    for record in records:
        print(record.to_json())
    console.print(f"{len(records)} records in {topic}.")
    return 0
