"""`pubsub workload`: write a seeded synthetic event log for `pubsub simulate`, `pubsub produce` or the tests."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from cli.commands.common import console
from producers.workload import WorkloadSpec, generate, parse_ttl_mix


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "workload",
        help="write a seeded synthetic event log",
        description=(
            "Generate a relay chain's event log: a genesis record (collator keys, a manager account, endowments), "
            "registrations, subscriptions, signed upward envelopes carrying XCM Publish, downward and horizontal "
            "messages, relay blocks whose manifests include what was sent, a few quiet blocks at the end, and a "
            "fraction of bad records (bad signature, replayed seqno, oversize value, malformed JSON, non-Publish "
            "XCM, unregistered publisher, unknown topic, bad hex). The same flags always write the same bytes."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("-o", "--output", type=Path, required=True, default=argparse.SUPPRESS, metavar="EVENTS.jsonl",
                        help="where to write the log (required)")
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
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        spec = WorkloadSpec(
            seed=args.seed, blocks=args.blocks, publishers=args.publishers, system_publishers=args.system_publishers,
            subscribers=args.subscribers, keys=args.keys, subscribed_keys=args.subscribed_keys,
            value_min=args.value_min, value_max=args.value_max, update_rate=args.update_rate, ttl_mix=args.ttl_mix,
            bad_records=args.bad_records, dmp_rate=args.dmp_rate, quiet_blocks=args.quiet_blocks, max_pov_size=args.max_pov_size,
            realm=args.realm,
        )
    except ValueError as exc:
        console.print(f"[red]Bad workload:[/] {exc}")
        return 2
    counts: Counter[str] = Counter()
    lines = 0
    columns = (TextColumn("generating"), BarColumn(), MofNCompleteColumn(), TextColumn("blocks"),
               TextColumn("{task.fields[lines]} lines"), TimeElapsedColumn(), TimeRemainingColumn())
    with args.output.open("w") as sink, Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("workload", total=spec.blocks + spec.quiet_blocks, lines=0)
        for chunk in generate(spec, counts):
            sink.writelines(line + "\n" for line in chunk)
            lines += len(chunk)
            progress.update(task, advance=1, lines=lines)
    table = Table(title=f"Workload (seed {spec.seed})", show_edge=False)
    table.add_column("generated")
    table.add_column("count", justify="right")
    for name, count in sorted(counts.items()):
        table.add_row(name, str(count))
    console.print(table)
    console.print(f"Wrote {lines} lines to {args.output}.")
    return 0
