"""Pipeline benchmark: the Spark job beside the one-process simulator, on the same logs in the same run.

Run from the repository root (4 to 7 minutes on 2 cores, depending on what else runs):

    .venv/bin/python -m benchmarks.pipeline_bench                 # prints the section
    .venv/bin/python -m benchmarks.pipeline_bench --update-docs   # also writes benchmarks/results/pipeline.json,
                                                                  # docs/img/pipeline.png and the "Pipeline" section
                                                                  # of docs/benchmarks.md

What it measures, per log (examples/busy.jsonl and a seeded workload of more than 10,000 publishes):

1. Throughput. An embedded Kafka broker (its own temporary folder) and Spark local[2]. The log is produced to
   fresh topics, then ``run_job(available_now=True)`` drains it from a fresh checkpoint; the wall time is taken
   around ``run_job`` (topics, both queries started, every batch, queries stopped). The simulator runs the same
   lines in the same process just before. Every job run is checked record for record against the simulator
   (``check_outputs``), so a fast wrong answer cannot pass. Spark's own start-up is measured apart: the JVM and
   session (``build_spark``), then a first job run on the 7-line examples/minimal.jsonl (first queries, Python
   workers, state stores), and a second one at the end (the fixed cost of any run on a warm JVM). Then each log
   ``--runs`` times available-now and live, each run beside its own simulator run, after ``--warmup`` such pairs
   shown apart (the JVM still compiling the job's code: its JIT seconds per pair are in the table).
2. MapState calls per batch per stage. The same log replayed through ``relay_rows`` and ``subscriber_rows``
   with the job's backend (``streaming.operators.page_backend``) over a
   dict-backed MapState that counts getValue / updateValue / removeKey and the bytes they move. The input is cut
   into micro-batches as maxOffsetsPerTrigger would (Spark's per-partition proration), the seam records are
   partitioned as the stages' writers do (the Java client's murmur2 of the key), and the replay's outputs are
   compared with the simulator's too.
3. Bytes on the seam: the value size of every ``relay-views`` record the job wrote (one per subscriber per
   block), read back from Kafka.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from producers.workload import WorkloadSpec, generate
from streaming.settings import JIT_MODES, STATE_REOPEN_MODES, Settings

if TYPE_CHECKING:
    from benchmarks.mapstate_bench import Fit

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "benchmarks" / "results" / "pipeline.md"
"""The rendered section; docs/benchmarks.md's "Pipeline" section is integrated from it by hand."""
PLOT = ROOT / "benchmarks" / "results" / "pipeline.png"
RESULTS = ROOT / "benchmarks" / "results" / "pipeline.json"
SECTION = "## Pipeline: the job beside the simulator"
EXAMPLES = ROOT / "examples"

WORKLOAD = WorkloadSpec(
    seed=160, blocks=60, publishers=18, system_publishers=2, subscribers=4, keys=16, subscribed_keys=24,
    value_min=8, value_max=64, update_rate=0.6, bad_records=0.02,
)
"""The seeded log: 20 publishers x 16 keys, 60% of the keys updated per block, 60 blocks (+3 quiet)."""
WORKLOAD_COMMAND = (
    "pubsub workload -o workload.jsonl --seed 160 --blocks 60 --publishers 18 --system-publishers 2 "
    "--subscribers 4 --keys 16 --subscribed-keys 24 --value-min 8 --value-max 64 --update-rate 0.6 "
    "--bad-records 0.02"
)
ISSUE11 = WorkloadSpec(
    seed=3, blocks=100, publishers=20, system_publishers=4, subscribers=6, keys=20, subscribed_keys=40,
    update_rate=0.5, bad_records=0.01,
)
"""Issue 11's workload: the log benchmarks/simulator_bench.py measures (3,318 lines, 23,876 publishes)."""
ISSUE11_COMMAND = (
    "pubsub workload -o w.jsonl --seed 3 --blocks 100 --publishers 20 --system-publishers 4 --subscribers 6 "
    "--keys 20 --subscribed-keys 40 --update-rate 0.5 --bad-records 0.01"
)
ISSUE11_LONG = dataclasses.replace(ISSUE11, blocks=500)
"""The same workload five times as long: the job's fixed cost of a run (about 4 s) is twice the simulator's whole
run on the issue-11 log, so its throughput shows in wall time only on a longer log."""
ISSUE11_LONG_COMMAND = ISSUE11_COMMAND.replace("--blocks 100", "--blocks 500")
LOG_NAMES = ("busy.jsonl", "workload", "issue11")
"""The logs a run measures by default."""
EXTRA_LOGS = ("issue11-long",)
"""Logs measured only when named (``--log``)."""
CUTS: tuple[int | None, ...] = (None, 100, 7)
"""maxOffsetsPerTrigger values of the MapState replay (None: unlimited, one batch per query)."""
JOB_CUT = ("busy.jsonl", 100)
"""One more job run with maxOffsetsPerTrigger, to see a first batch beside later ones of the same query."""
VIEWS_PARTITIONS = 2
REPLAY_KEY = b"b" * 32
LIVE_TRIGGER_SECONDS = 0.5
"""The live job's trigger interval in the benchmark: the one `pubsub demo --live` runs with."""
WARMUP_PAIRS = 2
"""Pairs per log run before the measured ones. After the first available-now run and two pairs Spark's JVM has
settled: on the issue-11 log its compile time was 2.4-2.5 s in the first live run, 1.0-1.4 s in the second and
0.6-0.8 s a run after (``jstat -compiler``, session 17)."""
LIVE_READY_SECONDS = 60.0
"""How long the live run waits for both queries' first (empty) batch before it produces the log anyway."""

console = Console()


# --------------------------------------------------------------------------------------------------- inputs
def load_logs(names: Sequence[str] = LOG_NAMES) -> list[tuple[str, str, list[bytes]]]:
    """(name, how it was made, lines) of the measured logs named (``LOG_NAMES``: all of them)."""
    makers: dict[str, tuple[str, Callable[[], list[bytes]]]] = {
        "busy.jsonl": ("examples/busy.jsonl", lambda: (EXAMPLES / "busy.jsonl").read_bytes().splitlines()),
        "workload": (WORKLOAD_COMMAND, lambda: [line.encode() for block in generate(WORKLOAD) for line in block]),
        "issue11": (ISSUE11_COMMAND, lambda: [line.encode() for block in generate(ISSUE11) for line in block]),
        "issue11-long": (ISSUE11_LONG_COMMAND,
                         lambda: [line.encode() for block in generate(ISSUE11_LONG) for line in block]),
    }
    return [(name, makers[name][0], makers[name][1]()) for name in names]


def log_facts(lines: Sequence[bytes]) -> dict[str, Any]:
    """Input records (what `pubsub produce` sends to input topics) and the log's size."""
    from pubsub_core.stages import LineRouter, OutputRecord

    router = LineRouter("polkadot")
    routed = sum(1 for line in lines if line.strip() and not isinstance(router.route(line.decode()), OutputRecord))
    return {"lines": len(lines), "input_records": routed, "bytes": sum(len(line) + 1 for line in lines)}


# ------------------------------------------------------------------------------------------------ simulator
def run_simulator(lines: Sequence[bytes]) -> dict[str, Any]:
    """The simulator on the log, timed (wall and CPU), with what it produced."""
    from pubsub_core.process import tune_garbage_collector
    from pubsub_core.simulator import Simulator

    tune_garbage_collector()  # as `pubsub simulate` and the job's workers do
    simulator = Simulator()
    out = []
    wall, cpu = time.perf_counter(), time.process_time()
    for line in lines:
        out += simulator.feed_line(line)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    topics = Counter(record.topic for record in out)
    kinds = Counter(name.rpartition(".")[2] for name in topics.elements())
    publishes = upward = 0
    blocks = 0
    for record in out:
        value = record.value
        event = value.get("event") if record.topic.endswith(".events") else None
        if isinstance(event, dict) and event.get("event") == "DataPublished":
            publishes += int(event.get("items_count", 1))
        if isinstance(event, dict) and event.get("event") == "MessageExecuted":
            upward += 1
        if record.topic.endswith(".seals"):
            blocks += 1
    return {"seconds": wall, "cpu_seconds": cpu, "outputs": len(out), "outputs_by_kind": dict(sorted(kinds.items())),
            "outputs_by_topic": dict(sorted(topics.items())),
            "publishes": publishes, "executed_messages": upward, "blocks": blocks,
            "expected_lines": Counter(record.to_line() for record in out)}


# ------------------------------------------------------------------------------------------------------ job
def cpu_by_part() -> dict[str, float]:
    """CPU seconds so far of each live descendant (with what it reaped), by part: ``broker`` (the embedded Kafka
    JVM), ``spark-jvm``, ``python-workers`` (pyspark's daemon and workers, and the driver-side schema runners),
    ``other``; this process itself is ``driver``. Differences between two calls say where a run's CPU went."""
    tick = os.sysconf("SC_CLK_TCK")
    own = os.times()
    parts: dict[str, float] = defaultdict(float)
    parts["driver"] = own.user + own.system
    parents: dict[int, int] = {}
    info: dict[int, tuple[float, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        info[int(entry.name)] = (sum(int(f) for f in fields[11:15]) / tick, command)
    children: dict[int, list[int]] = defaultdict(list)
    for pid, ppid in parents.items():
        children[ppid].append(pid)
    stack = list(children[os.getpid()])
    while stack:
        pid = stack.pop()
        seconds, command = info.get(pid, (0.0, ""))
        part = ("broker" if "kafka.Kafka" in command else "spark-jvm" if "java" in command.split(" ")[0]
                else "python-workers" if "pyspark" in command or "python" in command.split(" ")[0] else "other")
        parts[part] += seconds
        stack += children[pid]
    return dict(parts)


def tree_cpu_seconds() -> float:
    """CPU seconds (user + system) used so far by this process, its reaped children, and every live descendant
    with the children each of those reaped: the driver, Spark's JVM, its Python workers and the embedded
    broker. On a shared machine this is the cost that other work does not inflate, unlike wall time."""
    tick = os.sysconf("SC_CLK_TCK")
    own = os.times()
    total = own.user + own.system + own.children_user + own.children_system
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = sum(int(f) for f in fields[11:15]) / tick
    children: dict[int, list[int]] = defaultdict(list)
    for pid, ppid in parents.items():
        children[ppid].append(pid)
    stack = list(children[os.getpid()])
    while stack:
        pid = stack.pop()
        total += times.get(pid, 0.0)
        stack += children[pid]
    return total


def jit_seconds() -> float | None:
    """Seconds the active Spark session's JVM has spent compiling so far (its CompilationMXBean; None without a
    session): a run that adds much to it ran on a JVM still warming up, which a job running for hours is not."""
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    if spark is None:
        return None
    bean = spark._jvm.java.lang.management.ManagementFactory.getCompilationMXBean()  # type: ignore[union-attr]
    return float(bean.getTotalCompilationTime()) / 1000


def run_job_on(name: str, lines: Sequence[bytes], settings: Any, scratch: Path,
               log: Callable[[str], None]) -> dict[str, Any]:
    """Produce ``lines`` to fresh topics, drain them with the job from a fresh checkpoint, check the outputs."""
    from producers.kafka_io import read_topic
    from pubsub_core.stages.topics import VIEWS, topic
    from streaming.job import BatchReport, run_job
    from streaming.verify import check_outputs, produce_log, summary_counts

    started = time.perf_counter()
    realms = produce_log(lines, settings, reset_topics=True)
    produce_seconds = time.perf_counter() - started
    job_settings = dataclasses.replace(settings, checkpoint_dir=scratch / f"checkpoint-{name}",
                                       realms=",".join(realms))
    reports: list[BatchReport] = []

    def on_batch(report: BatchReport) -> None:
        reports.append(report)
        log(f"  {name}: {report.line()}")

    cpu, parts, jit = tree_cpu_seconds(), cpu_by_part(), jit_seconds()
    started = time.perf_counter()
    summary = run_job(job_settings, available_now=True, on_batch=on_batch)
    wall = time.perf_counter() - started
    cpu, parts = tree_cpu_seconds() - cpu, {k: v - parts.get(k, 0.0) for k, v in cpu_by_part().items()}
    jit_after = jit_seconds()
    result = check_outputs(lines, settings, realms, summary)
    totals = summary_counts(result)
    views = [record for realm in realms for record in read_topic(settings, topic(realm, VIEWS))]
    batches = {
        query: [{"batch": r.batch, "rows_in": r.rows_in, "seconds": r.seconds,
                 "records_out": sum(r.records_out.values()), "phases": getattr(r, "phases", {})}
                for r in reports if r.query == query]
        for query in ("relay", "subscribers")
    }
    return {
        "realms": realms,
        "produce_seconds": produce_seconds,
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "cpu_by_part": parts,
        "jit_seconds": None if jit is None or jit_after is None else jit_after - jit,
        "job_seconds": summary.seconds,
        "input_rows": summary.input_rows,
        "records_out": dict(sorted(summary.records_out.items())),
        "batches": batches,
        "relay_batch_seconds": sum(b["seconds"] for b in batches["relay"]),
        "subscriber_batch_seconds": sum(b["seconds"] for b in batches["subscribers"]),
        "verify": {"ok": result.ok, **dict(totals), "pending_at_end": result.pending_at_end,
                   "topics": [dataclasses.asdict(t) for t in result.topics]},
        "views": [(record.key.decode() if record.key else "", record.partition, record.value or b"")
                  for record in views],
    }


def run_live_on(name: str, lines: Sequence[bytes], sizes: Mapping[str, int], settings: Any, scratch: Path,
                spark: Any, log: Callable[[str], None]) -> dict[str, Any]:
    """The live job (both queries running, trigger ``LIVE_TRIGGER_SECONDS``) started on fresh empty topics; once
    both queries have run their first batch, ``lines`` are produced. End to end is the first record produced to the
    last output record written (Kafka's timestamps, the writer's clock), as a user of the running job sees it; the
    run stops once every output topic holds the simulator's count (``sizes``: ``run_simulator``'s
    ``outputs_by_topic``), then the outputs are checked."""
    from producers.kafka_io import produce, read_topic, wait_for_sizes
    from pubsub_core.stages.topics import OUTPUTS, topic
    from streaming.job import BatchReport, run_job
    from streaming.pipeline import QueryNames
    from streaming.verify import check_outputs, fresh_topics, summary_counts

    records, realms = fresh_topics(lines, settings, reset_topics=True)
    job_settings = dataclasses.replace(settings, checkpoint_dir=scratch / f"checkpoint-{name}", realms=",".join(realms),
                                       trigger_seconds=LIVE_TRIGGER_SECONDS)
    names = {QueryNames().relay, QueryNames().subscribers}
    stop = threading.Event()
    fed: dict[str, Any] = {}

    def feed() -> None:
        try:
            deadline = time.monotonic() + LIVE_READY_SECONDS
            while time.monotonic() < deadline and not stop.is_set():
                ready = {q.name for q in spark.streams.active if q.lastProgress is not None}
                if names <= ready:
                    break
                time.sleep(0.05)
            fed["started"] = time.time()
            produce(settings, records)
            fed["produced"] = time.time()
            fed["served"] = wait_for_sizes(settings, sizes, timeout=600)
        finally:
            stop.set()

    reports: list[BatchReport] = []

    def on_batch(report: BatchReport) -> None:
        reports.append(report)
        log(f"  {name} (live): {report.line()}")

    feeder = threading.Thread(target=feed, name="live-feeder")
    cpu, parts, jit = tree_cpu_seconds(), cpu_by_part(), jit_seconds()
    feeder.start()
    summary = run_job(job_settings, available_now=False, on_batch=on_batch, stop=stop)
    feeder.join()
    cpu, parts = tree_cpu_seconds() - cpu, {k: v - parts.get(k, 0.0) for k, v in cpu_by_part().items()}
    jit_after = jit_seconds()
    result = check_outputs(lines, settings, realms, summary)
    last = max((record.timestamp or 0) for realm in realms for kind in OUTPUTS
               for record in read_topic(settings, topic(realm, kind)))
    return {
        "trigger_seconds": LIVE_TRIGGER_SECONDS,
        "end_to_end_seconds": last / 1000 - fed["started"],
        "produce_seconds": fed["produced"] - fed["started"],
        "served": fed.get("served", False),
        "cpu_seconds": cpu,
        "cpu_by_part": parts,
        "jit_seconds": None if jit is None or jit_after is None else jit_after - jit,
        "batches": {query: [{"batch": r.batch, "rows_in": r.rows_in, "seconds": r.seconds,
                             "records_out": sum(r.records_out.values())} for r in reports if r.query == query]
                    for query in ("relay", "subscribers")},
        "verify": {"ok": result.ok and bool(fed.get("served")), **dict(summary_counts(result))},
    }


def seam_bytes(views: Iterable[tuple[str, int, bytes]]) -> dict[str, Any]:
    """Per subscriber, and over all, the value size of its relay-views records (one per block) and the bytes of
    trie nodes in them."""
    from streaming.seam import split_record

    sizes: dict[str, list[int]] = defaultdict(list)
    nodes: dict[str, list[int]] = defaultdict(list)
    for key, _partition, value in views:
        sizes[key].append(len(value))
        nodes[key].append(sum(map(len, split_record(value)[1])))
    every = [n for key in sizes for n in sizes[key]]
    every_nodes = [n for key in nodes for n in nodes[key]]
    rows = {key: {**_stats(sizes[key]), "proof_node_bytes_mean": statistics.fmean(nodes[key])}
            for key in sorted(sizes, key=int)}
    return {"per_subscriber": rows,
            "all": {**_stats(every), "proof_node_bytes_mean": statistics.fmean(every_nodes) if every_nodes else 0.0,
                    "total": sum(every)}}


def _stats(values: Sequence[int]) -> dict[str, float]:
    if not values:
        return {"views": 0, "mean": 0.0, "p95": 0.0, "max": 0.0}
    ordered = sorted(values)
    return {"views": len(values), "mean": statistics.fmean(values),
            "p95": float(ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]), "max": float(ordered[-1])}


# ---------------------------------------------------------------------------------------- MapState replay
class CountingMapState:
    """A dict-backed MapState (the three methods SparkStateBackend uses) that counts calls and bytes."""

    def __init__(self) -> None:
        self.data: dict[tuple[Any, ...], tuple[bytes]] = {}
        self.calls: Counter[str] = Counter()
        self.families: Counter[str] = Counter()
        """Calls per namespace family (publisher ids and hex collapsed to ``*``)."""
        self.missing_families: Counter[str] = Counter()
        """getValue calls that found no page, per namespace family."""
        self.bytes_read = 0
        self.bytes_written = 0

    def _count(self, method: str, key: tuple[Any, ...]) -> None:
        self.calls[method] += 1
        self.families[family(str(key[0]))] += 1

    def getValue(self, key: tuple[Any, ...]) -> tuple[bytes] | None:  # noqa: N802 (pyspark's name)
        self._count("getValue", key)
        value = self.data.get(key)
        if value is None:
            self.calls["getValue of a missing page"] += 1
            self.missing_families[family(str(key[0]))] += 1
        else:
            self.bytes_read += len(value[0])
        return value

    def updateValue(self, key: tuple[Any, ...], value: tuple[Any, ...]) -> None:  # noqa: N802
        self._count("updateValue", key)
        data = bytes(value[0])
        self.bytes_written += len(data)
        self.data[key] = (data,)

    def removeKey(self, key: tuple[Any, ...]) -> None:  # noqa: N802
        self._count("removeKey", key)
        self.data.pop(key, None)

    def snapshot(self) -> tuple[int, int, int, int, int, int]:
        return (self.calls["getValue"], self.calls["updateValue"], self.calls["removeKey"], self.bytes_read,
                self.bytes_written, self.calls["getValue of a missing page"])


def family(namespace: str) -> str:
    """``subscriber.keys.2003`` -> ``subscriber.keys.*``: a namespace with its per-publisher parts collapsed."""
    parts = namespace.split(".")
    return ".".join("*" if part.isdigit() or (len(part) >= 8 and all(c in "0123456789abcdef" for c in part))
                    else part for part in parts)


def rate_limit(limit: int, start: dict[Any, int], end: dict[Any, int]) -> dict[Any, int]:
    """The end offsets of the next micro-batch under maxOffsetsPerTrigger, as Spark's Kafka source prorates
    them (KafkaMicroBatchStream.rateLimit): each partition gets ``limit * its share of what is left``, rounded
    down, but at least one record if it has any."""
    sizes = {tp: end[tp] - start[tp] for tp in end if end[tp] - start[tp] > 0}
    total = float(sum(sizes.values()))
    if total < 1:
        return dict(end)
    until = {}
    for tp, stop in end.items():
        if tp not in sizes:
            until[tp] = stop
            continue
        prorate = limit * (sizes[tp] / total)
        step = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        until[tp] = min(stop, start[tp] + step)
    return until


def cut_batches(rows: Sequence[Any], limit: int | None) -> list[list[Any]]:
    """Rows (with topic, partition, offset; in offset order per partition) cut into micro-batches."""
    by_tp: dict[tuple[str, int], list[Any]] = defaultdict(list)
    for row in rows:
        by_tp[(row.topic, row.partition)].append(row)
    end = {tp: len(group) for tp, group in by_tp.items()}
    position = {tp: 0 for tp in by_tp}
    batches = []
    while any(position[tp] < end[tp] for tp in by_tp):
        until = dict(end) if limit is None else rate_limit(limit, position, end)
        batches.append([row for tp in sorted(by_tp) for row in by_tp[tp][position[tp]:until[tp]]])
        position = until
    return batches


def murmur2_partition(key: bytes, partitions: int) -> int:
    """The partition Kafka's Java producer picks for a keyed record (murmur2; the stages' writers pick the same)."""
    m, length = 0x5BD1E995, len(key)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(length // 4):
        k = int.from_bytes(key[i * 4:i * 4 + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = key[length & ~3:]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if len(tail) >= 1:
        h ^= tail[0]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return (h & 0x7FFFFFFF) % partitions


def _summ(values: Sequence[float]) -> dict[str, float]:
    return {"mean": statistics.fmean(values) if values else 0.0, "max": float(max(values)) if values else 0.0}


def kafka_rows(lines: Sequence[bytes]) -> tuple[list[Any], Counter[str]]:
    """The log's lines as the Kafka records `pubsub produce` writes (``streaming.operators.KafkaRow``s, partition
    0, at their offsets), and the output lines of those it refuses."""
    from pubsub_core.stages import LineRouter, OutputRecord, SimulatorConfig
    from streaming.operators import KafkaRow

    router = LineRouter(SimulatorConfig().default_realm)
    rows: list[KafkaRow] = []
    refused: Counter[str] = Counter()
    for line in lines:
        if not line.strip():
            continue
        routed = router.route(line.decode())
        if isinstance(routed, OutputRecord):
            refused[routed.to_line()] += 1
            continue
        record, offset = routed
        rows.append(KafkaRow(record.topic, 0, offset, record.key, record.value))
    return rows, refused


def replay(lines: Sequence[bytes], limit: int | None, expected: Counter[str]) -> dict[str, Any]:
    """The log through relay_rows / subscriber_rows over counting MapStates, cut as maxOffsetsPerTrigger=limit."""
    from pubsub_core.stages import SimulatorConfig
    from state.spark import SparkStateBackend
    from streaming.operators import KafkaRow, page_backend, relay_rows, subscriber_rows

    config = SimulatorConfig()
    rows, out_lines = kafka_rows(lines)

    def line_of(row: Any) -> str:
        return json.dumps({"id": row.id.decode(), "key": row.key.decode(), "topic": row.topic,
                           "value": json.loads(row.value)},
                          sort_keys=True, separators=(",", ":"))

    def run_stage(batches: list[list[KafkaRow]], group: Callable[[KafkaRow], tuple[str, ...]],
                  call: Callable[[tuple[str, ...], list[KafkaRow], SparkStateBackend], list[Any]],
                  states: dict[tuple[str, ...], CountingMapState]) -> tuple[list[dict[str, float]], list[Any]]:
        per_batch, produced = [], []
        for batch in batches:
            groups: dict[tuple[str, ...], list[KafkaRow]] = defaultdict(list)
            for row in batch:
                groups[group(row)].append(row)
            tally = [0, 0, 0, 0, 0, 0]
            backend_calls = 0
            started = time.process_time()
            for key in sorted(groups):
                state = states.setdefault(key, CountingMapState())
                before = state.snapshot()
                backend = page_backend(state)
                produced += call(key, groups[key], backend)
                backend.flush()
                backend_calls += backend.jvm_calls
                tally = [t + (a - b) for t, a, b in zip(tally, state.snapshot(), before, strict=True)]
            per_batch.append({"rows": len(batch), "groups": len(groups), "get": tally[0], "update": tally[1],
                              "remove": tally[2], "calls": tally[0] + tally[1] + tally[2], "bytes_read": tally[3],
                              "bytes_written": tally[4], "get_missing": tally[5], "backend_jvm_calls": backend_calls,
                              "seconds": time.process_time() - started})
        return per_batch, produced

    relay_states: dict[tuple[str, ...], CountingMapState] = {}
    relay_batches, relay_out = run_stage(
        cut_batches(rows, limit), lambda r: (r.topic.rpartition(".")[0],),
        lambda key, group, backend: relay_rows(key[0], group, backend, config, REPLAY_KEY), relay_states)
    seam = [r for r in relay_out if r.topic.endswith(".relay-views")]
    out_lines.update(line_of(r) for r in relay_out if not r.topic.endswith(".relay-views"))
    next_offset: Counter[tuple[str, int]] = Counter()
    views = []
    for r in seam:
        partition = murmur2_partition(r.key, VIEWS_PARTITIONS)
        views.append(KafkaRow(r.topic, partition, next_offset[(r.topic, partition)], r.key, r.value))
        next_offset[(r.topic, partition)] += 1
    sub_states: dict[tuple[str, ...], CountingMapState] = {}
    sub_batches, sub_out = run_stage(
        cut_batches(views, limit), lambda r: (r.topic.rpartition(".")[0], (r.key or b"").decode()),
        lambda key, group, backend: subscriber_rows(key[0], key[1], group, backend, config, REPLAY_KEY), sub_states)
    out_lines.update(line_of(r) for r in sub_out)

    def stage(per_batch: list[dict[str, float]], states: dict[tuple[str, ...], CountingMapState]) -> dict[str, Any]:
        groups = sum(b["groups"] for b in per_batch)
        calls = sum(b["calls"] for b in per_batch)
        return {
            "batches": len(per_batch),
            "rows": _summ([b["rows"] for b in per_batch]),
            "calls": _summ([b["calls"] for b in per_batch]),
            "get": _summ([b["get"] for b in per_batch]),
            "update": _summ([b["update"] for b in per_batch]),
            "remove": _summ([b["remove"] for b in per_batch]),
            "bytes_read": _summ([b["bytes_read"] for b in per_batch]),
            "bytes_written": _summ([b["bytes_written"] for b in per_batch]),
            "calls_per_group": calls / groups if groups else 0.0,
            "calls_total": calls,
            "get_missing_total": sum(b["get_missing"] for b in per_batch),
            "calls_by_family": dict(sum((s.families for s in states.values()), Counter()).most_common()),
            "missing_by_family": dict(sum((s.missing_families for s in states.values()), Counter()).most_common()),
            "groups": len(states),
            "backend_jvm_calls_total": sum(b["backend_jvm_calls"] for b in per_batch),
            "seconds": sum(b["seconds"] for b in per_batch),
            "rows_per_batch": [b["rows"] for b in per_batch],
            "calls_per_row": calls / max(1, sum(b["rows"] for b in per_batch)),
            "state_bytes_at_end": sum(len(v[0]) for s in states.values() for v in s.data.values()),
            "state_entries_at_end": sum(len(s.data) for s in states.values()),
        }

    return {
        "max_offsets_per_trigger": limit,
        "relay": stage(relay_batches, relay_states),
        "subscribers": stage(sub_batches, sub_states),
        "outputs_equal_simulator": out_lines == expected,
        "seam_partitions": {key.decode(): murmur2_partition(key, VIEWS_PARTITIONS)
                            for key in sorted({r.key for r in seam}, key=int)},
    }


# --------------------------------------------------------------------------------------------------- machine
def machine() -> dict[str, Any]:
    import subprocess

    import pyspark

    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor() or "?")
    memory = next((int(line.split()[1]) // 1024 // 1024 for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal")), 0)
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr.splitlines()
    git = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                         check=False).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, check=False).stdout.strip())
    return {"cpu": model, "cores": os.cpu_count(), "memory_gib": memory, "os": platform.platform(),
            "python": platform.python_version(), "pyspark": pyspark.__version__,
            "java": java[0] if java else "?", "load_average_start": os.getloadavg(), "git_commit": git,
            "git_dirty": dirty}


# ------------------------------------------------------------------------------------------------------ run
def run(scratch: Path, skip_job: bool = False, names: Sequence[str] = LOG_NAMES,
        cuts: Sequence[int | None] = CUTS, spark_jit: str = Settings.spark_jit, runs: int = 1,
        warmup: int = 0, state_reopen: str = Settings.state_reopen) -> dict[str, Any]:
    logs = load_logs(names)
    steps = len(logs) * (2 + len(cuts)) + (0 if skip_job else 5 + len(logs) * (2 * (runs + warmup) - 1))
    results: dict[str, Any] = {"machine": machine(), "spark_jit": spark_jit, "state_reopen": state_reopen,
                               "runs": runs, "warmup": warmup,
                               "workload_spec": dataclasses.asdict(WORKLOAD), "issue11_spec": dataclasses.asdict(ISSUE11),
                               "cuts": list(cuts), "logs": {}}
    started = time.perf_counter()
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=console) as progress:
        task = progress.add_task("pipeline bench", total=steps)

        def log(text: str) -> None:
            progress.console.log(text)

        def step(text: str) -> None:
            progress.update(task, description=text)

        def done() -> None:
            progress.advance(task)

        spark = broker = settings = None
        try:
            if not skip_job:
                from streaming.kafka_broker import EmbeddedKafka
                from streaming.paths import runtime_dir
                from streaming.settings import load_settings
                from streaming.spark_session import build_spark

                step("starting the embedded Kafka broker")
                broker = EmbeddedKafka(home=scratch / "kafka")
                t0 = time.perf_counter()
                info = broker.start()
                broker_seconds = time.perf_counter() - t0
                settings = load_settings(overrides={"kafka_bootstrap": info.bootstrap, "spark_master": "local[2]",
                                                    "views_partitions": VIEWS_PARTITIONS, "spark_jit": spark_jit,
                                                    "state_reopen": state_reopen,
                                                    "checkpoint_dir": scratch / "checkpoint"}, environ={})
                log(f"broker at {info.bootstrap} in {broker_seconds:.1f}s")
                done()
                step("starting Spark (JVM + session)")
                t0 = time.perf_counter()
                spark = build_spark(settings, app_name="rfc0160-pubsub", log_file=runtime_dir() / "logs" / "spark.log")
                spark_seconds = time.perf_counter() - t0
                log(f"Spark session in {spark_seconds:.1f}s (log: {runtime_dir() / 'logs' / 'spark.log'})")
                done()
                step("first job run: examples/minimal.jsonl")
                minimal = (EXAMPLES / "minimal.jsonl").read_bytes().splitlines()
                first = run_job_on("minimal-first", minimal, settings, scratch, log)
                log(f"first job run (minimal.jsonl): {first['wall_seconds']:.1f}s, outputs equal: {first['verify']['ok']}")
                done()
                results["startup"] = {"broker_seconds": broker_seconds, "spark_session_seconds": spark_seconds,
                                      "first_run": _strip(first)}
            for name, origin, lines in logs:
                facts = log_facts(lines)
                step(f"{name}: simulator")
                sim = run_simulator(lines)
                expected = sim.pop("expected_lines")
                log(f"{name}: {facts['input_records']} input records, {sim['publishes']} publishes, "
                    f"{sim['blocks']} blocks; simulator {sim['seconds']:.2f}s")
                done()
                entry: dict[str, Any] = {"origin": origin, **facts, "simulator": sim}
                if not skip_job:
                    step(f"{name}: job (produce, drain, check)")
                    job = run_job_on(name, lines, settings, scratch, log)
                    entry["job"] = _strip(job)
                    entry["seam"] = seam_bytes(job["views"])
                    entry["seam"]["kafka_partitions"] = {k: p for k, p, _ in job["views"]}
                    log(f"{name}: job {job['wall_seconds']:.1f}s, outputs equal the simulator: {job['verify']['ok']} "
                        f"({job['verify']['matched']}/{job['verify']['expected']} matched)")
                    if name == JOB_CUT[0] and settings is not None and cuts:
                        step(f"{name}: job with maxOffsetsPerTrigger={JOB_CUT[1]}")
                        cut_settings = dataclasses.replace(settings, max_offsets_per_trigger=JOB_CUT[1])
                        entry["job_cut"] = _strip(run_job_on(f"{name}-{JOB_CUT[1]}", lines, cut_settings, scratch, log))
                        entry["job_cut"]["max_offsets_per_trigger"] = JOB_CUT[1]
                        log(f"{name} (maxOffsetsPerTrigger={JOB_CUT[1]}): job {entry['job_cut']['wall_seconds']:.1f}s, "
                            f"outputs equal the simulator: {entry['job_cut']['verify']['ok']}")
                        done()
                    entry["warmup_runs"], entry["runs"] = paired_runs(name, lines, settings, scratch, spark, sim,
                                                                      job, runs, log, done, warmup)
                done()
                entry["replay"] = []
                for limit in cuts:
                    step(f"{name}: MapState replay, maxOffsetsPerTrigger={limit or 'unlimited'}")
                    replayed = replay(lines, limit, expected)
                    entry["replay"].append(replayed)
                    log(f"{name}: replay cut {limit or 'unlimited'}: relay {replayed['relay']['batches']} batches, "
                        f"{replayed['relay']['calls']['mean']:.1f} calls/batch; subscribers "
                        f"{replayed['subscribers']['batches']} batches, {replayed['subscribers']['calls']['mean']:.1f} "
                        f"calls/batch; outputs equal: {replayed['outputs_equal_simulator']}")
                    done()
                if "seam" in entry and entry["replay"]:
                    entry["seam"]["murmur2_matches_kafka"] = (
                        entry["seam"]["kafka_partitions"] == entry["replay"][0]["seam_partitions"])
                results["logs"][name] = entry
            if not skip_job:
                step("fixed cost of a run on a warm JVM: examples/minimal.jsonl again")
                again = run_job_on("minimal-warm", minimal, settings, scratch, log)
                results["startup"]["warm_run"] = _strip(again)
                log(f"warm job run (minimal.jsonl): {again['wall_seconds']:.1f}s")
                done()
        finally:
            try:
                if spark is not None:
                    spark.stop()
            finally:
                if broker is not None:
                    broker.stop()
    results["machine"]["load_average_end"] = os.getloadavg()
    results["total_seconds"] = time.perf_counter() - started
    return results


def paired_runs(name: str, lines: Sequence[bytes], settings: Any, scratch: Path, spark: Any, sim: dict[str, Any],
                job: dict[str, Any], runs: int, log: Callable[[str], None], done: Callable[[], None],
                warmup: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``warmup`` then ``runs`` pairs of the log (the warm-up pairs and the measured ones), each the simulator
    beside the job run available-now and beside the live job (the first available-now run is ``job``, already
    made beside ``sim``). Warm-up pairs are measured like the others and kept apart: Spark's JVM is still
    compiling the job's code in them, a start-up cost a job running for hours paid long ago."""
    pairs = []
    for i in range(warmup + runs):
        label = f"warm-up {i + 1}" if i < warmup else f"run {i - warmup + 1}"
        if i:
            sim = run_simulator(lines)
            sim.pop("expected_lines")
            job = run_job_on(f"{name}-{i}", lines, settings, scratch, log)
            log(f"{name} ({label}): job {job['wall_seconds']:.1f}s available-now (simulator {sim['seconds']:.2f}s), "
                f"outputs equal the simulator: {job['verify']['ok']}")
            done()
        live_sim = run_simulator(lines)
        live = run_live_on(f"{name}-live-{i}", lines, live_sim["outputs_by_topic"], settings, scratch, spark, log)
        log(f"{name} ({label}): live job {live['end_to_end_seconds']:.1f}s end to end (simulator "
            f"{live_sim['seconds']:.2f}s), outputs equal the simulator: {live['verify']['ok']}")
        done()
        pairs.append({"simulator_seconds": sim["seconds"], "job_seconds": job["wall_seconds"],
                      "job_ok": job["verify"]["ok"], "job_jit_seconds": job.get("jit_seconds"),
                      "live_simulator_seconds": live_sim["seconds"], "live_seconds": live["end_to_end_seconds"],
                      "live_ok": live["verify"]["ok"], "live_jit_seconds": live.get("jit_seconds"), "live": live})
    return pairs[:warmup], pairs[warmup:]


def _strip(job: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in job.items() if k != "views"}


# ---------------------------------------------------------------------------------------------------- report
def target_table(results: dict[str, Any]) -> str:
    """Issue 11, target 2 (the job's throughput at least half the simulator's), one row per log of this run."""
    startup = results.get("startup")
    if startup is None or "warm_run" not in startup:
        return ""
    warm = startup["warm_run"]
    fixed = warm["wall_seconds"]
    relay, subs = (" + ".join(f"{b['seconds']:.1f}" for b in warm["batches"][q]) or "0"
                   for q in ("relay", "subscribers"))
    per_batch = f"{relay} s (Stage R), {subs} s (Stage S)"
    parts = [f"""
### Issue 11, target 2: the job within 2x of the simulator

Publishes/s, the job's wall time around `run_job` (available-now, both queries, every batch) beside the \
simulator on the same lines in the same run; every job run checked record for record against the simulator. \
Spark's JVM compiles with {results.get("spark_jit", "c1")} (`--spark-jit`). \
The fixed cost of a run is a run on the 7-line examples/minimal.jsonl on the warm JVM at the end: \
{fixed:.1f} s wall, of which one batch costs {per_batch} however few rows it has. \
"Net" is the job less that fixed cost.

| log | publishes | simulator publishes/s | job wall (s) | job publishes/s | job / simulator | \
job net (s) | job net publishes/s | net / simulator | outputs = simulator |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---|
"""]
    for name, e in results["logs"].items():
        if "job" not in e:
            continue
        s, j = e["simulator"], e["job"]
        sim_rate = s["publishes"] / s["seconds"]
        job_rate = s["publishes"] / j["wall_seconds"]
        net = j["wall_seconds"] - fixed
        net_rate = s["publishes"] / net if net > 0 else float("inf")
        parts.append(f"| {name} | {s['publishes']:,} | {sim_rate:,.0f} | {j['wall_seconds']:.1f} | {job_rate:,.0f} | "
                     f"{job_rate / sim_rate:.2f}x | {net:.1f} | {net_rate:,.0f} | {net_rate / sim_rate:.2f}x | "
                     f"{'yes' if j['verify']['ok'] else '**NO**'} |\n")
    return "".join(parts) + runs_table(results)


def _spread(values: Sequence[float], unit: str = "") -> str:
    """Median, and the range when there is more than one value."""
    middle = f"{statistics.median(values):.2f}{unit}"
    return middle if len(values) == 1 else f"{middle} ({min(values):.2f}-{max(values):.2f})"


def _over(runs: int, warmup: int) -> str:
    """How the runs table's figures are taken, in words."""
    measured = ("one run each (the simulator's figure: the median and range of its two runs)" if runs == 1
                else f"median (range) over {runs} runs")
    if not warmup:
        return measured
    return (f"{measured}, after {warmup} warm-up {'pair' if warmup == 1 else 'pairs'} on the same JVM, shown on "
            "their own row (Spark's JVM still compiling the job's code there: a start-up cost that a job running "
            "for hours has long paid)")


def _jit(pairs: Sequence[dict[str, Any]]) -> str:
    """The JVM's JIT compile seconds per pair (available-now and live runs together), or a dash if not recorded."""
    seconds = [r["job_jit_seconds"] + r["live_jit_seconds"] for r in pairs
               if r.get("job_jit_seconds") is not None and r.get("live_jit_seconds") is not None]
    return _spread(seconds) if seconds else "-"


def runs_table(results: dict[str, Any]) -> str:
    """Each log measured ``runs`` times (after its warm-up pairs, on their own row): the job available-now and the
    live job, each beside its own simulator run; ratios are the simulator's seconds over the job's, per pair."""
    rows = [(label, pairs) for name, e in results["logs"].items()
            for label, pairs in ((f"{name}, warm-up", e.get("warmup_runs")), (name, e.get("runs"))) if pairs]
    if not rows:
        return ""
    parts = [f"""
The job available-now (its two queries started and stopped in the run) and the live job (both queries running \
with a {LIVE_TRIGGER_SECONDS:g} s trigger, as `pubsub demo --live` runs them, started on empty topics; the log \
produced once both have run their first batch; end to end is the first record produced to the last output \
record's Kafka timestamp), each run beside its own simulator run; \
{_over(results.get("runs", 1), results.get("warmup", 0))}; ratio per pair; JIT: the seconds Spark's JVM spent \
compiling during the pair's two runs:

| log | runs | simulator (s) | job available-now (s) | available-now / simulator | live end to end (s) | \
live / simulator | JIT (s) | outputs = simulator |
|---|---:|---:|---:|---:|---:|---:|---:|---|
"""]
    for label, measured in rows:
        sims = [r["simulator_seconds"] for r in measured] + [r["live_simulator_seconds"] for r in measured]
        ok = all(r["job_ok"] and r["live_ok"] for r in measured)
        parts.append(
            f"| {label} | {len(measured)} | {_spread(sims)} | {_spread([r['job_seconds'] for r in measured])} | "
            f"{_spread([r['simulator_seconds'] / r['job_seconds'] for r in measured], 'x')} | "
            f"{_spread([r['live_seconds'] for r in measured])} | "
            f"{_spread([r['live_simulator_seconds'] / r['live_seconds'] for r in measured], 'x')} | "
            f"{_jit(measured)} | {'yes' if ok else '**NO**'} |\n")
    return "".join(parts)


def markdown(results: dict[str, Any]) -> str:
    m = results["machine"]
    logs = results["logs"]
    startup = results.get("startup")
    parts = [f"""{SECTION}

Generated by `.venv/bin/python -m benchmarks.pipeline_bench --update-docs` ({results['total_seconds']:.0f} s for \
the whole run; figures in `benchmarks/results/pipeline.json`) on {m['cores']} cores ({m['cpu']}), \
{m['memory_gib']} GiB, Python {m['python']}, PySpark {m['pyspark']}, {m['java']}\
{f", at commit {m['git_commit']}" + (" with uncommitted changes" if m.get("git_dirty") else "")
 if m.get("git_commit") else ""}. `--from-results` renders this section again from the JSON without measuring. \
Load average {m['load_average_start'][0]:.1f} at the start and {m['load_average_end'][0]:.1f} at the end: \
the machine's 2 cores are shared with other work (tests, other benchmarks), so absolute times move by tens of \
percent between runs; each figure below is one run, not a best-of.

Logs: `examples/busy.jsonl`, and a seeded workload made by `{WORKLOAD_COMMAND}` (20 publishers of 16 keys, \
60% of the keys updated per block, 4 subscribers of 24 keys). Publishes are counted from the simulator's \
`DataPublished` events (`items_count`), i.e. Publish instructions that were applied. The job runs on an embedded \
Kafka broker and Spark `local[2]` (2 shuffle partitions, RocksDB state store), trigger available-now, no \
maxOffsetsPerTrigger (one batch per query), fresh topics and a fresh checkpoint per log; wall time is taken \
around `run_job` (output topics, both queries started, drained and stopped); producing the log to Kafka is \
not included. The simulator runs the same lines in the same process just before, single-threaded. \
The workload command writes exactly the lines the benchmark generates from its `WorkloadSpec`.
"""]
    parts.append(target_table(results))
    if startup is not None:
        parts.append("""
### Throughput

Wall-clock figures are what was asked; CPU seconds (user + system; for the job, of the whole process tree: \
driver, Spark's JVM, its Python workers and the broker) are what the sharing of the machine inflates least.

| log | input records | publishes | blocks | simulator wall (s) | simulator records/s | simulator publishes/s | \
job wall (s) | job records/s | job publishes/s | job / simulator, wall | simulator CPU (s) | job CPU (s) | \
job / simulator, CPU | job outputs = simulator |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|
""")
        for name, e in logs.items():
            s, j = e["simulator"], e["job"]
            v = j["verify"]
            ok = (f"yes: {v['matched']:,}/{v['expected']:,} records" if v["ok"] else
                  f"**NO**: {v['missing']} missing, {v['extra']} extra, {v['differing']} differing")
            parts.append(
                f"| {name} | {e['input_records']:,} | {s['publishes']:,} | {s['blocks']} | {s['seconds']:.2f} | "
                f"{e['input_records'] / s['seconds']:,.0f} | {s['publishes'] / s['seconds']:,.0f} | "
                f"{j['wall_seconds']:.1f} | {e['input_records'] / j['wall_seconds']:,.0f} | "
                f"{s['publishes'] / j['wall_seconds']:,.0f} | {j['wall_seconds'] / s['seconds']:.1f}x | "
                f"{s['cpu_seconds']:.2f} | {j['cpu_seconds']:.1f} | {j['cpu_seconds'] / s['cpu_seconds']:.1f}x | {ok} |\n")
        warm = startup["warm_run"]["wall_seconds"]
        warm_cpu = startup["warm_run"].get("cpu_seconds", float("nan"))
        parts.append(f"""
Where the job's time goes (seconds; a batch's time is Spark's `triggerExecution`; the rest is starting and \
stopping the queries and the driver's 0.5 s polling):

| log | job wall | Stage R batches | Stage S batches | rest | job wall less the fixed cost of a run ({warm:.1f} s) | \
records/s net of that | publishes/s net of that | job CPU (s) less that of the fixed run ({warm_cpu:.1f} s) |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
""")
        for name, e in logs.items():
            j, s = e["job"], e["simulator"]
            rest = j["wall_seconds"] - j["relay_batch_seconds"] - j["subscriber_batch_seconds"]
            net = j["wall_seconds"] - warm
            relay_b = " + ".join(f"{b['seconds']:.1f}" for b in j["batches"]["relay"])
            sub_b = " + ".join(f"{b['seconds']:.1f}" for b in j["batches"]["subscribers"])
            if net >= 0.25 * j["wall_seconds"]:
                rates = f"{e['input_records'] / net:,.0f} | {s['publishes'] / net:,.0f}"
            else:
                rates = "n/a: within the noise of the fixed cost | n/a"
            parts.append(f"| {name} | {j['wall_seconds']:.1f} | {relay_b} | {sub_b} | {rest:.1f} | {net:.1f} | "
                         f"{rates} | {j.get('cpu_seconds', float('nan')) - warm_cpu:.1f} |\n")
        first = startup["first_run"]
        parts.append(f"""
Start-up, measured apart: the embedded broker started in {startup['broker_seconds']:.1f} s; Spark's JVM and \
session (`build_spark`) in {startup['spark_session_seconds']:.1f} s; the first job run in that JVM, on the 7-line \
`examples/minimal.jsonl`, took {first['wall_seconds']:.1f} s (Stage R batch \
{first['relay_batch_seconds']:.1f} s, Stage S batch {first['subscriber_batch_seconds']:.1f} s: first queries, \
Python workers, RocksDB state stores), and the same run again at the end, on a warm JVM, {warm:.1f} s: that is \
the fixed cost of any available-now run, whatever the log. Outputs equal the simulator's on both minimal runs: \
{"yes" if first['verify']['ok'] and startup['warm_run']['verify']['ok'] else "NO"}.
""")
        cut_name = next((n for n, e in logs.items() if "job_cut" in e), None)
        if cut_name is not None:
            jc = logs[cut_name]["job_cut"]
            limit = jc["max_offsets_per_trigger"]
            rc = next(r for r in logs[cut_name]["replay"] if r["max_offsets_per_trigger"] == limit)
            parts.append(f"""
First batch against later ones: {cut_name} once more through the job with maxOffsetsPerTrigger={limit} \
(outputs equal the simulator's: {"yes" if jc['verify']['ok'] else "**NO**"}; wall {jc['wall_seconds']:.1f} s \
against {logs[cut_name]['job']['wall_seconds']:.1f} s in one batch per query). Rows per batch are those the \
replay below predicts for the same cut \
({"they match" if [x["rows_in"] for x in jc["batches"]["relay"]] == rc["relay"]["rows_per_batch"] and
  [x["rows_in"] for x in jc["batches"]["subscribers"]] == rc["subscribers"]["rows_per_batch"] else
  "they do not all match"}{", and the seam records' partitions equal murmur2's" if all(
      e.get("seam", {}).get("murmur2_matches_kafka") for e in logs.values()) else ""}).

| query | batches | rows per batch (job) | rows per batch (replay's model of the cut) | seconds per batch | \
first batch less the mean of the others |
|---|---:|---|---|---|---:|
""")
            for label, key, stage_key in (("Stage R", "relay", "relay"), ("Stage S", "subscribers", "subscribers")):
                b = jc["batches"][key]
                secs = [x["seconds"] for x in b]
                extra = f"{secs[0] - statistics.fmean(secs[1:]):.1f} s" if len(secs) > 1 else "n/a"
                parts.append(f"| {label} | {len(b)} | {', '.join(str(x['rows_in']) for x in b)} | "
                             f"{', '.join(str(n) for n in rc[stage_key]['rows_per_batch'])} | "
                             f"{', '.join(f'{x:.1f}' for x in secs)} | {extra} |\n")
    parts.append(f"""
### MapState calls per micro-batch

The same logs replayed through `relay_rows` (Stage R, one group per realm) and `subscriber_rows` (Stage S, \
one group per subscriber) with the job's backend (`streaming.operators.page_backend`: a namespace is one page \
until it passes 64 KiB, then 16, and one-page namespaces share bundles of up to 64 KiB), over a dict-backed \
MapState that counts its calls: each one is a JVM round trip in the job (a read 0.31 ms + 57 MB/s, a write \
0.19 ms + 190 MB/s: `benchmarks.mapstate_bench`). The input is cut as maxOffsetsPerTrigger would cut it (Spark's per-partition proration over the \
input topics; seam records partitioned by murmur2 of the key over {VIEWS_PARTITIONS} partitions, as the stages' \
writers do), each stage's state persisting across batches. Calls and KiB are per micro-batch of the stage (summed \
over the groups in it); "per group" is per `handleInputRows` call. "s" is the Python time of the operator \
functions alone, in CPU seconds (no Spark, no Kafka). With one batch per query nothing is read back (the state starts empty \
and every read finds no page), so the KiB read are 0 there.

| log | maxOffsetsPerTrigger | stage | batches | rows/batch | MapState calls/batch mean | max | reads | writes | \
calls per group | calls per row | KiB read/batch mean | max | KiB written/batch mean | max | s | outputs = simulator |
|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|
""")
    for name, e in logs.items():
        for r in e["replay"]:
            cut = r["max_offsets_per_trigger"] or "unlimited"
            for label, key in (("R (relay)", "relay"), ("S (subscribers)", "subscribers")):
                st = r[key]
                parts.append(
                    f"| {name} | {cut} | {label} | {st['batches']} | {st['rows']['mean']:.1f} | "
                    f"{st['calls']['mean']:.1f} | {st['calls']['max']:.0f} | {st['get']['mean']:.1f} | "
                    f"{st['update']['mean'] + st['remove']['mean']:.1f} | {st['calls_per_group']:.1f} | "
                    f"{st['calls_per_row']:.1f} | "
                    f"{st['bytes_read']['mean'] / 1024:,.1f} | {st['bytes_read']['max'] / 1024:,.1f} | "
                    f"{st['bytes_written']['mean'] / 1024:,.1f} | {st['bytes_written']['max'] / 1024:,.1f} | "
                    f"{st['seconds']:.2f} | {'yes' if r['outputs_equal_simulator'] else '**NO**'} |\n")
    parts.append("""
Where the calls go (whole log; a `scan` of a namespace reads each of its pages the page directory lists):

| log | maxOffsetsPerTrigger | stage | groups | MapState calls | getValue of a page that does not exist | \
top namespace families (share of calls) |
|---|---:|---|---:|---:|---:|---|
""")
    for name, e in logs.items():
        for r in (e["replay"][0], e["replay"][-1]):
            for label, key in (("R", "relay"), ("S", "subscribers")):
                st = r[key]
                total = max(st["calls_total"], 1)
                top = ", ".join(f"`{fam}` {n / total:.0%}" for fam, n in list(st["calls_by_family"].items())[:4])
                parts.append(f"| {name} | {r['max_offsets_per_trigger'] or 'unlimited'} | {label} | {st['groups']} | "
                             f"{st['calls_total']:,} | {st['get_missing_total']:,} "
                             f"({st['get_missing_total'] / total:.0%}) | {top} |\n")
    if any("seam" in e for e in logs.values()):
        parts.append("""
### Bytes on the seam

Value size of each `relay-views` record the job wrote (one per subscriber per relay block: MAC, the view's \
small fields as canonical JSON, its trie nodes as raw bytes: `streaming/seam.py`), read back from Kafka; "proof \
nodes" is the size of the trie nodes in the view. Under `seam: "delta"` (the default) a view carries the nodes \
of its proof that the subscriber's previous view did not.

| log | subscriber | views (blocks) | mean bytes | p95 | max | proof nodes, mean raw bytes |
|---|---|---:|---:|---:|---:|---:|
""")
        for name, e in logs.items():
            seam = e.get("seam")
            if not seam:
                continue
            for sub, st in seam["per_subscriber"].items():
                parts.append(f"| {name} | {sub} | {st['views']} | {st['mean']:,.0f} | {st['p95']:,.0f} | "
                             f"{st['max']:,.0f} | {st['proof_node_bytes_mean']:,.0f} |\n")
            a = seam["all"]
            parts.append(f"| {name} | all | {a['views']} | {a['mean']:,.0f} | {a['p95']:,.0f} | {a['max']:,.0f} | "
                         f"{a['proof_node_bytes_mean']:,.0f} |\n")
    parts.append(reading(results))
    parts.append("\n![pipeline benchmark](img/pipeline.png)\n")
    return "".join(parts)


def state_seconds(stage: dict[str, Any], costs: dict[str, Fit]) -> float:
    """What a replayed stage's MapState calls cost per batch (its means) at the measured per-call costs."""
    return (costs["get"].seconds(stage["get"]["mean"], stage["bytes_read"]["mean"])
            + costs["update"].seconds(stage["update"]["mean"] + stage["remove"]["mean"],
                                      stage["bytes_written"]["mean"]))


def reading(results: dict[str, Any]) -> str:
    """A few sentences on what the tables say, computed from them."""
    logs = results["logs"]
    lines = ["\n### Reading the figures\n\n"]
    runs = [e[k] for e in logs.values() for k in ("job", "job_cut") if k in e]
    if "startup" in results:
        runs += [results["startup"]["first_run"], results["startup"]["warm_run"]]
    if runs:
        ok = all(r["verify"]["ok"] for r in runs)
        lines.append(f"- Correctness: {'every' if ok else 'NOT every'} job run's outputs equal the simulator's "
                     f"({sum(r['verify']['matched'] for r in runs):,} records over {len(runs)} runs, compared by id "
                     f"and bytes; {sum(r['verify']['duplicates'] for r in runs)} duplicates), and the replay's do for "
                     f"every cut.\n")
    if "startup" in results:
        warm = results["startup"]["warm_run"]
        ratios = ", ".join(f"{e['job']['wall_seconds'] / e['simulator']['seconds']:.1f}x on {n}" for n, e in logs.items())
        lines.append(
            f"- Speed: the job took longer than the simulator in wall time ({ratios}). Most of a run is fixed: "
            f"{warm['wall_seconds']:.1f} s on a warm JVM for a 7-line log, of which one batch of each query costs "
            f"{warm['relay_batch_seconds']:.1f} s (Stage R) and {warm['subscriber_batch_seconds']:.1f} s (Stage S) "
            f"however few rows it has. ")
        parts = []
        for n, e in logs.items():
            r0 = e["replay"][0]
            operator = r0["relay"]["seconds"] + r0["subscribers"]["seconds"]
            batch = e["job"]["relay_batch_seconds"] + e["job"]["subscriber_batch_seconds"]
            parts.append(f"{operator:.1f} CPU s on {n} (the job: {e['job']['cpu_seconds']:.1f} CPU s, "
                         f"{batch:.1f} s of batch wall time)")
        cpu = ", ".join(f"{e['job']['cpu_seconds'] / e['simulator']['cpu_seconds']:.1f}x on {n}"
                        for n, e in logs.items())
        cpu = f"more CPU than the simulator: {cpu}"
        core = ", ".join(f"{e['simulator']['cpu_seconds'] / e['simulator']['seconds']:.0%} of a core on {n}"
                          for n, e in logs.items())
        lines.append(
            f"The job also used {cpu}, counting its whole process tree (its CPU includes the JVM's start of each "
            f"query and the broker). The simulator itself got only {core} while it ran, which is how shared "
            "the machine was. ")
        warm_cpu = warm.get("cpu_seconds")
        if warm_cpu is not None:
            marginal = ", ".join(
                f"{e['job']['cpu_seconds'] - warm_cpu:.1f} CPU s on {n} "
                f"({(e['job']['cpu_seconds'] - warm_cpu) / e['simulator']['cpu_seconds']:.1f}x the simulator's)"
                for n, e in logs.items())
            lines.append(f"Less the CPU of the fixed run ({warm_cpu:.1f} s), what the logs themselves cost the job "
                         f"is {marginal}. ")
        lines.append(
            "The operator functions themselves (the replay in one batch, outside Spark, CPU time) account for "
            + " and ".join(parts) + "; the rest is the writing to Kafka and Spark's side (Kafka source, the "
            "transfer to the Python worker, state store commits, MapState round trips), not separated further here.\n")
    from benchmarks.mapstate_bench import median_fits

    costs = median_fits()
    calls = []
    for n, e in logs.items():
        r0, r7 = e["replay"][0], e["replay"][-1]
        seconds = ("" if costs is None else f" (about {state_seconds(r0['relay'], costs) * 1000:.0f} ms and "
                   f"{state_seconds(r0['subscribers'], costs) * 1000:.0f} ms at the measured costs)")
        calls.append(
            f"on {n}, one batch costs {r0['relay']['calls']['mean']:,.0f} calls in Stage R and "
            f"{r0['subscribers']['calls']['mean']:,.0f} in Stage S{seconds}, and calls per input row grow from "
            f"{r0['relay']['calls_per_row']:.1f} to {r7['relay']['calls_per_row']:.1f} (R) and "
            f"{r0['subscribers']['calls_per_row']:.1f} to {r7['subscribers']['calls_per_row']:.1f} (S) as batches "
            f"shrink to {r7['max_offsets_per_trigger'] or 'unlimited'} offsets")
    measured = ("not measured on this machine (run `benchmarks.mapstate_bench`)" if costs is None else
                f"`benchmarks.mapstate_bench`'s median: a read {costs['get'].fixed_seconds * 1000:.2f} ms + "
                f"{costs['get'].bytes_per_second / 1e6:.0f} MB/s, a write {costs['update'].fixed_seconds * 1000:.2f} "
                f"ms + {costs['update'].bytes_per_second / 1e6:.0f} MB/s")
    lines.append(
        f"- MapState (a call's cost as {measured}): " + "; ".join(calls) + ". Every batch loads and writes back "
        "the pages it touches, so small batches pay the same pages again; the small namespaces (a subscriber's "
        "cache, key and reference namespaces per publisher followed) share bundles of up to 64 KiB, so a "
        "subscriber's state is a directory and one or two bundles.\n")
    seams = [f"{e['seam']['all']['mean'] / 1024:.1f} KiB on {n} (p95 {e['seam']['all']['p95'] / 1024:.1f}, "
             f"{e['seam']['all']['total'] / 2**20:.1f} MiB in all for a {e['bytes'] / 2**20:.1f} MiB log)"
             for n, e in logs.items() if "seam" in e]
    if seams:
        lines.append("- Seam: a view averages " + " and ".join(seams) + "; nearly all of it is trie nodes, as raw "
                     "bytes.\n")
    return "".join(lines)


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    logs = results["logs"]
    names = list(logs)
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.6))
    left, middle, right = axes
    if "startup" in results:
        x = range(len(names))
        sim = [logs[n]["input_records"] / logs[n]["simulator"]["seconds"] for n in names]
        job = [logs[n]["input_records"] / logs[n]["job"]["wall_seconds"] for n in names]
        warm = results["startup"]["warm_run"]["wall_seconds"]
        net = [logs[n]["input_records"] / (logs[n]["job"]["wall_seconds"] - warm)
               if logs[n]["job"]["wall_seconds"] - warm >= 0.25 * logs[n]["job"]["wall_seconds"] else 0.0
               for n in names]
        width = 0.27
        left.bar([i - width for i in x], sim, width, label="simulator")
        left.bar(list(x), job, width, label="job (wall)")
        left.bar([i + width for i in x], net, width, label="job, net of the fixed cost of a run (none: in the noise)")
        left.set_xticks(list(x), names)
        left.set_yscale("log")
        left.set_ylim(top=max(sim + job + net) * 8)  # room for the legend above the bars
        left.set_ylabel("input records / s")
        left.set_title("throughput, one run each", fontsize=9)
        left.legend(fontsize=8)
        left.grid(alpha=0.3, axis="y")
    for name, marker in zip(names, "os^v", strict=False):
        for key, style in (("relay", "-"), ("subscribers", "--")):
            cuts = [str(r["max_offsets_per_trigger"] or "unlimited") for r in logs[name]["replay"]]
            middle.plot(cuts, [r[key]["calls"]["mean"] for r in logs[name]["replay"]], marker + style,
                        label=f"{name}, stage {'R' if key == 'relay' else 'S'}")
    middle.set_xlabel("maxOffsetsPerTrigger")
    middle.set_ylabel("MapState calls per micro-batch (mean)")
    middle.set_title("state calls per batch (replay over a counting MapState)", fontsize=9)
    middle.legend(fontsize=8)
    middle.grid(alpha=0.3)
    data = []
    labels = []
    for name in names:
        seam = logs[name].get("seam")
        if seam:
            for sub, st in seam["per_subscriber"].items():
                data.append((st["mean"] / 1024, st["p95"] / 1024, st["max"] / 1024))
                labels.append(f"{name}\n{sub}")
    if data:
        x = range(len(data))
        right.bar([i - 0.27 for i in x], [d[0] for d in data], 0.27, label="mean")
        right.bar(list(x), [d[1] for d in data], 0.27, label="p95")
        right.bar([i + 0.27 for i in x], [d[2] for d in data], 0.27, label="max")
        right.set_xticks(list(x), labels, fontsize=7)
        right.set_ylabel("KiB per view (one subscriber, one block)")
        right.set_title("bytes on the seam (relay-views records)", fontsize=9)
        right.legend(fontsize=8)
        right.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def update_section(doc: Path, section: str) -> None:
    """Replace only this benchmark's section of docs/benchmarks.md (the others belong to others)."""
    text = doc.read_text() if doc.exists() else "# Benchmarks\n\n"
    start = text.find(SECTION)
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        end = text.find("\n## ", start + 1)
        text = text[:start] + section + ("" if end < 0 else "\n" + text[end + 1:])
    doc.write_text(text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update-docs", action="store_true",
                        help="write benchmarks/results/pipeline.json, docs/img/pipeline.png and the docs section")
    parser.add_argument("--skip-job", action="store_true", help="only the simulator and the MapState replay")
    parser.add_argument("--log", action="append", choices=LOG_NAMES + EXTRA_LOGS, dest="logs",
                        help=f"measure only this log (repeatable; default: {', '.join(LOG_NAMES)})")
    parser.add_argument("--quick", action="store_true",
                        help="no MapState replay and no maxOffsetsPerTrigger run: print only the target-2 table")
    parser.add_argument("--spark-jit", choices=JIT_MODES, default=Settings.spark_jit,
                        help="how Spark's JVM compiles (the job's spark_jit setting; default c1, as the job)")
    parser.add_argument("--state-reopen", choices=STATE_REOPEN_MODES, default=Settings.state_reopen,
                        help="the job's checkpoint remedy (the state_reopen setting; default as the job)")
    parser.add_argument("--runs", type=int, default=1, metavar="N",
                        help="measure each log N times beside the simulator, available-now and live (default 1)")
    parser.add_argument("--warmup", type=int, default=WARMUP_PAIRS, metavar="N",
                        help=f"before those, N pairs per log on the same JVM, reported on their own row: the JVM "
                             f"still compiling the job's code (default {WARMUP_PAIRS})")
    parser.add_argument("--keep-scratch", action="store_true", help="keep the broker, checkpoints and Spark log")
    parser.add_argument("--from-results", action="store_true",
                        help="do not measure: render the section (and plot) again from benchmarks/results/pipeline.json")
    args = parser.parse_args(argv)
    if args.from_results:
        results = json.loads(RESULTS.read_text())
        section = markdown(results)
        console.print(section, markup=False, highlight=False)
        if args.update_docs:
            plot(results, PLOT)
            update_section(DOC, section)
        return 0
    scratch = Path(tempfile.mkdtemp(prefix="pipeline-bench-"))
    os.environ["PUBSUB_RUNTIME_DIR"] = str(scratch / "runtime")  # Spark's log and anything else: not .runtime/
    ok = False
    try:
        results = run(scratch, skip_job=args.skip_job, names=args.logs or LOG_NAMES, cuts=() if args.quick else CUTS,
                      spark_jit=args.spark_jit, runs=max(1, args.runs), warmup=max(0, args.warmup),
                      state_reopen=args.state_reopen)
        ok = all(e.get(run, {}).get("verify", {}).get("ok", True) for e in results["logs"].values()
                 for run in ("job", "job_cut")) and all(
            r["job_ok"] and r["live_ok"] for e in results["logs"].values()
            for r in (*e.get("warmup_runs", ()), *e.get("runs", ()))) and all(
            r["outputs_equal_simulator"] for e in results["logs"].values() for r in e["replay"])
    finally:
        if args.keep_scratch or not ok:
            console.print(f"scratch kept in {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    if args.update_docs:  # the figures first, so a failure below loses nothing (re-render: --from-results)
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        (RESULTS.with_name("pipeline_quick.json") if args.quick else RESULTS).write_text(json.dumps(results, indent=1, default=str) + "\n")
    section = target_table(results) if args.quick else markdown(results)
    console.print(section, markup=False, highlight=False)
    if args.update_docs and not args.quick:
        plot(results, PLOT)
        update_section(DOC, section)
        console.print(f"wrote {RESULTS.relative_to(ROOT)}, {PLOT.relative_to(ROOT)}, {DOC.relative_to(ROOT)}")
    if not ok:
        console.print("[bold red]some outputs differ from the simulator's: see the tables[/]")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
