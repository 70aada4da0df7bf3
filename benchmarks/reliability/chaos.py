"""Chaos run: live traffic through the live producer, the block author and the continuous job
while a seeded schedule kills things; at the end the realm is exported and every output topic compared with the
simulator over the exported log.

    python -m benchmarks.reliability.chaos           # 200+ blocks, 20 job kills, 3 broker restarts, 2 author kills,
                                                     # 1 executor kill (standalone cluster phase)
    python -m benchmarks.reliability.chaos --short   # 30 blocks, 3 job kills, 1 broker restart, 1 author kill
    python -m benchmarks.reliability.chaos --blocks 300 --seed 7 --json benchmarks/results/chaos.json

What is killed, and how:
- the job: SIGKILL to its whole process group (the Python driver, its JVM, the JVM's Python workers), then a
  restart on the same checkpoint, at a random point 0.5-8 s after the previous event; with probability 0.4
  (seeded) the next event follows 1-15 s into the restarted job's start-up (a kill during recovery);
- the Kafka broker: SIGKILL (no controlled shutdown), down 1-5 s, restarted on the same data directory and ports
  (``EmbeddedKafka.kill`` / ``start(keep_data=True)``);
- the author: SIGKILL of its process group (possibly inside a block's transaction), restarted (it fences the
  dead one's transactional id and resumes from the blocks topic);
- one executor of a standalone cluster: in the last phase the job is restarted on a StandaloneCluster (master +
  worker on 127.0.0.1; the same checkpoint), the executor JVM (CoarseGrainedExecutorBackend, a child of our
  worker) is SIGKILLed; the worker launches a new one and the driver re-runs the lost tasks. Two of the job
  kills happen in that phase too.
Any part that exits on its own (e.g. the author or the job failing while the broker is down) is restarted after a
short back-off and counted as an unplanned restart.

Recovery time of an event: from the restart (or, for the executor, the kill) to the first moment the outputs hold
a relay block the author wrote after that moment (a PoV record of a later block: Stage R and Stage S both went
through it). For job restarts the time to the new process's first committed batch is reported too.

Everything the run starts (broker, cluster, job, author, producer) is stopped at the end and on failure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks.common import stop_cleanly_on_sigterm, write_result
from benchmarks.common import ROOT as REPO_ROOT
from benchmarks.reliability.follow import TopicFollower
from producers.transport.topics import ensure_realm_topics
from pubsub_core.stages.edge import ConsumerRecord
from pubsub_core.stages.topics import topic
from settings.settings import Settings, load_settings
from streaming.job import BATCH_LINE
from supervise.cluster import StandaloneCluster
from supervise.kafka_broker import EmbeddedKafka
from supervise.live_run import WORKLOAD_AUTHOR_SEED

__all__ = ["ChaosPlan", "OutputTracker", "Parts", "main", "run_chaos"]


STARTUP_KILLS = 0.4
"""The chance that a job kill is followed by the next event 1-15 s into the restarted job's start-up."""


class ChaosFailure(RuntimeError):
    """The run could not go on (a deadline passed, a part kept failing)."""


# -- processes ------------------------------------------------------------------------------------------------
@dataclass
class _Proc:
    name: str
    process: subprocess.Popen[bytes]
    log: Path
    started: float
    stopping: bool = False


class Parts:
    """Named subprocesses, each the leader of its own process group (its children go with it); every start of a
    name gets its own log file ``<logs>/<name>.<n>.log``."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.procs: dict[str, _Proc] = {}
        self.starts: Counter[str] = Counter()
        self.unplanned: Counter[str] = Counter()
        self.exit_notes: list[str] = []

    def start(self, name: str, argv: Sequence[str], env: Mapping[str, str] | None = None) -> _Proc:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.starts[name] += 1
        log = self.logs / f"{name}.{self.starts[name]}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True, cwd=REPO_ROOT,
                                       env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
        proc = _Proc(name, process, log, time.monotonic())
        self.procs[name] = proc
        return proc

    def alive(self, name: str) -> bool:
        proc = self.procs.get(name)
        return proc is not None and proc.process.poll() is None

    def pid(self, name: str) -> int:
        return self.procs[name].process.pid

    def kill(self, name: str) -> None:
        """SIGKILL the part's whole process group and reap it."""
        proc = self.procs[name]
        proc.stopping = True
        _killpg(proc.process.pid, signal.SIGKILL)
        proc.process.wait()

    def stop(self, name: str, sig: signal.Signals = signal.SIGTERM, grace: float = 60.0) -> int | None:
        """``sig`` to the leader, wait up to ``grace``, then SIGKILL the group (always, for stray children)."""
        proc = self.procs.get(name)
        if proc is None:
            return None
        proc.stopping = True
        if proc.process.poll() is None:
            try:
                proc.process.send_signal(sig)
            except ProcessLookupError:
                pass
            try:
                proc.process.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        _killpg(proc.process.pid, signal.SIGKILL)
        return proc.process.wait()

    def exited(self) -> list[_Proc]:
        """Parts that exited without being asked to."""
        return [p for p in self.procs.values() if not p.stopping and p.process.poll() is not None]

    def stop_all(self) -> None:
        for name in reversed(list(self.procs)):
            self.stop(name, signal.SIGTERM, grace=10.0)


def _killpg(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


# -- what the realm's topics show -----------------------------------------------------------------------------
class OutputTracker(TopicFollower):
    """Reads ``<realm>.blocks`` (read committed) and ``<realm>.pov`` from the beginning in a thread, surviving
    broker restarts; keeps the block head and, per subscriber, the highest block with a PoV record, with the
    local monotonic time each first appeared."""

    def __init__(self, settings: Settings, realm: str) -> None:
        super().__init__(settings, [topic(realm, "blocks"), topic(realm, "pov")], f"chaos-tracker-{realm}")
        self.realm = realm
        self.lock = threading.Lock()
        self.head = 0
        self.block_seen: dict[int, float] = {}
        self.served: dict[int, int] = {}
        self.out_head = 0
        self.out_seen: dict[int, float] = {}
        """Block number -> when its first PoV record was seen."""

    def take(self, record: ConsumerRecord) -> None:
        self._take(record.topic, record.value)

    def _take(self, name: str, value: bytes | None) -> None:
        try:
            body = json.loads(value or b"")
        except (UnicodeDecodeError, json.JSONDecodeError):
            return
        now = time.monotonic()
        with self.lock:
            if name.endswith(".blocks"):
                number = int(body["position"]) + 1  # the author writes block n at position n - 1
                self.block_seen.setdefault(number, now)
                self.head = max(self.head, number)
            else:
                number, subscriber = int(body["relay_block_number"]), int(body["subscriber"])
                self.served[subscriber] = max(self.served.get(subscriber, 0), number)
                self.out_seen.setdefault(number, now)
                self.out_head = max(self.out_head, number)

    def snapshot(self) -> tuple[int, int, dict[int, int]]:
        with self.lock:
            return self.head, self.out_head, dict(self.served)

    def recovered_at(self, since: float) -> float | None:
        """When the outputs first held a block the author wrote after ``since`` (None: not yet)."""
        with self.lock:
            later = [n for n, t in self.block_seen.items() if t > since]
            if not later:
                return None
            first = min(later)
            times = [t for n, t in self.out_seen.items() if n >= first]
            return min(times) if times else None


# -- the run --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ChaosPlan:
    blocks: int = 200
    seed: int = 0
    job_kills: int = 20
    broker_restarts: int = 3
    author_kills: int = 2
    executor_kills: int = 1
    cluster_job_kills: int = 2
    """Of ``job_kills``, how many happen in the standalone-cluster phase (only with ``executor_kills``)."""
    block_time: float = 1.0
    rate: float = 8.0
    trigger_seconds: float = 0.5
    publishers: int = 2
    system_publishers: int = 1
    subscribers: int = 3
    keys: int = 16
    subscribed_keys: int = 6
    ttl_mix: str = "0:0.7,5:0.2,20:0.1"
    deadline_seconds: float = 3600.0

    @classmethod
    def short(cls, seed: int = 0) -> ChaosPlan:
        return cls(blocks=30, seed=seed, job_kills=3, broker_restarts=1, author_kills=1, executor_kills=0,
                   cluster_job_kills=0, deadline_seconds=900.0)


@dataclass
class Event:
    kind: str
    mode: str = ""
    at: float = 0.0
    """Seconds since the run started, when the kill happened."""
    restarted: float = 0.0
    recovery_seconds: float | None = None
    first_batch_seconds: float | None = None
    note: str = ""


@dataclass
class ChaosResult:
    plan: dict[str, object]
    events: list[Event] = field(default_factory=list)
    unplanned_restarts: dict[str, int] = field(default_factory=dict)
    unplanned_notes: list[str] = field(default_factory=list)
    blocks: int = 0
    topics: dict[str, dict[str, int]] = field(default_factory=dict)
    pending_at_end: int = 0
    seconds: float = 0.0

    def figures(self) -> dict[str, object]:
        kinds = Counter(e.kind for e in self.events)
        recoveries = [e.recovery_seconds for e in self.events if e.recovery_seconds is not None]
        totals: Counter[str] = Counter()
        for counts in self.topics.values():
            totals.update(counts)
        return {
            "kills_survived": dict(kinds),
            "records_expected": totals["expected"],
            "records_lost": totals["missing"],
            "records_divergent": totals["differing"],
            "records_extra": totals["extra"],
            "byte_identical_duplicates": totals["duplicates"],
            "longest_recovery_seconds": round(max(recoveries), 1) if recoveries else None,
            "median_recovery_seconds": round(sorted(recoveries)[len(recoveries) // 2], 1) if recoveries else None,
            "recoveries_measured": len(recoveries),
            "blocks": self.blocks,
            "unplanned_restarts": self.unplanned_restarts,
            "seconds": round(self.seconds, 1),
        }

    @property
    def ok(self) -> bool:
        f = self.figures()
        return f["records_lost"] == 0 and f["records_divergent"] == 0 and f["records_extra"] == 0


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "cli.main", *args]


class ChaosRun:
    def __init__(self, plan: ChaosPlan, work: Path, say: Callable[[str], None] = print) -> None:
        self.plan = plan
        self.work = work
        self.say = say
        self.realm = f"chaos{uuid.uuid4().hex[:6]}"
        self.rng = random.Random(plan.seed)
        self.broker = EmbeddedKafka(home=work / "kafka")
        self.parts = Parts(work / "logs")
        self.cluster: StandaloneCluster | None = None
        self.master: str | None = None
        self.tracker: OutputTracker | None = None
        self.settings: Settings | None = None
        self.t0 = time.monotonic()
        self.deadline = self.t0 + plan.deadline_seconds
        self.result = ChaosResult(plan=asdict(plan))

    # parts
    @property
    def bootstrap(self) -> str:
        assert self.settings is not None and self.settings.kafka_bootstrap is not None
        return self.settings.kafka_bootstrap

    def _job_argv(self) -> list[str]:
        argv = _cli("job", "--realm", self.realm, "--checkpoint", str(self.work / "checkpoint"),
                    "--trigger-seconds", f"{self.plan.trigger_seconds:g}", "--bootstrap", self.bootstrap)
        return argv + (["--master", self.master] if self.master else [])

    def _producer_argv(self) -> list[str]:
        p = self.plan
        return _cli("workload", "--live", "--realm", self.realm, "--rate", f"{p.rate:g}", "--block-time",
                    f"{p.block_time:g}", "--seed", str(p.seed), "--publishers", str(p.publishers),
                    "--system-publishers", str(p.system_publishers), "--subscribers", str(p.subscribers),
                    "--keys", str(p.keys), "--subscribed-keys", str(p.subscribed_keys), "--ttl-mix", p.ttl_mix,
                    "--bootstrap", self.bootstrap)

    def _author_argv(self) -> list[str]:
        return _cli("author", "--realm", self.realm, "--block-time", f"{self.plan.block_time:g}",
                    "--bootstrap", self.bootstrap)

    def start_part(self, name: str) -> None:
        if name == "job":
            self.parts.start("job", self._job_argv(), env={"PUBSUB_RUNTIME_DIR": str(self.work / "runtime"),
                                                           "COLUMNS": "400"})
        elif name == "author":
            self.parts.start("author", self._author_argv(), env={"PUBSUB_AUTHOR_KEY": WORKLOAD_AUTHOR_SEED.hex()})
        elif name == "producer":
            self.parts.start("producer", self._producer_argv())
        else:
            raise ValueError(name)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def keep_alive(self) -> None:
        """Restart a part that exited on its own (after a back-off of 2 s from its start); check the deadline."""
        if time.monotonic() > self.deadline:
            raise ChaosFailure(f"deadline of {self.plan.deadline_seconds:.0f}s passed")
        for proc in self.parts.exited():
            if time.monotonic() - proc.started < 2.0:
                continue
            code = proc.process.returncode
            self.parts.unplanned[proc.name] += 1
            last = tail(proc.log, 3).replace("\n", " | ")[-300:]
            self.result.unplanned_notes.append(f"{self.now():.0f}s {proc.name} exited {code}: {last}")
            self.say(f"  {proc.name} exited on its own ({code}); restarting")
            if sum(self.parts.unplanned.values()) > 60:
                raise ChaosFailure("more than 60 unplanned restarts:\n" + "\n".join(self.result.unplanned_notes[-5:]))
            self.start_part(proc.name)

    def wait(self, done: Callable[[], bool], seconds: float, what: str) -> None:
        end = time.monotonic() + seconds
        while not done():
            self.keep_alive()
            if time.monotonic() > end:
                raise ChaosFailure(f"{what}: not within {seconds:.0f}s")
            time.sleep(0.25)

    def sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.keep_alive()
            time.sleep(min(0.25, max(0.0, end - time.monotonic())))

    def recovered(self, since: float) -> bool:
        assert self.tracker is not None
        return self.tracker.recovered_at(since) is not None

    def _first_batch(self, proc: _Proc) -> float | None:
        try:
            text = proc.log.read_text(errors="replace")
        except OSError:
            return None
        return time.monotonic() - proc.started if BATCH_LINE.search(text) else None

    # events
    def kill_job(self, mode: str) -> Event:
        event = Event("job", mode, self.now())
        self.parts.kill("job")
        self.start_part("job")
        event.restarted = time.monotonic()
        return event

    def kill_author(self) -> Event:
        event = Event("author", "", self.now())
        self.parts.kill("author")
        self.start_part("author")
        event.restarted = time.monotonic()
        return event

    def restart_broker(self) -> Event:
        event = Event("broker", "", self.now())
        self.broker.kill()
        down = self.rng.uniform(1.0, 5.0)
        time.sleep(down)
        started = time.monotonic()
        self.broker.start(keep_data=True)
        event.restarted = time.monotonic()
        event.note = f"down {down:.1f}s, start {event.restarted - started:.1f}s"
        return event

    def kill_executor(self) -> Event:
        assert self.cluster is not None
        worker = self.cluster._processes[-1].pid
        executors = [p for p in descendants(worker) if "CoarseGrainedExecutorBackend" in cmdline(p)
                     and "java" in cmdline(p)]
        if not executors:
            raise ChaosFailure("no executor process under our worker")
        event = Event("executor", "", self.now())
        for pid in executors[:1]:
            os.kill(pid, signal.SIGKILL)
        event.restarted = time.monotonic()
        event.note = f"pid {executors[0]}"
        return event

    def measure(self, event: Event, interrupted_after: float | None = None) -> None:
        """Wait until the outputs hold a block written after the restart; record the times."""
        assert self.tracker is not None
        job = self.parts.procs["job"]
        budget = 600.0
        end = time.monotonic() + budget
        while True:
            self.keep_alive()
            if event.first_batch_seconds is None and event.kind == "job" and self.parts.procs["job"] is job:
                event.first_batch_seconds = self._first_batch(job)
            at = self.tracker.recovered_at(event.restarted)
            if at is not None:
                event.recovery_seconds = at - event.restarted
                return
            if interrupted_after is not None and time.monotonic() - event.restarted >= interrupted_after:
                return  # the next kill comes during this start-up
            if time.monotonic() > end:
                raise ChaosFailure(f"no recovery {budget:.0f}s after the {event.kind} restart at {event.at:.0f}s")
            time.sleep(0.2)

    def perform(self, kind: str) -> None:
        if kind == "job":
            self.sleep(self.rng.uniform(0.5, 8.0))
            event = self.kill_job("steady")
        elif kind == "author":
            self.sleep(self.rng.uniform(0.5, 5.0))
            event = self.kill_author()
        elif kind == "broker":
            self.sleep(self.rng.uniform(0.5, 5.0))
            event = self.restart_broker()
        elif kind == "executor":
            self.sleep(self.rng.uniform(0.5, 5.0))
            event = self.kill_executor()
        else:
            raise ValueError(kind)
        self.result.events.append(event)
        head, out_head, _ = self.tracker.snapshot() if self.tracker else (0, 0, {})
        self.say(f"[{self.now():6.0f}s] {kind} {event.mode} killed {event.note} | blocks {head} outputs {out_head}")

    def schedule(self) -> tuple[list[str], list[str]]:
        """The seeded order of events: the local phase, and the standalone-cluster phase."""
        p = self.plan
        cluster_kills = min(p.cluster_job_kills, p.job_kills) if p.executor_kills else 0
        local = ["job"] * (p.job_kills - cluster_kills) + ["broker"] * p.broker_restarts + ["author"] * p.author_kills
        self.rng.shuffle(local)
        cluster = ["executor"] * p.executor_kills + ["job"] * cluster_kills
        self.rng.shuffle(cluster)
        return local, cluster

    def run_events(self, kinds: list[str]) -> None:
        i = 0
        while i < len(kinds):
            kind = kinds[i]
            if kind == "job" and self.rng.random() < STARTUP_KILLS:
                # a start-up kill: kill, restart, and kill again at a random point of the restart
                self.sleep(self.rng.uniform(0.5, 8.0))
                first = self.kill_job("steady")
                self.result.events.append(first)
                self.say(f"[{self.now():6.0f}s] job steady killed (the next kill lands in its start-up)")
                self.measure(first, interrupted_after=self.rng.uniform(1.0, 15.0))
                i += 1
                if i < len(kinds) and kinds[i] == "job":
                    second = self.kill_job("startup")
                    self.result.events.append(second)
                    self.say(f"[{self.now():6.0f}s] job killed during start-up")
                    self.measure(second)
                    i += 1
                continue
            self.perform(kind)
            self.measure(self.result.events[-1])
            e = self.result.events[-1]
            self.say(f"          recovered in {e.recovery_seconds:.1f}s" + (
                f" (first batch after {e.first_batch_seconds:.1f}s)" if e.first_batch_seconds else ""))
            i += 1

    def run(self) -> ChaosResult:
        from supervise.verify import check_outputs

        p = self.plan
        try:
            info = self.broker.start()
            self.settings = load_settings(overrides={"kafka_bootstrap": info.bootstrap})
            ensure_realm_topics(self.settings, self.realm, partitions=self.settings.views_partitions)
            tracker = self.tracker = OutputTracker(self.settings, self.realm).start()
            for name in ("job", "producer", "author"):
                self.start_part(name)
            self.say(f"realm {self.realm}: broker {info.bootstrap}, work {self.work}")
            self.wait(lambda: tracker.snapshot()[1] > 0, 600, "the job's first output")
            self.say(f"[{self.now():6.0f}s] warm: outputs at block {tracker.snapshot()[1]}")
            local, on_cluster = self.schedule()
            self.run_events(local)
            if on_cluster:
                self.cluster = StandaloneCluster(self.work / "cluster", cores=2, memory="2g")
                self.master = self.cluster.start()
                self.parts.stop("job", signal.SIGTERM)
                self.start_part("job")
                switched = Event("switch-to-cluster", "", self.now(), restarted=time.monotonic())
                self.measure(switched)
                self.say(f"[{self.now():6.0f}s] job on {self.master}, recovered in {switched.recovery_seconds:.1f}s")
                self.result.unplanned_notes.append(f"switch to cluster: recovery {switched.recovery_seconds:.1f}s")
                self.run_events(on_cluster)
            self.wait(lambda: tracker.snapshot()[0] >= p.blocks, p.deadline_seconds, f"{p.blocks} blocks")
            self.drain()
            exported = self.work / "events.jsonl"
            from cli.main import main as pubsub

            if pubsub(["export", "--bootstrap", self.bootstrap, "--realm", self.realm, "-o", str(exported)]) != 0:
                raise ChaosFailure("pubsub export failed")
            lines = exported.read_bytes().splitlines()
            checked = check_outputs(lines, self.settings, [self.realm])
            self.result.pending_at_end = checked.pending_at_end
            for t in checked.topics:
                self.result.topics[t.topic.rpartition(".")[2]] = {
                    "expected": t.expected, "matched": t.matched, "missing": t.missing, "extra": t.extra,
                    "differing": t.differing, "duplicates": t.duplicates}
                if t.examples:
                    self.result.unplanned_notes.append(f"{t.topic}: {list(t.examples)}")
        finally:
            self.result.unplanned_restarts = dict(self.parts.unplanned)
            self.result.seconds = self.now()
            self.parts.stop_all()
            if self.tracker is not None:
                self.tracker.stop()
            if self.cluster is not None:
                self.cluster.stop()
            self.broker.stop()
        return self.result

    def drain(self) -> None:
        """Stop the producer (it flushes), let the author write two more blocks, stop it, wait until Stage S served
        every subscriber at the last block, stop the job."""
        tracker = self.tracker
        assert tracker is not None
        code = self.parts.stop("producer", signal.SIGINT)
        if code != 0:
            self.result.unplanned_notes.append(f"producer stopped with {code}: {tail(self.parts.procs['producer'].log, 3)}")
        head = tracker.snapshot()[0]
        self.wait(lambda: tracker.snapshot()[0] >= head + 2, 300, "two blocks after the producer stopped")
        self.parts.stop("author", signal.SIGINT)
        last = tracker.snapshot()[0]
        self.result.blocks = last
        subscribers = set(range(3000, 3000 + self.plan.subscribers))
        self.wait(lambda: all(tracker.snapshot()[2].get(s, 0) >= last for s in subscribers), 900,
                  f"every subscriber served at block {last}")
        self.parts.stop("job", signal.SIGTERM)
        self.say(f"[{self.now():6.0f}s] drained at block {last}")


def run_chaos(plan: ChaosPlan, work: Path | None = None, say: Callable[[str], None] = print) -> ChaosResult:
    if work is None:
        work = Path(tempfile.mkdtemp(prefix="pubsub-chaos-"))
    return ChaosRun(plan, work, say).run()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks.reliability.chaos", description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=None, help="relay blocks at least (default 200; 30 with --short)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the workload and the kill schedule (default: 0)")
    parser.add_argument("--short", action="store_true", help="30 blocks, 3 job kills, 1 broker restart, 1 author kill")
    plan = ChaosPlan()
    parser.add_argument("--job-kills", type=int, metavar="N", help=f"SIGKILLs of the job (default: {plan.job_kills})")
    parser.add_argument("--broker-restarts", type=int, metavar="N",
                        help=f"broker kills and restarts (default: {plan.broker_restarts})")
    parser.add_argument("--author-kills", type=int, metavar="N",
                        help=f"SIGKILLs of the block author (default: {plan.author_kills})")
    parser.add_argument("--executor-kills", type=int, metavar="N",
                        help=f"executor kills in the standalone-cluster phase (default: {plan.executor_kills}; 0 "
                             "skips that phase)")
    parser.add_argument("--block-time", type=float, metavar="SECONDS",
                        help=f"the author's block time (default: {plan.block_time})")
    parser.add_argument("--rate", type=float, help=f"publishes per second (default: {plan.rate})")
    parser.add_argument("--work", type=Path, help="folder for broker data, checkpoint and logs (default: a temp dir)")
    parser.add_argument("--json", type=Path, help="write the result here (e.g. benchmarks/results/chaos.json)")
    args = parser.parse_args(argv)
    stop_cleanly_on_sigterm()
    plan = ChaosPlan.short(args.seed) if args.short else ChaosPlan(seed=args.seed)
    changes = {k: v for k, v in {"blocks": args.blocks, "job_kills": args.job_kills,
                                 "broker_restarts": args.broker_restarts, "author_kills": args.author_kills,
                                 "executor_kills": args.executor_kills, "block_time": args.block_time,
                                 "rate": args.rate}.items() if v is not None}
    from dataclasses import replace

    plan = replace(plan, **changes)
    result = run_chaos(plan, args.work)
    figures = result.figures()
    print(json.dumps(figures, indent=2))
    if args.json:
        write_result("chaos", {"figures": figures, "plan": result.plan, "topics": result.topics,
                               "pending_at_end": result.pending_at_end,
                               "events": [asdict(e) | {"restarted": None} for e in result.events],
                               "notes": result.unplanned_notes},
                     module="benchmarks.reliability.chaos", argv=argv, path=args.json)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
