"""Long run: the soak at an accelerated pace for as long as a deployment's costs need to show they are flat.

    python -m benchmarks.long_run                 # 90 minutes: about 10,800 micro-batches per query at 0.5 s
    python -m benchmarks.long_run --minutes 5     # a smoke of the same harness

The soak's parts (``benchmarks.reliability.soak``: its own embedded broker, the live producer, the block author and the
continuous job as subprocesses, publishers deregistered and registered again every minute) with a block every
0.5 s and a 0.5 s trigger, sampled every minute: the checkpoint folder and its state folders, the RocksDB working
folders the job's JVM holds open, and the RSS and open file descriptors of every process (the job's driver Python,
its JVM, its Python workers, the broker, the author, the producer). Every ``--author-restart-minutes`` the author
is stopped and started again, and its start is timed. At the end the realm is exported and compared with the simulator.
Writes ``benchmarks/results/long_run.json`` (the samples; per series after warm-up its first, last, min, max and
least-squares slope per hour with the slope's standard error; the micro-batches each query ran; the longest wait
between two blocks' outputs) and ``docs/img/long_run.png``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks.common import stop_cleanly_on_sigterm, write_result
from benchmarks.reliability.soak import SoakPlan, add_plan_arguments, plan_from_args, plot, run_soak
from benchmarks.common import ROOT as REPO_ROOT

__all__ = ["LONG_RUN", "main"]

LONG_RUN = SoakPlan(minutes=90.0, block_time=0.5, trigger_seconds=0.5, sample_seconds=60.0, warmup_minutes=10.0,
                    author_restart_minutes=10.0)
"""About 10,800 micro-batches per query; the author restarted every 10 minutes."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks.long_run", formatter_class=argparse.RawDescriptionHelpFormatter,
                                     description=__doc__)
    add_plan_arguments(parser, LONG_RUN)
    parser.add_argument("--work", type=Path, metavar="DIR", help="scratch folder (default: a new temporary one)")
    parser.add_argument("--json", type=Path, default=REPO_ROOT / "benchmarks" / "results" / "long_run.json",
                        help="results file (default: benchmarks/results/long_run.json)")
    parser.add_argument("--png", type=Path, default=REPO_ROOT / "docs" / "img" / "long_run.png",
                        help="the plot (default: docs/img/long_run.png)")
    args = parser.parse_args(argv)
    stop_cleanly_on_sigterm()
    plan = dataclasses.replace(plan_from_args(args), warmup_minutes=min(args.warmup_minutes, args.minutes / 2))
    result = run_soak(plan, args.work or Path(tempfile.mkdtemp(prefix="pubsub-long-run-")))
    plot(result, args.png, title="long run")
    write_result("long_run", result, module="benchmarks.long_run", argv=argv, path=args.json)
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=2))
    return 0 if result.get("equal_to_simulator") else 1


if __name__ == "__main__":
    sys.exit(main())
