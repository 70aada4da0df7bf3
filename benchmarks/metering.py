"""PoV metering of pub-sub proofs on a steady workload: with the cache, without it, and the lower bound.

Run from the repository root:

    .venv/bin/python -m benchmarks.metering            # writes benchmarks/results/metering.json, docs/img/metering.png
    .venv/bin/python -m benchmarks.metering --seam     # the relay-view seam: benchmarks/results/seam.json
    .venv/bin/python -m benchmarks.render metering seam   # their tables in docs/benchmarks.md

Per relay block, in the same run and on the same relay state:
- with cache: the proof ``collate`` builds (Prune) and Verify accepts, plus what Verify read from the
  subscriber's own storage (CachedTrieNodes, key states, roots), which the PoV also carries;
- without cache: full paths every block, i.e. the StorageProof of every subscribed key (``RelayTries.prove``);
- lower bound: the nodes of that full proof that were not in the previous block's full proof: only what
  changed on subscribed paths (main-trie path, changed child nodes, changed values).

``--seam`` measures the Stage R -> Stage S relay views on the same workload instead: full views (every
subscribed key's proof) against delta views (what changed since the subscriber's previous view), in proof
bytes and JSON record bytes, and Stage S's step time on each.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from benchmarks.common import read_result, save_plot, write_result
from benchmarks.render import RENDERERS
from pubsub_core.codec.types import PublishedEntry, SubscribedKey
from pubsub_core.hashing import blake2_256
from pubsub_core.subscriber import (
    BlockContext,
    ProcessingResult,
    SubscriberConfig,
    Subscriptions,
    collate,
    process_relay_proof,
    pubsub_budget,
)
from pubsub_core.relay import canonical_json
from pubsub_core.stages import RelayView, SubscriberStage
from pubsub_core.stages.config import Seam
from pubsub_core.stages.relay_stage import proof_delta
from pubsub_core.subscriber import set_subscriptions
from pubsub_core.trie import RelayTries
from state import MemoryBackend, StateTransaction


ROOT = Path(__file__).resolve().parent.parent
PLOT = ROOT / "docs" / "img" / "metering.png"
SWEEP_RATES = (0.001, 0.003, 0.01, 0.03)
SWEEP_BLOCKS = 10


@dataclass(frozen=True)
class Workload:
    publishers: tuple[int, ...] = (1000, 1001, 2000, 3000)
    keys_per_publisher: int = 10_000
    updated_per_block: float = 0.01
    subscribed_keys: int = 100
    blocks: int = 30
    warmup: int = 2
    max_pov: int = 5_000_000
    seed: int = 160


@dataclass(frozen=True)
class BlockRow:
    number: int
    with_cache: int
    with_cache_pov: int
    without_cache: int
    lower_bound: int
    cache_hits: int
    keys_unchanged: int
    deliveries: int
    complete: bool


def published_key(para: int, index: int) -> bytes:
    return blake2_256(b"%d/%d" % (para, index))


def _workload(work: Workload) -> tuple[random.Random, RelayTries, Subscriptions, dict[int, list[bytes]]]:
    """The seeded relay state, the subscriptions and the child keys they prove (``run`` and ``run_seam``)."""
    rng = random.Random(work.seed)
    relay = RelayTries()
    relay.set_main({b":code": b"\x00" * 64, b":heappages": b"\x08" * 8})
    for para in work.publishers:
        relay.apply(
            child_changes={
                para: {
                    published_key(para, i): PublishedEntry(rng.randbytes(rng.randint(16, 64)), 0, 0).encode()
                    for i in range(work.keys_per_publisher)
                }
            }
        )
    subscribed = {para: sorted(rng.sample(range(work.keys_per_publisher), work.subscribed_keys)) for para in work.publishers}
    subs = Subscriptions.of(
        {para: [SubscribedKey(published_key(para, i)) for i in idx] for para, idx in subscribed.items()}
    )
    child_keys = {para: [published_key(para, i) for i in idx] for para, idx in subscribed.items()}
    return rng, relay, subs, child_keys


def _advance(work: Workload, rng: random.Random, relay: RelayTries, number: int) -> None:
    """Block ``number``'s updates (none in block 1)."""
    updates = max(1, int(work.keys_per_publisher * work.updated_per_block))
    if number > 1:
        relay.apply(
            child_changes={
                para: {
                    published_key(para, i): PublishedEntry(rng.randbytes(rng.randint(16, 64)), 0, number).encode()
                    for i in rng.sample(range(work.keys_per_publisher), updates)
                }
                for para in work.publishers
            }
        )


def run(work: Workload) -> list[BlockRow]:
    rng, relay, subs, child_keys = _workload(work)
    config = SubscriberConfig()
    backend = MemoryBackend()
    rows: list[BlockRow] = []
    previous_full: set[bytes] = set()
    for number in range(1, work.warmup + work.blocks + 1):
        _advance(work, rng, relay, number)
        full = set(relay.prove(child_keys=child_keys))
        ctx = BlockContext(
            4000, number, blake2_256(number.to_bytes(8, "little")), relay.relay_root,
            pubsub_budget(work.max_pov, [], [], config),
        )
        proof = collate(relay, backend, ctx, subs, config)
        txn = StateTransaction(backend)
        outcome = process_relay_proof(txn, proof, ctx, subs, config)
        txn.commit()
        if number > work.warmup:
            pov = outcome.pov
            rows.append(
                BlockRow(
                    number=number,
                    with_cache=proof.size,
                    with_cache_pov=pov.consumed_proof_size,
                    without_cache=sum(len(node) for node in full),
                    lower_bound=sum(len(node) for node in full - previous_full),
                    cache_hits=pov.cache_hits,
                    keys_unchanged=pov.keys_unchanged,
                    deliveries=pov.deliveries,
                    complete=outcome.result is ProcessingResult.COMPLETE,
                )
            )
        previous_full = full
    return rows


@dataclass(frozen=True)
class SeamRow:
    """One block of the Stage R -> Stage S seam for one subscriber: proof-node bytes and JSON record bytes of
    a full view and of a delta view, the changed nodes (P_n minus P_{n-1}, computed apart), and Stage S's CPU
    seconds per step (full: the checking mode, two-pass; delta: one pass over its mirror)."""

    number: int
    full_nodes: int
    full_bytes: int
    delta_nodes: int
    delta_bytes: int
    changed_bytes: int
    full_record: int
    delta_record: int
    full_step_cpu: float
    delta_step_cpu: float


def run_seam(work: Workload) -> list[SeamRow]:
    """The relay views Stage R sends one subscriber of the metering workload, under both seams, and Stage S's
    step on each (two SubscriberStages with the workload's subscriptions); both give the same outputs."""
    rng, relay, subs, child_keys = _workload(work)
    config = SubscriberConfig()
    stages = {seam: SubscriberStage("metering", 4000, config) for seam in Seam}
    for stage in stages.values():
        txn = StateTransaction(stage.backend)
        set_subscriptions(txn, dict(subs.entries), config)
        txn.commit()
    rows: list[SeamRow] = []
    previous: list[bytes] = []
    previous_hashes: set[bytes] = set()
    for number in range(1, work.warmup + work.blocks + 1):
        _advance(work, rng, relay, number)
        proof = relay.prove(child_keys=child_keys)
        hashes = [blake2_256(node) for node in proof]
        first = number == 1
        delta = tuple(proof) if first else proof_delta(proof, hashes, previous_hashes)
        changed = set(proof) - set(previous)
        views = {
            seam: RelayView("metering", 4000, number, blake2_256(number.to_bytes(8, "little")), relay.relay_root,
                            work.max_pov, (), (), nodes, (), None if first else number - 1, full)
            for seam, nodes, full in ((Seam.FULL, tuple(proof), True), (Seam.DELTA, delta, first))
        }
        outputs, cpu = {}, {}
        for seam, view in views.items():
            started = time.process_time()
            outputs[seam] = [o.to_line() for o in stages[seam].step(view)]
            cpu[seam] = time.process_time() - started
        if outputs[Seam.FULL] != outputs[Seam.DELTA]:
            raise SystemExit(f"block {number}: the delta seam changed Stage S's outputs")
        if number > work.warmup:
            rows.append(SeamRow(
                number, len(proof), sum(map(len, proof)), len(delta), sum(map(len, delta)),
                sum(map(len, changed)),
                len(canonical_json(views[Seam.FULL].to_json())), len(canonical_json(views[Seam.DELTA].to_json())),
                cpu[Seam.FULL], cpu[Seam.DELTA],
            ))
        previous, previous_hashes = proof, set(hashes)
    return rows


def seam_summary(rows: list[SeamRow]) -> dict[str, float]:
    """Per-block means of the seam rows (full against delta views), as the ``seam`` result stores them."""
    return {name: statistics.fmean(getattr(row, name) for row in rows) for name in SeamRow.__dataclass_fields__}


def summarize(rows: list[BlockRow]) -> dict[str, float]:
    mean = {
        name: statistics.fmean(getattr(row, name) for row in rows)
        for name in ("with_cache", "with_cache_pov", "without_cache", "lower_bound", "deliveries", "keys_unchanged")
    }
    return {
        **mean,
        "saving_vs_no_cache": 1 - mean["with_cache"] / mean["without_cache"],
        "ratio_to_lower_bound": mean["with_cache"] / mean["lower_bound"],
        "pov_saving_vs_no_cache": 1 - mean["with_cache_pov"] / mean["without_cache"],
        "pov_ratio_to_lower_bound": mean["with_cache_pov"] / mean["lower_bound"],
        "all_complete": float(all(row.complete for row in rows)),
    }


def plot(rows: list[BlockRow], sweep: list[tuple[float, dict[str, float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    numbers = [row.number for row in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8))
    left.plot(numbers, [row.without_cache / 1000 for row in rows], label="without cache (full paths)")
    left.plot(numbers, [row.with_cache_pov / 1000 for row in rows], label="with cache: proof + subscriber reads")
    left.plot(numbers, [row.with_cache / 1000 for row in rows], label="with cache: relay proof")
    left.plot(numbers, [row.lower_bound / 1000 for row in rows], ":", color="black", label="lower bound")
    left.set_xlabel("relay block")
    left.set_ylabel("kB per block")
    left.set_ylim(bottom=0)
    left.set_title("1% of 10k keys updated per block, 4 publishers, 100 subscribed keys each", fontsize=9)
    left.legend(fontsize=8)
    left.grid(alpha=0.3)
    rates = [rate * 100 for rate, _ in sweep]
    for name, label, style in (
        ("without_cache", "without cache", "o-"),
        ("with_cache_pov", "with cache: proof + subscriber reads", "s-"),
        ("with_cache", "with cache: relay proof", "^-"),
        ("lower_bound", "lower bound", "x:"),
    ):
        right.plot(rates, [s[name] / 1000 for _, s in sweep], style, label=label)
    right.set_xscale("log")
    right.set_xlabel("keys updated per block (% of the publisher's keys)")
    right.set_ylabel("mean kB per block")
    right.set_title("update-rate sweep", fontsize=9)
    right.legend(fontsize=8)
    right.grid(alpha=0.3)
    save_plot(fig, path, dpi=110)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=Workload.blocks,
                        help=f"measured blocks after the warm-up (default: {Workload.blocks})")
    parser.add_argument("--keys", type=int, default=Workload.keys_per_publisher,
                        help=f"keys per publisher (default: {Workload.keys_per_publisher:,})")
    parser.add_argument("--seam", action="store_true",
                        help="measure the Stage R -> Stage S relay views instead (full vs delta): results/seam.json")
    parser.add_argument("--json", type=Path, default=None,
                        help="where the results go (default: benchmarks/results/metering.json, or seam.json)")
    args = parser.parse_args(argv)
    work = Workload(blocks=args.blocks, keys_per_publisher=args.keys)
    name = "seam" if args.seam else "metering"
    if args.seam:
        figures: dict[str, object] = {"workload": asdict(work), "summary": seam_summary(run_seam(work))}
    else:
        started = time.perf_counter()
        rows = run(work)
        summary = summarize(rows)
        sweep = []
        for rate in SWEEP_RATES:
            sweep_work = replace(work, updated_per_block=rate, blocks=SWEEP_BLOCKS)
            sweep.append((rate, summarize(run(sweep_work))))
        summary["seconds"] = time.perf_counter() - started
        if args.json is None:  # a run written elsewhere leaves the docs' plot alone
            plot(rows, sweep, PLOT)
        figures = {"workload": asdict(work), "summary": summary,
                   "sweep": [{"updated_per_block": rate, **s} for rate, s in sweep],
                   "blocks": [asdict(row) for row in rows]}
    path = write_result(name, figures, module="benchmarks.metering", argv=argv, path=args.json)
    print(RENDERERS[name](read_result(name, path)))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
