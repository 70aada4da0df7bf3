"""`pubsub consume`: print a topic's records (or a realm's outputs) as the simulator's output lines."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from cli.commands.common import add_kafka_arguments, console, default_realm, settings_from
from producers.kafka_io import output_line, read_topic
from pubsub_core.stages.topics import OUTPUTS, topic
from streaming.kafka_broker import ensure_kafka


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "consume",
        help="print topics' records as the simulator's output lines",
        description=(
            "Read topics from the beginning to their current end and print one canonical JSON line per record on "
            'stdout, as `pubsub simulate` writes it: {"id": <header id>, "key": ..., "topic": ..., "value": ...} '
            '("id": null without an id header; a value that is not JSON is printed as a string). Without --topic, '
            "every output topic of the realm (updates, events, rejected, pov, seals). A count goes to stderr."
        ),
        epilog=(
            "Kafka orders records per partition only, so compare with the simulator after sorting: "
            "diff <(pubsub consume --realm polkadot | sort) <(pubsub simulate log.jsonl | sort)"
        ),
    )
    add_kafka_arguments(parser)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--topic", metavar="NAME", help="a full topic name, e.g. polkadot.updates")
    which.add_argument("--realm", metavar="NAME",
                       help="print every output topic of this realm (default: the topic prefix's realm)")
    parser.add_argument("--max", type=int, metavar="N", help="stop after N records")
    parser.add_argument("--raw", action="store_true",
                        help="debugging form: topic, partition, offset, key, header id and value of each record")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.max is not None and args.max < 0:
        console.print("[red]--max must be at least 0.[/]")
        return 2
    settings, _ = ensure_kafka(settings_from(args))
    realm = args.realm or default_realm(settings)
    topics = [args.topic] if args.topic else [topic(realm, name) for name in OUTPUTS]
    printed = 0
    try:
        for name in topics:
            remaining = None if args.max is None else args.max - printed
            for record in read_topic(settings, name, limit=remaining):
                sys.stdout.write((record.to_json() if args.raw else output_line(record)) + "\n")
                printed += 1
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (e.g. `| head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    console.print(f"{printed} records from {', '.join(topics)}.")
    return 0
