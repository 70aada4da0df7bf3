"""Simulator speed: one seeded workload through the one-process simulator, in publishes per CPU second,
with a SHA-256 digest of the output lines checked against a reference recorded from code without the speed work.

The workload is the standard one (docs/benchmarks.md)::

    pubsub workload -o w.jsonl --seed 3 --blocks 100 --publishers 20 --system-publishers 4 --subscribers 6 \\
        --keys 20 --subscribed-keys 40 --update-rate 0.5 --bad-records 0.01

Each run is a fresh Python process (so no run warms another's caches) that imports a source tree, feeds the log
line by line to ``Simulator`` as ``pubsub simulate`` does, serialises every output record, and reports its CPU
time (``time.process_time``, around the run only: imports and reading the log are outside), the number of
publishes applied (``items_count`` of the ``DataPublished`` events) and the digest: SHA-256 of the output lines
as ``pubsub simulate -o`` writes them, so it equals ``sha256sum`` of that file.

    .venv/bin/python -m benchmarks.simulator_bench                       # this checkout, best of 3
    .venv/bin/python -m benchmarks.simulator_bench --baseline /tmp/base  # and a baseline tree, interleaved
    .venv/bin/python -m benchmarks.simulator_bench --record /tmp/base    # record the reference digest from a tree
    .venv/bin/python -m benchmarks.simulator_bench --profile             # cProfile of one run, top 25 twice
    .venv/bin/python -m benchmarks.simulator_bench --untuned-gc          # and this checkout, collector untouched
    .venv/bin/python -m benchmarks.simulator_bench --instructions --baseline /tmp/prev   # callgrind counts, see below

Each run sets up the garbage collector as ``pubsub simulate`` does in that tree (``pubsub_core.process``; trees
from before it leave CPython's default); ``--untuned-gc`` adds a row of this checkout with the default, so the
collector's share is measured in the same run. Each run also reports the collections per generation and the
seconds they took (``gc.callbacks``).

The machine is shared: quote the ratio of ours to the baseline measured in the same run (runs alternate
baseline, ours, baseline, ours, ...), best of the runs on each side.

``--instructions`` (compiled trees only, valgrind installed) counts instead the machine instructions executed
inside the stages' calls (``STAGE_CALLS``: Stage R's feed, Stage S's step, the ingest edge, the output lines) in
one run per tree under callgrind, about 2-4 minutes each, with a fixed hash seed. The count is then the same on
every run, so a change of 0.5% shows where CPU time moves by 20% between runs here; it overstates libsodium's
share (high IPC) and leaves the collector out. Time the whole afterwards.

Writes benchmarks/results/simulator.json (``python -m benchmarks.render simulator`` puts it in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import write_result

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "benchmarks" / "results" / "simulator_digest.json"
LOG = Path("/tmp/simulator_bench_workload.jsonl")
WORKLOAD_FLAGS = [
    "--seed", "3", "--blocks", "100", "--publishers", "20", "--system-publishers", "4", "--subscribers", "6",
    "--keys", "20", "--subscribed-keys", "40", "--update-rate", "0.5", "--bad-records", "0.01",
]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_log(path: Path) -> str:
    """Write the workload with this checkout's ``pubsub workload`` (the same log feeds every tree); its digest."""
    if not path.exists():
        subprocess.run([sys.executable, "-m", "cli.main", "workload", "-o", str(path), *WORKLOAD_FLAGS],
                       cwd=ROOT, check=True, capture_output=True)
    return _sha256(path)


# -- one run, inside the worker process ------------------------------------------------------------------------


def _tune_collector() -> None:
    """The collector as ``pubsub simulate`` sets it in the tree on sys.path (trees before it: CPython's default)."""
    try:
        from pubsub_core.process import tune_garbage_collector
    except ImportError:
        return
    tune_garbage_collector()


def _collector_clock() -> tuple[list[int], list[float]]:
    """Collections and seconds per generation, filled in by a ``gc.callbacks`` hook from now on."""
    counts, seconds, started = [0, 0, 0], [0.0, 0.0, 0.0], [0.0]

    def hook(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            counts[info["generation"]] += 1
            seconds[info["generation"]] += time.perf_counter() - started[0]

    gc.callbacks.append(hook)
    return counts, seconds


def run_once(log: Path, profile: Path | None = None, tune_gc: bool = True) -> dict[str, Any]:
    """Feed the log to a Simulator of whatever tree is on sys.path; CPU seconds, publishes, outputs, digest."""
    from pubsub_core.simulator import Simulator
    from pubsub_core.stages import ProtocolConfig

    if tune_gc:
        _tune_collector()
    collections, collector_seconds = _collector_clock()

    with log.open("rb") as source:
        # lines as read from the file (Simulator.feed_line drops the break): not through the checkout's reader,
        # which a baseline tree's protocol may not match (its size cap is the same function of no line here)
        raw = source.readlines()
    digest = hashlib.sha256()
    publishes = outputs = 0
    profiler = None
    if profile is not None:
        import cProfile

        profiler = cProfile.Profile()
    start = time.process_time()
    if profiler is not None:
        profiler.enable()
    simulator = Simulator(ProtocolConfig())
    batches = [simulator.feed_line(line) for line in raw]
    batches.append(simulator.finish())
    encoded = [record.to_line() + "\n" for batch in batches for record in batch]
    if profiler is not None:
        profiler.disable()
    seconds = time.process_time() - start
    if profiler is not None:
        profiler.dump_stats(str(profile))
    for batch in batches:
        for record in batch:
            if record.topic.endswith(".events"):
                event = record.value.get("event")
                if isinstance(event, dict) and event.get("event") == "DataPublished":
                    publishes += int(event.get("items_count", 1))
    for line in encoded:
        digest.update(line.encode())
        outputs += 1
    return {"seconds": seconds, "publishes": publishes, "outputs": outputs, "digest": digest.hexdigest(),
            "build": _build_name(), "gc_collections": collections, "gc_seconds": collector_seconds}


def _build_name() -> str:
    """The protocol build the worker ran: compiled or pure-Python (trees before the compiled build are pure)."""
    try:
        from state.native import build_name
    except ImportError:
        return "pure-Python"
    return build_name()


# -- the driver ------------------------------------------------------------------------------------------------


def _commit(tree: Path) -> dict[str, Any]:
    head = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.split("\n")
    return {"commit": head, "modified": sorted(line[3:] for line in dirty if line.strip())}


def run_tree(tree: Path, log: Path, profile: Path | None = None, tune_gc: bool = True) -> dict[str, Any]:
    """One run in a fresh process that imports ``tree``'s packages (PYTHONPATH first, ahead of the editable
    install of this checkout)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", str(log)]
    if profile is not None:
        command += ["--profile-to", str(profile)]
    if not tune_gc:
        command.append("--untuned-gc")
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"worker on {tree} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


STAGE_CALLS = (
    "CPyPy_relay_stage___RelayStage___feed", "CPyPy_subscriber_stage___SubscriberStage___step",
    "CPyPy_ingest___LineParser___route", "CPyPy_ingest___ingest_record",
    "CPyPy_stages___records___OutputRecord___to_line", "CPyPy_relay_stage___RelayStage___finish",
)
"""The compiled entry points (mypyc's wrapper symbols) whose instructions ``--instructions`` counts."""


def callgrind_command(log: Path, out: Path) -> list[str]:
    """The worker under callgrind, collecting only inside ``STAGE_CALLS``."""
    toggles = [f"--toggle-collect={symbol}" for symbol in STAGE_CALLS]
    return ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--collect-atstart=no", *toggles,
            sys.executable, str(Path(__file__).resolve()), "--worker", str(log)]


def collected_instructions(stderr: str) -> int:
    """The instruction count callgrind reports (``==pid== Collected : N``); ValueError if there is none."""
    for line in stderr.splitlines():
        _, marker, count = line.partition("Collected :")
        if marker:
            return int(count.strip())
    raise ValueError("callgrind reported no instruction count")


def count_tree(tree: Path, log: Path, out: Path) -> dict[str, Any]:
    """One callgrind run of ``tree`` (compiled): the instructions inside the stages, the digest, the build."""
    if not (tree / "state" / "native_build.txt").exists():
        raise SystemExit(f"{tree}: --instructions needs a compiled tree (run `make native` in it)")
    # A fixed hash seed: with a random one, set and dict orders (and so the count) move by about 0.02% a run.
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONHASHSEED="0")
    done = subprocess.run(callgrind_command(log, out), cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"callgrind on {tree} failed:\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if result["build"] != "compiled":
        raise SystemExit(f"{tree}: ran as {result['build']}, not compiled (is its build stale?)")
    return {"tree": str(tree), **_commit(tree), "instructions": collected_instructions(done.stderr),
            "digest": result["digest"], "outputs": result["outputs"], "callgrind_out": str(out)}


def count_instructions(trees: list[tuple[str, Path]], log: Path) -> None:
    """``--instructions``: one callgrind run per tree, the counts and their ratio printed."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")
    counts = {}
    for name, tree in trees:
        counts[name] = count_tree(tree, log, Path(f"/tmp/simulator_bench.{name}.callgrind"))
        figures = counts[name]
        print(f"{name:10} {figures['instructions'] / 1e9:8.3f} G instructions in the stages, "
              f"digest {figures['digest'][:16]}, callgrind output {figures['callgrind_out']}", flush=True)
    if "baseline" in counts:
        base, ours = counts["baseline"], counts["ours"]
        print(f"ours / baseline: {ours['instructions'] / base['instructions']:.4f} "
              f"({100 * (ours['instructions'] / base['instructions'] - 1):+.2f}%); "
              f"digests equal: {base['digest'] == ours['digest']}")


def print_profile(path: Path, top: int) -> None:
    import pstats

    for key in ("cumulative", "tottime"):
        print(f"\n--- top {top} by {key} ---")
        pstats.Stats(str(path)).strip_dirs().sort_stats(key).print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs per tree; the best (least CPU time) counts")
    parser.add_argument("--baseline", type=Path, help="a source tree (e.g. a git worktree) to measure alongside")
    parser.add_argument("--record", type=Path, metavar="TREE", help=f"record {REFERENCE.name} from TREE and stop")
    parser.add_argument("--profile", action="store_true", help="cProfile one run of this checkout; top 25 twice")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--log", type=Path, default=LOG, help="where the workload log is kept (made if missing)")
    parser.add_argument("--untuned-gc", action="store_true",
                        help="also run this checkout with CPython's default collector schedule, interleaved")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions inside the stages under callgrind (one run per compiled tree)")
    parser.add_argument("--json", type=Path, default=None,
                        help="where the results go (default: benchmarks/results/simulator.json)")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--profile-to", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        print(json.dumps(run_once(args.worker, args.profile_to, tune_gc=not args.untuned_gc)))
        return
    log_digest = make_log(args.log)
    if args.record is not None:
        result = run_tree(args.record, args.log)
        recorded = {"digest": result["digest"], "outputs": result["outputs"], "publishes": result["publishes"],
                    "log_sha256": log_digest, "workload": WORKLOAD_FLAGS, **_commit(args.record)}
        REFERENCE.write_text(json.dumps(recorded, indent=2) + "\n")
        print(json.dumps(recorded, indent=2))
        return
    if args.profile:
        stats = Path("/tmp/simulator_bench.prof")
        result = run_tree(ROOT, args.log, stats)
        print(f"profiled run: {result['seconds']:.2f} s CPU under cProfile, digest {result['digest']}")
        print_profile(stats, args.top)
        return
    if args.instructions:
        count_instructions(([("baseline", args.baseline)] if args.baseline else []) + [("ours", ROOT)], args.log)
        return
    trees = (([("baseline", args.baseline, True)] if args.baseline else []) + [("ours", ROOT, True)]
             + ([("ours-gc-default", ROOT, False)] if args.untuned_gc else []))
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in trees}
    for i in range(args.runs):
        for name, tree, tune_gc in trees:
            result = run_tree(tree, args.log, tune_gc=tune_gc)
            runs[name].append(result)
            print(f"run {i + 1} {name:15} {result['seconds']:6.2f} s CPU  "
                  f"{result['publishes'] / result['seconds']:8,.0f} publishes/s  "
                  f"collector {sum(result['gc_seconds']):.2f} s ({result['gc_collections'][2]} full)  "
                  f"digest {result['digest'][:16]}", flush=True)
    reference = json.loads(REFERENCE.read_text()) if REFERENCE.exists() else None
    summary: dict[str, Any] = {
        "workload": WORKLOAD_FLAGS, "log_sha256": log_digest, "runs": args.runs,
        "python": platform.python_version(), "load_average": os.getloadavg(), "trees": {},
    }
    for name, tree, _ in trees:
        best = min(runs[name], key=lambda r: r["seconds"])
        digests = {r["digest"] for r in runs[name]}
        summary["trees"][name] = {
            "tree": str(tree), **_commit(tree), "best_seconds": best["seconds"],
            "all_seconds": [r["seconds"] for r in runs[name]], "publishes": best["publishes"],
            "publishes_per_s": best["publishes"] / best["seconds"], "outputs": best["outputs"],
            "digest": best["digest"], "stable": len(digests) == 1, "build": best["build"],
            "gc_collections": best["gc_collections"], "gc_seconds": best["gc_seconds"],
        }
    print()
    for name, figures in summary["trees"].items():
        print(f"{name:15} best {figures['best_seconds']:.2f} s CPU, {figures['publishes_per_s']:,.0f} publishes/s, "
              f"{figures['outputs']} outputs, digest {figures['digest']}, {figures['build']} build")
    ours = summary["trees"]["ours"]
    if "baseline" in summary["trees"]:
        base = summary["trees"]["baseline"]
        summary["speedup"] = base["best_seconds"] / ours["best_seconds"]
        print(f"speed-up: {summary['speedup']:.2f}x (baseline CPU / ours, best of {args.runs} each, interleaved)")
        print(f"digest equals the baseline's: {base['digest'] == ours['digest']}")
    if "ours-gc-default" in summary["trees"]:
        untuned = summary["trees"]["ours-gc-default"]
        summary["collector_speedup"] = untuned["best_seconds"] / ours["best_seconds"]
        print(f"collector schedule: {summary['collector_speedup']:.2f}x (default schedule CPU / ours); "
              f"digest unchanged: {untuned['digest'] == ours['digest']}")
    ok = True
    if reference is not None:
        ok = reference["digest"] == ours["digest"] and reference["log_sha256"] == log_digest
        summary["reference"] = {"commit": reference["commit"], "digest": reference["digest"], "equal": ok}
        print(f"digest equals the reference (commit {reference['commit'][:10]}): {ok}")
    else:
        print(f"no reference digest at {REFERENCE}; record one with --record TREE")
    if "ours-gc-default" in summary["trees"]:
        ok = ok and summary["trees"]["ours-gc-default"]["digest"] == ours["digest"]
    print(f"wrote {write_result('simulator', summary, module='benchmarks.simulator_bench', path=args.json)}")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
