"""Pipeline benchmark: the Spark job beside the one-process simulator, on the same logs in the same run.

Run from the repository root (4 to 7 minutes on 2 cores, depending on what else runs):

    .venv/bin/python -m benchmarks.pipeline_bench --runs 3 --warmup 0   # writes benchmarks/results/pipeline.json
                                                                        # and docs/img/pipeline.png
    .venv/bin/python -m benchmarks.render pipeline                      # its tables in docs/benchmarks.md

What it measures, per log (examples/busy.jsonl, a seeded workload of more than 10,000 publishes and the standard
workload of benchmarks/simulator_bench.py):

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
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from benchmarks import common
from benchmarks.render import pipeline as pipeline_table
from producers.workload import WorkloadSpec, generate
from settings.settings import JIT_MODES, STAGES_MODES, STATE_REOPEN_MODES, Settings
from streaming.spark_session import jit_seconds

ROOT = Path(__file__).resolve().parents[1]
PLOT = ROOT / "docs" / "img" / "pipeline.png"
RESULTS = ROOT / "benchmarks" / "results" / "pipeline.json"
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
STANDARD = WorkloadSpec(
    seed=3, blocks=100, publishers=20, system_publishers=4, subscribers=6, keys=20, subscribed_keys=40,
    update_rate=0.5, bad_records=0.01,
)
"""The standard workload: the log benchmarks/simulator_bench.py measures (3,318 lines, 23,876 publishes)."""
STANDARD_COMMAND = (
    "pubsub workload -o w.jsonl --seed 3 --blocks 100 --publishers 20 --system-publishers 4 --subscribers 6 "
    "--keys 20 --subscribed-keys 40 --update-rate 0.5 --bad-records 0.01"
)
STANDARD_LONG = dataclasses.replace(STANDARD, blocks=500)
"""The same workload five times as long: the job's fixed cost of a run (about 4 s) is twice the simulator's whole
run on the standard log, so its throughput shows in wall time only on a longer log."""
STANDARD_LONG_COMMAND = STANDARD_COMMAND.replace("--blocks 100", "--blocks 500")
LOG_NAMES = ("busy.jsonl", "workload", "standard")
"""The logs a run measures by default."""
EXTRA_LOGS = ("standard-long",)
"""Logs measured only when named (``--log``)."""
CUTS: tuple[int | None, ...] = (None, 100, 7)
"""maxOffsetsPerTrigger values of the MapState replay (None: unlimited, one batch per query)."""
JOB_CUT = ("busy.jsonl", 100)
"""One more job run with maxOffsetsPerTrigger, to see a first batch beside later ones of the same query."""
VIEWS_PARTITIONS = 2
REPLAY_KEY = b"b" * 32
WARMUP_PAIRS = 2
"""Pairs per log run before the measured ones. After the first available-now run and two pairs Spark's JVM has
settled: on the standard log its compile time was 2.4-2.5 s in the first live run, 1.0-1.4 s in the second and
0.6-0.8 s a run after (``jstat -compiler``)."""
LIVE_READY_SECONDS = 60.0
"""How long the live run waits for both queries' first (empty) batch before it produces the log anyway."""

console = Console()


# --------------------------------------------------------------------------------------------------- inputs
def load_logs(names: Sequence[str] = LOG_NAMES) -> list[tuple[str, str, list[bytes]]]:
    """(name, how it was made, lines) of the measured logs named (``LOG_NAMES``: all of them)."""
    makers: dict[str, tuple[str, Callable[[], list[bytes]]]] = {
        "busy.jsonl": ("examples/busy.jsonl", lambda: (EXAMPLES / "busy.jsonl").read_bytes().splitlines()),
        "workload": (WORKLOAD_COMMAND, lambda: [line.encode() for block in generate(WORKLOAD) for line in block]),
        "standard": (STANDARD_COMMAND, lambda: [line.encode() for block in generate(STANDARD) for line in block]),
        "standard-long": (STANDARD_LONG_COMMAND,
                         lambda: [line.encode() for block in generate(STANDARD_LONG) for line in block]),
    }
    return [(name, makers[name][0], makers[name][1]()) for name in names]


def log_facts(lines: Sequence[bytes]) -> dict[str, Any]:
    """Input records (what `pubsub produce` sends to input topics) and the log's size."""
    from pubsub_core.stages import LineParser, OutputRecord

    router = LineParser("polkadot")
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
def descendants_cpu() -> dict[int, tuple[float, str]]:
    """Every live descendant of this process: pid -> (CPU seconds so far, with the children it reaped; its command
    line), read from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
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
    found: dict[int, tuple[float, str]] = {}
    stack = list(children[os.getpid()])
    while stack:
        pid = stack.pop()
        found[pid] = info.get(pid, (0.0, ""))
        stack += children[pid]
    return found


def cpu_by_part() -> dict[str, float]:
    """CPU seconds so far of each live descendant (with what it reaped), by part: ``broker`` (the embedded Kafka
    JVM), ``spark-jvm``, ``python-workers`` (pyspark's daemon and workers, and the driver-side schema runners),
    ``other``; this process itself is ``driver``. Differences between two calls say where a run's CPU went."""
    own = os.times()
    parts: dict[str, float] = defaultdict(float)
    parts["driver"] = own.user + own.system
    for seconds, command in descendants_cpu().values():
        part = ("broker" if "kafka.Kafka" in command else "spark-jvm" if "java" in command.split(" ")[0]
                else "python-workers" if "pyspark" in command or "python" in command.split(" ")[0] else "other")
        parts[part] += seconds
    return dict(parts)


def tree_cpu_seconds() -> float:
    """CPU seconds (user + system) used so far by this process, its reaped children, and every live descendant
    with the children each of those reaped: the driver, Spark's JVM, its Python workers and the embedded
    broker. On a shared machine this is the cost that other work does not inflate, unlike wall time."""
    own = os.times()
    own_seconds = own.user + own.system + own.children_user + own.children_system
    return own_seconds + sum(seconds for seconds, _ in descendants_cpu().values())


def run_job_on(name: str, lines: Sequence[bytes], settings: Any, scratch: Path,
               log: Callable[[str], None]) -> dict[str, Any]:
    """Produce ``lines`` to fresh topics, drain them with the job from a fresh checkpoint, check the outputs."""
    from producers.transport.kafka_io import read_topic
    from pubsub_core.stages.topics import VIEWS, topic
    from streaming.job import BatchReport, run_job
    from supervise.verify import check_outputs, produce_log, summary_counts

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
    """The live job (its queries running, the default trigger and partitions) started on fresh empty topics; once
    both queries have run their first batch, ``lines`` are produced. End to end is the first record produced to the
    last output record written (Kafka's timestamps, the writer's clock), as a user of the running job sees it; the
    run stops once every output topic holds the simulator's count (``sizes``: ``run_simulator``'s
    ``outputs_by_topic``), then the outputs are checked."""
    from producers.transport.kafka_io import produce, read_topic, wait_for_sizes
    from pubsub_core.stages.topics import OUTPUTS, topic
    from streaming.job import BatchReport, run_job
    from streaming.pipeline import QueryNames
    from streaming.stage_layout import FUSED, resolve_stages
    from supervise.verify import check_outputs, fresh_topics, summary_counts

    records, realms = fresh_topics(lines, settings, reset_topics=True)
    job_settings = dataclasses.replace(settings, checkpoint_dir=scratch / f"checkpoint-{name}", realms=",".join(realms))
    fused = resolve_stages(job_settings.stages, None, job_settings.checkpoint_dir) == FUSED  # a fresh checkpoint
    names = {QueryNames().relay} if fused else {QueryNames().relay, QueryNames().subscribers}
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
        "trigger_seconds": job_settings.trigger_seconds,
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
    from pubsub_core.stages.seam import split_record

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
    """The log's lines as the Kafka records `pubsub produce` writes (``pubsub_core.stages.edge.ConsumerRecord``s, partition
    0, at their offsets), and the output lines of those it refuses."""
    from pubsub_core.stages import LineParser, OutputRecord, ProtocolConfig
    from pubsub_core.stages.edge import ConsumerRecord

    router = LineParser(ProtocolConfig().default_realm)
    rows: list[ConsumerRecord] = []
    refused: Counter[str] = Counter()
    for line in lines:
        if not line.strip():
            continue
        routed = router.route(line.decode())
        if isinstance(routed, OutputRecord):
            refused[routed.to_line()] += 1
            continue
        record, offset = routed
        rows.append(ConsumerRecord(record.topic, 0, offset, record.key, record.value))
    return rows, refused


def replay(lines: Sequence[bytes], limit: int | None, expected: Counter[str]) -> dict[str, Any]:
    """The log through relay_rows / subscriber_rows over counting MapStates, cut as maxOffsetsPerTrigger=limit."""
    from pubsub_core.stages import ProtocolConfig
    from pubsub_core.stages.edge import ConsumerRecord
    from state.spark import SparkStateBackend
    from streaming.operators import page_backend, relay_rows, subscriber_rows

    config = ProtocolConfig()
    rows, out_lines = kafka_rows(lines)

    def line_of(row: Any) -> str:
        return json.dumps({"id": row.id, "key": (row.key or b"").decode(), "topic": row.topic,
                           "value": json.loads(row.value)},
                          sort_keys=True, separators=(",", ":"))

    def run_stage(batches: list[list[ConsumerRecord]], group: Callable[[ConsumerRecord], tuple[str, ...]],
                  call: Callable[[tuple[str, ...], list[ConsumerRecord], SparkStateBackend], list[Any]],
                  states: dict[tuple[str, ...], CountingMapState]) -> tuple[list[dict[str, float]], list[Any]]:
        per_batch, produced = [], []
        for batch in batches:
            groups: dict[tuple[str, ...], list[ConsumerRecord]] = defaultdict(list)
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
        views.append(ConsumerRecord(r.topic, partition, next_offset[(r.topic, partition)], r.key, r.value))
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
    """The shared machine record, with the Spark and Java versions the job ran on."""
    import subprocess

    from streaming.spark_session import pyspark_version

    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr.splitlines()
    return {**common.machine(), "pyspark": pyspark_version(), "java": java[0] if java else "?"}


# ------------------------------------------------------------------------------------------------------ run
def run(scratch: Path, skip_job: bool = False, names: Sequence[str] = LOG_NAMES,
        cuts: Sequence[int | None] = CUTS, spark_jit: str = Settings.spark_jit, runs: int = 1,
        warmup: int = 0, state_reopen: str = Settings.state_reopen, stages: str = Settings.stages) -> dict[str, Any]:
    logs = load_logs(names)
    steps = len(logs) * (2 + len(cuts)) + (0 if skip_job else 5 + len(logs) * (2 * (runs + warmup) - 1))
    results: dict[str, Any] = {"machine": machine(), "spark_jit": spark_jit, "state_reopen": state_reopen,
                               "stages": stages, "runs": runs, "warmup": warmup, "workload_spec": dataclasses.asdict(WORKLOAD),
                               "standard_spec": dataclasses.asdict(STANDARD), "cuts": list(cuts), "logs": {}}
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
                from settings.paths import runtime_dir
                from settings.settings import load_settings
                from streaming.spark_session import build_spark
                from supervise.kafka_broker import EmbeddedKafka

                step("starting the embedded Kafka broker")
                broker = EmbeddedKafka(home=scratch / "kafka")
                t0 = time.perf_counter()
                info = broker.start()
                broker_seconds = time.perf_counter() - t0
                settings = load_settings(overrides={"kafka_bootstrap": info.bootstrap, "spark_master": "local[2]",
                                                    "views_partitions": VIEWS_PARTITIONS, "spark_jit": spark_jit,
                                                    "state_reopen": state_reopen, "stages": stages,
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
    common.save_plot(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None,
                        help=f"where the results go (default: {RESULTS.relative_to(ROOT)}, and the plot "
                             f"{PLOT.relative_to(ROOT)})")
    parser.add_argument("--skip-job", action="store_true", help="only the simulator and the MapState replay")
    parser.add_argument("--log", action="append", choices=LOG_NAMES + EXTRA_LOGS, dest="logs",
                        help=f"measure only this log (repeatable; default: {', '.join(LOG_NAMES)})")
    parser.add_argument("--quick", action="store_true", help="no MapState replay and no maxOffsetsPerTrigger run")
    parser.add_argument("--spark-jit", choices=JIT_MODES, default=Settings.spark_jit,
                        help="how Spark's JVM compiles (the job's spark_jit setting; default c1, as the job)")
    parser.add_argument("--state-reopen", choices=STATE_REOPEN_MODES, default=Settings.state_reopen,
                        help="the job's checkpoint remedy (the state_reopen setting; default as the job)")
    parser.add_argument("--stages", choices=STAGES_MODES, default=Settings.stages,
                        help="the job's stages (the stages setting: fused, split, or auto: a new checkpoint's "
                             "default)")
    parser.add_argument("--runs", type=int, default=1, metavar="N",
                        help="measure each log N times beside the simulator, available-now and live (default 1)")
    parser.add_argument("--warmup", type=int, default=WARMUP_PAIRS, metavar="N",
                        help=f"before those, N pairs per log on the same JVM, reported on their own row: the JVM "
                             f"still compiling the job's code (default {WARMUP_PAIRS})")
    parser.add_argument("--keep-scratch", action="store_true", help="keep the broker, checkpoints and Spark log")
    args = parser.parse_args(argv)
    common.stop_cleanly_on_sigterm()
    scratch = Path(tempfile.mkdtemp(prefix="pipeline-bench-"))
    os.environ["PUBSUB_RUNTIME_DIR"] = str(scratch / "runtime")  # Spark's log and anything else: not .runtime/
    ok = False
    try:
        results = run(scratch, skip_job=args.skip_job, names=args.logs or LOG_NAMES, cuts=() if args.quick else CUTS,
                      spark_jit=args.spark_jit, runs=max(1, args.runs), warmup=max(0, args.warmup),
                      state_reopen=args.state_reopen, stages=args.stages)
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
    path = common.write_result("pipeline", results, module="benchmarks.pipeline_bench", argv=argv, path=args.json)
    console.print(pipeline_table(common.read_result("pipeline", path)), markup=False, highlight=False)
    if args.json is None and not args.quick:
        plot(results, PLOT)
    console.print(f"wrote {path}")
    if not ok:
        console.print("[bold red]some outputs differ from the simulator's: see the tables[/]")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
