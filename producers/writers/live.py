"""Live producers (``pubsub workload --live``): publisher paras sending signed Publish messages at a steady rate.

``LiveSource`` is the offline generator's cast (``producers.workload``: the same paras, keys, genesis,
registrations and subscriptions) driven by time instead of by blocks: first the set-up the realm still lacks,
then one upward message at a time, publishers in turn, each carrying ``Pacing.items_per_message`` Publish
instructions for distinct keys with seeded values and TTLs. It writes no blocks: the block author does.

**The per-para cap.** A block includes all upward records of a para that arrived since the previous block as
one candidate, and the router refuses a candidate of more than ``max_upward_message_num_per_candidate`` (16)
messages, all of it. ``Pacing.plan`` therefore sends at most ``MESSAGES_PER_PARA_PER_BLOCK`` (8, half the limit:
a late block, or a schedule that catches up, still fits) upward messages per para per block time (6 s), and
packs more Publish instructions into each message (up to 16, distinct keys) when the rate needs it. A rate that
cannot fit is a ``LiveRateError`` naming the highest one that does.

**Pacing.** ``Pacer`` keeps due times ``start + i * interval`` on the monotonic clock; the clock only paces
sending and never enters a record. A sender late by more than one interval restarts the schedule from now
instead of bursting to catch up, so the cap holds; the summary then shows the rate achieved.

**Resuming (crash-safe).** Positions and seqnos are never kept locally: at start, ``read_resume_point`` reads
the realm's genesis, takes the block author's latest snapshot (``producers.writers.author.latest_snapshot``: every seqno
watermark and included or buffered position up to its offsets) and reads the ``upward`` and ``extrinsics`` topics
from the snapshot's offsets (from their beginning without a snapshot), so a restart costs what arrived since the
author's last block, whatever the realm's age. It applies Stage R's arrival rule to the records of the origins it
writes (``resume_point``): a record counts if it decodes, ``authenticate`` accepts it
under the genesis registry, and its seqno is above its sender's highest so far (a replay does not count). The
next position of an origin is one past the highest position of a counted record, the next seqno of a sender
one past its highest. The idempotent producer keeps each topic's records in order, so a crash loses a suffix
of what was sent, never a record in the middle: what is on the topic is a prefix and resuming after it leaves
no gap and reuses nothing. Forged records cannot move the resume point (they do not authenticate), nor can
replays of genuine ones (their seqnos are not above). The set-up is sent only for what is missing: the genesis
if the genesis topic is empty, registrations if the manager has sent nothing, a subscription per subscriber that
has sent nothing.
"""

from __future__ import annotations

import math
import random
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from producers.transport.kafka_io import KafkaIOError, read_topic, scan_topic
from producers.transport.topics import Settings, ensure_realm_topics, producer_config
from producers.writers.author import latest_snapshot
from producers.writers.author_state import AuthorSnapshot
from pubsub_core.stages.edge import ConsumerRecord
from producers.workload import (
    PUBLISHES_PER_MESSAGE,
    Actors,
    LogBuilder,
    WorkloadSpec,
    actors,
    genesis_record,
    publish_item,
    register_publishers,
    subscribe,
)
from producers.errors import ProducerError
from pubsub_core.envelope import KeyRegistry, Origin
from pubsub_core.envelope.admission import Unauthenticated, authenticate
from pubsub_core.relay import InputRecord
from pubsub_core.stages import GenesisRecord, IngestError, LineParser, OutputRecord
from pubsub_core.stages.ingest import decode_record
from pubsub_core.stages.topics import kind_of

__all__ = [
    "BLOCK_TIME",
    "GenesisMismatch",
    "LiveRateError",
    "LiveReport",
    "LiveSource",
    "LiveSpec",
    "MESSAGES_PER_PARA_PER_BLOCK",
    "Pacer",
    "Pacing",
    "ResumePoint",
    "read_resume_point",
    "snapshot_resume_point",
    "resume_point",
    "run_live",
    "stop_on_signals",
]

BLOCK_TIME = 6.0
"""Seconds between relay blocks that the per-para cap assumes (``--block-time``)."""
MESSAGES_PER_PARA_PER_BLOCK = 8
"""Upward messages a para sends per block time at most: half the router's 16 per candidate."""
RESUME_STREAMS = ("upward", "extrinsics")
"""The input streams the live producer writes (besides the genesis), read back to resume."""


class LiveRateError(ProducerError):
    """The asked publish rate cannot be sent within the per-para cap; carries the rate and the highest that fits."""

    def __init__(self, rate: float, limit: float, publishers: int, items_per_message: int, block_time: float) -> None:
        super().__init__(
            f"{rate:g} publishes/s do not fit: {publishers} publishers x {MESSAGES_PER_PARA_PER_BLOCK} messages per "
            f"{block_time:g} s block x {items_per_message} publishes per message allow {limit:g}/s; add publishers "
            "or keys, or lower --rate")
        self.rate = rate
        self.limit = limit
        self.publishers = publishers
        self.items_per_message = items_per_message
        self.block_time = block_time


class GenesisMismatch(ProducerError):
    """The realm's genesis does not let this cast sign: it was made for other keys; carries what is missing."""

    def __init__(self, realm: str, missing: tuple[str, ...]) -> None:
        super().__init__(
            f"the genesis of realm {realm} does not admit {', '.join(missing[:4])}"
            f"{' ...' if len(missing) > 4 else ''}; use a fresh realm or the same --publishers/--subscribers "
            "as the run that wrote it")
        self.realm = realm
        self.missing = missing


@dataclass(frozen=True)
class Pacing:
    """How a rate is sent: Publish instructions per upward message, and seconds between two messages (all
    publishers taking turns)."""

    items_per_message: int
    interval: float

    @classmethod
    def plan(cls, rate: float, publishers: int, keys: int, block_time: float = BLOCK_TIME) -> Pacing:
        """The fewest publishes per message that keep each para within ``MESSAGES_PER_PARA_PER_BLOCK`` per
        ``block_time`` at ``rate`` publishes/s; ``LiveRateError`` if even full messages do not."""
        if rate <= 0 or publishers < 1 or keys < 1 or block_time <= 0:
            raise ValueError("rate and block time must be positive, with at least one publisher and one key")
        messages_per_second = publishers * MESSAGES_PER_PARA_PER_BLOCK / block_time
        most = min(keys, PUBLISHES_PER_MESSAGE)
        items = max(1, math.ceil(rate / messages_per_second - 1e-9))
        if items > most:
            raise LiveRateError(rate, messages_per_second * most, publishers, most, block_time)
        return cls(items, items / rate)


class Pacer:
    """Due times of a steady schedule on a monotonic clock (seconds): ``start``, ``start + interval``, ..."""

    def __init__(self, interval: float, start: float) -> None:
        self.interval = interval
        self.due = start

    def delay(self, now: float) -> float:
        """Seconds to wait before the next send (0 when it is due)."""
        return max(0.0, self.due - now)

    def sent(self, now: float) -> None:
        """One send happened at ``now``: the next is due one interval later, or at ``now`` if that is more than
        one interval in the past (no burst to catch up)."""
        self.due += self.interval
        if self.due < now - self.interval:
            self.due = now


@dataclass(frozen=True)
class LiveSpec:
    """What ``pubsub workload --live`` sends: the cast and value mix of ``workload`` (its blocks, quiet blocks,
    update rate, DMP rate, bad records and PoV size are not used), ``rate`` publishes/s, for ``seconds`` (None:
    until stopped), paced for ``block_time``."""

    workload: WorkloadSpec
    rate: float
    seconds: float | None = None
    block_time: float = BLOCK_TIME

    def __post_init__(self) -> None:
        if self.seconds is not None and self.seconds <= 0:
            raise ValueError("--seconds must be positive")
        if not self.workload.system_publishers + self.workload.publishers:
            raise ValueError("a live run needs at least one publisher")

    def pacing(self) -> Pacing:
        return Pacing.plan(self.rate, self.workload.system_publishers + self.workload.publishers,
                           self.workload.keys, self.block_time)


@dataclass
class ResumePoint:
    """Where a live run continues: the realm's genesis (None if the topic is empty), the next position of each
    (stream, origin) and the highest seqno of each (stream, origin, sender) that Stage R would accept."""

    genesis: GenesisRecord | None = None
    positions: dict[tuple[str, str], int] = field(default_factory=dict)
    seqnos: dict[tuple[str, str, bytes], int] = field(default_factory=dict)


def resume_point(
    records: Iterable[ConsumerRecord], realm: str, registry: KeyRegistry, origins: set[tuple[str, str]],
    start: ResumePoint | None = None,
) -> ResumePoint:
    """Stage R's arrival rule over ``records`` (each topic in offset order) for the (stream, origin) pairs in
    ``origins``: count a record that decodes, authenticates under ``registry`` and carries a seqno above its
    sender's highest so far; return one past the highest counted position per origin and the highest seqnos,
    continuing from ``start`` (what the records before them gave)."""
    point = ResumePoint(positions=dict(start.positions), seqnos=dict(start.seqnos)) if start else ResumePoint()
    for consumed in records:
        key = consumed.key.decode("utf-8", errors="replace") if consumed.key is not None else ""
        stream = kind_of(consumed.topic)
        if (stream, key) not in origins:
            continue
        try:
            decoded = decode_record(consumed.topic, consumed.key, consumed.value, consumed.offset).value
            if not isinstance(decoded, InputRecord):
                continue
            envelope = authenticate(registry, realm, stream, key, decoded.value).envelope
        except (IngestError, Unauthenticated):
            continue
        slot = (stream, key, envelope.sender)
        if envelope.seqno <= point.seqnos.get(slot, 0):
            continue
        point.seqnos[slot] = envelope.seqno
        point.positions[(stream, key)] = max(point.positions.get((stream, key), 0), decoded.position + 1)
    return point


def read_resume_point(settings: Settings, realm: str, origins: set[tuple[str, str]], registry: KeyRegistry) -> ResumePoint:
    """``resume_point`` of the realm's ``upward`` and ``extrinsics`` topics, under the genesis on the topic (or
    ``registry``, the one about to be written, when the genesis topic is empty)."""
    first = read_topic(settings, f"{realm}.genesis", limit=1)
    genesis = None
    if first:
        decoded = decode_record(first[0].topic, first[0].key, first[0].value, first[0].offset).value
        if isinstance(decoded, GenesisRecord):
            genesis = decoded
    trusted = genesis.registry if genesis is not None else registry
    snapshot = latest_snapshot(settings, realm, trusted.author_keys) if genesis is not None else None
    start = None if snapshot is None else snapshot_resume_point(snapshot, origins)
    offsets = {} if snapshot is None else snapshot.offsets
    records = (record for stream in RESUME_STREAMS
               for record in scan_topic(settings, f"{realm}.{stream}", offset=offsets.get(stream, 0)))
    point = resume_point(records, realm, trusted, origins, start)
    point.genesis = genesis
    return point


def snapshot_resume_point(snapshot: AuthorSnapshot, origins: set[tuple[str, str]]) -> ResumePoint:
    """What ``resume_point`` gives over the records before the snapshot's offsets: each sender's seqno watermark,
    and per origin one past the highest position included or buffered (a record whose seqno counted either took
    its position or was refused at a position already taken, never a higher one)."""
    positions = {}
    for slot in origins:
        last = max([snapshot.included.get(slot, -1), *snapshot.buffered.get(slot, {})])
        if last >= 0:
            positions[slot] = last + 1
    seqnos = {k: v for k, v in snapshot.received.items() if (k[0], k[1]) in origins}
    return ResumePoint(positions=positions, seqnos=seqnos)


class LiveSource:
    """The lines a live run sends, in order: ``setup()`` once, then ``next_message()`` again and again.

    Positions and seqnos continue from ``resume``; ``rng`` (seeded by the spec) chooses keys, values and TTLs."""

    def __init__(self, spec: LiveSpec, resume: ResumePoint | None = None) -> None:
        self.spec = spec
        self.pacing = spec.pacing()
        self.cast: Actors = actors(spec.workload)
        self.log = LogBuilder(spec.workload.realm)
        self.rng = random.Random(spec.workload.seed)
        self.resume = resume if resume is not None else ResumePoint()
        self.log.positions.update(self.resume.positions)
        self.log.seqnos.update(self.resume.seqnos)
        self._turn = 0

    @property
    def genesis(self) -> GenesisRecord:
        """The genesis this cast needs (the offline generator's)."""
        return genesis_record(self.cast, self.log.author)

    @property
    def origins(self) -> set[tuple[str, str]]:
        """Every (stream, origin) this source writes."""
        written = {("upward", str(p)) for p in self.cast.publishers}
        written |= {("extrinsics", f"para:{p}") for p in self.cast.subscribers}
        if self.cast.registered:
            written.add(("extrinsics", self.cast.manager.public_key.hex()))
        return written

    def check_genesis(self, genesis: GenesisRecord) -> None:
        """``GenesisMismatch`` unless ``genesis`` admits every key this source signs with."""
        registry, missing = genesis.registry, []
        for para in self.cast.publishers + self.cast.subscribers:
            if not registry.is_member(Origin.parse("upward", str(para)), self.cast.collators[para].public_key):
                missing.append(f"para {para}'s collator")
        manager = self.cast.manager.public_key
        if self.cast.registered and not registry.is_member(Origin.parse("extrinsics", manager.hex()), manager):
            missing.append("the manager account")
        if missing:
            raise GenesisMismatch(self.spec.workload.realm, tuple(missing))

    def setup(self) -> tuple[list[str], Counter[str]]:
        """The set-up lines the realm lacks (genesis, registrations, subscriptions; see the module docstring)
        and their counts."""
        counts: Counter[str] = Counter()
        if self.resume.genesis is None:
            self.log.genesis(self.genesis.registry, self.genesis.genesis)
            counts["genesis"] += 1
        else:
            self.check_genesis(self.resume.genesis)
        manager = self.cast.manager.public_key.hex()
        if self.cast.registered and ("extrinsics", manager) not in self.resume.positions:
            counts["registrations"] += register_publishers(self.log, self.cast)
        for para in self.cast.subscribers:
            if ("extrinsics", f"para:{para}") not in self.resume.positions:
                subscribe(self.log, self.rng, self.spec.workload, self.cast, para)
                counts["subscriptions"] += 1
        return self._take(), counts

    def next_message(self) -> tuple[str, int]:
        """The next publisher's upward message (its line) and how many Publish instructions it carries."""
        publishers = self.cast.publishers
        para = publishers[self._turn % len(publishers)]
        self._turn += 1
        indices = self.rng.sample(range(self.spec.workload.keys), self.pacing.items_per_message)
        items = [publish_item(self.rng, self.spec.workload, para, index) for index in indices]
        self.log.publish(para, self.cast.collators[para], items)
        (line,) = self._take()
        return line, len(items)

    def _take(self) -> list[str]:
        lines, self.log.lines = self.log.lines, []
        return lines


@dataclass
class LiveReport:
    """What a live run did, per stream: records sent, delivered and failed; publishes sent and delivered; and
    the seconds it spent sending."""

    sent: Counter[str] = field(default_factory=Counter)
    delivered: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    setup: Counter[str] = field(default_factory=Counter)
    publishes_sent: int = 0
    publishes_delivered: int = 0
    seconds: float = 0.0
    first_error: str | None = None

    @property
    def publishes_per_second(self) -> float:
        """Delivered publishes per second of sending."""
        return self.publishes_delivered / self.seconds if self.seconds > 0 else 0.0


def run_live(
    settings: Settings,
    spec: LiveSpec,
    stop: threading.Event,
    *,
    partitions: int = 1,
    on_progress: Callable[[LiveReport], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    flush_timeout: float = 30.0,
) -> LiveReport:
    """Create the realm's topics, resume, send the missing set-up, then upward messages at ``spec.rate``
    publishes/s until ``spec.seconds`` have passed or ``stop`` is set; flush and return the counts.
    ``KafkaIOError`` if records are still undelivered ``flush_timeout`` seconds after sending stopped."""
    realm = spec.workload.realm
    ensure_realm_topics(settings, realm, partitions=partitions)
    cast = LiveSource(spec)
    source = LiveSource(spec, read_resume_point(settings, realm, cast.origins, cast.genesis.registry))
    report = LiveReport()
    router = LineParser(realm)
    producer = Producer(producer_config(settings))

    def send(line: str, publishes: int = 0) -> None:
        routed = router.route(line)
        if isinstance(routed, OutputRecord):  # never: the source writes routable lines
            raise KafkaIOError(routed.topic, f"a generated line did not route: {routed.value}")
        record, _ = routed
        stream = kind_of(record.topic)

        def delivered(err: KafkaError | None, _msg: Message) -> None:
            if err is None:
                report.delivered[stream] += 1
                report.publishes_delivered += publishes
            else:
                report.failed[stream] += 1
                report.first_error = report.first_error or err.str()

        while True:
            try:
                producer.produce(record.topic, value=record.value, key=record.key, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.1)
            except KafkaException as exc:
                raise KafkaIOError(record.topic, exc.args[0].str()) from exc
        report.sent[stream] += 1
        report.publishes_sent += publishes
        producer.poll(0)

    lines, report.setup = source.setup()
    for line in lines:
        send(line)
    start = clock()
    pacer = Pacer(source.pacing.interval, start)
    deadline = None if spec.seconds is None else start + spec.seconds
    while not stop.is_set():
        now = clock()
        if deadline is not None and now >= deadline:
            break
        wait = pacer.delay(now)
        if wait > 0:
            producer.poll(0)
            stop.wait(min(wait, 0.2) if deadline is None else min(wait, 0.2, max(0.0, deadline - now)))
            continue
        line, publishes = source.next_message()
        send(line, publishes)
        pacer.sent(clock())
        report.seconds = clock() - start
        if on_progress is not None:
            on_progress(report)
    report.seconds = clock() - start
    remaining = producer.flush(flush_timeout)
    if remaining:
        raise KafkaIOError(f"{realm}.upward", f"{remaining} records not delivered {flush_timeout:.0f}s after stopping")
    return report


@contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """While inside, SIGINT (Ctrl-C) and SIGTERM set ``stop`` instead of interrupting, so a long-running client
    (a live run, ``consume --follow``) ends its loop, flushes and reports; the previous handlers come back after."""
    previous = {sig: signal.signal(sig, lambda _sig, _frame: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
