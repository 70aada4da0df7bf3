"""What the job's driver pays to follow a query's progress, per poll: pyspark's ``recentProgress`` against
``streaming.job.new_progress``.

`pubsub job` polls each query's progress twice a second to report every batch. ``recentProgress`` fetches and parses
every entry Spark keeps (``spark.sql.streaming.numRecentProgressUpdates``, 100 by default) over py4j at each call, so
once a query has run that many batches each poll costs as much as 100 entries; ``new_progress`` reads the newest
entry and goes back to the full list only when more than one batch is new. This runs a stateful query (rate source,
a count per key in RocksDB, the no-op sink: an entry with state-store metrics, as the job's are) on the project's
local Spark session for more than ``--entries`` batches (Spark then keeps that many entries, or one fewer), stops
it, and times both ways of polling, interleaved: with nothing new (a running job's usual poll) and with one new
batch (``after`` one batch back).

    .venv/bin/python -m benchmarks.progress_bench              # 100 entries, 50 polls per arm
    .venv/bin/python -m benchmarks.progress_bench --entries 20 --polls 10
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchmarks.common import write_result
from settings.settings import load_settings
from streaming.job import new_progress

TRIGGER = "50 milliseconds"
KEPT_ENTRIES = "spark.sql.streaming.numRecentProgressUpdates"


def stateful_query(spark: Any, name: str, checkpoint: Path) -> Any:
    """A rate source counted per key (state in the session's RocksDB store) into the no-op sink, started."""
    rows = spark.readStream.format("rate").option("rowsPerSecond", 200).load()
    counts = rows.selectExpr("value % 16 AS key").groupBy("key").count()
    return (counts.writeStream.format("noop").outputMode("update").queryName(name)
            .option("checkpointLocation", str(checkpoint)).trigger(processingTime=TRIGGER).start())


def _milliseconds(call: Callable[[], Any]) -> tuple[float, float]:
    """Wall and this process's CPU milliseconds of one call (the rest of its cost is the JVM's)."""
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def measure(spark: Any, entries: int, polls: int, checkpoint: Path, console: Console) -> dict[str, Any]:
    """Run the query for more than ``entries`` batches (Spark then keeps its last ``entries`` entries, or one
    fewer), then time each way of polling ``polls`` times, interleaved round by round."""
    previous = spark.conf.get(KEPT_ENTRIES, None)
    spark.conf.set(KEPT_ENTRIES, str(entries))
    try:
        query = stateful_query(spark, "progress-bench", checkpoint)
        try:
            with console.status(f"running a stateful query until Spark keeps {entries} progress entries"):
                while (query.lastProgress["batchId"] if query.lastProgress else -1) < entries:
                    time.sleep(0.5)
        finally:
            query.stop()
    finally:
        if previous is None:
            spark.conf.unset(KEPT_ENTRIES)
        else:
            spark.conf.set(KEPT_ENTRIES, previous)
    kept = query.recentProgress
    newest = int(kept[-1]["batchId"])
    arms: dict[str, Callable[[], Any]] = {
        "recentProgress": lambda: query.recentProgress,
        "new_progress, nothing new": lambda: new_progress(query, newest),
        "new_progress, one new batch": lambda: new_progress(query, newest - 1),
    }
    times: dict[str, list[tuple[float, float]]] = {arm: [] for arm in arms}
    for _ in range(polls):
        for arm, call in arms.items():
            times[arm].append(_milliseconds(call))
    return {
        "entries": len(kept),
        "entry_json_bytes": round(statistics.mean(len(progress.json) for progress in kept)),
        "polls": polls,
        "ms_per_poll": {arm: round(statistics.median(w for w, _ in values), 3) for arm, values in times.items()},
        "ms_range": {arm: [round(min(w for w, _ in values), 3), round(max(w for w, _ in values), 3)]
                     for arm, values in times.items()},
        "python_cpu_ms_per_poll": {arm: round(statistics.median(c for _, c in values), 3)
                                   for arm, values in times.items()},
    }


def table(results: dict[str, Any]) -> Table:
    """The results as a table: per way, the median wall and driver CPU milliseconds of a poll."""
    out = Table(title=f"one poll of a query's progress, {results['entries']} entries kept "
                      f"(about {results['entry_json_bytes']:,} bytes of JSON each), median of {results['polls']}")
    out.add_column("way")
    out.add_column("ms per poll", justify="right")
    out.add_column("range", justify="right")
    out.add_column("driver CPU ms", justify="right")
    out.add_column("recentProgress / this", justify="right")
    full = results["ms_per_poll"]["recentProgress"]
    for arm, ms in results["ms_per_poll"].items():
        low, high = results["ms_range"][arm]
        cpu = results["python_cpu_ms_per_poll"][arm]
        out.add_row(arm, f"{ms:.2f}", f"{low:.2f}-{high:.2f}", f"{cpu:.2f}", f"{full / ms:.0f}x" if ms else "-")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.progress_bench",
                                     description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--entries", type=int, default=100, help="progress entries Spark keeps (default 100)")
    parser.add_argument("--polls", type=int, default=50, help="timed polls per way (default 50)")
    parser.add_argument("--out", type=Path, default=None,
                        help="results file (default benchmarks/results/progress.json)")
    args = parser.parse_args(argv)
    from streaming.spark_session import build_spark

    console = Console()
    spark = build_spark(load_settings(environ={}), app_name="progress-bench")
    try:
        with tempfile.TemporaryDirectory(prefix="progress-bench-") as checkpoint:
            results = measure(spark, args.entries, args.polls, Path(checkpoint), console)
    finally:
        spark.stop()
    console.print(table(results))
    print(f"wrote {write_result('progress', results, module='benchmarks.progress_bench', argv=argv, path=args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
