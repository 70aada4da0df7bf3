"""`pubsub simulate`: run an event log through the whole protocol in one process and write the outputs."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cli.commands.common import console, count, require_event_log
from cli.errors import Interrupted, UsageError
from cli.output import atomic_output
from producers.interrupts import ctrl_c
from producers.readers.log_lines import event_log_lines
from pubsub_core.process import tune_garbage_collector
from pubsub_core.simulator import Simulator
from pubsub_core.stages import ConfigError, OutputRecord
from pubsub_core.stages.ingest import is_blank
from pubsub_core.stages.topics import kind_of
from settings.protocol import load_protocol_config
from settings.settings import SEAM_MODES, load_settings
from state.native import build_name


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="run an event log through the protocol in one process",
        description=(
            "Read a JSON-lines event log (genesis, upward, horizontal, extrinsics and blocks records; see "
            "docs/simulator.md), apply every relay block with the broadcaster, router and XCM executor, run every "
            "subscriber's collator and runtime on each block, and write the outputs as canonical JSON lines: "
            "updates, pallet events, rejections, PoV metering and block seals. Bad lines become rejection records; "
            "the same log and config always give the same bytes. A summary goes to stderr, and a progress bar when "
            "stderr is a terminal (stdout may be redirected)."
        ),
        epilog=(
            "Examples: pubsub simulate examples/minimal.jsonl; pubsub simulate events.jsonl -o out.jsonl; "
            "pubsub workload -o - --seed 7 | pubsub simulate - --quiet | grep updates. "
            "The output file is written whole or not at all (a temporary file renamed at the end), and never "
            "one of the inputs. Details: docs/simulator.md."
        ),
    )
    parser.add_argument("events", type=Path, metavar="EVENTS.jsonl", help="the event log ('-' reads stdin)")
    parser.add_argument("-o", "--output", type=Path, metavar="OUT.jsonl",
                        help="write outputs here ('-' or none: stdout)")
    parser.add_argument(
        "--protocol-config", type=Path, metavar="FILE",
        help="protocol settings JSON: broadcaster, admission, router and subscriber sections (default: "
             "$PUBSUB_PROTOCOL_CONFIG, else the protocol defaults)",
    )
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help="TOML settings file, as every command's (default: $PUBSUB_CONFIG); simulate reads its "
                             "protocol_config and seam")
    parser.add_argument(
        "--relay-proofs", action="store_true",
        help="also write each subscriber's per-block relay view (<realm>.relay-proofs), what Stage R hands Stage S",
    )
    parser.add_argument(
        "--seam", choices=SEAM_MODES,
        help="what Stage R hands Stage S: delta (changed proof nodes) or full (whole proofs, the checking mode); "
             "default: $PUBSUB_SEAM, else the protocol config's seam, else delta. The outputs are the same either way",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = load_settings(overrides={"protocol_config": args.protocol_config, "seam": args.seam},
                             config_file=args.config)
    try:
        config = load_protocol_config(settings.protocol_config, settings.seam)
    except (OSError, json.JSONDecodeError, ConfigError) as exc:
        raise UsageError(f"cannot read the protocol config {settings.protocol_config}: {exc}") from exc
    stdin = str(args.events) == "-"
    require_event_log(args.events)
    summary = Summary()
    started = time.perf_counter()
    try:
        with ExitStack() as stack:
            interrupt = stack.enter_context(ctrl_c())
            sink = stack.enter_context(atomic_output(args.output, [args.events, settings.protocol_config]))
            source: BinaryIO = sys.stdin.buffer if stdin else stack.enter_context(args.events.open("rb"))
            total = None if stdin else args.events.stat().st_size
            progress = stack.enter_context(Progress(
                TextColumn("simulating"), BarColumn(), DownloadColumn(), TextColumn("{task.fields[blocks]} blocks"),
                TimeElapsedColumn(), console=console, transient=True, redirect_stdout=False, redirect_stderr=False,
                disable=args.quiet or not console.is_terminal or (sink is sys.stdout and sys.stdout.isatty()),
            ))
            task = progress.add_task("simulate", total=total, blocks=0)
            tune_garbage_collector()
            simulator = Simulator(config, relay_proofs=args.relay_proofs)
            for line, size in event_log_lines(source):
                interrupt.check()
                summary.inputs += not is_blank(line)
                # A KeyboardInterrupt raised inside the compiled protocol would abort the process (mypyc takes the
                # failed call for an out-of-memory error), so there Ctrl-C is recorded and raised after the line.
                with interrupt.deferring():
                    write(sink, simulator.feed_line(line), summary)
                progress.update(task, advance=size, blocks=summary.blocks)
            with interrupt.deferring():
                write(sink, simulator.finish(), summary)
    except BrokenPipeError:  # the reader went away (e.g. `| head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        kept = "" if args.output is None or str(args.output) == "-" else f"; {args.output} left as it was"
        raise Interrupted(f"interrupted after {summary.inputs} input lines and {summary.blocks} blocks{kept}") from None
    if not args.quiet:
        summary.print(time.perf_counter() - started, args.output)
    return 0


def write(sink: TextIO, outputs: list[OutputRecord], summary: Summary) -> None:
    for record in outputs:
        sink.write(record.to_line() + "\n")
        summary.observe(record)


class Summary:
    """Tallies of a run, for the stderr summary."""

    def __init__(self) -> None:
        self.inputs = 0
        self.blocks = 0
        self.applied = 0
        self.outcomes: Counter[tuple[str, str]] = Counter()
        self.topics: Counter[str] = Counter()
        self.proof_bytes = 0
        self.incomplete = 0

    def observe(self, record: OutputRecord) -> None:
        kind = kind_of(record.topic)
        self.topics[kind] += 1
        value = record.value
        if kind == "seals":
            self.blocks += 1
            self.applied += int(value["applied"])
        elif kind == "rejected":
            self.outcomes[(str(value["status"]), str(value["reason"]))] += 1
        elif kind == "pov":
            self.proof_bytes += int(value["proof_bytes"])
            self.incomplete += value["result"] != "complete"

    def print(self, seconds: float, output: Path | None) -> None:
        table = Table(title="Outcomes of the input records", show_edge=False)
        for column in ("status", "reason", "records"):
            table.add_column(column, justify="right" if column == "records" else "left")
        table.add_row("applied", "", str(self.applied))
        for (status, reason), records in sorted(self.outcomes.items()):
            table.add_row(status, reason, str(records))
        console.print(table)
        rate = self.blocks / seconds if seconds > 0 else 0.0
        where = f" to {output}" if output is not None and str(output) != "-" else ""
        console.print(
            f"{count(self.inputs, 'input line')}, {count(self.blocks, 'block')} sealed, "
            f"{count(sum(self.topics.values()), 'output record')}{where}: "
            f"{self.topics['updates']} updates, {self.topics['events']} events, {self.topics['rejected']} rejections, "
            f"{self.topics['pov']} PoV records ({self.incomplete} incomplete), {self.proof_bytes} proof bytes; "
            f"{seconds:.2f}s ({rate:.1f} blocks/s, {build_name()} protocol)."
        )
