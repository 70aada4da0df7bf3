"""State layer read/write paths: StateTransaction get/put/atomic patterns over a MemoryBackend, in
operations per CPU second, for this checkout and optionally a baseline tree measured in the same run.

The patterns are the shapes the simulator profile shows (1.1 M get/put calls, 116 k atomic sections a run):

- ``get-written``: reads of keys the transaction wrote (an overlay hit);
- ``get-loaded``: reads of keys prefetched from the backend (a working-set hit);
- ``get-miss``: first reads of keys, one backend call each (half of them absent);
- ``prefetch``: batches of 32 keys, then a get of each;
- ``pallet-call``: a pallet call, ``atomic()`` around 3 gets and 2 puts, one in 20 failing;
- ``nested``: an atomic section inside one, 2 puts in each;
- ``put-top``: puts outside any section;
- ``commit``: transactions of 100 prefetched keys, 20 writes (10 restoring the loaded value, 5 deletes), then
  ``commit`` (``pending_changes`` and one ``write_many``); counted in keys written.

Each tree runs in a fresh process (``PYTHONPATH`` set to the tree); runs alternate baseline, ours, ...; the best
of the runs per side is kept and the ratio baseline/ours is quoted (CPU via ``time.process_time``).

    .venv/bin/python -m benchmarks.state_bench                         # this checkout: benchmarks/results/state.json
    .venv/bin/python -m benchmarks.state_bench --baseline /tmp/h4-base # and a baseline tree, interleaved
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
N = 20_000


class _Fail(Exception):
    """The failing pallet call of the pallet-call pattern."""


def _patterns(n: int = N) -> dict[str, Callable[[], int]]:
    """Each pattern builds its state over ``n`` keys, times its operations and returns how many it ran."""
    from state import MemoryBackend, StateTransaction

    keys = [i.to_bytes(4, "big") for i in range(n)]
    seeded = MemoryBackend()
    seeded.write_many({"ns": {key: b"v" * 32 for key in keys[::2]}})

    def get_written() -> int:
        txn = StateTransaction(MemoryBackend())
        for key in keys:
            txn.put("ns", key, b"v")
        start = time.process_time()
        for _ in range(5):
            for key in keys:
                txn.get("ns", key)
        return _timed(start, 5 * n)

    def get_loaded() -> int:
        txn = StateTransaction(seeded)
        txn.prefetch("ns", keys)
        start = time.process_time()
        for _ in range(5):
            for key in keys:
                txn.get("ns", key)
        return _timed(start, 5 * n)

    def get_miss() -> int:
        txn = StateTransaction(seeded)
        start = time.process_time()
        for key in keys:
            txn.get("ns", key)
        return _timed(start, n)

    def prefetch() -> int:
        txn = StateTransaction(seeded)
        start = time.process_time()
        for i in range(0, n, 32):
            batch = keys[i:i + 32]
            txn.prefetch("ns", batch)
            for key in batch:
                txn.get("ns", key)
        return _timed(start, n)

    def pallet_call() -> int:
        txn = StateTransaction(seeded)
        txn.prefetch("ns", keys)
        start = time.process_time()
        for i in range(n):
            try:
                with txn.atomic():
                    txn.get("ns", keys[i])
                    txn.get("ns", keys[i - 1])
                    txn.get("other", keys[i])
                    txn.put("ns", keys[i], b"w")
                    txn.put("other", keys[i], b"w")
                    if i % 20 == 0:
                        raise _Fail
            except _Fail:
                pass
        return _timed(start, n)

    def nested() -> int:
        txn = StateTransaction(MemoryBackend())
        start = time.process_time()
        for i in range(n):
            with txn.atomic():
                txn.put("ns", keys[i], b"a")
                with txn.atomic():
                    txn.put("ns", keys[i - 1], b"b")
                    txn.put("ns2", keys[i], b"b")
                txn.put("ns2", keys[i - 1], b"a")
        return _timed(start, n)

    def put_top() -> int:
        txn = StateTransaction(MemoryBackend())
        start = time.process_time()
        for _ in range(5):
            for key in keys:
                txn.put("ns", key, b"v")
        return _timed(start, 5 * n)

    def commit() -> int:
        backend = MemoryBackend()
        backend.write_many({"ns": {key: b"v" * 32 for key in keys}})
        elapsed = 0.0
        for i in range(0, n, 100):
            batch = keys[i:i + 100]
            txn = StateTransaction(backend)
            txn.prefetch("ns", batch)
            start = time.process_time()
            for key in batch[:10]:
                txn.put("ns", key, b"v" * 32)  # restores the loaded value: dropped from the changes
            for key in batch[10:15]:
                txn.put("ns", key, b"w" * 32)
            for key in batch[15:20]:
                txn.delete("ns", key)
            txn.commit()
            elapsed += time.process_time() - start
        _elapsed.append(elapsed)
        return 20 * len(range(0, n, 100))

    return {"get-written": get_written, "get-loaded": get_loaded, "get-miss": get_miss, "prefetch": prefetch,
            "pallet-call": pallet_call, "nested": nested, "put-top": put_top, "commit": commit}


_elapsed: list[float] = []


def _timed(start: float, ops: int) -> int:
    _elapsed.append(time.process_time() - start)
    return ops


def worker(n: int = N) -> None:
    """Run every pattern once in this process; print {pattern: ops per CPU second} as JSON."""
    import state

    rates: dict[str, float | str] = {"state": state.__file__ or ""}
    for name, pattern in _patterns(n).items():
        ops = pattern()
        rates[name] = ops / max(_elapsed[-1], 1e-9)
    print(json.dumps(rates))


def run_tree(tree: Path) -> dict[str, float]:
    """One process running this file's patterns on ``tree``'s ``state`` package (checked by its path)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker"], cwd=tree, env=env,
                          capture_output=True, text=True, check=True)
    rates = json.loads(done.stdout.strip().splitlines()[-1])
    imported = Path(rates.pop("state")).resolve()
    if not imported.is_relative_to(tree.resolve()):
        raise RuntimeError(f"the worker for {tree} imported state from {imported}")
    return {name: float(rate) for name, rate in rates.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="a source tree to measure in the same run (interleaved)")
    parser.add_argument("--json", type=Path, default=None,
                        help="where the results go (default: benchmarks/results/state.json)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker()
        return 0
    from benchmarks.common import read_result, write_result  # not in the worker: it runs on any tree
    from benchmarks.render import RENDERERS

    sides = ([("baseline", args.baseline.resolve())] if args.baseline else []) + [("ours", ROOT)]
    best: dict[str, dict[str, float]] = {side: {} for side, _ in sides}
    for _ in range(args.runs):
        for side, tree in sides:
            for name, rate in run_tree(tree).items():
                best[side][name] = max(rate, best[side].get(name, 0.0))
    figures = {"runs": args.runs, "ops_per_cpu_second": best}
    path = write_result("state", figures, module="benchmarks.state_bench", argv=argv, path=args.json)
    print(RENDERERS["state"](read_result("state", path)))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
