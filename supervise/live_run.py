"""A live run of one realm, supervised: the live producer, the block author, the continuous job and a following
consumer as subprocesses, each in its own process group, and a monitor that reads the realm's topics as they grow.

``Supervisor`` starts the parts and stops every one it started (SIGTERM to the whole group, SIGKILL after a
grace period) when its ``with`` block ends, whether normally, on Ctrl-C or because a part failed (``check``
raises ``PartFailed`` when a part exits on its own). ``LiveMonitor`` tails ``blocks``, ``upward``,
``relay-views``, ``updates`` and ``pov`` from the beginning (read_committed) and keeps what the status view, the
latency figures and the PoV plot need, Kafka timestamps included. ``LiveRun`` puts both together for
``pubsub demo --live``, the live acceptance test and the latency benchmark.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from producers.readers.latency import LatencySummary, summarize
from producers.transport.topics import consumer_config, ensure_realm_topics, realm_topic_names
from producers.workload import WorkloadSpec
from producers.writers.live import LiveSpec, Pacing
from pubsub_core.hashing import blake2_256
from pubsub_core.stages.edge import ID_HEADER
from pubsub_core.stages.seam import SeamRecordError, split_record
from pubsub_core.stages.topics import VIEWS, kind_of, topic
from settings.settings import Settings
from supervise.errors import PartFailed, PartTimeout
from supervise.kafka_broker import delete_topics

__all__ = ["LiveMonitor", "LivePlan", "LiveRun", "LiveSnapshot", "PartFailed", "PartTimeout", "PovRecord",
           "Supervisor", "WORKLOAD_AUTHOR_SEED"]

WORKLOAD_AUTHOR_SEED = blake2_256(b"rfc0160/workload/author")
"""The seed of ``producers.workload.signer("author")``, the key the live producer's genesis admits as author."""
_GRACE = 15.0
"""Seconds a part gets to stop after SIGTERM (or SIGINT) before its process group is killed."""


@dataclass
class _Part:
    name: str
    process: subprocess.Popen[bytes]
    log: Path
    stopping: bool = False
    may_finish: bool = False
    """True for a part that ends on its own: exit code 0 is no failure."""


def _tail(path: Path, lines: int = 12) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class Supervisor:
    """Starts parts as subprocesses, each the leader of a new process group (so its own children, e.g. Spark's
    JVM and Python workers, go with it), and stops them all on leaving the ``with`` block."""

    def __init__(self, logs: Path, grace: float = _GRACE) -> None:
        self.logs = logs
        self.grace = grace
        self.parts: dict[str, _Part] = {}

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop_all()

    def start(self, name: str, argv: Sequence[str], env: Mapping[str, str] | None = None,
              stdout: Path | None = None, may_finish: bool = False) -> subprocess.Popen[bytes]:
        """Run ``argv`` as part ``name``: stderr (and stdout, unless ``stdout`` names a file for it) to
        ``<logs>/<name>.log``, stdin closed, in a new session. ``may_finish``: exiting with code 0 is no
        failure (a one-off part)."""
        self.logs.mkdir(parents=True, exist_ok=True)
        log = self.logs / f"{name}.log"
        with open(log, "wb") as err, open(stdout or log, "ab" if stdout is None else "wb") as out:
            process = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                       start_new_session=True,
                                       env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
        self.parts[name] = _Part(name, process, log, may_finish=may_finish)
        return process

    def check(self) -> None:
        """``PartFailed`` for the first part that exited without being asked to stop (whatever its code, but 0 for
        a part that may finish)."""
        for part in self.parts.values():
            code = part.process.poll()
            if code is not None and not part.stopping and not (part.may_finish and code == 0):
                raise PartFailed(part.name, code, part.log, _tail(part.log))

    def running(self, name: str) -> bool:
        part = self.parts.get(name)
        return part is not None and part.process.poll() is None

    def stop(self, name: str, sig: signal.Signals = signal.SIGTERM) -> int:
        """Send ``sig`` to the part (its leader process, which stops its own children in order), wait up to the
        grace period, then SIGKILL its process group; returns the part's exit code. The group is killed in the
        end in any case, so no grandchild outlives it."""
        part = self.parts[name]
        part.stopping = True
        try:
            part.process.send_signal(sig)
        except ProcessLookupError:
            pass
        try:
            code = part.process.wait(self.grace)
        except subprocess.TimeoutExpired:
            _signal_group(part.process.pid, signal.SIGKILL)
            code = part.process.wait()
        _signal_group(part.process.pid, signal.SIGKILL)  # children that outlived their leader
        return code

    def stop_all(self) -> None:
        """Stop every part still running, the last started first."""
        for name in reversed(list(self.parts)):
            part = self.parts[name]
            if part.process.poll() is None:
                self.stop(name)
            else:
                part.stopping = True
                _signal_group(part.process.pid, signal.SIGKILL)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass(frozen=True)
class PovRecord:
    """One subscriber's proof at one relay block (``<realm>.pov``)."""

    proof_bytes: int
    budget: int
    result: str


@dataclass
class LiveSnapshot:
    """What the realm's topics held when the snapshot was taken; timestamps are Kafka's, in ms."""

    blocks: dict[int, int] = field(default_factory=dict)
    """Block number -> timestamp of its record on ``<realm>.blocks``."""
    upward: int = 0
    """Records on ``<realm>.upward`` (each live message carries ``Pacing.items_per_message`` publishes)."""
    views: dict[int, int] = field(default_factory=dict)
    """Block number -> timestamp of its first view on the seam."""
    updates: list[tuple[int, int]] = field(default_factory=list)
    """(relay block number, timestamp) of each update, each record id once."""
    updates_per_subscriber: Counter[int] = field(default_factory=Counter)
    pov: dict[tuple[int, int], PovRecord] = field(default_factory=dict)
    """(block number, subscriber) -> its proof."""
    pov_times: dict[int, int] = field(default_factory=dict)
    """Block number -> timestamp of its last PoV record (when Stage S had served every subscriber)."""
    last_update: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Block number -> (timestamp, subscriber) of its latest update."""

    @property
    def head(self) -> int:
        return max(self.blocks, default=0)

    def served(self) -> dict[int, int]:
        """Subscriber -> the highest block Stage S wrote its PoV record for."""
        out: dict[int, int] = {}
        for block, subscriber in self.pov:
            out[subscriber] = max(out.get(subscriber, 0), block)
        return out

    def latency(self, since_block: int = 0) -> LatencySummary:
        """Block-to-update latency over the updates of blocks numbered ``since_block`` or more."""
        return summarize(((n, t) for n, t in self.blocks.items() if n >= since_block),
                         ((n, t) for n, t in self.updates if n >= since_block))


class LiveMonitor:
    """Reads a realm's blocks, upward, seam, updates and PoV topics from the beginning as they grow, in a thread.
    The topics must exist. ``snapshot()`` copies what was read so far."""

    def __init__(self, settings: Settings, realm: str) -> None:
        self.settings = settings
        self.realm = realm
        self._state = LiveSnapshot()
        self._seen: set[str | bytes] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"monitor-{realm}", daemon=True)
        self.error: BaseException | None = None

    def __enter__(self) -> LiveMonitor:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(10)

    def snapshot(self) -> LiveSnapshot:
        """A copy of the state; re-raises the reader's error if it failed."""
        if self.error is not None:
            raise self.error
        with self._lock:
            s = self._state
            return LiveSnapshot(dict(s.blocks), s.upward, dict(s.views), list(s.updates),
                                Counter(s.updates_per_subscriber), dict(s.pov), dict(s.pov_times),
                                dict(s.last_update))

    def _run(self) -> None:
        names = [topic(self.realm, kind) for kind in ("blocks", "upward", VIEWS, "updates", "pov")]
        consumer = Consumer(consumer_config(self.settings, f"pubsub-monitor-{uuid.uuid4().hex[:8]}"))
        try:
            metadata = consumer.list_topics(timeout=10).topics
            consumer.assign([TopicPartition(name, p, 0) for name in names for p in sorted(metadata[name].partitions)])
            while not self._stop.is_set():
                messages = consumer.consume(1000, 0.2)
                with self._lock:
                    for message in messages:
                        self._take(message)
        except (KafkaException, KeyError) as exc:
            self.error = exc
        finally:
            consumer.close()

    def _take(self, message: Message) -> None:
        error = message.error()
        if error is not None:
            if error.code() != KafkaError._PARTITION_EOF:
                raise KafkaException(error)
            return
        kind = kind_of(str(message.topic()))
        _, millis = message.timestamp()
        state = self._state
        if kind == "upward":
            state.upward += 1
            return
        body: dict[str, Any]
        try:
            if kind == VIEWS:  # binary (pubsub_core.stages.seam); the monitor only looks, so it needs no seam key
                body = {"view": split_record(message.value() or b"")[0]}
            else:
                body = json.loads(message.value() or b"")
        except (UnicodeDecodeError, json.JSONDecodeError, SeamRecordError):
            return  # anyone may write anything to a topic; the monitor only counts what parses
        if kind == "blocks":  # the author writes block n at position n - 1 (producers.writers.author.block_record)
            number = int(body["position"]) + 1
            state.blocks[number] = min(millis, state.blocks.get(number, millis))
        elif kind == VIEWS:
            number = int(body["view"]["number"])
            state.views.setdefault(number, millis)
        elif kind == "updates":
            record_id = dict(message.headers() or ()).get(ID_HEADER)
            if record_id is None or record_id in self._seen:
                return
            self._seen.add(record_id)
            number, subscriber = int(body["relay_block_number"]), int(body["subscriber"])
            state.updates.append((number, millis))
            state.updates_per_subscriber[subscriber] += 1
            if millis >= state.last_update.get(number, (millis, 0))[0]:
                state.last_update[number] = (millis, subscriber)
        elif kind == "pov":
            number, subscriber = int(body["relay_block_number"]), int(body["subscriber"])
            state.pov[(number, subscriber)] = PovRecord(int(body["proof_bytes"]), int(body["budget"]["pubsub"]),
                                                        str(body["result"]))
            state.pov_times[number] = max(millis, state.pov_times.get(number, millis))


@dataclass(frozen=True)
class LivePlan:
    """What a live run starts: the realm, the cast (``workload``), the publish rate, the block time, the job's
    trigger interval and where its checkpoint and logs go."""

    realm: str
    workload: WorkloadSpec
    rate: float
    block_time: float
    checkpoint: Path
    logs: Path
    trigger_seconds: float = 1.0
    job_env: tuple[tuple[str, str], ...] = ()
    """Environment the job gets besides the supervisor's (settings as ``PUBSUB_*`` variables)."""

    def pacing(self) -> Pacing:
        """How the producer will send (``LiveRateError`` if the rate does not fit the per-para cap)."""
        return LiveSpec(self.workload, self.rate, None, self.block_time).pacing()

    def _cli(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "cli.main", *args]

    def producer(self, bootstrap: str, seconds: float | None = None) -> list[str]:
        """The live producer; with ``seconds``, one that stops by itself after that long."""
        w = self.workload
        limit = [] if seconds is None else ["--seconds", f"{seconds:g}"]
        return self._cli("workload", "--live", *limit, "--realm", self.realm, "--rate", f"{self.rate:g}",
                         "--block-time", f"{self.block_time:g}", "--seed", str(w.seed),
                         "--publishers", str(w.publishers), "--system-publishers", str(w.system_publishers),
                         "--subscribers", str(w.subscribers), "--keys", str(w.keys),
                         "--subscribed-keys", str(w.subscribed_keys), "--bootstrap", bootstrap)

    def author(self, bootstrap: str) -> list[str]:
        return self._cli("author", "--realm", self.realm, "--block-time", f"{self.block_time:g}",
                         "--bootstrap", bootstrap)

    def job(self, bootstrap: str) -> list[str]:
        return self._cli("job", "--realm", self.realm, "--checkpoint", str(self.checkpoint),
                         "--trigger-seconds", f"{self.trigger_seconds:g}", "--bootstrap", bootstrap)

    def follower(self, bootstrap: str) -> list[str]:
        return self._cli("consume", "--follow", "--realm", self.realm, "--json", "--bootstrap", bootstrap)


class LiveRun:
    """One supervised live run: ``start`` resets the realm's topics and checkpoint and starts the job, the
    following consumer, the author and a one-off producer that sends the set-up (genesis, registrations,
    subscriptions) and a first message; ``warm_up`` waits until the job served that (Spark has started), so the
    traffic that ``start_traffic`` then sends (the live producer, resuming after the set-up) is not measured
    against Spark's start-up; ``drain`` stops the producer, lets the author include
    what it sent, stops the author and waits until Stage S served every subscriber at the last block, then stops
    the job and the follower. Use it as a context manager: leaving it stops whatever still runs."""

    def __init__(self, settings: Settings, plan: LivePlan) -> None:
        if settings.kafka_bootstrap is None:
            raise ValueError("a live run needs a serving Kafka cluster (ensure_kafka first)")
        self.settings = settings
        self.bootstrap = settings.kafka_bootstrap
        self.plan = plan
        self.supervisor = Supervisor(plan.logs)
        self.monitor = LiveMonitor(settings, plan.realm)
        self.follow_log = plan.logs / "follow.jsonl"
        self.started = 0.0

    def __enter__(self) -> LiveRun:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        try:
            self.supervisor.stop_all()
        finally:
            self.monitor.__exit__(kind, error, trace)

    def start(self) -> None:
        """Fresh topics and checkpoint, then every part; the monitor starts reading."""
        import shutil

        realm = self.plan.realm
        self.plan.pacing()  # refuse a rate the producer would refuse, before starting anything
        delete_topics(self.settings, realm_topic_names(realm))
        ensure_realm_topics(self.settings, realm, partitions=self.settings.views_partitions)
        shutil.rmtree(self.plan.checkpoint, ignore_errors=True)
        shutil.rmtree(self.plan.logs, ignore_errors=True)
        self.monitor.__enter__()
        start = self.supervisor.start
        start("job", self.plan.job(self.bootstrap), env={"COLUMNS": "400", **dict(self.plan.job_env)})  # a line a batch
        start("follow", self.plan.follower(self.bootstrap), stdout=self.follow_log)
        start("setup", self.plan.producer(self.bootstrap, seconds=0.001), may_finish=True)
        start("author", self.plan.author(self.bootstrap), env={"PUBSUB_AUTHOR_KEY": WORKLOAD_AUTHOR_SEED.hex()})
        self.started = time.monotonic()

    def warm_up(self, tick: Callable[[LiveSnapshot], None] | None = None, timeout: float = 300.0) -> int:
        """Wait until the job wrote its first PoV record; returns the number of the first block the author
        writes after it, from which latency measures the pipeline rather than Spark's start-up."""
        first = self.wait(lambda s: bool(s.pov_times), timeout, "the job wrote no PoV record", tick)
        warm = min(first.pov_times.values())
        after = self.wait(lambda s: any(t > warm for t in s.blocks.values()), timeout,
                          "the author wrote no block after the job started", tick)
        return min(n for n, t in after.blocks.items() if t > warm)

    def start_traffic(self) -> None:
        """Start the live producer (it resumes after what the set-up sent)."""
        self.supervisor.start("producer", self.plan.producer(self.bootstrap))

    def followed(self) -> int:
        """Updates the following consumer printed so far (one JSON line each)."""
        try:
            with open(self.follow_log, "rb") as lines:
                return sum(1 for _ in lines)
        except OSError:
            return 0

    def wait(self, done: Callable[[LiveSnapshot], bool], seconds: float, what: str,
             tick: Callable[[LiveSnapshot], None] | None = None) -> LiveSnapshot:
        """Poll the monitor until ``done(snapshot)``, checking the parts, calling ``tick`` about 4 times a
        second; ``PartTimeout`` after ``seconds``."""
        deadline = time.monotonic() + seconds
        while True:
            self.supervisor.check()
            snapshot = self.monitor.snapshot()
            if tick is not None:
                tick(snapshot)
            if done(snapshot):
                return snapshot
            if time.monotonic() > deadline:
                raise PartTimeout(what, seconds)
            time.sleep(0.25)

    def drain(self, tick: Callable[[LiveSnapshot], None] | None = None, timeout: float = 180.0) -> LiveSnapshot:
        """Stop the producer (it flushes), let the author write two more blocks (each includes everything that
        arrived before it: the producer stays within the per-block limits), stop the author, wait until every
        subscriber's PoV record for the last block is on the topic, then stop the job and the follower."""
        self.supervisor.check()
        code = self.supervisor.stop("producer", signal.SIGINT)
        if code != 0:
            raise PartFailed("producer", code, self.supervisor.parts["producer"].log,
                             _tail(self.supervisor.parts["producer"].log))
        head = self.monitor.snapshot().head
        self.wait(lambda s: s.head >= head + 2, timeout, "the author wrote no block after the producer stopped",
                  tick)
        code = self.supervisor.stop("author", signal.SIGINT)
        if code != 0:
            raise PartFailed("author", code, self.supervisor.parts["author"].log,
                             _tail(self.supervisor.parts["author"].log))
        subscribers = set(range(3000, 3000 + self.plan.workload.subscribers))
        last = self.monitor.snapshot().head
        snapshot = self.wait(lambda s: all(s.served().get(p, 0) >= last for p in subscribers), timeout,
                             f"Stage S did not serve every subscriber at block {last}", tick)
        self.supervisor.stop("job", signal.SIGTERM)
        self.wait(lambda s: self.followed() >= len(s.updates), 30, "the follower did not show every update", tick)
        self.supervisor.stop("follow", signal.SIGINT)
        return snapshot
