"""The job's Prometheus endpoint: the protocol's gauges, served by the driver (``metrics_port``).

Fed from what the progress lines are built from (each query's progress entry and its ``BatchReport``: heights,
records out, lag, batch time, state stores), from the tails of each realm's ``blocks``, ``seals`` and ``pov``
topics (``producers.readers.realm_watch``: the author's height, each subscriber's PoV use) and from the checkpoint folder's
size, measured in a thread no more often than its walk allows. Spark's own metrics are served by Spark's UI
(``streaming.spark_session.prometheus_conf``). Metric names and labels: docs/operations.md, "Metrics".
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, ProcessCollector, start_http_server

from pubsub_core.stages.stall import WaitingStatus

from producers.readers.realm_watch import RealmFacts, RealmWatch
from settings.settings import Settings
from streaming.errors import MetricsError

__all__ = ["CHECKPOINT_EVERY_SECONDS", "JobMetrics", "checkpoint_bytes", "partition_lag"]

CHECKPOINT_EVERY_SECONDS = 30.0
"""The checkpoint folder is measured at most this often, and never more than 1% of the time (a large folder's
walk spaces the measurements out)."""


def checkpoint_bytes(path: Path) -> int:
    """Bytes on disk under ``path`` (allocated blocks, as du counts them); 0 if it does not exist."""
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except OSError:
                pass  # a file the job removed meanwhile
    return total


def _offsets(raw: Any) -> dict[str, dict[str, int]]:
    """A Kafka source's offsets in a progress entry (a JSON string or its parsed form): topic -> partition -> offset."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    if not isinstance(raw, Mapping):
        return {}
    return {str(name): {str(p): int(o) for p, o in parts.items()} for name, parts in raw.items()
            if isinstance(parts, Mapping)}


def partition_lag(sources: Iterable[Mapping[str, Any]]) -> dict[tuple[str, int], int]:
    """(topic, partition) -> records between where the batch ended and the newest offset Spark saw at its start."""
    lag: dict[tuple[str, int], int] = {}
    for source in sources:
        ends, latest = _offsets(source.get("endOffset")), _offsets(source.get("latestOffset"))
        for name, parts in latest.items():
            for partition, newest in parts.items():
                done = ends.get(name, {}).get(partition, newest)
                lag[(name, int(partition))] = max(0, newest - done)
    return lag


class JobMetrics:
    """The gauges of one running job and the HTTP server that exposes them (``start``/``close``)."""

    def __init__(self, settings: Settings, registry: CollectorRegistry | None = None,
                 checkpoint_size: Callable[[], int] | None = None) -> None:
        """``checkpoint_size``: how to measure the checkpoint; None: ``checkpoint_bytes`` of a local one (a
        checkpoint on a Hadoop file system needs the session's: ``streaming.checkpoint_files.space_used``)."""
        self.settings = settings
        self.checkpoint_size = checkpoint_size
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.relay_height = Gauge("pubsub_relay_height", "Newest block Stage R sealed", ["realm"], registry=r)
        self.author_height = Gauge("pubsub_author_height", "Newest block on <realm>.blocks", ["realm"], registry=r)
        self.blocks_waiting = Gauge("pubsub_blocks_waiting",
                                    "Blocks the author wrote that Stage R has not sealed (unread or waiting for "
                                    "records)", ["realm"], registry=r)
        self.stalled = Gauge("pubsub_realm_stalled", "1 while the realm's first waiting block is declared stalled "
                             "(stall_after_blocks later blocks queued behind it, its input topics read to the end), "
                             "else 0", ["realm"], registry=r)
        self.waiting_block = Gauge("pubsub_waiting_block", "Stage R's first block waiting for records (0: none)",
                                   ["realm"], registry=r)
        self.waiting_seconds = Gauge("pubsub_waiting_seconds", "How long the driver has seen that block waiting",
                                     ["realm"], registry=r)
        self.waiting_missing = Gauge("pubsub_waiting_missing",
                                     "1 per position Stage R's first waiting block misses now (stream/origin/position, "
                                     "at most a few), with the block's <topic>@<offset>", ["realm", "block_record",
                                                                                           "position"], registry=r)
        self._missing_labels: dict[str, list[tuple[str, str, str]]] = {}
        self.held_records = Gauge("pubsub_held_records", "Records and blocks Stage R holds while a block waits",
                                  ["realm"], registry=r)
        self.held_bytes = Gauge("pubsub_held_bytes", "Envelope bytes Stage R holds while a block waits", ["realm"],
                                registry=r)
        self.lag = Gauge("pubsub_input_lag_records", "Records not yet read, per input partition, at the newest batch",
                         ["query", "topic", "partition"], registry=r)
        self.latest = Gauge("pubsub_input_latest_offset", "Newest offset per input partition when the newest batch "
                            "was planned (it grows as records arrive)", ["query", "topic", "partition"], registry=r)
        self.trigger = Gauge("pubsub_trigger_interval_seconds", "The queries' trigger interval (trigger_seconds)",
                             registry=r)
        self.trigger.set(settings.trigger_seconds)
        self.pending = Gauge("pubsub_batch_pending_seconds", "How long the query's trigger has had work without "
                             "finishing a batch (0 while it is idle)", ["query"], registry=r)
        self.records_out = Counter("pubsub_records_out", "Records written, per output topic", ["topic"], registry=r)
        self.input_rows = Counter("pubsub_input_rows", "Rows read, per query", ["query"], registry=r)
        self.batches = Counter("pubsub_batches", "Micro-batches run, per query", ["query"], registry=r)
        self.batch_seconds = Gauge("pubsub_batch_duration_seconds", "Wall time of the newest batch", ["query"],
                                   registry=r)
        self.state_memory = Gauge("pubsub_state_memory_bytes", "State stores' memory (memoryUsedBytes)", ["query"],
                                  registry=r)
        self.state_rows = Gauge("pubsub_state_rows", "Rows in the state stores", ["query"], registry=r)
        self.state_sst = Gauge("pubsub_state_sst_bytes", "RocksDB SST files of the state stores", ["query"],
                               registry=r)
        self.state_snapshot = Gauge("pubsub_state_snapshot_bytes",
                                    "Uncompressed size of the newest RocksDB snapshot zips (MANIFEST included)",
                                    ["query"], registry=r)
        self.checkpoint = Gauge("pubsub_checkpoint_bytes", "Bytes on disk in the checkpoint folder", registry=r)
        self.reopens = Counter("pubsub_state_reopens", "Restarts of the queries on their checkpoints (state_reopen)",
                               registry=r)
        self.pov_used = Gauge("pubsub_pov_used_bytes", "Proof bytes a subscriber used in its newest block",
                              ["realm", "subscriber"], registry=r)
        self.pov_budget = Gauge("pubsub_pov_budget_bytes", "A subscriber's pub-sub PoV budget in its newest block",
                                ["realm", "subscriber"], registry=r)
        self.pov_block = Gauge("pubsub_pov_block", "Relay block of a subscriber's newest PoV record",
                               ["realm", "subscriber"], registry=r)
        self.spark_ui = Gauge("pubsub_spark_ui_info", "Where Spark's UI (and its /metrics/prometheus) is served",
                              ["url"], registry=r)
        self._heights: dict[str, int] = {}
        self._author_heights: dict[str, int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._realms: list[str] = []
        self._threads: list[threading.Thread] = []
        self._server: Any = None

    # -- what the driver hands in -------------------------------------------------------------------------------
    def observe(self, query: str, progress: Mapping[str, Any], heights: Mapping[str, int],
                records_by_topic: Mapping[str, int]) -> None:
        """One batch's progress entry, the heights it sealed and the records it wrote per topic."""
        self.batches.labels(query).inc()
        self.input_rows.labels(query).inc(int(progress.get("numInputRows") or 0))
        self.batch_seconds.labels(query).set(int((progress.get("durationMs") or {}).get("triggerExecution", 0)) / 1000)
        sources = progress.get("sources") or []
        for (name, partition), lag in partition_lag(sources).items():
            self.lag.labels(query, name, str(partition)).set(lag)
        for source in sources:
            for name, parts in _offsets(source.get("latestOffset")).items():
                for part, newest in parts.items():
                    self.latest.labels(query, name, part).set(newest)
        for name, n in records_by_topic.items():
            self.records_out.labels(name).inc(n)
        operators = list(progress.get("stateOperators") or [])
        if operators:
            custom = [op.get("customMetrics") or {} for op in operators]
            self.state_memory.labels(query).set(sum(int(op.get("memoryUsedBytes") or 0) for op in operators))
            self.state_rows.labels(query).set(sum(int(op.get("numRowsTotal") or 0) for op in operators))
            self.state_sst.labels(query).set(sum(int(c.get("rocksdbSstFileSize") or 0) for c in custom))
            self.state_snapshot.labels(query).set(
                sum(int(c.get("rocksdbZipFileBytesUncompressed") or 0) for c in custom))
        with self._lock:
            for realm, height in heights.items():
                self._heights[realm] = max(self._heights.get(realm, 0), height)
                self.relay_height.labels(realm).set(self._heights[realm])
                self._count_waiting(realm)

    def waiting(self, realm: str, status: WaitingStatus | None, seconds: float) -> None:
        """Stage R's waiting status of a realm after a batch (None: no block waits)."""
        self.stalled.labels(realm).set(int(status is not None and status.stalled))
        self.waiting_block.labels(realm).set(0 if status is None else status.block)
        self.waiting_seconds.labels(realm).set(0.0 if status is None else seconds)
        self.held_records.labels(realm).set(0 if status is None else status.held_records)
        self.held_bytes.labels(realm).set(0 if status is None else status.held_bytes)
        with self._lock:
            for labels in self._missing_labels.pop(realm, []):
                self.waiting_missing.remove(*labels)
            if status is not None:
                labels_now = [(realm, status.block_record, position) for position in status.missing]
                for labels in labels_now:
                    self.waiting_missing.labels(*labels).set(1)
                self._missing_labels[realm] = labels_now

    def batch_pending(self, query: str, seconds: float) -> None:
        """How long ``query``'s trigger has had work without finishing a batch (``streaming.job``'s watch)."""
        self.pending.labels(query).set(seconds)

    def reopened(self) -> None:
        """The queries were restarted on their checkpoints."""
        self.reopens.inc()

    def watch(self, realms: Iterable[str]) -> None:
        """Follow these realms' topic tails (the served realms, as the job's scan finds them)."""
        with self._lock:
            self._realms = sorted(set(realms))

    def watch_processes(self, jvm_pid: int) -> None:
        """Export the driver's processes' open file descriptors (against their limit), memory and CPU, as the
        client library's process collector does (Linux /proc): ``pubsub_driver_process_*`` for this Python process
        and ``pubsub_driver_jvm_process_*`` for Spark's JVM, the executor too in local mode. A count of descriptors
        that climbs towards ``max_fds`` is a leak the job will die of."""
        ProcessCollector(namespace="pubsub_driver", registry=self.registry)
        ProcessCollector(namespace="pubsub_driver_jvm", pid=lambda: jvm_pid, registry=self.registry)

    def spark_ui_url(self, url: str | None) -> None:
        if url:
            self.spark_ui.labels(url).set(1)

    def take_facts(self, realm: str, facts: RealmFacts) -> None:
        """A realm's facts from its topics' tails."""
        with self._lock:
            if facts.relay_height is not None:
                self._heights[realm] = max(self._heights.get(realm, 0), facts.relay_height)
                self.relay_height.labels(realm).set(self._heights[realm])
            if facts.author_height is not None:
                self._author_heights[realm] = facts.author_height
                self.author_height.labels(realm).set(facts.author_height)
            self._count_waiting(realm)
        for subscriber, use in facts.pov.items():
            self.pov_used.labels(realm, str(subscriber)).set(use.used)
            self.pov_budget.labels(realm, str(subscriber)).set(use.budget)
            self.pov_block.labels(realm, str(subscriber)).set(use.block)

    def _count_waiting(self, realm: str) -> None:
        """``pubsub_blocks_waiting`` from the newest heights, whichever moved (caller holds the lock): a batch that
        seals blocks lowers it at once, not at the next read of the topics' tails."""
        if realm in self._author_heights:
            self.blocks_waiting.labels(realm).set(max(0, self._author_heights[realm] - self._heights.get(realm, 0)))

    # -- serving ------------------------------------------------------------------------------------------------
    def start(self) -> str:
        """Serve ``/metrics`` on ``metrics_host:metrics_port`` and start the tail and checkpoint threads; returns
        the endpoint's URL."""
        host, port = self.settings.metrics_host, self.settings.metrics_port
        if port is None:
            raise MetricsError(host, 0, "no metrics_port is set")
        try:
            self._server, _ = start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            raise MetricsError(host, port, exc.strerror or str(exc)) from exc
        for target, name in ((self._follow_tails, "metrics-tails"), (self._measure_checkpoint, "metrics-checkpoint")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return f"http://{host}:{self._server.server_port}/metrics"

    def close(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        for thread in self._threads:
            thread.join(10)

    def _follow_tails(self) -> None:
        watching: list[str] = []
        watch: RealmWatch | None = None
        try:
            while not self._stop.is_set():
                with self._lock:
                    wanted = list(self._realms)
                if wanted != watching or watch is None:
                    if watch is not None:
                        watch.close()
                        watch = None
                    try:
                        watch = RealmWatch(self.settings, wanted)
                        watching = wanted
                    except Exception:  # noqa: BLE001 - the broker is away for a moment: try again
                        self._stop.wait(2)
                        continue
                watch.poll(0.5)
                for realm, facts in watch.facts.items():
                    self.take_facts(realm, facts)
        finally:
            if watch is not None:
                watch.close()

    def _measure_checkpoint(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            location = self.settings.checkpoint_dir
            if self.checkpoint_size is not None:
                try:
                    self.checkpoint.set(self.checkpoint_size())
                except Exception:  # noqa: BLE001 - the file system (or the session, at shutdown) away: next time
                    pass
            elif isinstance(location, Path):
                self.checkpoint.set(checkpoint_bytes(location))
            took = time.monotonic() - started
            self._stop.wait(max(CHECKPOINT_EVERY_SECONDS, 100 * took))
