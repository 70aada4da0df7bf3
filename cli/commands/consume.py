"""`pubsub consume`: print a topic's records (or a realm's outputs) as the simulator's output lines, or (`--follow`)
a realm's updates as they arrive, each once (producers/readers/follow.py)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from contextlib import closing
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from cli.commands.common import add_kafka_arguments, console, count, default_realm, settings_from
from cli.errors import Interrupted, UsageError
from cli.output import atomic_output
from producers.readers.follow import SEEN_WINDOW, FollowStats, Start, follow, update_row
from producers.transport.kafka_io import scan_topic
from producers.writers.live import stop_on_signals
from pubsub_core.relay import canonical_json
from pubsub_core.stages.edge import ConsumerRecord, output_line
from pubsub_core.stages.topics import OUTPUTS, topic
from settings.settings import Settings
from supervise.kafka_broker import connect_kafka


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "consume",
        help="print topics' records as the simulator's output lines",
        description=(
            "Read topics from the beginning to their current end and print one canonical JSON line per record on "
            'stdout, as `pubsub simulate` writes it: {"id": <header id>, "key": ..., "topic": ..., "value": ...} '
            '("id": null without an id header; a value that is not JSON is printed as a string). Without --topic, '
            f"every output topic of the realm ({', '.join(OUTPUTS)}). A count goes to stderr."
        ),
        epilog=(
            "Kafka orders records per partition only, so compare with the simulator after sorting: "
            "diff <(pubsub consume --realm polkadot | sort) <(pubsub simulate log.jsonl | sort). "
            "--follow prints <realm>.updates as they arrive, one table row per update (or --json lines), dropping "
            f"copies of an id seen among the last {SEEN_WINDOW:,} (the job's sink is at-least-once); Ctrl-C stops "
            "it with a count of updates shown and duplicates dropped. "
            "Examples: pubsub consume --realm polkadot | head; "
            "pubsub consume --topic polkadot.updates --partition 0 --offset -10 --print-timestamp --print-headers; "
            "pubsub consume --topic polkadot.updates --group reports -o new.jsonl (each run prints what the group "
            "has not seen yet); pubsub consume --follow --realm polkadot --subscriber 3000. "
            "It starts no broker: without one it says to run `pubsub broker start`."
        ),
    )
    add_kafka_arguments(parser)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--topic", metavar="NAME", help="a full topic name, e.g. polkadot.updates")
    which.add_argument("--realm", metavar="NAME",
                       help="print every output topic of this realm, or with --follow its updates (default: the topic prefix's realm)")
    parser.add_argument("--max", type=int, metavar="N", help="stop after N records")
    parser.add_argument("--partition", type=int, action="append", metavar="P",
                        help="read only this partition (repeat for more; default: all)")
    parser.add_argument("--offset", default="beginning", metavar="WHERE",
                        help="where each partition starts, as kcat's -o: beginning (default), end, an offset N, or "
                             "-N (the last N records)")
    parser.add_argument("--group", metavar="ID",
                        help="a consumer group: start where it left off (else at --offset) and commit what was "
                             "printed, so the next run with the same group resumes after it")
    parser.add_argument("--print-timestamp", action="store_true",
                        help='add "timestamp": the Kafka timestamp in ms (create time), as kafka-console-consumer\'s '
                             "print.timestamp")
    parser.add_argument("--print-headers", action="store_true",
                        help='add "headers": every header as {name: text}, as kafka-console-consumer\'s print.headers')
    parser.add_argument("-o", "--output", type=Path, metavar="FILE",
                        help="write the lines here, replaced only when the read completes ('-' or none: stdout)")
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
        raise UsageError("--max must be at least 0")
    reading = (args.partition, args.group, args.output, args.offset != "beginning")
    if args.follow and (args.topic or args.raw or any(reading)):
        raise UsageError("--follow reads the realm's updates: give --realm, not --topic, --raw, --partition, "
                         "--offset, --group or -o")
    if not args.follow and (args.subscriber is not None or args.json or args.from_now):
        raise UsageError("--subscriber, --json and --from-now go with --follow")
    settings = connect_kafka(settings_from(args))
    if args.follow:
        return run_follow(args, settings.topic_prefix.rstrip(".") if args.realm is None else args.realm, settings)
    realm = args.realm or default_realm(settings)
    topics = [args.topic] if args.topic else [topic(realm, name) for name in OUTPUTS]
    printed = 0
    try:
        with atomic_output(args.output) as sink:
            for name in topics:
                remaining = None if args.max is None else args.max - printed
                scan = scan_topic(settings, name, limit=remaining, partitions=args.partition, offset=args.offset,
                                  group=args.group)
                with closing(scan):
                    for record in scan:
                        sink.write(line(record, args) + "\n")
                        printed += 1
            sink.flush()
    except BrokenPipeError:  # the reader went away (e.g. `| head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        kept = f" (committed for group {args.group})" if args.group else ""
        raise Interrupted(f"interrupted after {count(printed, 'record')}{kept}; no output file written") from None
    where = "" if args.output in (None, Path("-")) else f" to {args.output}"
    console.print(f"{count(printed, 'record')} from {', '.join(topics)}{where}.")
    return 0


def line(record: ConsumerRecord, args: argparse.Namespace) -> str:
    """The printed line of a record: the simulator's line (or --raw's), with the timestamp and headers if asked."""
    text = record.to_json() if args.raw else output_line(record)
    if not (args.print_timestamp or args.print_headers):
        return text
    body = json.loads(text)
    if args.print_timestamp:
        body["timestamp"] = record.timestamp
    if args.print_headers:
        body["headers"] = {name: None if data is None else data.decode("utf-8", errors="replace")
                           for name, data in record.headers}
    return canonical_json(body)


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
    console.print(f"{count(stats.shown, 'update')} shown, {count(stats.duplicates, 'duplicate')} dropped.")
    return 0


def _json_object(value: bytes | None) -> dict[str, Any]:
    try:
        body = json.loads(value or b"")
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return body if isinstance(body, dict) else {}

