"""The job's stateful operators: rows in, stage calls, rows out. The protocol is in pubsub_core.stages.

Split (two queries): Stage R (``relay_frames``, run by ``streaming.processors.RelayOperator``, keyed by realm)
feeds each input record to the realm's ``RelayStage`` and emits its output records plus one seam record per
subscriber view (``<realm>.relay-views``, key: the subscriber); Stage S (``subscriber_frames``, run by
``SubscriberOperator``, keyed by realm and subscriber) checks each seam record's MAC, decodes the view and hands it
to ``SubscriberStage.receive``, which applies views once and in order. Fused (one query: ``fused_frames``, run by
``FusedOperator``, keyed by realm): Stage R hands each view straight to the subscriber's ``SubscriberStage.step``
in the same call, as the simulator does, each subscriber's state kept beside the realm's under its own namespaces
(``SubscriberPages``). Every byte of state is in the key's MapState (``state.spark.SparkStateBackend``, pages
written once per batch).

``relay_rows``, ``fused_rows`` and ``subscriber_rows`` are plain functions over any ``StateBackend``, so they are
tested without Spark; the ``*_frames`` functions only adapt Spark's rows and handles. The records go to Kafka from
the worker (``streaming.record_writer``) chunk by chunk as they are made, except Stage R's seam records, which wait
for the end of the batch (``seam_last``) so that a running Stage S takes a batch's views together; Spark gets the
batch's ``BatchSummary``.
"""

from __future__ import annotations

import cProfile
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from pubsub_core.relay import RecordOutcome, Status, canonical_json
from pubsub_core.stages import (
    OutputRecord,
    RelayStage,
    RelayView,
    ProtocolConfig,
    SubscriberStage,
    ingest_record,
)
from pubsub_core.stages.edge import ID_HEADER, ConsumerRecord, ProducerRecord, to_kafka
from pubsub_core.stages.limits import MAX_OUTPUT_BYTES
from pubsub_core.stages.records import rejection
from pubsub_core.stages.seam import SeamRecordError, decode_view, encode_view
from pubsub_core.stages.stall import WaitingStatus, is_declaration
from pubsub_core.stages.subscriber_stage import ViewConflictError
from pubsub_core.stages.topics import INPUTS, VIEWS, kind_of, topic

from state import StateBackend
from state.spark import SparkStateBackend
from streaming.spans import OperatorSpans, SpanClock, TimedState

__all__ = [
    "BatchSummary",
    "SPANS",
    "WAITING",
    "Writer",
    "SubscriberPages",
    "feed_order",
    "fused_chunks",
    "fused_frames",
    "fused_rows",
    "page_backend",
    "parse_waiting",
    "relay_chunks",
    "relay_frames",
    "relay_rows",
    "seam_last",
    "seam_record",
    "subscriber_chunks",
    "subscriber_frames",
    "subscriber_rows",
    "waiting_key",
]

NAMESPACE_PAGES = 16
"""Pages of a large state namespace: a batch loads and writes only the pages it touches (one MapState call each)."""

SINGLE_PAGE_BYTES = 64 * 1024
"""A namespace stays one page until its page would pass this (then it is split into ``NAMESPACE_PAGES``). A MapState
call costs a fixed round trip plus its bytes at a rate (docs/benchmarks.md, "MapState call costs"): a page of this
size read and written back costs about what 16 pages cost in round trips alone once a batch touches them all (Stage
S's relay mirror, about 33 KB a subscriber on the standard workload, does), and a batch that touches one key of it
pays only the page's bytes more than with 16 pages."""

BUNDLE_BYTES = 64 * 1024
"""One-page namespaces are packed into bundles of up to this many bytes (``state.spark``): Stage S's batches touch
nearly all of a subscriber's 60-odd small namespaces (a cache, key and reference namespace per publisher followed),
which cost two round trips each per batch on their own pages; a bundle costs two, plus its bytes."""


def page_backend(pages: Any) -> SparkStateBackend:
    """The operators' state backend over a grouping key's pages MapState (deferred writes, page directory, small
    namespaces bundled)."""
    return SparkStateBackend(pages, default_pages=NAMESPACE_PAGES, defer_writes=True, page_directory=True,
                             single_page_bytes=SINGLE_PAGE_BYTES, bundle_bytes=BUNDLE_BYTES)


def _bounded(row: ProducerRecord, realm: str) -> ProducerRecord:
    """The record, or a typed rejection in its place if it is larger than a topic takes."""
    size = len(row.value)
    if size <= MAX_OUTPUT_BYTES:
        return row
    record_id = row.id or ""
    outcome = RecordOutcome(None, record_id, Status.REJECTED, "RecordTooLarge",
                            f"{size} bytes exceed {MAX_OUTPUT_BYTES}")
    return to_kafka(rejection(realm, (row.key or b"").decode(), f"too-large/{record_id}", outcome))


def seam_record(view: RelayView, seam_key: bytes) -> ProducerRecord:
    """A view as a record of ``<realm>.relay-views`` (``pubsub_core.stages.seam``: MAC and binary body)."""
    return ProducerRecord(topic(view.realm, VIEWS), str(view.subscriber).encode(), encode_view(view, seam_key),
                          ((ID_HEADER, f"view/{view.subscriber}/{view.number}".encode()),))


_VIEWS_SUFFIX = "." + VIEWS

CHUNK_ROWS = 4096
"""A chunk of output ends after a relay block's records, or at this many rows."""

SEAM_HOLD_BYTES = 64 * 1024 * 1024
"""Seam records Stage R holds back (``seam_last``) before it writes what it holds: a batch's views go out at its end
unless the batch is larger than this (a catch-up of thousands of blocks), so a worker's memory stays bounded."""


def feed_order(row: ConsumerRecord) -> tuple[int, str, int, int]:
    """A batch's rows topic by topic, each in offset order: the genesis first, blocks last (``INPUTS``' order).

    How topics interleave does not change Stage R's outputs (tests/simulator/test_examples.py), only its work: a
    record that comes before the realm's genesis is held (encoded and decoded once more), and a block that
    comes before its records waits in a queue. Genesis first, then the inputs, then the blocks, does the least of that
    work (docs/benchmarks.md, "Measured code choices"); the outputs are equal either way."""
    name = kind_of(row.topic)
    rank = INPUTS.index(name) if name in INPUTS else len(INPUTS)
    return rank, row.topic, row.partition, row.offset


ViewSink = Callable[[RelayView], list[ProducerRecord]]
"""What becomes of a relay view: the records it turns into (a seam record; or, fused, the subscriber's outputs)."""


def relay_chunks(realm: str, rows: Iterable[ConsumerRecord], backend: StateBackend, config: ProtocolConfig,
                 on_view: ViewSink) -> Iterator[list[ProducerRecord]]:
    """Stage R over a batch's rows, in chunks, each as soon as it is made: a chunk ends with a block's records (or
    at ``CHUNK_ROWS``); each of a block's views goes to ``on_view`` after the block's own records."""
    stage = RelayStage(realm, config, backend)
    out: list[ProducerRecord] = []
    for row in sorted(rows, key=feed_order):
        parsed = ingest_record(row.topic, row.key, row.value, row.offset, realm)
        if isinstance(parsed, OutputRecord):
            out.append(to_kafka(parsed))
            continue
        immediate, steps = stage.feed(parsed)
        out += [to_kafka(r) for r in immediate if not is_declaration(r)]  # the driver declares (streaming.job)
        for step in steps:
            out += [to_kafka(r) for r in step.outputs]
            for view in step.views:
                out += on_view(view)
        if steps or len(out) >= CHUNK_ROWS:
            yield [_bounded(row, realm) for row in out]
            out = []
    if out:
        yield [_bounded(row, realm) for row in out]


def relay_rows(realm: str, rows: Iterable[ConsumerRecord], backend: StateBackend, config: ProtocolConfig,
               seam_key: bytes) -> list[ProducerRecord]:
    """One micro-batch of a realm's input records through Stage R, each topic in offset order."""
    chunks = relay_chunks(realm, rows, backend, config, lambda view: [seam_record(view, seam_key)])
    return [row for chunk in chunks for row in chunk]


class _Subscribers:
    """The fused operator's subscriber stages of one call: each made on its first view, over its own backend."""

    def __init__(self, realm: str, config: ProtocolConfig, backend_of: Callable[[int], StateBackend]) -> None:
        self.realm = realm
        self.config = config
        self.backend_of = backend_of
        self.stages: dict[int, SubscriberStage] = {}

    def step(self, view: RelayView) -> list[ProducerRecord]:
        stage = self.stages.get(view.subscriber)
        if stage is None:
            stage = self.stages[view.subscriber] = SubscriberStage(
                self.realm, view.subscriber, self.config.subscriber, self.backend_of(view.subscriber))
        return [to_kafka(r) for r in stage.step(view)]


def fused_chunks(realm: str, rows: Iterable[ConsumerRecord], backend: StateBackend, config: ProtocolConfig,
                 subscriber_backend: Callable[[int], StateBackend]) -> Iterator[list[ProducerRecord]]:
    """Stage R and, for each view a block makes, its subscriber's Stage S in the same call (as ``Simulator.run_step``):
    the block's records, then each subscriber's outputs in view order. ``subscriber_backend(n)``: subscriber ``n``'s
    state."""
    return relay_chunks(realm, rows, backend, config, _Subscribers(realm, config, subscriber_backend).step)


def fused_rows(realm: str, rows: Iterable[ConsumerRecord], backend: StateBackend, config: ProtocolConfig,
               subscriber_backend: Callable[[int], StateBackend]) -> list[ProducerRecord]:
    """One micro-batch of a realm's input records through both stages, in one call."""
    return [row for chunk in fused_chunks(realm, rows, backend, config, subscriber_backend) for row in chunk]


def _seam_rejection(realm: str, row: ConsumerRecord, reason: str, detail: str) -> ProducerRecord:
    log_id = f"{row.topic}@{row.partition}:{row.offset}"
    outcome = RecordOutcome(None, log_id, Status.REJECTED, reason, detail)
    key = "" if row.key is None else row.key.decode("utf-8", "replace")
    return to_kafka(rejection(realm, key, f"seam/{log_id}", outcome))


def subscriber_chunks(realm: str, subscriber: str, rows: Iterable[ConsumerRecord], backend: StateBackend,
                      config: ProtocolConfig, seam_key: bytes) -> Iterator[list[ProducerRecord]]:
    """``subscriber_rows`` in chunks of at least ``CHUNK_ROWS`` rows (the last one: what is left), each as soon
    as it is made."""
    out: list[ProducerRecord] = []
    stage: SubscriberStage | None = None
    for row in sorted(rows, key=lambda r: (r.partition, r.offset)):
        try:
            view, digest = decode_view(row.value or b"", seam_key)
        except SeamRecordError as exc:
            out.append(_seam_rejection(realm, row, exc.reason, exc.detail))
            continue
        if view.realm != realm or str(view.subscriber) != subscriber:
            out.append(_seam_rejection(realm, row, "MisroutedView", f"a view for {view.realm}/{view.subscriber}"))
            continue
        if stage is None:
            stage = SubscriberStage(realm, view.subscriber, config.subscriber, backend)
        try:
            out += [to_kafka(r) for r in stage.receive(view, digest)]
        except ViewConflictError as exc:
            out.append(_seam_rejection(realm, row, exc.reason, exc.detail))
        if len(out) >= CHUNK_ROWS:
            yield [_bounded(row, realm) for row in out]
            out = []
    if out:
        yield [_bounded(row, realm) for row in out]


def subscriber_rows(realm: str, subscriber: str, rows: Iterable[ConsumerRecord], backend: StateBackend,
                    config: ProtocolConfig, seam_key: bytes) -> list[ProducerRecord]:
    """One micro-batch of a subscriber's seam records through Stage S, in (partition, offset) order."""
    return [row for chunk in subscriber_chunks(realm, subscriber, rows, backend, config, seam_key) for row in chunk]


def _kafka_rows(frames: Iterator[Any]) -> list[ConsumerRecord]:
    """The input rows of one grouping key (pandas DataFrames: transformWithStateInPandas)."""
    return [
        ConsumerRecord(topic_, int(partition), int(offset), None if key is None else bytes(key),
                       None if value is None else bytes(value))
        for frame in frames
        for topic_, partition, offset, key, value in zip(
            frame["topic"], frame["partition"], frame["offset"], frame["key"], frame["value"], strict=True)
    ]


WAITING = "waiting"
"""The summary row kind (topic ``<realm>.waiting``, never a Kafka topic) of Stage R's waiting status after a batch:
key ``{"realm": R, "waiting": WaitingStatus JSON or null}``, records the blocks queued behind the first one."""


SPANS = "spans"
"""The summary row kind (topic ``<realm>.spans``, never a Kafka topic) of an operator call's ``OperatorSpans``: key
its JSON, records 0."""


@dataclass
class BatchSummary:
    """What a stage wrote in a micro-batch, handed to Spark in the records' place: records per topic, each
    seal's height (the job's progress line and its ``heights`` metric), Stage R's first waiting block after
    the batch (``waiting``: realm -> status, None when no block waits) and the call's spans (``spans``: realm ->
    where the call's time went)."""

    counts: dict[str, int] = field(default_factory=dict)
    seals: list[tuple[str, str]] = field(default_factory=list)
    waiting: dict[str, WaitingStatus | None] = field(default_factory=dict)
    spans: dict[str, OperatorSpans] = field(default_factory=dict)

    def add(self, rows: Iterable[ProducerRecord]) -> None:
        """Count ``rows`` in (written records)."""
        for row in rows:
            if row.topic.endswith(".seals"):
                self.seals.append((row.topic, (row.key or b"").decode()))
            else:
                self.counts[row.topic] = self.counts.get(row.topic, 0) + 1

    def frame(self) -> Any:
        """As one pandas DataFrame (``streaming.processors.OUTPUT_SCHEMA``): a row per topic with its count
        (``key`` null), a row per seal with its height as the key (count 1), a ``waiting`` row and a ``spans``
        row per realm they name."""
        import pandas as pd

        rows = [(name, None, n) for name, n in sorted(self.counts.items())] + [(t, k, 1) for t, k in self.seals]
        rows += [(f"{realm}.{WAITING}", waiting_key(realm, status), 0 if status is None else status.later_blocks)
                 for realm, status in sorted(self.waiting.items())]
        rows += [(f"{realm}.{SPANS}", spans.to_json(), 0) for realm, spans in sorted(self.spans.items())]
        return pd.DataFrame({"topic": [t for t, _, _ in rows], "key": [k for _, k, _ in rows],
                             "records": pd.Series([n for _, _, n in rows], dtype="int64")})


def waiting_key(realm: str, status: WaitingStatus | None) -> str:
    """The key of a ``waiting`` summary row (``parse_waiting`` reads it back)."""
    return canonical_json({"realm": realm, "waiting": None if status is None else status.to_json()})


def parse_waiting(key: str) -> tuple[str, WaitingStatus | None]:
    """(realm, status) of a ``waiting`` summary row's key."""
    body = json.loads(key)
    waiting = body["waiting"]
    return str(body["realm"]), None if waiting is None else WaitingStatus.from_json(waiting)


class Writer(Protocol):
    """Where a stage's records go (``streaming.record_writer.RecordWriter``: Kafka)."""

    def write(self, records: Iterable[ProducerRecord]) -> None: ...

    def flush(self) -> None: ...


PROFILE_ENV = "PUBSUB_OPERATOR_PROFILE"
"""A folder: when set (in the environment Spark's Python workers inherit), each handleInputRows call writes its
cProfile there as ``<operator>-<pid>-<n>.prof`` (pstats files; off by default, for benchmarks/pipeline_bench)."""


def _frames(name: str, realm: str, chunks: Iterator[list[ProducerRecord]], flush: Callable[[], None],
            writer: Writer, clock: SpanClock,
            waiting: Callable[[], dict[str, WaitingStatus | None]] | None = None) -> Iterator[Any]:
    """Each chunk written as soon as it is made, then the batch's state pages (``flush``: one MapState call per
    changed page), every record delivered, and the batch's summary (with ``waiting()``, Stage R's waiting status
    after the batch, and the call's spans from ``clock``); with ``PROFILE_ENV``, under cProfile."""
    folder = os.environ.get(PROFILE_ENV)
    profile = cProfile.Profile() if folder else None
    if profile is not None:
        profile.enable()
    summary = BatchSummary()
    for chunk in chunks:
        clock.add("protocol")
        writer.write(chunk)
        summary.add(chunk)
        clock.add("write")
    if waiting is not None:
        summary.waiting = waiting()
        clock.add("protocol")
    state_read = clock.state.seconds
    flush()
    clock.add("state_write")
    writer.flush()
    clock.add("deliver")
    if profile is not None and folder:
        profile.disable()
        os.makedirs(folder, exist_ok=True)
        count = len([f for f in os.listdir(folder) if f.startswith(f"{name}-{os.getpid()}-")])
        profile.dump_stats(os.path.join(folder, f"{name}-{os.getpid()}-{count}.prof"))
    summary.spans[realm] = clock.done(state_read)
    yield summary.frame()


def seam_last(chunks: Iterable[list[ProducerRecord]], hold_bytes: int = SEAM_HOLD_BYTES) -> Iterator[list[ProducerRecord]]:
    """The chunks with their seam records held back to the end (or until they pass ``hold_bytes``), in order.

    A running Stage S takes whatever views are on the seam at each trigger. While Stage R works through a large
    batch, streaming its views block by block had Stage S run a batch every trigger beside it, each paying Spark's
    per-batch cost on the same two cores; holding the views is faster (docs/benchmarks.md, "Measured defaults"). A batch
    of a block or two, the live job's usual, writes its views at the same moment either way."""
    held: list[ProducerRecord] = []
    size = 0
    for chunk in chunks:
        others = []
        for row in chunk:
            if row.topic.endswith(_VIEWS_SUFFIX):
                held.append(row)
                size += len(row.value)
            else:
                others.append(row)
        if size > hold_bytes:
            others += held
            held, size = [], 0
        if others:
            yield others
    if held:
        yield held


def relay_frames(realm: str, frames: Iterator[Any], pages: Any, config: ProtocolConfig, seam_key: bytes,
                 writer: Writer) -> Iterator[Any]:
    """Stage R over one realm's input DataFrames, its state in ``pages`` (the key's MapState), its records to
    ``writer``: the batch's summary."""
    state = TimedState(pages)
    clock = SpanClock("relay", realm, state)
    backend = page_backend(state)
    rows = _kafka_rows(frames)
    clock.add("rows")
    chunks = relay_chunks(realm, rows, backend, config, lambda view: [seam_record(view, seam_key)])
    yield from _frames("relay", realm, seam_last(chunks), backend.flush, writer, clock,
                       lambda: {realm: RelayStage(realm, config, backend).waiting()})


class SubscriberPages:
    """Subscriber ``subscriber``'s part of the fused operator's subscriber MapState: its namespaces stored there as
    ``<subscriber>/<namespace>``, so each subscriber's store (page directory, bundles, format marker) is its own, as
    in Stage S's MapState, and none shares a key with the realm's."""

    def __init__(self, pages: Any, subscriber: int) -> None:
        self._pages = pages
        self._prefix = f"{subscriber}/"

    def getValue(self, key: tuple[Any, ...], /) -> tuple[Any, ...] | None:  # noqa: N802 - pyspark's name
        value: tuple[Any, ...] | None = self._pages.getValue((self._prefix + key[0], *key[1:]))
        return value

    def updateValue(self, key: tuple[Any, ...], value: tuple[Any, ...], /) -> None:  # noqa: N802
        self._pages.updateValue((self._prefix + key[0], *key[1:]), value)

    def removeKey(self, key: tuple[Any, ...], /) -> None:  # noqa: N802
        self._pages.removeKey((self._prefix + key[0], *key[1:]))


def fused_frames(realm: str, frames: Iterator[Any], pages: Any, subscriber_pages: Any, config: ProtocolConfig,
                 writer: Writer) -> Iterator[Any]:
    """Both stages over one realm's input DataFrames: the realm's state in ``pages``, its subscribers' in
    ``subscriber_pages`` (``SubscriberPages``), the records to ``writer`` as each block's are made: the batch's
    summary."""
    state = TimedState(pages)
    clock = SpanClock("fused", realm, state)
    backend = page_backend(state)
    subscribers_state = TimedState(subscriber_pages, shared=state)
    backends: dict[int, SparkStateBackend] = {}

    def subscriber_backend(subscriber: int) -> SparkStateBackend:
        made = backends[subscriber] = page_backend(SubscriberPages(subscribers_state, subscriber))
        return made

    def flush() -> None:
        backend.flush()
        for subscriber in sorted(backends):
            backends[subscriber].flush()

    rows = _kafka_rows(frames)
    clock.add("rows")
    chunks = fused_chunks(realm, rows, backend, config, subscriber_backend)
    yield from _frames("fused", realm, chunks, flush, writer, clock,
                       lambda: {realm: RelayStage(realm, config, backend).waiting()})


def subscriber_frames(realm: str, subscriber: str, frames: Iterator[Any], pages: Any, config: ProtocolConfig,
                      seam_key: bytes, writer: Writer) -> Iterator[Any]:
    """Stage S over one subscriber's seam DataFrames, its state in ``pages``, its records to ``writer``: the
    batch's summary."""
    state = TimedState(pages)
    clock = SpanClock("subscriber", f"{realm}/{subscriber}", state)
    backend = page_backend(state)
    rows = _kafka_rows(frames)
    clock.add("rows")
    chunks = subscriber_chunks(realm, subscriber, rows, backend, config, seam_key)
    yield from _frames("subscriber", realm, chunks, backend.flush, writer, clock)
