"""The streaming job: every realm's input topics -> Stage R -> seam -> Stage S -> output topics (split), or Stage R
and Stage S in one query (fused: ``streaming.stage_layout``).

Run it with `pubsub job`, `python -m streaming.job`, or spark-submit (this file is the application). With
--available-now it drains every input topic (split: Stage R, then Stage S over the views it wrote) and stops;
otherwise the queries run one micro-batch per trigger interval until SIGTERM/SIGINT, which stop them after the batch
in flight (at most ``STOP_GRACE_SECONDS``). The checkpoints make a restart, even after SIGKILL, continue where the
last committed batches ended.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from producers.transport.topics import TopicError, admin_client, ensure_realm_topics, is_serving
from pubsub_core.stages.records import OutputRecord
from pubsub_core.stages.stall import Declared, WaitingStatus, declare
from settings.job_flags import add_job_arguments, settings_from_args
from settings.checkpoint_location import FUSED_FOLDER, CheckpointLocation, HadoopPath
from settings.paths import runtime_dir
from settings.protocol import load_protocol_config
from settings.settings import Settings
from state.native import build_name
from streaming.checkpoint_files import check_reachable, space_used
from streaming.checkpoint_lock import CheckpointLock
from streaming.descriptors import DescriptorUse, DescriptorWatch
from streaming.errors import CheckpointDiskFull, KafkaUnavailable, QueryFailed
from streaming.health import declared_stalls, health_publisher
from streaming.lanes import SHUFFLE_PARTITIONS, recorded_partitions
from streaming.metrics import JobMetrics, partition_lag
from streaming.operators import parse_waiting
from streaming.spans import OperatorSpans
from streaming.pipeline import (
    fused_query,
    relay_query,
    seam_key,
    served_realms,
    subscriber_query,
)
from streaming.stage_layout import FUSED, checkpoint_stages, new_checkpoint_partitions, resolve_stages
from streaming.startup import StartupLog, batch_end
from streaming.stuck import StuckBatchWatch

if TYPE_CHECKING:
    from pyspark.sql.streaming import StreamingQuery

__all__ = ["BATCH_LINE", "BATCH_LOG_BYTES", "BatchReport", "JobSummary", "STOP_GRACE_SECONDS", "disk_full", "ensure_outputs",
           "finish_batches", "log_batch", "main", "new_progress", "ran", "run_job", "RealmWaits", "unread_records"]

BATCH_LINE = re.compile(r"^(?P<query>relay|subscribers) batch (?P<batch>\d+): ", re.MULTILINE)
"""A batch's line in the job's output (``BatchReport.line``), for the tools that count them."""

_LOG = logging.getLogger("streaming.job")
"""The driver's log: a realm that stalls (WARNING) and moves again (INFO), on stderr unless the application
configures the logger itself."""


def _log_to_stderr() -> None:
    """Give the driver's log a stderr handler (``LEVEL message``) unless it, or the root logger, has one."""
    if _LOG.handlers or logging.getLogger().handlers:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    _LOG.addHandler(handler)
    _LOG.setLevel(logging.INFO)

STOP_GRACE_SECONDS = 10.0
"""How long a stop waits for each query's batch in flight to commit before it interrupts the batch (which a restart
then runs again)."""


@dataclass(frozen=True)
class BatchReport:
    """One micro-batch of one query, as the progress line shows it."""

    query: str
    batch: int
    rows_in: int
    records_out: dict[str, int]
    heights: dict[str, int]
    lag: int | None
    seconds: float
    phases: dict[str, float] = field(default_factory=dict)
    """Seconds per phase of the batch as Spark's progress names them (``durationMs``: latestOffset,
    queryPlanning, addBatch, walCommit, commitOffsets, ...), and ``stateCommit`` (its state stores' commit)."""
    waiting: dict[str, WaitingStatus | None] = field(default_factory=dict)
    """Per realm Stage R ran for in this batch: its first waiting block after the batch (None: no block waits)."""
    waiting_seconds: dict[str, float] = field(default_factory=dict)
    """Per realm with a waiting block: for how long the driver has seen that block waiting (its clock)."""
    records_by_topic: dict[str, int] = field(default_factory=dict)
    """Records written per output topic (full name), for the metrics."""
    unread: dict[str, int] = field(default_factory=dict)
    """Per input topic the batch read from: records left between its end offsets and the latest offsets seen at
    that batch (0: read to the end), summed over the topic's partitions."""
    spans: tuple[OperatorSpans, ...] = ()
    """Where each operator call of the batch spent its time (``streaming.spans``)."""

    def unread_of(self, realm: str, status: WaitingStatus) -> int:
        """Records unread, at this batch, on the input topics of the streams ``status``'s block still misses."""
        return sum(self.unread.get(f"{realm}.{stream}", 0) for stream in status.streams)

    def line(self) -> str:
        out = " ".join(f"{kind} {n}" for kind, n in self.records_out.items() if n) or "nothing"
        text = f"{self.query} batch {self.batch}: {self.rows_in} rows in -> {out}"
        if self.heights:
            text += " | relay height " + ", ".join(f"{realm} {n}" for realm, n in sorted(self.heights.items()))
        for realm, status in sorted(self.waiting.items()):
            if status is not None:
                text += f" | {realm} {status.line()} for {self.waiting_seconds.get(realm, 0.0):.0f}s"
                if not status.stalled and (unread := self.unread_of(realm, status)):
                    text += f" (catching up: {unread} records unread on its input topics)"
        if self.lag is not None:
            text += f" | lag {self.lag}"
        slow = sorted(((s, name) for name, s in self.phases.items() if s >= SHOWN_PHASE_SECONDS), reverse=True)
        if slow:
            text += " | " + ", ".join(f"{name} {s:.1f}s" for s, name in slow)
        return text + f" | {self.seconds:.1f}s"


SHOWN_PHASE_SECONDS = 0.1
"""A batch's line names the phases that took at least this long, longest first (e.g. ``addBatch 0.6s,
queryPlanning 0.1s``): where a slow batch went, without Spark's UI."""


@dataclass
class JobSummary:
    """What one run of the job did."""

    batches: int = 0
    input_rows: int = 0
    records_out: dict[str, int] = field(default_factory=dict)
    heights: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    waiting: dict[str, WaitingStatus] = field(default_factory=dict)
    """Per realm whose Stage R has a waiting block: the latest status the job saw (the metrics read it)."""
    reopens: int = 0
    """Restarts of the queries on their checkpoints (``state_reopen = "periodic"``)."""
    stopped_by: str | None = None
    """The signal that stopped the run (``SIGINT``, ``SIGTERM``); None when it ended by itself or was stopped by
    its caller's ``stop`` event or ``run_seconds``."""


def _report(query: str, progress: dict[str, Any]) -> BatchReport:
    observed: Any = (progress.get("observedMetrics") or {}).get(query)
    metrics: dict[str, Any] = observed.asDict() if hasattr(observed, "asDict") else dict(observed or {})
    waiting = dict(parse_waiting(str(key)) for key in metrics.pop("waiting", None) or [])
    spans = tuple(OperatorSpans.from_json(str(text)) for text in metrics.pop("spans", None) or [])
    by_topic: dict[str, int] = {}
    for entry in metrics.pop("by_topic", None) or []:
        name, _, number = str(entry).rpartition("=")
        if number.isdigit():
            by_topic[name] = by_topic.get(name, 0) + int(number)
    heights: dict[str, int] = {}
    for entry in metrics.pop("heights", None) or []:
        realm, _, number = str(entry).rpartition(":")
        if number.isdigit():
            heights[realm] = max(heights.get(realm, 0), int(number))
    lags = [int(m["maxOffsetsBehindLatest"]) for s in progress.get("sources", [])
            if (m := s.get("metrics") or {}).get("maxOffsetsBehindLatest") not in (None, "")]
    phases = {name: int(ms) / 1000 for name, ms in (progress.get("durationMs") or {}).items()}
    duration = phases.pop("triggerExecution", 0.0)
    commits = [int(op.get("commitTimeMs") or 0) for op in progress.get("stateOperators") or []]
    if commits:
        phases["stateCommit"] = sum(commits) / 1000
    return BatchReport(query, int(progress["batchId"]), int(progress["numInputRows"]),
                       {k: int(v) for k, v in metrics.items()}, heights, max(lags) if lags else None, duration,
                       phases, waiting, records_by_topic=by_topic, unread=unread_records(progress), spans=spans)


def unread_records(progress: dict[str, Any]) -> dict[str, int]:
    """Per topic of the batch's sources: the records between the batch's end offsets and the latest offsets the
    source saw when it planned the batch (``latestOffset``), summed over partitions (``partition_lag``)."""
    unread: dict[str, int] = {}
    for (topic, _), lag in partition_lag(progress.get("sources") or []).items():
        unread[topic] = unread.get(topic, 0) + lag
    return unread


BATCH_LOG_BYTES = 64 * 2**20
"""The batch log's size at which it moves to ``<name>.1`` (replacing the one before) and starts again: a job that
keeps ``batch_log`` on holds at most twice this, however long it runs."""


def log_batch(path: Path, query: str, progress: dict[str, Any], report: BatchReport,
              limit: int = BATCH_LOG_BYTES) -> None:
    """Append one JSON line for a batch to ``path`` (``batch_log``): Spark's progress entry without its observed
    metrics (``timestamp``, the trigger's start; ``durationMs``; the sources' offsets; the state operators'), and
    the operator calls' spans. A log past ``limit`` bytes moves to ``<name>.1`` first."""
    entry = {key: value for key, value in progress.items() if key != "observedMetrics"}
    line = json.dumps({"query": query, "progress": entry, "spans": [json.loads(s.to_json()) for s in report.spans]},
                      sort_keys=True, default=str)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.stat().st_size > limit:
        os.replace(path, path.with_name(path.name + ".1"))
    with open(path, "a", encoding="utf-8") as out:
        out.write(line + "\n")


def ensure_outputs(settings: Settings, realms: Sequence[str], admin: AdminClient | None = None) -> None:
    """Create each served realm's output and seam topics (``views_partitions`` partitions, topic limits set)."""
    for realm in realms:
        ensure_realm_topics(settings, realm, inputs=False, partitions=settings.views_partitions, admin=admin)


def _realms_now(settings: Settings, admin: AdminClient) -> list[str]:
    return served_realms(admin.list_topics(timeout=10).topics, settings)


class _Follower:
    """Collects each query's new progress entries into reports and the summary."""

    def __init__(self, summary: JobSummary, on_batch: Callable[[BatchReport], None] | None,
                 metrics: JobMetrics | None = None, waits: RealmWaits | None = None,
                 batch_log: Path | None = None, startup: StartupLog | None = None) -> None:
        self.summary = summary
        self.startup = startup
        self.on_batch = on_batch
        self.metrics = metrics
        self.seen: dict[str, int] = {}
        self.waits = waits or RealmWaits()
        self.batch_log = batch_log

    def poll(self, query: StreamingQuery, name: str, every_batch: bool) -> None:
        for progress in new_progress(query, self.seen.get(name, -1)):
            self.seen[name] = progress["batchId"]
            if self.startup is not None:
                self.startup.phase(f"{name} first batch", batch_end(progress), _first_batch_detail(progress))
            report = self.waits.seen(_report(name, progress), self.summary)
            if self.batch_log is not None:
                log_batch(self.batch_log, name, progress, report)
            if self.metrics is not None:
                self.metrics.observe(name, progress, report.heights, report.records_by_topic)
                for realm, status in report.waiting.items():
                    self.metrics.waiting(realm, status, report.waiting_seconds.get(realm, 0.0))
            if not (report.rows_in or every_batch):
                continue
            self.summary.batches += 1
            self.summary.input_rows += report.rows_in if name == "relay" else 0
            for kind, n in report.records_out.items():
                self.summary.records_out[kind] = self.summary.records_out.get(kind, 0) + n
            for realm, n in report.heights.items():
                self.summary.heights[realm] = max(self.summary.heights.get(realm, 0), n)
            if self.on_batch:
                self.on_batch(report)


def _first_batch_detail(progress: dict[str, Any]) -> str:
    """A start-up line's detail for a query's first batch: its id, rows in and the phases Spark timed."""
    phases = ", ".join(f"{name} {int(ms) / 1000:.2f}s" for name, ms in (progress.get("durationMs") or {}).items()
                       if name != "triggerExecution")
    return f"(batch {progress['batchId']}, {progress['numInputRows']} rows in: {phases})"


class RealmWaits:
    """The job's stall declarations and what it shows of waiting realms.

    After each relay batch, per realm Stage R ran for: ``stall.declare`` with the batch's reading (the input
    topics of the streams the first waiting block misses read to the end offsets seen at that batch), so a block
    that waits while its records sit unread is shown ``waiting``, never ``STALLED``; the ``Stalled`` and
    ``Resumed`` records it makes go to ``publish`` (the realm's ``health`` topic). Also since when (the driver's
    clock) each realm's first waiting block has waited, and the log lines: a WARNING when a realm is declared
    stalled, an INFO when it moves again. ``declared``: what earlier runs declared (``declared_stalls``)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, after_blocks: int = 3,
                 publish: Callable[[list[OutputRecord]], None] | None = None,
                 declared: dict[str, Declared] | None = None) -> None:
        self.clock = clock
        self.after_blocks = after_blocks
        self.publish = publish
        self.declared: dict[str, Declared] = dict(declared or {})
        self.since: dict[str, tuple[str, float]] = {}
        """realm -> (the waiting block's record, when the driver first saw it waiting)."""
        self.warned: dict[str, str] = {}

    def _declare(self, report: BatchReport) -> BatchReport:
        """``report`` with each status's ``stalled`` as declared (``stall.declare``); publishes the records."""
        records: list[OutputRecord] = []
        waiting: dict[str, WaitingStatus | None] = {}
        for realm, status in report.waiting.items():
            caught_up = status is not None and report.unread_of(realm, status) == 0
            out, now = declare(realm, status, self.declared.get(realm), self.after_blocks, caught_up)
            records += out
            if now is None:
                self.declared.pop(realm, None)
            else:
                self.declared[realm] = now
            waiting[realm] = None if status is None else replace(
                status, stalled=now is not None and now.block_record == status.block_record)
        if records and self.publish is not None:
            self.publish(records)
        return replace(report, waiting=waiting)

    def seen(self, report: BatchReport, summary: JobSummary) -> BatchReport:
        """``report`` with each realm's declaration and how long its block has waited; updates
        ``summary.waiting``; writes the health records; logs."""
        report = self._declare(report)
        now = self.clock()
        seconds: dict[str, float] = {}
        for realm, status in report.waiting.items():
            if status is None:
                summary.waiting.pop(realm, None)
                self.since.pop(realm, None)
                if self.warned.pop(realm, None) is not None:
                    _LOG.info("realm %s moves again (relay height %s)", realm, report.heights.get(realm, "?"))
                continue
            summary.waiting[realm] = status
            if self.since.get(realm, ("", 0.0))[0] != status.block_record:
                self.since[realm] = (status.block_record, now)
            seconds[realm] = now - self.since[realm][1]
            if status.stalled and self.warned.get(realm) != status.block_record:
                self.warned[realm] = status.block_record
                _LOG.warning("realm %s %s (see docs/operations.md, \"A stalled realm\")", realm, status.line())
        return replace(report, waiting_seconds=seconds) if seconds else report


def ran(progress: Any) -> bool:
    """Whether a progress entry is a batch that ran: a trigger that finds no data adds one every
    ``noDataProgressEventInterval`` (10 s) too, with the next batch's id and no ``addBatch`` phase."""
    return "addBatch" in (progress["durationMs"] or {})


def new_progress(query: StreamingQuery, after: int) -> list[Any]:
    """``query``'s progress entries of the batches that ran after batch ``after``, oldest first.

    From ``lastProgress`` alone when at most one batch is new, as between two polls of a running job: pyspark's
    ``recentProgress`` fetches and parses every entry Spark keeps (up to ``numRecentProgressUpdates``, 100) over
    py4j at each call, tens of milliseconds once a query has run 100 batches (``benchmarks/progress_bench.py``),
    which the job would pay for each query twice a second."""
    last = query.lastProgress
    if last is None:
        return []
    newest = last["batchId"] if ran(last) else last["batchId"] - 1
    if newest <= after:
        return []
    if newest == after + 1 and ran(last):
        return [last]  # entries between it and batch `after` can only be idle ones
    return [progress for progress in query.recentProgress if ran(progress) and progress["batchId"] > after]


def run_job(
    settings: Settings,
    available_now: bool = False,
    run_seconds: float | None = None,
    on_batch: Callable[[BatchReport], None] | None = None,
    stop: threading.Event | None = None,
    say: Callable[[str], None] | None = None,
) -> JobSummary:
    """Check Kafka answers, ensure the realms' topics, start Spark and both queries, run until done, stopped
    (SIGTERM, SIGINT, or ``stop`` set by another thread: a caller that runs the live job in-process) or
    ``run_seconds``. The Kafka cluster is the configured one (`pubsub job` starts the embedded broker when none is).
    With ``metrics_port`` set, serves the metrics (``streaming.metrics``) meanwhile; ``say`` gets a line for the
    endpoint and for each periodic restart of the queries. The job holds its checkpoint's lock while it runs
    (``streaming.checkpoint_lock``): refused at once while another job on this host holds it, or, with
    ``standby``, waited for once Spark's session is up."""
    lock = CheckpointLock(runtime_dir() / "locks", settings.checkpoint_dir)
    if not settings.standby:
        lock.acquire()  # before Spark starts: a second job on the checkpoint is refused in a second
    try:
        return _run_holding(settings, lock, available_now, run_seconds, on_batch, stop, say)
    finally:
        lock.release()


def _run_holding(
    settings: Settings,
    lock: CheckpointLock,
    available_now: bool,
    run_seconds: float | None,
    on_batch: Callable[[BatchReport], None] | None,
    stop: threading.Event | None,
    say: Callable[[str], None] | None,
) -> JobSummary:
    """``run_job`` with ``lock`` held, or (a standby's) taken once the session is up."""
    from pyspark.errors import StreamingQueryException

    from streaming.spark_session import SPARK_PROMETHEUS_PATH, build_spark, jvm_pid, jvm_start_times

    _log_to_stderr()
    startup = StartupLog(_LOG)
    startup.phase("interpreter and imports")
    require_kafka(settings)
    admin = admin_client(settings)  # one connection for the job's topic scans
    realms = _realms_now(settings, admin)
    ensure_outputs(settings, realms, admin)
    config = load_protocol_config(settings.protocol_config, settings.seam)
    startup.phase("Kafka and topics")
    spark = build_spark(settings, app_name="rfc0160-pubsub", log_file=runtime_dir() / "logs" / "spark.log")
    jvm_started, context_started = jvm_start_times(spark)
    startup.phase("Spark's launcher", jvm_started)
    startup.phase("JVM start", context_started)
    startup.phase("Spark session")
    if not lock.held:  # a standby: nothing of the checkpoint is read before the job running on it has ended
        taken_by = _take_over(lock, stop)
        if taken_by is not None:
            return JobSummary(stopped_by=taken_by or None)
        startup.phase("standby took over")
        realms = _realms_now(settings, admin)  # the realms that appeared while it waited
        ensure_outputs(settings, realms, admin)
    if isinstance(settings.checkpoint_dir, HadoopPath):  # one line, in seconds, for a NameNode down or unreachable
        check_reachable(spark, settings.checkpoint_dir)
    stages = resolve_stages(settings.stages, checkpoint_stages(spark, settings.checkpoint_dir),
                            settings.checkpoint_dir)
    new_partitions = new_checkpoint_partitions(settings.shuffle_partitions, stages, realms)
    recorded = recorded_partitions(settings.checkpoint_dir / (FUSED_FOLDER if stages == FUSED else "relay"), spark)
    partitions = new_partitions if recorded is None else recorded
    _LOG.info("stages %s: %s, state in %d shuffle partition%s (checkpoint %s)", stages,
              "one query, subscribers in the relay batch" if stages == FUSED else "two queries joined by the seam topic",
              partitions, "" if partitions == 1 else "s", settings.checkpoint_dir)
    key = b"" if stages == FUSED else seam_key(settings, spark)  # the fused job has no seam to sign
    started = time.monotonic()
    summary = JobSummary()
    location = settings.checkpoint_dir
    size = None if isinstance(location, Path) else partial(space_used, spark, location)
    metrics = JobMetrics(settings, checkpoint_size=size) if settings.metrics_port is not None else None
    jvm = jvm_pid(spark)
    if metrics is not None:
        url = metrics.start()
        metrics.watch(realms)
        metrics.spark_ui_url(spark.sparkContext.uiWebUrl)
        metrics.watch_processes(jvm)
        if say:
            say(f"metrics: {url} (Spark's: {spark.sparkContext.uiWebUrl}{SPARK_PROMETHEUS_PATH})")
    descriptors = DescriptorWatch(jvm, _warn_descriptors)
    waits = RealmWaits(after_blocks=config.stall_after_blocks, publish=health_publisher(settings),
                       declared=declared_stalls(settings, realms))
    follower = _Follower(summary, on_batch, metrics, waits, settings.batch_log, startup)
    stalls = _StallWatch(settings.checkpoint_dir)
    stuck = StuckBatchWatch(jvm, settings.stuck_batch_seconds,
                            lambda: bool(spark.sparkContext.statusTracker().getActiveStageIds())
                            ) if settings.spark_master.startswith("local") else None
    stop_requested: list[int] = []

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        stop_requested.append(signum)

    def stopped() -> bool:
        return bool(stop_requested) or (stop is not None and stop.is_set())

    def expired() -> bool:
        return run_seconds is not None and time.monotonic() - started >= run_seconds

    def running(queries: list[tuple[str, StreamingQuery]], until: float | None) -> bool:
        due = until is not None and time.monotonic() >= until
        return any(q.isActive for _, q in queries) and not stopped() and not expired() and not due

    def follow(queries: list[tuple[str, StreamingQuery]], until: float | None = None) -> None:
        last_scan = time.monotonic()
        while running(queries, until):
            queries[0][1].awaitTermination(0.5)  # type: ignore[arg-type]  # pyspark takes float seconds, hints int
            for name, query in queries:
                follower.poll(query, name, available_now)
                if query.exception() is not None:
                    raise query.exception()  # type: ignore[misc]
                pending = stalls.check(name, query, follower.seen.get(name))
                if stuck is not None:
                    stuck.check(name, follower.seen.get(name), pending)
                if metrics is not None:
                    metrics.batch_pending(name, pending)
            descriptors.check()
            if not available_now and time.monotonic() - last_scan > 2:
                try:
                    now = _realms_now(settings, admin)
                    ensure_outputs(settings, [r for r in now if r not in realms], admin)
                    realms[:] = now
                    if metrics is not None:
                        metrics.watch(realms)
                except (KafkaException, TopicError):
                    pass  # the broker is unreachable for a moment (a restart): the queries wait for it; scan later
                last_scan = time.monotonic()
        finish_batches([query for _, query in queries])  # a stop or run_seconds ends after the batch in flight
        for name, query in queries:
            follower.poll(query, name, available_now)

    # a query records the session's number at its first batch (later ones keep the checkpoint's); put back after, so
    # a session shared with other work (the tests') keeps its own
    session_partitions = spark.conf.get(SHUFFLE_PARTITIONS) or str(new_partitions)
    spark.conf.set(SHUFFLE_PARTITIONS, str(new_partitions))
    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    queries: list[tuple[str, StreamingQuery]] = []
    try:
        if stages == FUSED and available_now:
            queries = [("relay", fused_query(spark, settings, config, True).start())]
            startup.phase("queries started")
            follow(queries)
        elif available_now:
            # Stage S after Stage R, not beside it: beside it (a short trigger while Stage R drains, Stage R's views
            # streamed out block by block) its empty triggers and extra batches cost the JVM more CPU than they save
            # (docs/benchmarks.md, "Measured code choices").
            # Stage S's query is planned while Stage R runs (py4j calls): only its start has to wait,
            # since an available-now query takes the end offsets of its sources when it starts.
            queries = [("relay", relay_query(spark, settings, config, key, True).start())]
            subscribers = subscriber_query(spark, settings, config, key, True)
            startup.phase("queries started")
            follow(queries)
            if not stopped():
                queries = [("subscribers", subscribers.start())]
                follow(queries)
        else:
            period = settings.state_reopen_minutes * 60 if settings.state_reopen == "periodic" else None
            while True:
                queries = [("relay", fused_query(spark, settings, config, False).start())] if stages == FUSED else [
                    ("relay", relay_query(spark, settings, config, key, False).start()),
                    ("subscribers", subscriber_query(spark, settings, config, key, False).start())]
                startup.phase("queries started")
                follow(queries, None if period is None else time.monotonic() + period)
                if stopped() or expired() or not all(q.isActive for _, q in queries):
                    break
                # a restart on the same checkpoint: each state store reopens its RocksDB database, which starts a
                # fresh MANIFEST (the outputs are unchanged: the batches resume where the commits ended)
                for _, query in queries:
                    query.stop()
                summary.reopens += 1
                if metrics is not None:
                    metrics.reopened()
                if say:
                    say(f"state stores reopened: queries restarted on their checkpoints ({summary.reopens})")
    except Exception as exc:
        chain = cause_chain(exc)
        full = disk_full(settings.checkpoint_dir, chain)
        if full is not None:
            raise full from exc
        if isinstance(exc, StreamingQueryException):
            raise query_failed(exc, chain) from exc
        raise
    finally:
        for _, query in queries:
            if query.isActive:
                query.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        spark.conf.set(SHUFFLE_PARTITIONS, session_partitions)
        if metrics is not None:
            metrics.close()
    summary.seconds = time.monotonic() - started
    summary.stopped_by = signal.Signals(stop_requested[0]).name if stop_requested else None
    return summary


def _take_over(lock: CheckpointLock, stop: threading.Event | None) -> str | None:
    """A standby's wait for the checkpoint's lock. None once it holds the lock; when stopped first: the signal's
    name (SIGTERM, SIGINT), or "" for ``stop``."""
    holder = lock.holder()
    line = (f"standby: Spark is up; waiting for the job on {lock.checkpoint}"
            f"{'' if holder is None else f' (pid {holder})'} to end")
    _LOG.info("%s", line)  # on the console too: the job's log goes there (``say`` would print it twice)
    signals: list[int] = []

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        signals.append(signum)

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        if lock.wait(lambda: bool(signals) or (stop is not None and stop.is_set())):
            return None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return signal.Signals(signals[0]).name if signals else ""


def finish_batches(queries: Sequence[StreamingQuery], grace: float = STOP_GRACE_SECONDS) -> None:
    """Wait, at most ``grace`` seconds, until no query is in the batch it was running when called: so that a stop
    ends after the batch whose outputs may already be in Kafka, and the summary counts it. A trigger that finds no
    data ends without a new progress entry, so either the trigger going idle or a newer batch ends the wait."""
    deadline = time.monotonic() + grace
    running = {id(q): (q, q.lastProgress["batchId"] if q.lastProgress else -1) for q in queries if q.isActive}
    while running and time.monotonic() < deadline:
        for key, (query, batch) in list(running.items()):
            newest = query.lastProgress["batchId"] if query.lastProgress else -1
            if newest > batch or not query.isActive or not query.status.get("isTriggerActive"):
                del running[key]
        if running:
            time.sleep(0.02)


_CAUSED_BY = re.compile(r"^Caused by: (.+)$", re.MULTILINE)
"""A cause's line in a Java stack trace (``Throwable.printStackTrace``)."""


def cause_chain(error: BaseException) -> list[str]:
    """``error``'s text, then each Java throwable of a failed query's cause chain (``toString``), outermost first.
    When the gateway cannot be read (a process out of descriptors cannot open its socket), the causes come from the
    Java stack trace PySpark captured when it raised ``error``."""
    texts, origin = [str(error)], getattr(error, "_origin", None)
    for _ in range(30):
        if origin is None:
            break
        try:
            texts.append(str(origin.toString()))
            origin = origin.getCause()
        except Exception:  # noqa: BLE001 - a gateway that went away: judge by what was read
            break
    if len(texts) == 1:
        texts.extend(_CAUSED_BY.findall(str(getattr(error, "_stackTrace", None) or texts[0]))[:30])
    return texts


_TOO_NEW = re.compile(r"FormatTooNewError: (.+)$", re.MULTILINE)
"""The last line of a Python worker's traceback when a stage found a stored format newer than it knows."""


def query_failed(error: BaseException, texts: Sequence[str]) -> QueryFailed:
    """The one-line ``QueryFailed`` of a failed query (``texts``: its ``cause_chain``): Spark's first line (without
    the plan it appends) and the root cause (``java.net.SocketException: Too many open files``, say), which Spark's
    line often does not name. A store refused as too new (``state.formats.FormatTooNewError`` in a worker) is named
    by its own line instead: the format, its version and the release that wrote it."""
    for text in texts:
        if (too_new := _TOO_NEW.search(text)) is not None:
            return QueryFailed(_shortened(too_new.group(1).strip(), 400), None)
    first = texts[0].strip().splitlines()[0] if texts[0].strip() else type(error).__name__
    root = texts[-1].strip().splitlines()[0] if len(texts) > 1 and texts[-1].strip() else None
    return QueryFailed(_shortened(first, 400), _shortened(root, 300) if root else None)


def _shortened(line: str, limit: int) -> str:
    """``line`` within ``limit`` characters, its middle cut: a Java message names the failing path first and the
    reason last (``... While open a file for random read: /tmp/.../CURRENT: Too many open files``)."""
    if len(line) <= limit:
        return line
    keep = (limit - 3) // 2
    return f"{line[:keep]}...{line[-keep:]}"


def disk_full(checkpoint: CheckpointLocation, texts: Sequence[str]) -> CheckpointDiskFull | None:
    """``CheckpointDiskFull`` if a failed query (``texts``: its ``cause_chain``) comes from a full checkpoint disk:
    "No space left on device" somewhere in its Java cause chain, or less than 1 MiB free where the checkpoint lives.
    Spark's own message names only the state store commit that failed."""
    free = free_bytes(checkpoint)
    if any("No space left on device" in text for text in texts) or (free is not None and free < 2**20):
        return CheckpointDiskFull(checkpoint, free)
    return None


def free_bytes(checkpoint: CheckpointLocation) -> int | None:
    """Bytes free to us on the disk that holds (or will hold) ``checkpoint``; None if it cannot be read or is not
    a local disk (a Hadoop file system reports a full store in the failed query's cause chain)."""
    if not isinstance(checkpoint, Path):
        return None
    folder = checkpoint
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    try:
        stat = os.statvfs(folder)
    except OSError:
        return None
    return stat.f_bavail * stat.f_frsize


def _warn_descriptors(use: DescriptorUse) -> None:
    _LOG.warning("Spark's JVM (pid %d) holds %d open file descriptors of its limit of %d: a leak fails the job with "
                 "'Too many open files' once they run out (see docs/operations.md, \"Metrics\")",
                 use.pid, use.open, use.limit)


class _StallWatch:
    """Fails the job with ``CheckpointDiskFull`` when a batch has been running for ``STALL_SECONDS`` without
    finishing while the checkpoint disk has less than ``DISK_RESERVE`` free. With changelog checkpointing, a
    state put that cannot be written kills pyspark 4.2's Python state server thread without an answer, and the
    Python worker then waits on it forever: the batch never fails by itself, so the driver has to see it."""

    STALL_SECONDS = 30.0
    DISK_RESERVE = 4 * 2**20

    def __init__(self, checkpoint: CheckpointLocation) -> None:
        self.checkpoint = checkpoint
        self.last_change: dict[str, tuple[int | None, float]] = {}
        self.active_since: dict[str, float] = {}
        """query -> when the driver first saw its trigger active since its last finished batch."""

    def check(self, name: str, query: StreamingQuery, last_batch: int | None) -> float:
        """``last_batch``: the newest finished batch of ``query`` the driver has seen (None: none yet). Returns how
        long the query's trigger has been active without finishing a batch (0: idle, or a batch just finished)."""
        now = time.monotonic()
        previous = self.last_change.get(name)
        if previous is None or previous[0] != last_batch:
            self.last_change[name] = (last_batch, now)
            self.active_since.pop(name, None)
            return 0.0
        if not query.status.get("isTriggerActive"):
            self.active_since.pop(name, None)
            return 0.0
        pending = now - self.active_since.setdefault(name, now)
        if now - previous[1] < self.STALL_SECONDS:
            return pending
        free = free_bytes(self.checkpoint)
        if free is not None and free < self.DISK_RESERVE:
            raise CheckpointDiskFull(self.checkpoint, free)
        return pending


def require_kafka(settings: Settings) -> None:
    """``KafkaUnavailable`` unless the settings name a Kafka cluster that answers."""
    bootstrap = settings.kafka_bootstrap
    if bootstrap is None:
        raise KafkaUnavailable(None, "the job needs a Kafka cluster: pass --bootstrap or set PUBSUB_KAFKA_BOOTSTRAP "
                                     "(`pubsub job` starts the embedded broker when none is named)")
    if not is_serving(bootstrap, timeout=10.0, extra=settings.kafka_client_config()):
        raise KafkaUnavailable(bootstrap, f"the configured Kafka cluster at {bootstrap} does not answer")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for `python -m streaming.job` and spark-submit."""
    parser = argparse.ArgumentParser(prog="streaming.job", description=__doc__.splitlines()[0])
    add_job_arguments(parser)
    args = parser.parse_args(argv)
    print(f"protocol: the {build_name()} build on the driver (each executor chooses its own the same way)", flush=True)
    summary = run_job(settings_from_args(args), available_now=args.available_now, run_seconds=args.run_seconds,
                      on_batch=lambda report: print(report.line(), flush=True),
                      say=lambda line: print(line, flush=True))
    print(f"job done: {summary.batches} batches, {summary.input_rows} input rows, {summary.seconds:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
