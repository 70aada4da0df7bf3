"""`pubsub produce`: send an event log to its realms' Kafka input topics; what cannot go there goes to `rejected`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any, BinaryIO

from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cli.commands.common import add_kafka_arguments, console, count, default_realm, require_event_log, settings_from
from cli.errors import Interrupted
from producers.transport.kafka_io import SendInterrupted, route_event_log, send
from producers.writers.event_log import EventLogSender, Tally
from pubsub_core.stages import LineParser
from pubsub_core.stages.limits import MAX_MESSAGE_BYTES
from supervise.kafka_broker import ensure_kafka


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "produce",
        help="send an event log to the realms' Kafka input topics",
        description=(
            "Read a JSON-lines event log (docs/simulator.md) and send each line to its topic "
            "(<realm>.genesis|upward|horizontal|extrinsics|blocks, one partition each, in line order), creating a "
            "realm's input, output and relay-views topics the first time the realm appears. A line that cannot be "
            "routed (not UTF-8 or not JSON, no topic, unknown stream) becomes the rejection record `pubsub simulate` "
            "writes for it, sent to <realm>.rejected; so does a record too large for its topic (RecordTooLarge). "
            "Nothing is dropped: the summary counts records per topic and refusals per reason."
        ),
        epilog="Examples: pubsub produce --event-log examples/small.jsonl; "
               "pubsub workload -o - --realm kusama | pubsub produce --event-log - --strict. Ctrl-C stops it and "
               "says how many records were delivered. "
               "Topic configs, limits and compression: docs/operations.md, 'Topics and limits'.",
    )
    add_kafka_arguments(parser)
    parser.add_argument("--event-log", type=Path, required=True, metavar="FILE",
                        help="the JSON-lines event log to send ('-' reads stdin)")
    parser.add_argument("--realm", metavar="NAME",
                        help="realm whose rejected topic takes lines that name none (default: the topic prefix's)")
    parser.add_argument("--max-message-bytes", type=int, default=MAX_MESSAGE_BYTES, metavar="BYTES",
                        help=f"ceiling of a record and of the topics created (default: {MAX_MESSAGE_BYTES}, 16 MiB)")
    parser.add_argument("--strict", action="store_true", help="exit 1 if any line was refused")
    parser.set_defaults(func=run)


def _counts(title: str, name: str, unit: str, counts: dict[str, int]) -> Table:
    """A two-column table of ``counts``, sorted by name."""
    table = Table(title=title, show_edge=False)
    table.add_column(name)
    table.add_column(unit, justify="right")
    for key, value in sorted(counts.items()):
        table.add_row(key, str(value))
    return table


def print_tally(tally: Tally, bootstrap: str | None) -> None:
    """Records sent per topic and refusals per reason."""
    console.print(_counts("Records sent", "topic", "records", tally.topics))
    if tally.refusals:
        console.print(_counts("Refused lines", "reason", "lines", tally.refusals))
    console.print(f"Sent {count(sum(tally.topics.values()), 'record')} to {bootstrap}; "
                  f"{count(sum(tally.refusals.values()), 'line')} refused.")


def run(args: argparse.Namespace) -> int:
    require_event_log(args.event_log)
    settings, _ = ensure_kafka(settings_from(args))
    realm = args.realm or default_realm(settings)
    sender = EventLogSender(settings, realm, args.max_message_bytes)
    with ExitStack() as stack:
        source: BinaryIO = sys.stdin.buffer if str(args.event_log) == "-" else stack.enter_context(args.event_log.open("rb"))
        total = None if str(args.event_log) == "-" else args.event_log.stat().st_size
        progress = stack.enter_context(Progress(
            TextColumn("producing"), BarColumn(), DownloadColumn(), TextColumn("{task.fields[lines]} lines"),
            TimeElapsedColumn(), console=console, transient=True, disable=not console.is_terminal,
        ))
        task = progress.add_task("produce", total=total, lines=0)

        read = [0]

        def lines() -> Iterator[bytes]:
            for number, raw in enumerate(source, 1):
                read[0] = number
                progress.update(task, advance=len(raw), lines=number)
                yield raw

        records = sender.records(route_event_log(lines(), LineParser(realm)))
        try:
            report = send(settings, records, max_message_bytes=args.max_message_bytes)
        except SendInterrupted as stopped:
            raise Interrupted(f"interrupted after reading {read[0]} lines: {sum(stopped.report.delivered.values())} "
                              f"records delivered to {settings.kafka_bootstrap} of {stopped.sent} sent"
                              + (f", {stopped.undelivered} not confirmed" if stopped.undelivered else "")
                              + "; producing the log again sends the delivered ones twice") from None
    sender.settle(report)
    print_tally(sender.tally, settings.kafka_bootstrap)
    return 1 if args.strict and sender.tally.refusals else 0
