"""`pubsub demo --live`: the protocol running live on the embedded broker: the live producer, the block author,
the continuous Spark job and a following consumer together (supervise/live_run.py supervises them), a status
view read from the topics as they grow, then block-to-update latency, a plot of latency and PoV per block, and
the run's input topics exported and replayed through the simulator, compared record by record with the job."""

from __future__ import annotations

import argparse
import signal
import time
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

from rich.console import Group
from rich.live import Live
from rich.table import Table

from cli.commands.common import console
from cli.errors import UsageError
from cli.output import atomic_output

LIVE_REALM = "demo-live"
"""The live demo's realm: its topics and checkpoint are reset on every run."""


def add_live_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `pubsub demo --live` (it also takes --config, --bootstrap, --seed and --keep-broker)."""
    live = parser.add_argument_group(
        "live demo (--live)",
        "run the live producer, the block author, the continuous job and a following consumer together in realm "
        f"'{LIVE_REALM}' with a status view; then latency percentiles, a latency/PoV plot, and the exported run "
        "checked against the simulator")
    live.add_argument("--live", action="store_true", help="the live demo instead of the offline one")
    live.add_argument("--seconds", type=float, default=60.0, metavar="S",
                      help="seconds of live Publish traffic, Spark's start-up not counted (default: 60)")
    live.add_argument("--rate", type=float, default=20.0, metavar="N", help="publishes per second (default: 20)")
    live.add_argument("--block-time", type=float, default=2.0, metavar="S",
                      help="the author's block time in seconds (default: 2)")
    live.add_argument("--trigger-seconds", type=float, default=0.2, metavar="S",
                      help="the job's micro-batch interval (default: 0.2)")


def run_live_demo(args: argparse.Namespace) -> int:
    """Run the live demo; exit 0 when every part ran and the job's outputs equal the simulator's on the export."""
    from producers.workload import WorkloadSpec
    from settings.paths import runtime_dir
    from settings.settings import load_settings
    from supervise.kafka_broker import EmbeddedKafka, ensure_kafka
    from supervise.live_plot import plot_latency_and_pov
    from supervise.live_run import LivePlan, LiveRun

    if args.seconds <= 0 or args.rate <= 0 or args.block_time <= 0 or args.trigger_seconds <= 0:
        raise UsageError("--seconds, --rate, --block-time and --trigger-seconds must be positive")
    started = time.monotonic()
    home = runtime_dir() / "demo-live"
    settings = load_settings(overrides={"kafka_bootstrap": args.bootstrap, "realms": LIVE_REALM},
                             config_file=args.config)
    workload = WorkloadSpec(seed=args.seed, publishers=2, system_publishers=1, subscribers=3, keys=16,
                            subscribed_keys=6, realm=LIVE_REALM)
    plan = LivePlan(LIVE_REALM, workload, args.rate, args.block_time, runtime_dir() / "checkpoints" / "demo-live",
                    home / "logs", args.trigger_seconds)
    pacing = plan.pacing()
    previous = signal.signal(signal.SIGTERM, _interrupt)
    broker = EmbeddedKafka()
    embedded = None
    try:
        with console.status("Starting Kafka"):
            settings, embedded = ensure_kafka(settings, broker)
        console.print(f"[bold]1.[/] Kafka: {'embedded broker' if embedded else 'external cluster'} at "
                      f"{settings.kafka_bootstrap}; realm '{LIVE_REALM}' reset; logs in {plan.logs}")
        console.print(f"[bold]2.[/] starting the job (trigger {args.trigger_seconds:g}s), a following consumer, the "
                      f"author (a block every {args.block_time:g}s) and the live producer ({args.rate:g} publishes/s: "
                      f"{workload.system_publishers + workload.publishers} publishers, {pacing.items_per_message} "
                      f"per message, {workload.subscribers} subscribers); Ctrl-C stops everything")
        with LiveRun(settings, plan) as run:
            run.start()
            view = _StatusView(run, pacing.items_per_message, args.seconds)
            with Live(view.render(None), console=console, refresh_per_second=4, transient=False) as live:
                def tick(snapshot: Any) -> None:
                    live.update(view.render(snapshot))

                steady = run.warm_up(tick)
                view.steady = steady
                run.start_traffic()
                traffic_end = time.monotonic() + args.seconds
                view.phase = "live traffic"
                run.wait(lambda s: time.monotonic() >= traffic_end, args.seconds + 60, "live traffic", tick)
                view.phase = "draining: producer stopped, author finishing, job catching up"
                last = run.drain(tick)
            followed = run.followed()
        console.print(f"[bold]3.[/] all parts stopped; following consumer showed {followed} updates")
        summary = last.latency(steady)
        console.print(_summary_table(last, steady, summary, pacing.items_per_message, args.block_time))
        png = plot_latency_and_pov(last, home / "latency.png", args.block_time, steady,
                                   f"pubsub demo --live: {args.rate:g} publishes/s, {args.block_time:g} s blocks")
        console.print(f"   latency and PoV per block: {png}")
        ok = _replay_check(settings, home / "events.jsonl")
    except KeyboardInterrupt:
        console.print("[yellow]Interrupted: every part was stopped.[/]")
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        if embedded is not None and embedded.started_here and not args.keep_broker:
            embedded.stop()
    seconds = time.monotonic() - started
    if ok and summary.count:
        console.print(f"Live demo finished in {seconds:.0f}s: block-to-update latency {summary.line()}; the job's "
                      "outputs equal the simulator's on the exported log; [bold green]all checks passed[/].")
        return 0
    console.print(f"Live demo finished in {seconds:.0f}s: [bold red]CHECKS FAILED[/] "
                  f"({'no updates measured' if not summary.count else 'outputs differ from the simulator'}).")
    return 1


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    """SIGTERM ends the demo like Ctrl-C: the ``finally`` blocks stop every part."""
    raise KeyboardInterrupt


class _StatusView:
    """The live table: what the topics hold, per subscriber lag and PoV, latency so far."""

    def __init__(self, run: Any, items_per_message: int, seconds: float) -> None:
        self.run = run
        self.items = items_per_message
        self.seconds = seconds
        self.phase = "starting Spark; the set-up (genesis, registrations, subscriptions) is sent"
        self.steady: int | None = None

    def render(self, snapshot: Any) -> Group:
        elapsed = time.monotonic() - self.run.started if self.run.started else 0.0
        head = Table(show_header=False, box=None, pad_edge=False)
        head.add_column(style="bold")
        head.add_column()
        head.add_row("phase", f"{self.phase} ({elapsed:.0f}s)")
        if snapshot is None:
            return Group(head)
        summary = snapshot.latency(self.steady if self.steady is not None else snapshot.head + 1)
        head.add_row("blocks authored", str(snapshot.head))
        head.add_row("publishes sent", f"{snapshot.upward * self.items} ({snapshot.upward} upward messages)")
        head.add_row("views (Stage R)", f"up to block {max(snapshot.views, default=0)}")
        head.add_row("updates delivered", f"{len(snapshot.updates)} on the topic, {self.run.followed()} shown by the "
                                          "following consumer")
        head.add_row("latency so far", summary.line() if summary.count else "(waiting for Spark)")
        subs = Table(title=None, show_edge=False)
        for name in ("subscriber", "updates", "served block", "lag (blocks)", "last PoV (bytes/budget)"):
            subs.add_column(name, justify="right")
        served = snapshot.served()
        for para in sorted(served):
            pov = snapshot.pov[(served[para], para)]
            subs.add_row(str(para), str(snapshot.updates_per_subscriber[para]), str(served[para]),
                         str(snapshot.head - served[para]), f"{pov.proof_bytes}/{pov.budget} {pov.result}")
        return Group(head, subs)


def _summary_table(snapshot: Any, steady: int, summary: Any, items: int, block_time: float) -> Table:
    table = Table(title="Live run", show_edge=False)
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("blocks authored", str(snapshot.head))
    table.add_row("publishes sent", str(snapshot.upward * items))
    table.add_row("updates delivered", str(len(snapshot.updates)))
    results = Counter(p.result for p in snapshot.pov.values())
    table.add_row("PoV records", ", ".join(f"{n} {r}" for r, n in sorted(results.items())) or "none")
    table.add_row("largest proof", f"{max((p.proof_bytes for p in snapshot.pov.values()), default=0)} bytes")
    table.add_row("measured from block", f"{steady} (the first after Spark started; traffic began there)")
    for name in ("p50", "p95", "p99", "max"):
        value = getattr(summary, name)
        table.add_row(f"block-to-update {name}", f"{value:.0f} ms ({value / 1000 / block_time:.2f} block times)")
    table.add_row("updates measured", str(summary.count))
    return table


def _replay_check(settings: Any, events: Path) -> bool:
    """Export the realm's input topics, run the simulator over them and compare with what the job wrote."""
    from cli.commands.verify import comparison_table
    from producers.readers.export import export_realm
    from supervise.verify import check_outputs

    with atomic_output(events) as sink, console.status("exporting the run's input topics"):
        def write(line: str) -> None:
            sink.write(line + "\n")

        report = export_realm(settings, LIVE_REALM, write)
    console.print(f"[bold]4.[/] exported {sum(report.lines.values())} input records to {events}; the simulator over "
                  "that log against the job's outputs, topic by topic:")
    lines = [line.encode() for line in events.read_text().splitlines()]
    with console.status("simulating and comparing"):
        result = check_outputs(lines, settings, [LIVE_REALM])
    console.print(comparison_table(result))
    for t in result.topics:
        for example in t.examples:
            console.print(f"   {t.topic}: {example}")
    return result.ok and sum(t.matched for t in result.topics) > 0
