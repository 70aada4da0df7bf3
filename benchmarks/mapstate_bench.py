"""MapState benchmark: what one call of transformWithState's Python MapState costs, and how fast large values move.

Why: the job stores each state namespace as pages, MapState values of encoded bytes, and packs small namespaces
into bundles (``state.spark``). How big a page or a bundle should be depends on two facts of the real Spark
session: the fixed cost of one ``getValue`` / ``updateValue`` (a protobuf message to the JVM's state server and
back, the value pickled on the way) and the rate at which value bytes move. This measures both in the session the
job uses (``streaming.spark_session.build_spark``: local[2], RocksDB state store with changelog checkpointing),
in ``transformWithStateInPandas`` with the job's state variable and schemas.

Run from the repository root (under a minute on 2 cores: the session, then about 10 s a run):

    .venv/bin/python -m benchmarks.mapstate_bench              # 3 runs after a warm-up one; writes the JSON results
    .venv/bin/python -m benchmarks.mapstate_bench --runs 1 --sizes 4 64
    .venv/bin/python -m benchmarks.mapstate_bench --encoding avro --output benchmarks/results/mapstate-avro.json

What a run is: one streaming query (a fresh checkpoint) over a folder of one-row JSON files, one file per
micro-batch (maxFilesPerTrigger=1, available-now). Each pattern is a grouping key that gets 1 + ``--rewrites``
batches of its own, one after another, so no two patterns share a batch or contend for the 2 cores:

- batch 1 ("write"): ``updateValue`` of every value under a fresh key (insert), then ``getValue`` of each in the
  same batch (a read of an uncommitted value);
- each later batch: ``getValue`` of every value, committed in the batch before (the job's usual read), checked
  against what was written, then ``updateValue`` of a new value under the same key (the job's usual write).

Patterns: "calls", ``--calls`` values of ``--call-bytes`` bytes (the per-call cost), and one per ``--sizes``
(KiB), enough values for ``--total-mib`` MiB but at least ``--min-values`` (the byte rate). Timers run inside
``handleInputRows`` (``time.perf_counter``; ``time.process_time`` for the Python worker's own CPU) around the
calls only. A loop's first call is timed apart and left out of its time per call: a task's first get in a
batch took 6-30 ms and its first update 2-7 ms, nearly all outside the Python worker (0.2-0.5 ms of its CPU),
and a second grouping key in the same task paid neither: a cost of the task, not of a call. From the later
batches it fits time per call = fixed + bytes / rate by least squares on relative error (each point weighs as
much as the others, so the 1 MiB point's noise does not set the fixed cost), per run, and the break-even value
size, fixed x rate: where moving the bytes costs as much as the call. MB = 10^6 bytes. Each figure is the median
of ``--runs`` runs with their range, after ``--warmup`` runs left out: in the session's first query, on a cold
JVM, small calls took up to twice as long.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import struct
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from benchmarks.common import write_result
from state.spark import PAGE_KEY_SCHEMA, PAGE_VALUE_SCHEMA, PAGES_STATE_NAME
from streaming.processors import StatefulProcessor

if TYPE_CHECKING:
    from state.spark import MapStateLike
    from streaming.spark_session import SparkSession

CALLS = "calls"
"""The pattern of many small values: the per-call cost."""
INPUT_SCHEMA = "pattern string, size long, count long, step long, run long"
OUTPUT_SCHEMA = ("run long, pattern string, size long, step long, op string, calls long, seconds double, "
                 "cpu_seconds double, first_seconds double, ok boolean")
OPS = ("insert", "same-batch get", "get", "update")
"""What a batch measures: the write batch inserts and reads back; each later batch reads (committed) and updates."""
QUERY_TIMEOUT_SECONDS = 900
TABLE_WIDTH = 140
"""The console's width at least: a pipe (80 columns to rich) or a narrow terminal would fold every range."""

console = Console(width=max(Console().width, TABLE_WIDTH))


# ----------------------------------------------------------------------------------------------- records
@dataclass(frozen=True)
class Pattern:
    """``count`` values of ``size`` bytes under one grouping key."""

    name: str
    size: int
    count: int


@dataclass(frozen=True)
class Timing:
    """One timed loop of ``calls`` MapState calls in one batch (``step`` 0 is the pattern's write batch)."""

    run: int
    pattern: str
    size: int
    step: int
    op: str
    calls: int
    seconds: float
    cpu_seconds: float
    """The Python worker's CPU over the loop (its share of ``seconds``; the rest is the JVM and the socket)."""
    first_seconds: float
    """The loop's first call alone: for the first get or update of a task in a batch, that task's one-off cost."""
    ok: bool
    """For a get: every value read back is the one written."""

    @property
    def ms_per_call(self) -> float:
        """A call's time once the loop runs: its first call, which may carry the task's first access, left out."""
        return (self.seconds - self.first_seconds) / (self.calls - 1) * 1e3

    @property
    def mb_per_second(self) -> float:
        return self.size / self.ms_per_call / 1e3


@dataclass(frozen=True)
class Spread:
    """The median of a figure over runs, with its range."""

    median: float
    low: float
    high: float

    @staticmethod
    def of(values: Sequence[float]) -> Spread:
        return Spread(statistics.median(values), min(values), max(values))

    def text(self, digits: int) -> str:
        if self.low == self.high:
            return f"{self.median:.{digits}f}"
        return f"{self.median:.{digits}f} ({self.low:.{digits}f}-{self.high:.{digits}f})"


@dataclass(frozen=True)
class Fit:
    """Time per call = ``fixed_seconds`` + bytes / ``bytes_per_second``."""

    fixed_seconds: float
    bytes_per_second: float

    @property
    def break_even_bytes(self) -> float:
        """The value size whose bytes take as long to move as one call's fixed cost."""
        return self.fixed_seconds * self.bytes_per_second

    def seconds(self, calls: float, total_bytes: float) -> float:
        """What ``calls`` calls moving ``total_bytes`` in all cost at this fit."""
        return calls * self.fixed_seconds + total_bytes / self.bytes_per_second


def patterns(calls: int, call_bytes: int, sizes_kib: Sequence[int], total_mib: int, min_values: int) -> list[Pattern]:
    """The calls pattern, then one pattern per size, smallest first."""
    by_size = [Pattern(f"bytes-{kib}KiB", kib * 1024, max(min_values, total_mib * 1024 // kib))
               for kib in sorted(sizes_kib)]
    return [Pattern(CALLS, call_bytes, calls), *by_size]


# ------------------------------------------------------------------------------------- in the Python worker
def payload(index: int, generation: int, size: int) -> bytes:
    """A value that names its key and generation, so a read of the wrong one is caught."""
    return struct.pack(">II", index, generation) + bytes([generation & 0xFF]) * (size - 8)


def timed(call: Callable[[int], Any], count: int) -> tuple[list[Any], float, float, float]:
    """``call(i)`` for i in range(count): (results, wall seconds, this process's CPU seconds, first call's)."""
    results = []
    wall, cpu = time.perf_counter(), time.process_time()
    results.append(call(0))
    first = time.perf_counter() - wall
    for index in range(1, count):
        results.append(call(index))
    return results, time.perf_counter() - wall, time.process_time() - cpu, first


def measure(state: MapStateLike, run: int, pattern: Pattern, step: int) -> list[Timing]:
    """The pattern's batch ``step``: insert and read back (0), or read the committed values and update them."""
    keys = [(pattern.name, index) for index in range(pattern.count)]
    written = [(payload(index, step, pattern.size),) for index in range(pattern.count)]
    expected = written if step == 0 else [(payload(index, step - 1, pattern.size),) for index in range(pattern.count)]

    def update() -> Timing:
        _, wall, cpu, first = timed(lambda i: state.updateValue(keys[i], written[i]), pattern.count)
        return Timing(run, pattern.name, pattern.size, step, "insert" if step == 0 else "update", pattern.count,
                      wall, cpu, first, True)

    def get() -> Timing:
        found, wall, cpu, first = timed(lambda i: state.getValue(keys[i]), pattern.count)
        ok = [None if row is None else (bytes(row[0]),) for row in found] == expected
        return Timing(run, pattern.name, pattern.size, step, "same-batch get" if step == 0 else "get",
                      pattern.count, wall, cpu, first, ok)

    if step == 0:
        return [update(), get()]
    return [get(), update()]


class MapStateProbe(StatefulProcessor):
    """Runs the batch named by its input row against the job's pages MapState (same name and schemas)."""

    def init(self, handle: Any) -> None:
        self.pages = handle.getMapState(PAGES_STATE_NAME, PAGE_KEY_SCHEMA, PAGE_VALUE_SCHEMA)

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        """Per input row (one per batch), a pandas frame of its timings."""
        import pandas as pd

        for frame in rows:
            for row in frame.to_dict("records"):
                pattern = Pattern(str(row["pattern"]), int(row["size"]), int(row["count"]))
                timings = measure(self.pages, int(row["run"]), pattern, int(row["step"]))
                yield pd.DataFrame([dataclasses.asdict(t) for t in timings])

    def close(self) -> None:
        """Nothing to release: the state handle belongs to Spark."""


# -------------------------------------------------------------------------------------------- the driver
def write_batches(source: Path, run: int, chosen: Sequence[Pattern], rewrites: int) -> int:
    """One one-row JSON file per micro-batch, in order (increasing modification times): each pattern's write
    batch, then its rewrites. Returns the number of batches."""
    base = time.time() - 3600  # in the past, well inside the file source's maxFileAge
    batches = [(pattern, step) for pattern in chosen for step in range(1 + rewrites)]
    for number, (pattern, step) in enumerate(batches):
        path = source / f"{number:04d}.json"
        path.write_text(json.dumps({"pattern": pattern.name, "size": pattern.size, "count": pattern.count,
                                    "step": step, "run": run}) + "\n")
        os.utime(path, (base + number, base + number))
    return len(batches)


def run_once(spark: SparkSession, scratch: Path, run: int, chosen: Sequence[Pattern], rewrites: int) -> list[Timing]:
    """One query from a fresh checkpoint over every pattern's batches; the timings it measured."""
    source = scratch / f"in-{run}"
    source.mkdir(parents=True)
    batches = write_batches(source, run, chosen, rewrites)
    frames = spark.readStream.schema(INPUT_SCHEMA).option("maxFilesPerTrigger", 1).json(str(source))
    out = frames.groupBy("pattern").transformWithStateInPandas(
        statefulProcessor=MapStateProbe(), outputStructType=OUTPUT_SCHEMA, outputMode="Update", timeMode="None")
    rows: list[Any] = []
    query = (out.writeStream.foreachBatch(lambda batch, _batch_id: rows.extend(batch.collect()))
             .outputMode("update").option("checkpointLocation", str(scratch / f"checkpoint-{run}"))
             .trigger(availableNow=True).start())
    try:
        query.awaitTermination(timeout=QUERY_TIMEOUT_SECONDS)
        if query.exception() is not None:
            raise RuntimeError(f"run {run} failed: {query.exception()}")
    finally:
        query.stop()
    timings = [Timing(**row.asDict()) for row in rows]
    if len(timings) != 2 * batches:
        raise RuntimeError(f"run {run}: {len(timings)} timings for {batches} batches (two each)")
    return sorted(timings, key=lambda t: ([p.name for p in chosen].index(t.pattern), t.step, OPS.index(t.op)))


# -------------------------------------------------------------------------------------------- summaries
def per_run(timings: Sequence[Timing], pattern: str, op: str, steps: Callable[[int], bool],
            figure: Callable[[Timing], float]) -> list[float]:
    """Each run's mean of ``figure`` over its loops of ``op`` on ``pattern`` in the chosen steps (the loops of a
    pattern have as many calls each, so the mean of per-call figures is the pooled one)."""
    found = []
    for run in sorted({t.run for t in timings}):
        values = [figure(t) for t in timings if t.run == run and t.pattern == pattern and t.op == op and steps(t.step)]
        if values:
            found.append(statistics.fmean(values))
    return found


def ms_per_call(timing: Timing) -> float:
    return timing.ms_per_call


def mb_per_second(timing: Timing) -> float:
    return timing.mb_per_second


def cpu_share(timing: Timing) -> float:
    return timing.cpu_seconds / timing.seconds


def later(step: int) -> bool:
    """The batches after the write: reads of committed values and updates of existing keys."""
    return step > 0


def batch(step: int) -> Callable[[int], bool]:
    """Only the pattern's batch ``step``."""
    return lambda s: s == step


def fit_line(points: Sequence[tuple[int, float]]) -> Fit:
    """Least squares of seconds = a + b * bytes on relative error (weights 1 / seconds^2); rate = 1 / b."""
    weights = [1 / seconds ** 2 for _, seconds in points]
    sw = sum(weights)
    sx = sum(w * size for w, (size, _) in zip(weights, points))
    sy = sum(w * seconds for w, (_, seconds) in zip(weights, points))
    sxx = sum(w * size * size for w, (size, _) in zip(weights, points))
    sxy = sum(w * size * seconds for w, (size, seconds) in zip(weights, points))
    slope = (sw * sxy - sx * sy) / (sw * sxx - sx * sx)
    return Fit((sy - slope * sx) / sw, 1 / slope if slope > 0 else float("inf"))


def fits(timings: Sequence[Timing], chosen: Sequence[Pattern], op: str) -> list[Fit]:
    """One fit per run over every pattern's per-call time of ``op`` in the later batches."""
    found = []
    for run in sorted({t.run for t in timings}):
        own = [t for t in timings if t.run == run]
        points = [(p.size, ms / 1e3) for p in chosen for ms in per_run(own, p.name, op, later, ms_per_call)]
        found.append(fit_line(points))
    return found


def size_text(size: float) -> str:
    return f"{size / 1024:,.0f} KiB" if size >= 1024 else f"{size:,.0f} B"


def main_rows(timings: Sequence[Timing], chosen: Sequence[Pattern]) -> list[list[str]]:
    """Per pattern, the later batches: ms per call and MB/s of get and update, the Python worker's CPU share."""
    rows = []
    for p in chosen:
        def spread(op: str, figure: Callable[[Timing], float]) -> Spread:
            return Spread.of(per_run(timings, p.name, op, later, figure))

        rows.append([size_text(p.size), str(p.count), spread("get", ms_per_call).text(3),
                     spread("update", ms_per_call).text(3), spread("get", mb_per_second).text(1),
                     spread("update", mb_per_second).text(1), f"{spread('get', cpu_share).median:.0%}",
                     f"{spread('update', cpu_share).median:.0%}"])
    return rows


MAIN_HEADER = ["value", "values", "get ms/call", "update ms/call", "get MB/s", "update MB/s", "get Python CPU",
               "update Python CPU"]


def step_header(rewrites: int) -> list[str]:
    columns = ["value", "b1 insert", "b1 same-batch get"]
    for step in range(1, rewrites + 1):
        columns += [f"b{step + 1} get", f"b{step + 1} update"]
    return columns


def step_rows(timings: Sequence[Timing], chosen: Sequence[Pattern], rewrites: int) -> list[list[str]]:
    """Per pattern and batch, ms per call (median of runs): is the write batch, or the first read, different?"""
    rows = []
    for p in chosen:
        cells = [size_text(p.size)]
        for step in range(1 + rewrites):
            for op in (("insert", "same-batch get") if step == 0 else ("get", "update")):
                cells.append(f"{statistics.median(per_run(timings, p.name, op, batch(step), ms_per_call)):.3f}")
        rows.append(cells)
    return rows


def fit_lines(timings: Sequence[Timing], chosen: Sequence[Pattern]) -> list[str]:
    lines = []
    for op in ("get", "update"):
        found = fits(timings, chosen, op)
        fixed = Spread.of([f.fixed_seconds * 1e3 for f in found]).text(3)
        rate = Spread.of([f.bytes_per_second / 1e6 for f in found]).text(1)
        even = Spread.of([f.break_even_bytes / 1024 for f in found]).text(1)
        lines.append(f"{op}: fixed {fixed} ms per call + bytes at {rate} MB/s; break-even value {even} KiB")
    return lines


def first_call_line(timings: Sequence[Timing]) -> str:
    """The first call of each later batch's loop on the calls pattern, beside a call once the loop runs."""
    parts = []
    for op in ("get", "update"):
        first = Spread.of([t.first_seconds * 1e3 for t in timings if t.pattern == CALLS and t.op == op]).text(2)
        steady = Spread.of(per_run(timings, CALLS, op, later, ms_per_call)).text(3)
        parts.append(f"{op} {first} ms (a later call: {steady})")
    return "first call of a batch's loop, calls pattern: " + "; ".join(parts)


def warmup_line(warmup: Sequence[Timing], counted: Sequence[Timing]) -> str:
    """The left-out warm-up run (the session's first query, a cold JVM) beside the counted ones, calls pattern."""
    parts = []
    for op in ("get", "update"):
        cold = statistics.median(per_run(warmup, CALLS, op, later, ms_per_call))
        warm = statistics.median(per_run(counted, CALLS, op, later, ms_per_call))
        parts.append(f"{op} {cold:.3f} ms per call (counted runs: {warm:.3f})")
    return "warm-up run, left out, calls pattern: " + "; ".join(parts)


def rich_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> Table:
    table = Table(title=title)
    for index, name in enumerate(header):
        table.add_column(name, justify="left" if index == 0 else "right", overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


def check(timings: Sequence[Timing]) -> None:
    """Every value read back is the one written (a benchmark of wrong reads would mean nothing)."""
    wrong = [t for t in timings if not t.ok]
    if wrong:
        raise RuntimeError(f"values read back differ from those written: {wrong[:3]}")


ENCODING_CONF = "spark.sql.streaming.stateStore.encodingFormat"


def run_all(chosen: Sequence[Pattern], runs: int, rewrites: int, encoding: str = "unsaferow") -> list[Timing]:
    """Every run in one session built as the job's, its checkpoints and Spark's log in a temporary folder;
    ``encoding``: the state store's encoding format (each run's checkpoint is fresh, so the session's value holds)."""
    from settings.settings import load_settings
    from streaming.spark_session import build_spark

    scratch = Path(tempfile.mkdtemp(prefix="mapstate-bench-"))
    os.environ["PUBSUB_RUNTIME_DIR"] = str(scratch / "runtime")  # Spark's log and anything else: not .runtime/
    timings: list[Timing] = []
    try:
        spark = build_spark(load_settings(), app_name="rfc0160-mapstate-bench",
                            log_file=scratch / "runtime" / "spark.log")
        spark.conf.set(ENCODING_CONF, encoding)
        try:
            for run in range(runs):
                started = time.perf_counter()
                timings += run_once(spark, scratch, run, chosen, rewrites)
                console.log(f"run {run + 1}/{runs} in {time.perf_counter() - started:.1f} s")
        finally:
            spark.stop()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return timings


# -------------------------------------------------------------------------------------------------- main
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mapstate_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="queries, each from a fresh checkpoint (default 3)")
    parser.add_argument("--warmup", type=int, default=1,
                        help="runs before them, left out: the session's first query runs on a cold JVM (default 1)")
    parser.add_argument("--calls", type=int, default=200, help="values of the calls pattern (default 200)")
    parser.add_argument("--call-bytes", type=int, default=100, help="their size in bytes (default 100, >= 8)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 16, 64, 256, 1024],
                        help="value sizes of the byte patterns, KiB (default 4 16 64 256 1024)")
    parser.add_argument("--total-mib", type=int, default=4, help="MiB per byte pattern (default 4)")
    parser.add_argument("--min-values", type=int, default=4, help="values per byte pattern at least (default 4)")
    parser.add_argument("--rewrites", type=int, default=2, help="read-and-update batches after the write (default 2)")
    parser.add_argument("--encoding", choices=("unsaferow", "avro"), default="unsaferow",
                        help=f"{ENCODING_CONF} of the runs' checkpoints (default unsaferow, the job's)")
    parser.add_argument("--output", type=Path, default=None,
                        help="where the JSON results go (default benchmarks/results/mapstate.json)")
    args = parser.parse_args(argv)
    if (args.call_bytes < 8 or min(args.sizes) < 1 or min(args.calls, args.min_values) < 2 or args.runs < 1
            or args.warmup < 0 or args.rewrites < 1):
        parser.error("--call-bytes >= 8, --sizes >= 1, --calls and --min-values >= 2 (a loop's first call is left "
                     "out), --runs >= 1, --warmup >= 0, --rewrites >= 1")
    chosen = patterns(args.calls, args.call_bytes, args.sizes, args.total_mib, args.min_values)

    from benchmarks.pipeline_bench import machine

    facts = machine()  # before Spark starts: its load average is this run's start
    load_start = facts["load_average"]
    console.print(f"load average at start: {load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f}")
    timings = run_all(chosen, args.warmup + args.runs, args.rewrites, args.encoding)
    load_end = os.getloadavg()
    check(timings)
    counted = [t for t in timings if t.run >= args.warmup]
    tables = [("Later batches: get of values committed in the batch before, then update (median, range of runs)",
               MAIN_HEADER, main_rows(counted, chosen)),
              ("ms per call by batch (b1: the write batch; median of runs)",
               step_header(args.rewrites), step_rows(counted, chosen, args.rewrites))]
    notes = [*fit_lines(counted, chosen), first_call_line(counted),
             *([warmup_line([t for t in timings if t.run < args.warmup], counted)] if args.warmup else []),
             f"load average: start {load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f}, "
             f"end {load_end[0]:.2f} {load_end[1]:.2f} {load_end[2]:.2f}"]
    for title, header, rows in tables:
        console.print(rich_table(title, header, rows))
    for note in notes:
        console.print(note, markup=False, highlight=False, soft_wrap=True)

    results = {"machine": facts, "load_average_end": load_end,
               "arguments": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
               "patterns": [dataclasses.asdict(p) for p in chosen],
               "fits": {op: [dataclasses.asdict(f) for f in fits(counted, chosen, op)] for op in ("get", "update")},
               "timings": [dataclasses.asdict(t) for t in timings]}
    path = write_result("mapstate", results, module="benchmarks.mapstate_bench", argv=argv, path=args.output)
    console.print(f"wrote {path}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
