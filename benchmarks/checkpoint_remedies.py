"""Side by side: soak runs of the job under each ``state_reopen`` candidate (docs/reliability.md, "A checkpoint of
bounded size").

    python -m benchmarks.reliability.soak --minutes 12 --trigger-seconds 0.5 --block-time 0.5 --sample-seconds 30 \\
        --state-reopen never --json never.json --png never.png          # and every-commit, periodic
    python -m benchmarks.checkpoint_remedies --run never=never.json --run every-commit=every-commit.json \\
        --run periodic=periodic.json --job-log never=WORK/logs/job.1.log ...

Reads each run's samples and writes ``benchmarks/results/checkpoint_remedies.json`` (per run: the levels and slopes
per hour after warm-up of the checkpoint folder, its changelogs, the RocksDB MANIFEST in the stores' newest
snapshots and the RocksDB working folders; batches per query, and with ``--job-log`` the median and 90th percentile
of their seconds from the job's progress lines; how far the outputs trailed the author; the longest wait between
two blocks' outputs; the command and commit of each soak) and ``docs/img/checkpoint_remedies.png``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import write_result
from benchmarks.reliability.soak import levels
from benchmarks.common import ROOT as REPO_ROOT

__all__ = ["main", "summary"]

SERIES = ("checkpoint_mib", "relay_state_mib", "subscribers_state_mib", "changelogs_mib", "zips_mib", "manifest_kib",
          "rocksdb_local_mib", "jvm_mib", "python_workers_mib")


BATCH_LINE = re.compile(r"^(relay|subscribers) batch \d+: .* \| (\d+(?:\.\d+)?)s$")
"""A progress line of the job (``streaming.job``), ending in the batch's seconds."""


def batch_seconds(job_log: Path) -> dict[str, dict[str, float]]:
    """Per query, the median and 90th percentile of its batches' seconds over the whole run, and their count."""
    seconds: dict[str, list[float]] = {}
    for line in job_log.read_text(errors="replace").splitlines():
        if match := BATCH_LINE.match(line.strip()):
            seconds.setdefault(match[1], []).append(float(match[2]))
    return {query: {"median": statistics.median(values), "p90": statistics.quantiles(values, n=10)[-1],
                    "count": len(values)} for query, values in seconds.items() if len(values) >= 2}


def summary(result: dict[str, Any], warmup_minutes: float) -> dict[str, Any]:
    """One run's figures (``result``: a soak's result)."""
    samples = result["samples"]
    fits = levels(samples, warmup_minutes)
    behind = [s["blocks"] - s["outputs"] for s in samples if s["t"] >= warmup_minutes * 60]
    return {
        "state_reopen": result["plan"]["state_reopen"],
        "minutes": samples[-1]["t"] / 60,
        "levels": {k: {m: round(v, 2) for m, v in fits[k].items()} for k in SERIES if k in fits},
        "batches": result.get("batches"),
        "blocks_per_batch": round(result["samples"][-1]["blocks"] / max(1, (result.get("batches") or {}).get(
            "relay", 1)), 2),
        "outputs_behind_blocks_median": statistics.median(behind) if behind else None,
        "longest_output_gap_seconds": result.get("longest_output_gap_seconds"),
        "equal_to_simulator": result.get("equal_to_simulator"),
        "end_anatomy": result.get("end_anatomy"),
    }


def plot(runs: dict[str, dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (disk, manifest) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    for name, result in runs.items():
        samples = result["samples"]
        t = [s["t"] / 60 for s in samples]
        disk.plot(t, [s["checkpoint_mib"] for s in samples], label=name)
        if all("manifest_kib" in s for s in samples):
            manifest.plot(t, [s["manifest_kib"] for s in samples], label=name)
        elif result.get("end_anatomy"):
            manifest.plot([t[-1]], [result["end_anatomy"]["manifest_kib"]], "o", label=f"{name} (at the end)")
    disk.set_ylabel("checkpoint folder (MiB)")
    disk.legend(loc="upper left", fontsize=8)
    manifest.set_ylabel("MANIFEST in the newest\nsnapshots, 4 stores (KiB)")
    manifest.set_xlabel("minutes into the run")
    manifest.legend(loc="upper left", fontsize=8)
    fig.suptitle("state_reopen candidates: soak at a 0.5 s block and trigger (local[2], 2 cores)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks.checkpoint_remedies",
                                     formatter_class=argparse.RawDescriptionHelpFormatter, description=__doc__)
    parser.add_argument("--run", action="append", required=True, metavar="NAME=JSON",
                        help="a soak's results file (what it wrote with --json), under a name (repeatable)")
    parser.add_argument("--job-log", action="append", default=[], metavar="NAME=LOG",
                        help="that run's job log (its work folder's logs/job.1.log), for batch seconds (repeatable)")
    parser.add_argument("--warmup-minutes", type=float, default=5.0, metavar="M", help="left out of the fits (5)")
    parser.add_argument("--json", type=Path, default=None,
                        help="results file (default: benchmarks/results/checkpoint_remedies.json)")
    parser.add_argument("--png", type=Path, default=REPO_ROOT / "docs" / "img" / "checkpoint_remedies.png")
    args = parser.parse_args(argv)
    runs: dict[str, dict[str, Any]] = {}
    produced_by: dict[str, dict[str, str]] = {}
    for item in args.run:
        name, _, file = item.partition("=")
        loaded = json.loads(Path(file).read_text())
        runs[name] = loaded["figures"]
        produced_by[name] = {key: loaded[key] for key in ("command", "commit", "build", "date")}
    out = {name: {**summary(result, args.warmup_minutes), "soak": produced_by[name]} for name, result in runs.items()}
    for item in args.job_log:
        name, _, file = item.partition("=")
        out[name]["batch_seconds"] = batch_seconds(Path(file))
    write_result("checkpoint_remedies", {"runs": out, "samples": {n: r["samples"] for n, r in runs.items()}},
                 module="benchmarks.checkpoint_remedies", argv=argv, path=args.json)
    plot(runs, args.png)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
