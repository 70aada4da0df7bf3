"""`pubsub verify`: an event log through Kafka and the Spark job, compared topic by topic with the simulator."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.table import Table

from cli.commands.common import console, count, require_event_log
from cli.errors import Interrupted


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "verify",
        help="run an event log through Kafka and the job, and compare every output with the simulator",
        description=(
            "Produce EVENTS.jsonl to fresh topics, run the job to the end of them (available-now, fresh checkpoint), "
            "read every output topic and compare it, record by record (by id), with `pubsub simulate` on the same "
            "log. Prints a table per topic (expected, matched, missing, extra, differing, duplicates) and exits 1 "
            "on any difference. On the embedded broker the log's topics are reset first; on an external cluster "
            "they must not exist (or pass --reset-topics). Use it to trust an upgrade, a config or a cluster."
        ),
        epilog="Examples: pubsub verify examples/busy.jsonl; pubsub verify events.jsonl --max-offsets-per-trigger 7.",
    )
    parser.add_argument("event_log", type=Path, metavar="EVENTS.jsonl", help="the event log (JSON lines)")
    parser.add_argument("--config", type=Path, metavar="FILE", help="TOML settings file (default: $PUBSUB_CONFIG)")
    parser.add_argument("--bootstrap", metavar="HOST:PORT", help="external Kafka (default: the embedded broker)")
    parser.add_argument("--master", metavar="URL", help="Spark master URL (default: local[2])")
    parser.add_argument("--protocol-config", type=Path, metavar="FILE", help="protocol settings (JSON)")
    parser.add_argument("--max-offsets-per-trigger", type=int, metavar="N", help="at most N records per micro-batch")
    parser.add_argument("--views-partitions", type=int, metavar="N", help="partitions of the relay-views topics")
    parser.add_argument("--checkpoint", type=Path, metavar="DIR", help="checkpoint folder (default: a fresh temporary one)")
    parser.add_argument("--reset-topics", action="store_true", help="delete the log's topics first on an external cluster")
    parser.add_argument("--quiet", action="store_true", help="no per-batch progress lines")
    parser.set_defaults(func=run)


def comparison_table(result: Any) -> Table:
    """The per-topic table `verify` prints (also used by `pubsub demo`)."""
    table = Table(title="job vs simulator, by record id")
    for column in ("topic", "expected", "matched", "missing", "extra", "differing", "duplicates"):
        table.add_column(column, justify="left" if column == "topic" else "right")
    for t in result.topics:
        style = None if t.ok else "bold red"
        table.add_row(t.topic, str(t.expected), str(t.matched), str(t.missing), str(t.extra), str(t.differing),
                      str(t.duplicates), style=style)
    return table


def run(args: argparse.Namespace) -> int:
    from settings.settings import load_settings
    from supervise.errors import VerifyStopped
    from supervise.verify import verify_log

    settings = load_settings(
        overrides={
            "kafka_bootstrap": args.bootstrap,
            "spark_master": args.master,
            "protocol_config": args.protocol_config,
            "max_offsets_per_trigger": args.max_offsets_per_trigger,
            "views_partitions": args.views_partitions,
        },
        config_file=args.config,
    )
    require_event_log(args.event_log)
    lines = args.event_log.read_bytes().splitlines()
    try:
        result = verify_log(lines, settings, reset_topics=args.reset_topics, checkpoint=args.checkpoint,
                            on_batch=None if args.quiet else lambda r: console.print(r.line()))
    except VerifyStopped as stopped:
        if stopped.signal_name == "SIGINT":
            raise Interrupted(str(stopped)) from None
        raise
    console.print(comparison_table(result))
    for t in result.topics:
        for example in t.examples:
            console.print(f"  {t.topic}: {example}")
    if result.pending_at_end:
        console.print(f"{count(result.pending_at_end, 'record')} still waiting for a block (the simulator rejects them at "
                      "the end of its input; a stream never ends, so the job keeps them).")
    if not result.ok:
        console.print("[bold red]The job's outputs differ from the simulator's.[/]")
        return 1
    console.print("[bold green]verify: every output record equals the simulator's.[/]")
    return 0
