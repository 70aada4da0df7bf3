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
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks.common import write_result
from benchmarks.reliability.soak import SoakPlan, plot, run_soak
from streaming.paths import REPO_ROOT
from streaming.settings import STATE_REOPEN_MODES, Settings

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks.long_run", formatter_class=argparse.RawDescriptionHelpFormatter,
                                     description=__doc__)
    parser.add_argument("--minutes", type=float, default=90.0, help="sampled minutes after warm-up (default: 90)")
    parser.add_argument("--rate", type=float, default=10.0, help="publishes per second (default: 10)")
    parser.add_argument("--block-time", type=float, default=0.5, metavar="S", help="block time (default: 0.5)")
    parser.add_argument("--trigger-seconds", type=float, default=0.5, metavar="S", help="job trigger (default: 0.5)")
    parser.add_argument("--sample-seconds", type=float, default=60.0, metavar="S", help="between samples (default: 60)")
    parser.add_argument("--warmup-minutes", type=float, default=10.0, metavar="M",
                        help="samples left out of the levels and slopes (default: 10)")
    parser.add_argument("--state-reopen", choices=STATE_REOPEN_MODES, default=Settings.state_reopen,
                        help=f"the job's checkpoint remedy (default: {Settings.state_reopen})")
    parser.add_argument("--state-reopen-minutes", type=float, default=Settings.state_reopen_minutes, metavar="M",
                        help=f"minutes between periodic restarts (default: {Settings.state_reopen_minutes:g})")
    parser.add_argument("--author-restart-minutes", type=float, default=10.0, metavar="M",
                        help="stop the author and start it again this often, timing each start (default: 10)")
    parser.add_argument("--work", type=Path, metavar="DIR", help="scratch folder (default: a new temporary one)")
    parser.add_argument("--json", type=Path, default=REPO_ROOT / "benchmarks" / "results" / "long_run.json",
                        help="results file (default: benchmarks/results/long_run.json)")
    parser.add_argument("--png", type=Path, default=REPO_ROOT / "docs" / "img" / "long_run.png",
                        help="the plot (default: docs/img/long_run.png)")
    args = parser.parse_args(argv)
    plan = SoakPlan(minutes=args.minutes, rate=args.rate, block_time=args.block_time,
                    trigger_seconds=args.trigger_seconds, sample_seconds=args.sample_seconds,
                    state_reopen=args.state_reopen, state_reopen_minutes=args.state_reopen_minutes,
                    warmup_minutes=min(args.warmup_minutes, args.minutes / 2),
                    author_restart_minutes=args.author_restart_minutes)
    result = run_soak(plan, args.work or Path(tempfile.mkdtemp(prefix="pubsub-long-run-")))
    plot(result, args.png, title="long run")
    write_result("long_run", result, module="benchmarks.long_run", argv=argv, path=args.json)
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=2))
    return 0 if result.get("equal_to_simulator") else 1


if __name__ == "__main__":
    sys.exit(main())
