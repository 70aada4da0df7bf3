"""Live block-to-update latency: the live producer, the block author and the continuous Spark job (local[2]) on the
embedded broker, as `pubsub demo --live` runs them, at a given block time and publish rate.

For each block time: reset a realm, start the job and the author with the set-up traffic, wait until Spark served
it, send Publish traffic for --seconds, drain, then measure from Kafka timestamps only: block record (author) ->
first view of that block on the seam (written by Stage R) -> each update (written by Stage S), and the job's per-batch
durations from its progress lines. Writes benchmarks/results/latency.json and docs/img/latency_<T>s.png.

    .venv/bin/python -m benchmarks.latency_bench                   # 6 s and 1 s blocks, 500 publishes/s
    .venv/bin/python -m benchmarks.latency_bench --block-time 1 --seconds 60
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.common import read_result, stop_cleanly_on_sigterm, write_result
from benchmarks.render import RENDERERS
from producers.readers.latency import percentile
from producers.workload import WorkloadSpec
from producers.writers.live import LiveRateError, Pacing
from benchmarks.common import ROOT as REPO_ROOT
from settings.paths import runtime_dir
from settings.settings import ENV_PREFIX, load_settings
from supervise.kafka_broker import EmbeddedKafka, ensure_kafka
from supervise.live_plot import plot_latency_and_pov
from supervise.live_run import LivePlan, LiveRun, LiveSnapshot

_BATCH = re.compile(r"^(relay|subscribers) batch (\d+): (\d+) rows in .*\| ([\d.]+)s$")


def _stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"count": 0}
    return {"count": len(values), "p50": round(percentile(values, 50), 3), "p99": round(percentile(values, 99), 3),
            "mean": round(statistics.fmean(values), 3), "max": round(max(values), 3)}


def batch_durations(log: Path) -> dict[str, dict[str, float]]:
    """Seconds per micro-batch of each query (batches with rows; Spark's first batch, which includes its
    start-up, left out), from the job's progress lines."""
    found: dict[str, list[float]] = {"relay": [], "subscribers": []}
    for line in log.read_text(errors="replace").splitlines():
        match = _BATCH.match(line.strip())
        if match and int(match.group(2)) > 1:
            found[match.group(1)].append(float(match.group(4)))
    return {name: _stats(values) for name, values in found.items()}


def stages(snapshot: LiveSnapshot, steady: int) -> dict[str, dict[str, float]]:
    """Seconds from a block's record to its first view (trigger wait + Stage R + its write), from that view to each
    of the block's updates (seam + trigger wait + Stage S + its write), and block to update in all."""
    to_view = [(snapshot.views[n] - t) / 1000 for n, t in snapshot.blocks.items() if n >= steady and n in snapshot.views]
    to_update = [(t - snapshot.views[n]) / 1000 for n, t in snapshot.updates if n >= steady and n in snapshot.views]
    total = [(t - snapshot.blocks[n]) / 1000 for n, t in snapshot.updates if n >= steady and n in snapshot.blocks]
    return {"block_to_view": _stats(to_view), "view_to_update": _stats(to_update), "block_to_update": _stats(total)}


def fitting_rate(rate: float, publishers: int, keys: int, block_time: float) -> float:
    """``rate`` if the live producer's per-para cap allows it at ``block_time``, else the highest whole rate that
    fits (LiveRateError names it)."""
    try:
        Pacing.plan(rate, publishers, keys, block_time)
        return rate
    except LiveRateError as exc:
        return float(int(exc.limit))


def run_one(settings: Any, block_time: float, args: argparse.Namespace, layout: str) -> dict[str, Any]:
    publishers = args.publishers
    rate = fitting_rate(args.rate, publishers, args.keys, block_time)
    realm = f"latency-{layout}-{str(block_time).replace('.', '_')}s"
    workload = WorkloadSpec(seed=1, publishers=publishers - 2, system_publishers=2, subscribers=args.subscribers,
                            keys=args.keys, subscribed_keys=args.subscribed_keys, realm=realm)
    home = runtime_dir() / "latency-bench" / realm
    plan = LivePlan(realm, workload, rate, block_time, home / "checkpoint", home / "logs", args.trigger_seconds,
                    ((ENV_PREFIX + "STAGES", layout),))
    print(f"[{block_time:g}s blocks, {layout}] {rate:g} publishes/s over {publishers} publishers, {args.subscribers} "
          f"subscribers, {args.seconds:g}s of traffic", flush=True)
    started = time.monotonic()
    with LiveRun(settings, plan) as run:
        run.start()
        steady = run.warm_up()
        print(f"  Spark served the set-up after {time.monotonic() - started:.0f}s; traffic from block {steady}",
              flush=True)
        run.start_traffic()
        end = time.monotonic() + args.seconds
        run.wait(lambda _: time.monotonic() >= end, args.seconds + 60, "traffic")
        snapshot = run.drain(timeout=args.drain_timeout)
    summary = snapshot.latency(steady)
    name = f"latency_{block_time:g}s.png" if layout == "fused" else f"latency_{block_time:g}s_{layout}.png"
    png = plot_latency_and_pov(snapshot, REPO_ROOT / "docs" / "img" / name, block_time,
                               steady, f"{rate:g} publishes/s, {publishers} publishers, {args.subscribers} "
                                       f"subscribers, {block_time:g} s blocks, 2 cores")
    result = {
        "block_time_s": block_time, "stages": layout, "rate_requested": args.rate, "rate": rate, "publishers": publishers,
        "subscribers": args.subscribers, "trigger_seconds": args.trigger_seconds, "traffic_seconds": args.seconds,
        "blocks": snapshot.head, "measured_from_block": steady, "upward_messages": snapshot.upward,
        "publishes": snapshot.upward * plan.pacing().items_per_message, "updates": len(snapshot.updates),
        "latency": summary.to_json(), "stages_s": stages(snapshot, steady),
        "batch_seconds": batch_durations(plan.logs / "job.log"), "plot": str(png.relative_to(REPO_ROOT)),
        "wall_seconds": round(time.monotonic() - started, 1),
    }
    print(f"  {summary.line()}  ({result['wall_seconds']}s)", flush=True)
    return result


def add_live_arguments(parser: argparse.ArgumentParser) -> None:
    """The live pipeline's options, shared with ``benchmarks.latency_budget``: block times, the workload, the
    traffic's length, the job's trigger and the drain's timeout."""
    parser.add_argument("--block-time", type=float, action="append", metavar="SECONDS",
                        help="a block time to run, repeatable (default: 6 and 1)")
    parser.add_argument("--rate", type=float, default=500.0, help="publishes/s requested (default: 500)")
    parser.add_argument("--publishers", type=int, default=20, help="publisher paras, 2 of them system (default: 20)")
    parser.add_argument("--subscribers", type=int, default=5, help="subscriber paras (default: 5)")
    parser.add_argument("--keys", type=int, default=16, help="keys per publisher (default: 16, full messages allowed)")
    parser.add_argument("--subscribed-keys", type=int, default=8, help="keys each subscriber follows (default: 8)")
    parser.add_argument("--seconds", type=float, default=60.0, help="seconds of traffic per run (default: 60)")
    parser.add_argument("--trigger-seconds", type=float, default=0.2,
                        help="the job's micro-batch interval (default: 0.2, the job's)")
    parser.add_argument("--drain-timeout", type=float, default=240.0, metavar="SECONDS",
                        help="how long to wait for the job to serve the last block (default: 240)")


def main() -> int:
    parser = argparse.ArgumentParser(prog="benchmarks.latency_bench", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    add_live_arguments(parser)
    parser.add_argument("--stages", action="append", choices=("fused", "split"), metavar="LAYOUT",
                        help="the job's layout (the stages setting), repeatable: one run per block time each "
                             "(default: fused, the job's own for a new checkpoint)")
    parser.add_argument("--out", type=Path, default=None,
                        help="results file (default: benchmarks/results/latency.json)")
    args = parser.parse_args()
    stop_cleanly_on_sigterm()
    settings, broker = ensure_kafka(load_settings(), EmbeddedKafka())
    try:
        runs = [run_one(settings, block_time, args, layout) for block_time in args.block_time or [6.0, 1.0]
                for layout in args.stages or ["fused"]]
    finally:
        if broker is not None and broker.started_here:
            broker.stop()
    path = write_result("latency", {"runs": runs}, module="benchmarks.latency_bench", path=args.out)
    print(RENDERERS["latency"](read_result("latency", path)))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
