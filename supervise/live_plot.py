"""The live demo's picture: block-to-update latency and each subscriber's proof bytes over the relay block number
(``pubsub demo --live`` and benchmarks/latency_bench.py draw it from a live run's snapshot)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

__all__ = ["plot_latency_and_pov"]


def plot_latency_and_pov(snapshot: Any, path: Path, block_time: float, steady: int, title: str) -> Path:
    """A PNG with two panels over the relay block number: each update's block-to-update latency (dots) and the
    per-block median, against one block time; and each subscriber's proof bytes with the pub-sub budget."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = snapshot.blocks
    per_block: dict[int, list[float]] = defaultdict(list)
    for number, millis in snapshot.updates:
        if number in written:
            per_block[number].append((millis - written[number]) / 1000)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    xs = [n for n in sorted(per_block) for _ in per_block[n]]
    ys = [v for n in sorted(per_block) for v in per_block[n]]
    top.scatter(xs, ys, s=6, alpha=0.4, label="an update")
    medians = sorted(per_block)
    top.plot(medians, [statistics.median(per_block[n]) for n in medians], color="C1", label="median per block")
    top.axhline(block_time, color="grey", linestyle="--", label=f"one block time ({block_time:g} s)")
    if steady > min(written, default=steady):
        top.axvspan(min(written) - 0.5, steady - 0.5, color="grey", alpha=0.15, label="Spark starting (set-up only)")
    top.set_ylabel("block -> update (s)")
    top.set_title(title)
    top.legend(loc="upper right", fontsize=8)
    by_subscriber: dict[int, list[tuple[int, int]]] = defaultdict(list)
    budgets = {}
    for (number, subscriber), pov in sorted(snapshot.pov.items()):
        by_subscriber[subscriber].append((number, pov.proof_bytes))
        budgets[number] = pov.budget
    for subscriber, points in sorted(by_subscriber.items()):
        bottom.plot([n for n, _ in points], [b for _, b in points], marker=".", label=f"subscriber {subscriber}")
    bottom.set_ylabel("proof bytes (PoV)")
    bottom.set_xlabel("relay block number")
    bottom.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
