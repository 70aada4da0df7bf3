"""`pubsub workload`: write a seeded synthetic event log for `pubsub simulate`, `pubsub produce` or the tests, or
(`--live`) send the same cast's Publish traffic to Kafka at a steady rate (producers/writers/live.py)."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from cli.commands.common import add_kafka_arguments, console, settings_from
from cli.errors import Interrupted, UsageError
from cli.output import atomic_output
from producers.interrupts import ctrl_c
from producers.writers.live import (
    BLOCK_TIME,
    MESSAGES_PER_PARA_PER_BLOCK,
    LiveRateError,
    LiveReport,
    LiveSpec,
    run_live,
    stop_on_signals,
)
from producers.transport.topics import realm_is_valid
from producers.workload import WorkloadSpec, generate, parse_ttl_mix
from supervise.kafka_broker import ensure_kafka


class _DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each flag's default, except where there is none to show (None, or an off switch)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "workload",
        help="write a seeded synthetic event log",
        description=(
            "Generate a relay chain's event log: a genesis record (collator keys, a manager account, endowments), "
            "registrations, subscriptions, signed upward envelopes carrying XCM Publish, downward and horizontal "
            "messages, relay blocks whose manifests include what was sent, a few quiet blocks at the end, and a "
            "fraction of bad records (bad signature, replayed seqno, oversize value, malformed JSON, non-Publish "
            "XCM, unregistered publisher, unknown topic, bad hex). The same flags always write the same bytes. "
            "With --live, send the same cast's traffic to Kafka instead: the realm's genesis (if its topic is "
            "empty), the registrations and subscriptions not yet sent, then signed upward messages carrying Publish "
            "at --rate publishes/s until --seconds pass or Ctrl-C; no blocks (`pubsub author` writes them)."
        ),
        epilog=(
            f"Live pacing: each para sends at most {MESSAGES_PER_PARA_PER_BLOCK} upward messages per --block-time "
            "(the router refuses a block's candidate of more than 16), packing up to 16 publishes into a message "
            "when the rate needs it. A restart resumes positions and seqnos from the topics. "
            "Examples: pubsub workload -o events.jsonl --seed 7 --blocks 50 --bad-records 0.05; "
            "pubsub workload -o - --seed 7 | pubsub simulate -; "
            "pubsub workload --live --realm polkadot --rate 20 --seconds 60. "
            "Details: docs/operations.md, 'Live producers'."
        ),
        formatter_class=_DefaultsFormatter,
    )
    parser.add_argument("-o", "--output", type=Path, default=None, metavar="EVENTS.jsonl",
                        help="where to write the log, '-' for stdout (required without --live); written whole or "
                             "not at all")
    parser.add_argument("--seed", type=int, default=0, help="seed of every random choice")
    parser.add_argument("--blocks", type=int, default=20, help="relay blocks with traffic")
    parser.add_argument("--quiet-blocks", type=int, default=3, help="blocks without publishes at the end, so subscribers catch up")
    parser.add_argument("--publishers", type=int, default=2, help="registered (non-system) publisher paras, ids 2000..")
    parser.add_argument("--system-publishers", type=int, default=1, help="system publisher paras (no registration), ids 1000..")
    parser.add_argument("--subscribers", type=int, default=2, help="subscriber paras, ids 3000..")
    parser.add_argument("--keys", type=int, default=6, help="keys per publisher")
    parser.add_argument("--subscribed-keys", type=int, default=4, help="(publisher, key) pairs each subscriber follows")
    parser.add_argument("--value-min", type=int, default=8, help="smallest published value, bytes")
    parser.add_argument("--value-max", type=int, default=64, help="largest published value, bytes")
    parser.add_argument("--update-rate", type=float, default=0.3, help="chance that a publisher updates a key in a block")
    parser.add_argument("--ttl-mix", type=parse_ttl_mix, default="0:0.8,5:0.2",
                        help="TTL in blocks (0 = never expires) and weight, comma-separated")
    parser.add_argument("--dmp-rate", type=float, default=0.2, help="chance of a downward message to a subscriber per block")
    parser.add_argument("--bad-records", type=float, default=0.05, metavar="FRACTION",
                        help="chance of a bad record after each upward message")
    parser.add_argument("--max-pov-size", type=int, default=5 * 1024 * 1024, help="max_pov_size of every relay block")
    parser.add_argument("--realm", default="polkadot", help="relay chain name, the topics' prefix")
    live = parser.add_argument_group(
        "live", "send to Kafka instead of writing a file (uses --seed, the publisher, subscriber, key, value and "
        "TTL flags, and --realm; not --blocks, --quiet-blocks, --update-rate, --dmp-rate, --bad-records, --max-pov-size)")
    live.add_argument("--live", action="store_true", help="send live traffic to the realm's Kafka topics")
    live.add_argument("--rate", type=float, default=10.0, help="publishes per second, all publishers together")
    live.add_argument("--seconds", type=float, default=None, help="stop after this many seconds (default: at Ctrl-C)")
    live.add_argument("--block-time", type=float, default=BLOCK_TIME, help="the author's block time, for the per-para cap")
    add_kafka_arguments(live)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.output is None and not args.live:
        raise UsageError("give -o EVENTS.jsonl (a log file, '-' for stdout) or --live (send to Kafka)")
    if args.output is not None and args.live:
        raise UsageError("-o and --live exclude each other")
    if not realm_is_valid(args.realm):
        raise UsageError(f"--realm {args.realm!r} cannot name Kafka topics: use 1-249 of [A-Za-z0-9._-] "
                         "(the topics are <realm>.<stream>)")
    try:
        spec = WorkloadSpec(
            seed=args.seed, blocks=args.blocks, publishers=args.publishers, system_publishers=args.system_publishers,
            subscribers=args.subscribers, keys=args.keys, subscribed_keys=args.subscribed_keys,
            value_min=args.value_min, value_max=args.value_max, update_rate=args.update_rate, ttl_mix=args.ttl_mix,
            bad_records=args.bad_records, dmp_rate=args.dmp_rate, quiet_blocks=args.quiet_blocks, max_pov_size=args.max_pov_size,
            realm=args.realm,
        )
    except ValueError as exc:
        raise UsageError(f"bad workload: {exc}") from exc
    if args.live:
        return run_live_command(args, spec)
    counts: Counter[str] = Counter()
    lines = 0
    columns = (TextColumn("generating"), BarColumn(), MofNCompleteColumn(), TextColumn("blocks"),
               TextColumn("{task.fields[lines]} lines"), TimeElapsedColumn(), TimeRemainingColumn())
    try:
        with ctrl_c() as interrupt, atomic_output(args.output) as sink, Progress(
            *columns, console=console, transient=True, redirect_stdout=False, redirect_stderr=False,
            disable=not console.is_terminal or (sink is sys.stdout and sys.stdout.isatty()),
        ) as progress:
            task = progress.add_task("workload", total=spec.blocks + spec.quiet_blocks, lines=0)
            for chunk in generate(spec, counts):
                interrupt.check()
                sink.writelines(line + "\n" for line in chunk)
                lines += len(chunk)
                progress.update(task, advance=1, lines=lines)
    except BrokenPipeError:  # the reader went away (e.g. `| head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted after {lines} lines; no log written") from None
    table = Table(title=f"Workload (seed {spec.seed})", show_edge=False)
    table.add_column("generated")
    table.add_column("count", justify="right")
    for name, count in sorted(counts.items()):
        table.add_row(name, str(count))
    console.print(table)
    where = "stdout" if str(args.output) == "-" else args.output
    console.print(f"Wrote {lines} line{'' if lines == 1 else 's'} to {where}.")
    return 0


def run_live_command(args: argparse.Namespace, workload: WorkloadSpec) -> int:
    """Send live traffic until --seconds pass or SIGINT/SIGTERM; print the summary; exit 1 if a delivery failed."""
    try:
        spec = LiveSpec(workload, args.rate, args.seconds, args.block_time)
        pacing = spec.pacing()
    except (ValueError, LiveRateError) as exc:
        raise UsageError(f"bad live run: {exc}") from exc
    settings, _ = ensure_kafka(settings_from(args))
    publishers = workload.system_publishers + workload.publishers
    console.print(f"Sending {spec.rate:g} publishes/s to {workload.realm}: {publishers} publishers take turns, "
                  f"{pacing.items_per_message} publishes per message, one message every {pacing.interval:.3f}s. "
                  "Ctrl-C stops.")
    stop = threading.Event()
    shown = [0.0]
    with stop_on_signals(stop), console.status("starting") as status:
        def progress(report: LiveReport) -> None:
            now = time.monotonic()
            if now - shown[0] >= 0.5:
                shown[0] = now
                status.update(f"{report.publishes_sent} publishes sent, {sum(report.delivered.values())} records "
                              f"delivered, {sum(report.failed.values())} failed, {report.seconds:.0f}s")
        report = run_live(settings, spec, stop, partitions=settings.views_partitions, on_progress=progress)
    console.print(summary_table(report))
    if report.first_error is not None:
        console.print(f"[red]First delivery failure:[/] {report.first_error}")
    return 1 if sum(report.failed.values()) else 0


def summary_table(report: LiveReport) -> Table:
    """Records sent, delivered and failed per stream, the set-up sent, and the publish rate achieved."""
    table = Table(title=f"Live run ({report.seconds:.1f}s)", show_edge=False)
    for name in ("stream", "sent", "delivered", "failed"):
        table.add_column(name, justify="left" if name == "stream" else "right")
    for stream in sorted(report.sent):
        table.add_row(stream, str(report.sent[stream]), str(report.delivered[stream]), str(report.failed[stream]))
    table.add_row("publishes", str(report.publishes_sent), str(report.publishes_delivered), "")
    setup = ", ".join(f"{count} {name}" for name, count in sorted(report.setup.items())) or "none (already sent)"
    table.caption = f"set-up: {setup}; {report.publishes_per_second:.1f} publishes/s delivered"
    return table

