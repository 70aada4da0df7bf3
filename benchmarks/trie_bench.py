"""Trie engine benchmark: pubsub_core.trie against py-trie's HexaryTrie on the same keys and values.

Workloads, per size (entries with 32-byte keys and values of 32 to 2048 bytes):
  build    insert every entry into an empty trie, then take the root
  update   blocks that each change 1% of the keys (one batch per block for us, one set() per key for py-trie)
  prove    generate a proof of one key, for a sample of keys
  verify   read that key back from its proof against the root
plus, for our trie over the paged StateNodeStore on a call-counting MemoryBackend, the backend calls and
bytes per update block (the cost model of Spark state, where each call is a ~80 us round trip), and the
peak traced memory of each build.

Run from the repository root (writes benchmarks/results/trie.json and docs/img/trie_bench.png; the table in
docs/benchmarks.md comes from ``python -m benchmarks.render trie``):
    .venv/bin/python -m benchmarks.trie_bench --sizes 10000 100000
"""

from __future__ import annotations

import argparse
import gc
import random
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from rich.progress import Progress
from trie import HexaryTrie

from benchmarks.common import read_result, save_plot, write_result
from benchmarks.render import RENDERERS
from pubsub_core.trie import StateNodeStore, Trie, read_proof
from state import MemoryBackend, StateTransaction


ROOT = Path(__file__).resolve().parents[1]
PLOT = ROOT / "docs" / "img" / "trie_bench.png"


@dataclass
class Workload:
    """The same data for both tries: entries, update blocks (1% of keys each), and keys to prove."""

    size: int
    entries: dict[bytes, bytes]
    blocks: list[dict[bytes, bytes]]
    proof_keys: list[bytes]


def make_workload(size: int, blocks: int, proofs: int, seed: int) -> Workload:
    rnd = random.Random(seed)
    keys = [rnd.randbytes(32) for _ in range(size)]
    entries = {key: rnd.randbytes(rnd.randint(32, 2048)) for key in keys}
    per_block = max(1, size // 100)
    updates = [{key: rnd.randbytes(rnd.randint(32, 2048)) for key in rnd.sample(keys, per_block)} for _ in range(blocks)]
    return Workload(size, entries, updates, rnd.sample(keys, min(proofs, size)))


@dataclass
class Figures:
    """Microseconds per operation for one implementation at one size, plus proof size and peak memory."""

    build_us: float = 0.0
    update_us: float = 0.0
    prove_us: float = 0.0
    verify_us: float = 0.0
    proof_bytes: float = 0.0
    build_peak_mb: float = 0.0


@dataclass
class StoreFigures:
    """Our trie over StateNodeStore + MemoryBackend: cost per update block."""

    update_us: float = 0.0
    read_calls: float = 0.0
    write_calls: float = 0.0
    store_calls: float = 0.0
    kib_read: float = 0.0
    kib_written: float = 0.0
    build_read_calls: int = 0
    build_write_calls: int = 0


@dataclass
class SizeResult:
    size: int
    ours: Figures = field(default_factory=Figures)
    pytrie: Figures = field(default_factory=Figures)
    store: StoreFigures = field(default_factory=StoreFigures)


_clock = time.process_time
"""CPU time of this process: the machine is shared, and wall-clock time would charge other jobs to us."""


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    start = _clock()
    result = fn()
    return _clock() - start, result


def _peak_mb(fn: Callable[[], Any]) -> float:
    gc.collect()
    tracemalloc.start()
    kept = fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    return peak / 2**20


def _build_ours(w: Workload) -> Trie:
    trie = Trie()
    trie.apply(w.entries)
    return trie


def _build_pytrie(w: Workload) -> HexaryTrie:
    trie = HexaryTrie({})
    for key, value in w.entries.items():
        trie.set(key, value)
    return trie


def bench_pair(w: Workload, progress: Progress, task: Any, with_pytrie: bool) -> tuple[Figures, Figures]:
    """Both tries on the same workload, interleaved (block by block, key by key) so both see the same load."""
    ours, theirs = Figures(), Figures()
    seconds, built = _timed(lambda: _build_ours(w))
    ours.build_us = seconds / w.size * 1e6
    hexary = None
    if with_pytrie:
        seconds, hexary = _timed(lambda: _build_pytrie(w))
        theirs.build_us = seconds / w.size * 1e6
    progress.advance(task)
    updated = sum(len(b) for b in w.blocks)
    for block in w.blocks:
        seconds, _ = _timed(partial(built.apply, block))
        ours.update_us += seconds / updated * 1e6
        if hexary is not None:
            target = hexary

            def apply_block() -> None:
                for key, value in block.items():
                    target.set(key, value)

            seconds, _ = _timed(apply_block)
            theirs.update_us += seconds / updated * 1e6
    progress.advance(task)
    root = built.root
    count = len(w.proof_keys)
    proof_bytes = 0
    for key in w.proof_keys:
        start = _clock()
        proof = built.prove([key])
        middle = _clock()
        if read_proof(root, proof, [key])[key] is None:
            raise AssertionError("a proof of a present key read as absent")
        end = _clock()
        ours.prove_us += (middle - start) / count * 1e6
        ours.verify_us += (end - middle) / count * 1e6
        proof_bytes += sum(len(n) for n in proof)
        if hexary is not None:
            start = _clock()
            hex_proof = hexary.get_proof(key)
            middle = _clock()
            if not HexaryTrie.get_from_proof(hexary.root_hash, key, hex_proof):
                raise AssertionError("py-trie proof of a present key read as absent")
            end = _clock()
            theirs.prove_us += (middle - start) / count * 1e6
            theirs.verify_us += (end - middle) / count * 1e6
    ours.proof_bytes = proof_bytes / count
    progress.advance(task)
    del built, hexary
    ours.build_peak_mb = _peak_mb(lambda: _build_ours(w))
    if with_pytrie:
        theirs.build_peak_mb = _peak_mb(lambda: _build_pytrie(w))
    progress.advance(task)
    return ours, theirs


def bench_state_store(w: Workload, progress: Progress, task: Any) -> StoreFigures:
    out = StoreFigures()
    backend = MemoryBackend()
    txn = StateTransaction(backend)
    Trie(StateNodeStore(txn, "trie")).apply(w.entries)
    txn.commit()
    out.build_read_calls, out.build_write_calls = backend.stats.read_calls, backend.stats.write_calls
    total = 0.0
    reads = writes = store_calls = bytes_read = bytes_written = 0
    for block in w.blocks:
        before = (backend.stats.read_calls, backend.stats.write_calls, backend.stats.bytes_read, backend.stats.bytes_written)
        start = _clock()
        txn = StateTransaction(backend)
        store = StateNodeStore(txn, "trie")
        Trie(store).apply(block)
        txn.commit()
        total += _clock() - start
        reads += backend.stats.read_calls - before[0]
        writes += backend.stats.write_calls - before[1]
        bytes_read += backend.stats.bytes_read - before[2]
        bytes_written += backend.stats.bytes_written - before[3]
        store_calls += store.stats.calls
    n = len(w.blocks)
    out.update_us = total / sum(len(b) for b in w.blocks) * 1e6
    out.read_calls, out.write_calls, out.store_calls = reads / n, writes / n, store_calls / n
    out.kib_read, out.kib_written = bytes_read / n / 1024, bytes_written / n / 1024
    progress.advance(task)
    return out


def run(sizes: list[int], blocks: int, proofs: int, seed: int, skip_pytrie: bool) -> list[SizeResult]:
    results = []
    with Progress() as progress:
        for size in sizes:
            task = progress.add_task(f"{size:>7} entries", total=5)
            w = make_workload(size, blocks, proofs, seed)
            result = SizeResult(size)
            result.ours, result.pytrie = bench_pair(w, progress, task, not skip_pytrie)
            result.store = bench_state_store(w, progress, task)
            results.append(result)
    return results


def plot(results: list[SizeResult]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ops = ["build_us", "update_us", "prove_us", "verify_us"]
    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 4), squeeze=False)
    for ax, r in zip(axes[0], results):
        xs = range(len(ops))
        ax.bar([x - 0.2 for x in xs], [getattr(r.ours, o) for o in ops], 0.4, label="pubsub_core.trie")
        ax.bar([x + 0.2 for x in xs], [getattr(r.pytrie, o) for o in ops], 0.4, label="py-trie HexaryTrie")
        ax.set_xticks(list(xs), [o.removesuffix("_us") for o in ops])
        ax.set_yscale("log")
        ax.set_ylabel("microseconds per operation (log)")
        ax.set_title(f"{r.size:,} entries")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=2, fontsize="small")
    save_plot(fig, PLOT)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument("--blocks", type=int, default=5, help="update blocks per size (1%% of keys each)")
    parser.add_argument("--proofs", type=int, default=1000, help="keys proven and verified per size")
    parser.add_argument("--seed", type=int, default=160)
    parser.add_argument("--skip-pytrie", action="store_true", help="only our trie (no comparison, no plot)")
    parser.add_argument("--json", type=Path, default=None,
                        help="where the results go (default: benchmarks/results/trie.json)")
    args = parser.parse_args(argv)
    from state.native import build_name

    results = run(args.sizes, args.blocks, args.proofs, args.seed, args.skip_pytrie)
    figures = [{**asdict(r), "build": build_name()} for r in results]
    path = write_result("trie", figures, module="benchmarks.trie_bench", argv=argv, path=args.json)
    print(RENDERERS["trie"](read_result("trie", path)))
    print(f"wrote {path}")
    if not args.skip_pytrie and args.json is None:  # a run written elsewhere leaves the docs' plot alone
        plot(results)


if __name__ == "__main__":
    main()
