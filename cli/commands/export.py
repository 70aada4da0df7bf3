"""`pubsub export`: write a realm's input topics back out as an event log, to replay production traffic offline."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cli.commands.common import add_kafka_arguments, console, count, default_realm, settings_from
from cli.errors import Interrupted
from cli.output import atomic_output
from producers.readers.export import export_realm
from pubsub_core.stages.topics import input_topics
from supervise.kafka_broker import connect_kafka


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "export",
        help="write a realm's input topics as an event log",
        description=(
            "Read <realm>.genesis, upward, horizontal, extrinsics and blocks to their current ends and write one "
            'event-log line per record, {"topic", "key", "value"} in canonical JSON, the value as the JSON it '
            "carries (or its text when that would not give back the same bytes). Topics are interleaved by Kafka "
            "timestamp, then topic, then offset; each topic keeps its offset order, which is all the simulator's "
            "outputs depend on. `pubsub simulate` or `pubsub verify` of the file then replays production traffic."
        ),
        epilog=(
            "Examples: pubsub export --realm polkadot -o events.jsonl && pubsub simulate events.jsonl; "
            "pubsub export --realm polkadot -o - | head. The file is written whole or not at all; it starts no "
            "broker. Lines that "
            "`pubsub produce` could not route never reached an input topic and are not exported (their rejections "
            "are on <realm>.rejected). Details: docs/operations.md, 'Export'."
        ),
    )
    add_kafka_arguments(parser)
    parser.add_argument("--realm", metavar="NAME", help="the realm to export (default: the topic prefix's realm)")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="EVENTS.jsonl", help="where to write the log ('-': stdout)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = connect_kafka(settings_from(args))
    realm = args.realm or default_realm(settings)
    columns = (TextColumn(f"exporting {realm}"), BarColumn(), MofNCompleteColumn(), TextColumn("records"),
               TimeElapsedColumn())
    written = [0]
    try:
        with atomic_output(args.output) as sink, Progress(
            *columns, console=console, transient=True, redirect_stdout=False, redirect_stderr=False,
            disable=not console.is_terminal,
        ) as progress:
            task = progress.add_task("export", total=None)

            def write(line: str) -> None:
                sink.write(line + "\n")
                written[0] += 1
                progress.advance(task)

            report = export_realm(settings, realm, write, lambda total: progress.update(task, total=total))
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted after {written[0]} lines; no log written") from None
    table = Table(title=f"Exported {realm}", show_edge=False)
    table.add_column("topic")
    table.add_column("lines", justify="right")
    for name in input_topics(realm):
        table.add_row(name, str(report.lines[name]))
    console.print(table)
    total = sum(report.lines.values())
    lossy = f"; {report.lossy} could not keep their bytes (not UTF-8, or no value)" if report.lossy else ""
    where = "stdout" if str(args.output) == "-" else args.output
    console.print(f"Wrote {count(total, 'line')} to {where}{lossy}.")
    return 0
