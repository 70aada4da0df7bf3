"""Stage R with its signature checks in place and made ahead by a forked helper, on one core and on two.

Issue 11, target 4: per-origin work need not wait for the sequential relay stage. ``streaming.signatures_ahead``
forks a helper per large batch that verifies envelopes from the last row back while Stage R checks from the first.
This runs Stage R's operator function (``streaming.operators.relay_rows``, the job's paged state backend over a
dict MapState, no Spark, no Kafka) on one log as one batch, alternating the two arms round by round, on the cores
given. On one core the helper is off in the job (``signatures_ahead.enabled``); here it is forced on there to show
why. Wall time is what the helper can change (it adds CPU in another process); each arm's outputs are compared.

    .venv/bin/python -m benchmarks.signatures_bench                  # issue-11 log, 1 and 2 cores, 5 rounds
    .venv/bin/python -m benchmarks.signatures_bench --cores 2 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress

from benchmarks.pipeline_bench import REPLAY_KEY, CountingMapState, kafka_rows, load_logs
from pubsub_core.stages import SimulatorConfig
from streaming import signatures_ahead as ahead
from streaming.operators import KafkaRow, OutRow, feed_order, page_backend, relay_rows

RESULTS = Path(__file__).resolve().parent / "results" / "signatures.json"
ARMS = ("in place", "ahead")


@dataclass(frozen=True)
class Round:
    cores: int
    arm: str
    wall_seconds: float
    cpu_seconds: float
    """Stage R's process only (the helper's CPU is its own)."""
    verified_ahead: int
    """Digests Stage R had received from the helper by the end of the batch (0 in place)."""


def log_rows(name: str) -> list[KafkaRow]:
    """A benchmark log's input records as Stage R takes them (as `pubsub produce` writes them, in feed order)."""
    rows, _ = kafka_rows(load_logs([name])[0][2])
    return sorted(rows, key=feed_order)


def one_round(rows: Sequence[KafkaRow], cores: int, arm: str) -> tuple[Round, list[OutRow]]:
    """Stage R over ``rows`` as one batch, its signatures checked as ``arm`` says ("ahead": a helper whatever the
    batch's size and the cores, its fork timed with the batch)."""
    config = SimulatorConfig()
    backend = page_backend(CountingMapState())
    wall, cpu = time.perf_counter(), time.process_time()
    if arm == "ahead":
        helper = ahead.SignaturesAhead.start(rows, config.default_realm)
        if helper is None:
            raise RuntimeError("the helper could not be forked")
        try:
            out = relay_rows(config.default_realm, rows, backend, config, REPLAY_KEY, helper.check)
            received = len(helper.verified)
        finally:
            helper.close()
    else:
        out = relay_rows(config.default_realm, rows, backend, config, REPLAY_KEY)
        received = 0
    backend.flush()
    return Round(cores, arm, time.perf_counter() - wall, time.process_time() - cpu, received), out


def run(log: str, cores: Sequence[int], rounds: int, console: Console) -> dict[str, Any]:
    rows = log_rows(log)
    available = sorted(os.sched_getaffinity(0))
    results: list[Round] = []
    equal = True
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("Stage R, in place and ahead", total=len(cores) * rounds * len(ARMS))
        for n in cores:
            os.sched_setaffinity(0, available[:n])
            try:
                for _ in range(rounds):
                    outputs = []
                    for arm in ARMS:
                        result, out = one_round(rows, n, arm)
                        results.append(result)
                        outputs.append(out)
                        progress.advance(task)
                    equal = equal and outputs[0] == outputs[1]
            finally:
                os.sched_setaffinity(0, available)
    return {"log": log, "rows": len(rows), "rounds": rounds, "outputs_equal": equal,
            "results": [asdict(r) for r in results]}


def summary(results: dict[str, Any]) -> list[list[str]]:
    """Per core count: each arm's median wall (range), the ratio in place / ahead, CPU, digests received."""
    lines = []
    for n in sorted({r["cores"] for r in results["results"]}):
        arms = {arm: [r for r in results["results"] if r["cores"] == n and r["arm"] == arm] for arm in ARMS}
        walls = {arm: [r["wall_seconds"] for r in rs] for arm, rs in arms.items()}
        medians = {arm: statistics.median(w) for arm, w in walls.items()}
        lines.append([str(n), *(f"{medians[a]:.2f} ({min(walls[a]):.2f}-{max(walls[a]):.2f})" for a in ARMS),
                      f"{medians['in place'] / medians['ahead']:.2f}x",
                      f"{statistics.median(r['cpu_seconds'] for r in arms['ahead']):.2f}",
                      str(int(statistics.median(r["verified_ahead"] for r in arms["ahead"])))])
    return lines


HEADER = ["cores", "in place: wall s", "ahead: wall s", "speed-up", "ahead: Stage R CPU s", "digests received"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.signatures_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log", default="issue11", help="a pipeline_bench log: issue11 (default), workload, ...")
    parser.add_argument("--cores", type=int, nargs="+", default=[1, 2], help="core counts to run on (default 1 2)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per core count, each arm once (default 5)")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"results JSON (default {RESULTS})")
    args = parser.parse_args(argv)
    console = Console()
    if not hasattr(os, "sched_setaffinity"):
        parser.error("runs a process on a chosen number of cores: needs os.sched_setaffinity (Linux)")
    if max(args.cores) > len(os.sched_getaffinity(0)):
        parser.error(f"this process may run on {len(os.sched_getaffinity(0))} cores")
    results = run(args.log, args.cores, args.rounds, console)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    console.print(f"{results['log']}: {results['rows']} rows as one batch, {results['rounds']} rounds; outputs "
                  f"equal in every round: {results['outputs_equal']}")
    console.print("| " + " | ".join(HEADER) + " |\n|" + "---|" * len(HEADER))
    for line in summary(results):
        console.print("| " + " | ".join(line) + " |")
    return 0 if results["outputs_equal"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
