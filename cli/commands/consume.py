"""`pubsub consume`: print a topic's records (or a realm's outputs) as the simulator's output lines, or (`--follow`)
a realm's updates as they arrive, each once (producers/follow.py)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from typing import Any

from rich.console import Console
from rich.table import Table

from cli.commands.common import add_kafka_arguments, console, default_realm, settings_from
from producers.follow import SEEN_WINDOW, FollowStats, Start, follow, update_row
from producers.kafka_io import output_line, read_topic
from producers.live import stop_on_signals
from pubsub_core.stages.topics import OUTPUTS, topic
from streaming.settings import Settings
from supervise.kafka_broker import ensure_kafka


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
            "diff <(pubsub consume --realm polkadot | sort) <(pubsub simulate log.jsonl | sort). "
            "--follow prints <realm>.updates as they arrive, one table row per update (or --json lines), dropping "
            f"copies of an id seen among the last {SEEN_WINDOW:,} (the job's sink is at-least-once); Ctrl-C stops "
            "it with a count of updates shown and duplicates dropped."
        ),
    )
    add_kafka_arguments(parser)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--topic", metavar="NAME", help="a full topic name, e.g. polkadot.updates")
    which.add_argument("--realm", metavar="NAME",
                       help="print every output topic of this realm, or with --follow its updates (default: the topic prefix's realm)")
    parser.add_argument("--max", type=int, metavar="N", help="stop after N records")
    parser.add_argument("--raw", action="store_true",
                        help="debugging form: topic, partition, offset, key, header id and value of each record")
    following = parser.add_argument_group("following updates (--follow)")
    following.add_argument("--follow", action="store_true",
                           help="print the realm's updates as they arrive, each id once, until Ctrl-C")
    following.add_argument("--subscriber", type=int, metavar="PARA", help="only this subscriber's updates")
    following.add_argument("--json", action="store_true", help="canonical simulator lines instead of table rows")
    start = following.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", dest="from_now", action="store_false",
                       help="start with the updates already on the topic (the default)")
    start.add_argument("--from-now", dest="from_now", action="store_true", help="only updates written from now on")
    parser.set_defaults(func=run, from_now=False)


def run(args: argparse.Namespace) -> int:
    if args.max is not None and args.max < 0:
        console.print("[red]--max must be at least 0.[/]")
        return 2
    if args.follow and (args.topic or args.raw):
        console.print("[red]--follow reads the realm's updates: give --realm, not --topic or --raw.[/]")
        return 2
    if not args.follow and (args.subscriber is not None or args.json or args.from_now):
        console.print("[red]--subscriber, --json and --from-now go with --follow.[/]")
        return 2
    settings, _ = ensure_kafka(settings_from(args))
    if args.follow:
        return run_follow(args, settings.topic_prefix.rstrip(".") if args.realm is None else args.realm, settings)
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


_COLUMNS = (("subscriber", 10), ("block", 7), ("publisher", 9), ("key", 10), ("value", 30), ("kind", 8))


def _row_table(show_header: bool) -> Table:
    table = Table(show_header=show_header, show_edge=False, box=None, pad_edge=False, header_style="bold")
    for name, width in _COLUMNS:
        table.add_column(name, width=width, no_wrap=True, overflow="ellipsis")
    return table


def run_follow(args: argparse.Namespace, realm: str, settings: Settings) -> int:
    """Print the realm's updates as they arrive until Ctrl-C (or --max), then the one-line summary."""
    name = topic(realm, "updates")
    stop = threading.Event()
    stats = FollowStats()
    out = Console(highlight=False, soft_wrap=False)
    if not args.json:
        out.print(_row_table(True))
    start = Start.NOW if args.from_now else Start.BEGINNING
    key = None if args.subscriber is None else str(args.subscriber)
    console.print(f"Following {name} from {'now' if args.from_now else 'the beginning'}; Ctrl-C stops.")
    try:
        with stop_on_signals(stop):
            for record in follow(settings, name, stop, start=start, key=key, stats=stats,
                                 on_waiting=lambda t: console.print(f"Waiting for {t} to exist...")):
                if args.json:
                    sys.stdout.write(output_line(record) + "\n")
                else:
                    table = _row_table(False)
                    table.add_row(*update_row(_json_object(record.value)))
                    out.print(table)
                sys.stdout.flush()
                if args.max is not None and stats.shown >= args.max:
                    break
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    console.print(f"{stats.shown} updates shown, {stats.duplicates} duplicates dropped.")
    return 0


def _json_object(value: bytes | None) -> dict[str, Any]:
    try:
        body = json.loads(value or b"")
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return body if isinstance(body, dict) else {}

