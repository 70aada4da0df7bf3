"""Soak: a sustained live rate through the block author and the continuous job, with memory and state size sampled
every 10 s; and how long a job takes to start on a realm whose input holds a backlog (``--backlog``).

    python -m benchmarks.reliability.soak                       # 10 minutes at 10 publishes/s, a block a second
    python -m benchmarks.reliability.soak --minutes 3 --rate 6  # shorter
    python -m benchmarks.reliability.soak --backlog 3000        # a realm whose input holds 3000 blocks at start

Soak. Its own embedded broker; the live producer (``pubsub workload --live``, TTL mix ``0:0.3,5:0.4,30:0.3``:
most values expire), the author and the job (local[2]) as subprocesses. The live producer never deregisters,
so this harness signs the manager's extrinsics itself: every ``--churn`` seconds it deregisters one registered
publisher (its child trie is wiped) and registers it again half a period later (its publishes in between are
refused, ``NotRegistered``), continuing the manager's positions and seqnos from the topic. Every 10 s it samples:
RSS of the job's driver (the Python process and its JVM), of the JVM's Python workers (summed), of the broker
and of the author and producer (from /proc: psutil is not installed here); the checkpoint folder's size on disk
(``relay/``, ``subscribers/``, and of those the ``state/`` folders: RocksDB changelogs and snapshot zips), the
RocksDB working folders the JVM holds open; and the pipeline's progress (block head, the outputs' head, and from
``<realm>.events`` counts of KeyExpired / PublisherDeregistered / PublisherRegistered). At the end the realm is
exported and compared with the simulator (check_outputs), and ``docs/img/soak.png`` is drawn.

Backlog. A generated workload of N blocks (``producers.workload.generate``) is produced to a fresh realm, then
the job runs ``--available-now`` with maxOffsetsPerTrigger M: Stage R drains the input (a day of traffic at
start), then Stage S starts thousands of blocks behind and catches up (a subscriber that fell behind). Peak RSS
of the driver JVM and of the Python workers, batches and seconds per query are measured for each M; the outputs
are compared with the simulator.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
import zipfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import save_plot, stop_cleanly_on_sigterm, write_result
from benchmarks.common import ROOT as REPO_ROOT
from benchmarks.reliability.chaos import OutputTracker, Parts, cmdline, descendants, tail
from benchmarks.reliability.follow import TopicFollower
from cli.main import main as pubsub  # imported at start: a run lasts long, and the tree may change meanwhile
from producers.transport.kafka_io import produce
from producers.transport.topics import ensure_realm_topics
from producers.workload import LogBuilder, WorkloadSpec, parse_ttl_mix
from producers.writers.live import LiveSource, LiveSpec, read_resume_point
from pubsub_core.relay import BroadcasterCall, CallKind
from pubsub_core.stages import LineParser, OutputRecord
from pubsub_core.stages.edge import ConsumerRecord, ProducerRecord
from pubsub_core.stages.topics import topic
from settings.settings import STATE_REOPEN_MODES, Settings, load_settings
from streaming.metrics import checkpoint_bytes
from supervise.kafka_broker import EmbeddedKafka
from supervise.live_run import WORKLOAD_AUTHOR_SEED
from supervise.verify import check_outputs

__all__ = ["add_plan_arguments", "checkpoint_anatomy", "job_batches", "levels", "longest_gap", "main", "open_fds", "plan_from_args",
           "restart_author", "rss_kib", "tree_fds", "tree_rss"]

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_kib(pid: int) -> int:
    """Resident set size of one process in KiB (0 if it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE // 1024
    except (OSError, IndexError, ValueError):
        return 0


def tree_rss(root: int) -> dict[str, int]:
    """RSS (KiB) of a job's process tree, by role: the driver's Python, the JVMs, the Python workers."""
    out: Counter[str] = Counter()
    out["driver_python"] = rss_kib(root)
    for pid in descendants(root):
        line = cmdline(pid)
        if "java" in line.split(" ", 1)[0]:
            out["jvm"] += rss_kib(pid)
        elif "python" in line.split(" ", 1)[0]:
            out["python_workers"] += rss_kib(pid)
    return dict(out)


def open_fds(pid: int) -> Counter[str]:
    """The open file descriptors of one process, by kind: sockets, pipes, files, other (anon inodes, devices)."""
    kinds: Counter[str] = Counter()
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return kinds
    for fd in fds:
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        kind = target.split(":", 1)[0] if target.startswith(("socket:", "pipe:")) else (
            "file" if target.startswith("/") and not target.startswith("/dev/") else "other")
        kinds[kind] += 1
    return kinds


def tree_fds(root: int) -> dict[str, int]:
    """Open file descriptors of a job's process tree: the driver's Python, the JVMs by kind, the Python workers."""
    out: Counter[str] = Counter()
    out["driver_python_fds"] = sum(open_fds(root).values())
    for pid in descendants(root):
        line = cmdline(pid)
        if "java" in line.split(" ", 1)[0]:
            for kind, n in open_fds(pid).items():
                out[f"jvm_fds_{kind}"] += n
                out["jvm_fds"] += n
        elif "python" in line.split(" ", 1)[0]:
            out["python_workers_fds"] += sum(open_fds(pid).values())
    return dict(out)


def rocksdb_dirs(root: int) -> set[Path]:
    """The RocksDB working folders the job's JVMs hold files open in (under spark.local.dir)."""
    found: set[Path] = set()
    for pid in [root, *descendants(root)]:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.endswith((".sst", ".log")) and "/workingDir" in target:
                path = Path(target)
                while path.parent != path and "workingDir" not in path.name:
                    path = path.parent
                found.add(path)
    return found


def checkpoint_anatomy(checkpoint: Path) -> dict[str, float]:
    """Where the state stores' checkpoint bytes are (MiB): snapshot zips, changelogs, shared SST files, and the
    RocksDB MANIFEST inside each store's newest zip (uncompressed, summed over the stores): the part that grows
    with each flush while a store stays open."""
    zips = changelogs = ssts = manifest = 0
    for store in checkpoint.glob("*/state/*/*"):
        if not store.is_dir() or not store.name.isdigit():
            continue
        newest: tuple[int, Path] | None = None
        for path in store.iterdir():
            try:
                size = path.stat().st_size
            except OSError:
                continue
            if path.suffix == ".zip":
                zips += size
                version = path.stem.split("_")[0]
                if version.isdigit() and (newest is None or int(version) > newest[0]):
                    newest = (int(version), path)
            elif path.suffix == ".changelog":
                changelogs += size
            elif path.name == "SSTs":
                ssts += checkpoint_bytes(path)
        if newest is not None:
            try:
                with zipfile.ZipFile(newest[1]) as archive:
                    manifest += sum(i.file_size for i in archive.infolist() if i.filename.startswith("MANIFEST"))
            except (OSError, zipfile.BadZipFile):
                pass  # removed or still being written: the next sample reads it
    return {"zips_mib": zips / 2**20, "changelogs_mib": changelogs / 2**20, "ssts_mib": ssts / 2**20,
            "manifest_kib": manifest / 1024}


class EventCounter(TopicFollower):
    """Counts pallet events of some kinds on ``<realm>.events`` (each record id once), in a thread."""

    KINDS = ("KeyExpired", "PublisherDeregistered", "PublisherRegistered", "DataPublished")

    def __init__(self, settings: Settings, realm: str) -> None:
        super().__init__(settings, [topic(realm, "events")], f"soak-events-{realm}")
        self.counts: Counter[str] = Counter()
        self.seen: set[bytes | None] = set()

    def take(self, record: ConsumerRecord) -> None:
        record_id = record.header("id")
        if record_id in self.seen:
            return
        self.seen.add(record_id)
        text = (record.value or b"").decode(errors="replace")
        for kind in self.KINDS:
            if f'"{kind}"' in text:
                self.counts[kind] += 1


class Churn:
    """The manager's deregister / register extrinsics for the registered publishers, signed here (the live
    producer never deregisters), continuing the manager's positions and seqnos on ``<realm>.extrinsics``."""

    def __init__(self, settings: Settings, spec: LiveSpec) -> None:
        self.settings = settings
        source = LiveSource(spec)
        self.cast = source.cast
        self.manager = self.cast.manager.public_key.hex()
        resume = read_resume_point(settings, spec.workload.realm, {("extrinsics", self.manager)},
                                   source.genesis.registry)
        self.log = LogBuilder(spec.workload.realm)
        self.log.positions.update(resume.positions)
        self.log.seqnos.update(resume.seqnos)
        self.router = LineParser(spec.workload.realm)
        self.sent: Counter[str] = Counter()

    def call(self, kind: CallKind, para: int) -> None:
        self.log.signed(self.cast.manager, "extrinsics", self.manager, BroadcasterCall(kind, para).encode())
        lines, self.log.lines = self.log.lines, []
        records = []
        for line in lines:
            routed = self.router.route(line)
            assert not isinstance(routed, OutputRecord)
            record, _ = routed
            records.append(ProducerRecord(record.topic, record.key, record.value))
        produce(self.settings, records)
        self.sent[kind.name] += 1


@dataclass(frozen=True)
class SoakPlan:
    minutes: float = 10.0
    rate: float = 10.0
    block_time: float = 1.0
    trigger_seconds: float = 1.0
    sample_seconds: float = 10.0
    churn_seconds: float = 60.0
    publishers: int = 2
    system_publishers: int = 1
    subscribers: int = 3
    keys: int = 24
    subscribed_keys: int = 12
    ttl_mix: str = "0:0.3,5:0.4,30:0.3"
    seed: int = 11
    state_reopen: str = Settings.state_reopen
    state_reopen_minutes: float = Settings.state_reopen_minutes
    warmup_minutes: float = 5.0
    """Samples before this are left out of the levels and slopes (retention of 100 batches filling, JIT)."""
    author_restart_minutes: float | None = None
    """Stop the author (SIGINT) and start it again this often, timing each start (None: never)."""


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "cli.main", *args]


def run_soak(plan: SoakPlan, work: Path, say: Callable[[str], None] = print) -> dict[str, object]:
    realm = f"soak{uuid.uuid4().hex[:6]}"
    broker = EmbeddedKafka(home=work / "kafka")
    parts = Parts(work / "logs")
    checkpoint = work / "checkpoint"
    tracker = events = None
    samples: list[dict[str, float]] = []
    result: dict[str, object] = {"plan": plan.__dict__, "realm": realm}
    try:
        info = broker.start()
        settings = load_settings(overrides={"kafka_bootstrap": info.bootstrap})
        ensure_realm_topics(settings, realm, partitions=settings.views_partitions)
        workload = WorkloadSpec(seed=plan.seed, publishers=plan.publishers, system_publishers=plan.system_publishers,
                                subscribers=plan.subscribers, keys=plan.keys, subscribed_keys=plan.subscribed_keys,
                                value_max=48, ttl_mix=parse_ttl_mix(plan.ttl_mix), realm=realm)
        spec = LiveSpec(workload, plan.rate, None, plan.block_time)
        parts.start("job", _cli("job", "--realm", realm, "--checkpoint", str(checkpoint), "--trigger-seconds",
                                f"{plan.trigger_seconds:g}", "--bootstrap", info.bootstrap,
                                "--state-reopen", plan.state_reopen,
                                "--state-reopen-minutes", f"{plan.state_reopen_minutes:g}"),
                    env={"PUBSUB_RUNTIME_DIR": str(work / "runtime")})
        parts.start("producer", _cli(
            "workload", "--live", "--realm", realm, "--rate", f"{plan.rate:g}", "--block-time",
            f"{plan.block_time:g}", "--seed", str(plan.seed), "--publishers", str(plan.publishers),
            "--system-publishers", str(plan.system_publishers), "--subscribers", str(plan.subscribers),
            "--keys", str(plan.keys), "--subscribed-keys", str(plan.subscribed_keys), "--value-max", "48",
            "--ttl-mix", plan.ttl_mix, "--bootstrap", info.bootstrap))
        author_argv = _cli("author", "--realm", realm, "--block-time", f"{plan.block_time:g}",
                           "--bootstrap", info.bootstrap)
        author_env = {"PUBSUB_AUTHOR_KEY": WORKLOAD_AUTHOR_SEED.hex()}
        parts.start("author", author_argv, env=author_env)
        tracker = OutputTracker(settings, realm).start()
        # warm-up: the job's first outputs (Spark start-up is not part of the soak)
        deadline = time.monotonic() + 600
        while tracker.snapshot()[1] == 0:
            _check(parts)
            if time.monotonic() > deadline:
                raise RuntimeError("the job wrote no output in 600 s")
            time.sleep(1)
        events = EventCounter(settings, realm).start()
        churn = Churn(settings, spec)
        registered = list(churn.cast.registered)
        say(f"soak {realm}: warm after {time.monotonic() - deadline + 600:.0f}s; {plan.minutes:g} min at {plan.rate:g}/s")
        start = time.monotonic()
        end = start + plan.minutes * 60
        next_sample, next_churn, turn, down = start, start + plan.churn_seconds / 2, 0, None
        restart_every = None if plan.author_restart_minutes is None else plan.author_restart_minutes * 60
        next_restart = start + (restart_every or 0) / 2
        author_restarts: list[dict[str, float]] = []
        result["author_restarts"] = author_restarts
        job_pid, broker_pid = parts.pid("job"), info.pid
        while time.monotonic() < end:
            _check(parts)
            now = time.monotonic()
            if now >= next_churn and registered:
                if down is None:
                    down = registered[turn % len(registered)]
                    churn.call(CallKind.DEREGISTER_PUBLISHER, down)
                else:
                    churn.call(CallKind.REGISTER_PUBLISHER, down)
                    down, turn = None, turn + 1
                next_churn += plan.churn_seconds / 2
            if restart_every is not None and now >= next_restart:
                seconds = restart_author(parts, author_argv, author_env)
                author_restarts.append({"t": round(now - start, 1), "blocks": tracker.snapshot()[0],
                                        "author_restart_s": round(seconds, 3)})
                say(f"author restarted in {seconds:.2f}s at block {author_restarts[-1]['blocks']}")
                next_restart += restart_every
            if now >= next_sample:
                head, out_head, _ = tracker.snapshot()
                rss = tree_rss(job_pid)
                sample = {
                    "t": round(now - start, 1), "blocks": head, "outputs": out_head,
                    "driver_python_mib": rss.get("driver_python", 0) / 1024, "jvm_mib": rss.get("jvm", 0) / 1024,
                    "python_workers_mib": rss.get("python_workers", 0) / 1024,
                    "broker_mib": rss_kib(broker_pid) / 1024,
                    "author_mib": rss_kib(parts.pid("author")) / 1024,
                    "producer_mib": rss_kib(parts.pid("producer")) / 1024,
                    "checkpoint_mib": checkpoint_bytes(checkpoint) / 2**20,
                    "relay_state_mib": checkpoint_bytes(checkpoint / "relay" / "state") / 2**20,
                    "subscribers_state_mib": checkpoint_bytes(checkpoint / "subscribers" / "state") / 2**20,
                    "fused_state_mib": checkpoint_bytes(checkpoint / "fused" / "state") / 2**20,
                    "rocksdb_local_mib": sum(checkpoint_bytes(d) for d in rocksdb_dirs(job_pid)) / 2**20,
                    **checkpoint_anatomy(checkpoint),
                    **{f"jvm_fds_{k}": 0 for k in ("socket", "pipe", "file", "other")}, **tree_fds(job_pid),
                    "broker_fds": sum(open_fds(broker_pid).values()),
                    "author_fds": sum(open_fds(parts.pid("author")).values()),
                    "producer_fds": sum(open_fds(parts.pid("producer")).values()),
                    **{k: events.counts[k] for k in EventCounter.KINDS},
                }
                samples.append(sample)
                say(" ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in sample.items()))
                next_sample += plan.sample_seconds
            time.sleep(0.5)
        if down is not None:
            churn.call(CallKind.REGISTER_PUBLISHER, down)
        result["churn"] = dict(churn.sent)
        # drain, then compare with the simulator
        parts.stop("producer", signal.SIGINT)
        head = tracker.snapshot()[0]
        _wait(parts, lambda: tracker.snapshot()[0] >= head + 2, 120, "two more blocks")
        parts.stop("author", signal.SIGINT)
        last = tracker.snapshot()[0]
        subscribers = range(3000, 3000 + plan.subscribers)
        _wait(parts, lambda: all(tracker.snapshot()[2].get(s, 0) >= last for s in subscribers), 900,
              f"Stage S at block {last}")
        parts.stop("job", signal.SIGTERM)
        result["blocks"] = last
        result["batches"] = job_batches(work / "logs")
        with tracker.lock:
            result["longest_output_gap_seconds"] = round(longest_gap(
                [t for n, t in tracker.out_seen.items() if t >= start]), 1)
        result["events"] = dict(events.counts)
        exported = work / "events.jsonl"
        if pubsub(["export", "--bootstrap", info.bootstrap, "--realm", realm, "-o", str(exported)]) != 0:
            raise RuntimeError("export failed")
        checked = check_outputs(exported.read_bytes().splitlines(), settings, [realm])
        result["equal_to_simulator"] = checked.ok
        result["topics"] = {t.topic.rpartition(".")[2]: {"expected": t.expected, "matched": t.matched,
                                                          "missing": t.missing, "differing": t.differing,
                                                          "extra": t.extra, "duplicates": t.duplicates}
                            for t in checked.topics}
    finally:
        result["samples"] = samples
        series = levels(samples, plan.warmup_minutes)
        restarts = result.get("author_restarts")
        if isinstance(restarts, list) and restarts:
            series.update(levels(restarts, plan.warmup_minutes))
        result["levels"] = series
        parts.stop_all()
        for thread in (tracker, events):
            if thread is not None:
                thread.stop()
        broker.stop()
    return result


def restart_author(parts: Parts, argv: Sequence[str], env: Mapping[str, str]) -> float:
    """Stop the author (SIGINT, as an operator would), start it again, and return the seconds from the new
    process's start to its "resuming after" line (interpreter start, genesis, fencing, snapshot and catch-up)."""
    parts.stop("author", signal.SIGINT)
    began = time.monotonic()
    proc = parts.start("author", argv, env=env)
    while "resuming after" not in proc.log.read_text(errors="replace"):
        _check(parts)
        if time.monotonic() - began > 300:
            raise RuntimeError(f"the author did not resume within 300 s:\n{tail(proc.log)}")
        time.sleep(0.05)
    return time.monotonic() - began


def levels(samples: Sequence[Mapping[str, object]], warmup_minutes: float) -> dict[str, dict[str, float]]:
    """Per sampled series, after ``warmup_minutes``: first, last, min, max, and the least-squares slope per hour
    with its standard error (a slope within about two standard errors of 0 is flat within the noise)."""
    kept = [s for s in samples if float(s["t"]) >= warmup_minutes * 60]  # type: ignore[arg-type]
    out: dict[str, dict[str, float]] = {}
    if len(kept) < 3:
        return out
    hours = [float(s["t"]) / 3600 for s in kept]  # type: ignore[arg-type]
    mean_t = sum(hours) / len(hours)
    spread = sum((t - mean_t) ** 2 for t in hours)
    for key in kept[0]:
        if key == "t" or not all(isinstance(s.get(key), (int, float)) for s in kept):
            continue
        values = [float(s[key]) for s in kept]  # type: ignore[arg-type]
        mean_v = sum(values) / len(values)
        slope = sum((t - mean_t) * (v - mean_v) for t, v in zip(hours, values)) / spread if spread else 0.0
        residual = sum((v - mean_v - slope * (t - mean_t)) ** 2 for t, v in zip(hours, values))
        error = (residual / (len(values) - 2) / spread) ** 0.5 if spread else 0.0
        out[key] = {"first": values[0], "last": values[-1], "min": min(values), "max": max(values),
                    "slope_per_hour": slope, "slope_error": error}
    return out


def longest_gap(times: Sequence[float]) -> float:
    """The longest wait, in seconds, between two blocks' first outputs (a restart of the queries shows here)."""
    ordered = sorted(times)
    return max((b - a for a, b in zip(ordered, ordered[1:])), default=0.0)


def job_batches(logs: Path) -> dict[str, int]:
    """The newest batch id of each query in the job's logs (batch ids go on across restarts on a checkpoint),
    and the periodic restarts of the queries the job reported."""
    out: dict[str, int] = {"reopens": 0}
    for log in sorted(logs.glob("job.*.log")):
        for line in log.read_text(errors="replace").splitlines():
            head = line.split(":", 1)[0].split()
            if len(head) == 3 and head[1] == "batch" and head[2].isdigit():
                out[head[0]] = max(out.get(head[0], 0), int(head[2]) + 1)
            elif line.startswith("state stores reopened"):
                out["reopens"] += 1
    return out


def _check(parts: Parts) -> None:
    gone = parts.exited()
    if gone:
        raise RuntimeError(f"{gone[0].name} exited with {gone[0].process.returncode}:\n{tail(gone[0].log)}")


def _wait(parts: Parts, done: Callable[[], bool], seconds: float, what: str) -> None:
    end = time.monotonic() + seconds
    while not done():
        _check(parts)
        if time.monotonic() > end:
            raise RuntimeError(f"{what}: not within {seconds:.0f}s")
        time.sleep(0.5)


def plot(result: dict[str, object], path: Path, title: str = "soak") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = result["samples"]
    assert isinstance(samples, list) and samples
    t = [s["t"] / 60 for s in samples]
    fig, (mem, disk, fds, work) = plt.subplots(4, 1, figsize=(8, 12), sharex=True)
    for key, label in (("jvm_mib", "driver JVM"), ("python_workers_mib", "Python workers"),
                       ("driver_python_mib", "driver Python"), ("broker_mib", "Kafka broker"),
                       ("author_mib", "author"), ("producer_mib", "producer")):
        mem.plot(t, [s[key] for s in samples], label=label)
    mem.set_ylabel("RSS (MiB)")
    mem.legend(loc="upper left", fontsize=8)
    for key, label in (("checkpoint_mib", "checkpoint folder"), ("relay_state_mib", "relay/state"),
                       ("subscribers_state_mib", "subscribers/state"), ("fused_state_mib", "fused/state"),
                       ("rocksdb_local_mib", "RocksDB working dirs")):
        if any(s.get(key) for s in samples):  # the layout's folders only (a soak of older results has no fused/)
            disk.plot(t, [s[key] for s in samples], label=label)
    disk.set_ylabel("on disk (MiB)")
    disk.legend(loc="upper left", fontsize=8)
    for key, label in (("jvm_fds", "driver JVM"), ("jvm_fds_socket", "driver JVM: sockets"),
                       ("python_workers_fds", "Python workers"), ("broker_fds", "Kafka broker"),
                       ("author_fds", "author"), ("producer_fds", "producer")):
        if all(key in s for s in samples):
            fds.plot(t, [s[key] for s in samples], label=label)
    fds.set_ylabel("open file descriptors")
    fds.legend(loc="upper left", fontsize=8)
    restarts = result.get("author_restarts")
    if isinstance(restarts, list) and restarts:
        seconds = fds.twinx()
        seconds.plot([r["t"] / 60 for r in restarts], [r["author_restart_s"] for r in restarts], "ko--",
                     label="author restart (s, right)")
        seconds.set_ylabel("author restart (s)")
        seconds.set_ylim(bottom=0)
        seconds.legend(loc="upper right", fontsize=8)
    for key, label in (("blocks", "blocks written"), ("KeyExpired", "KeyExpired events"),
                       ("DataPublished", "DataPublished events")):
        work.plot(t, [s[key] for s in samples], label=label)
    work.set_ylabel("count")
    work.set_xlabel("minutes")
    work.legend(loc="upper left", fontsize=8)
    plan = result["plan"]
    assert isinstance(plan, dict)
    fig.suptitle(f"{title}: {plan['rate']:g} publishes/s, block {plan['block_time']:g} s, trigger "
                 f"{plan['trigger_seconds']:g} s, state_reopen {plan['state_reopen']}, {plan['minutes']:g} min "
                 "(local[2])", fontsize=10)
    save_plot(fig, path, dpi=90)


# -- a backlog at start: how long the job takes to start ---------------------------------------------------------------
def peak_sampler(root: int, stop: threading.Event, peaks: dict[str, int]) -> None:
    while not stop.is_set():
        for key, value in tree_rss(root).items():
            peaks[key] = max(peaks.get(key, 0), value)
        stop.wait(0.5)


def run_backlog(blocks: int, caps: Sequence[int | None], work: Path, seed: int = 5,
                say: Callable[[str], None] = print) -> dict[str, Any]:
    """A generated log of ``blocks`` blocks in a fresh realm; the job --available-now from a fresh checkpoint for
    each maxOffsetsPerTrigger in ``caps``; peak RSS, batches and seconds per run; outputs checked each time."""
    import subprocess

    from producers.workload import generate
    from pubsub_core.stages.topics import output_topics
    from supervise.kafka_broker import delete_topics
    from supervise.verify import check_outputs, produce_log

    spec = WorkloadSpec(seed=seed, blocks=blocks, publishers=2, system_publishers=1, subscribers=3, keys=12,
                        subscribed_keys=8, update_rate=0.5, bad_records=0.0, quiet_blocks=2, realm="backlog")
    lines = [line.encode() for block in generate(spec) for line in block]
    broker = EmbeddedKafka(home=work / "kafka")
    out: dict[str, Any] = {"blocks": blocks, "lines": len(lines), "log_bytes": sum(len(x) + 1 for x in lines),
                           "runs": []}
    try:
        info = broker.start()
        settings = load_settings(overrides={"kafka_bootstrap": info.bootstrap})
        produce_log(lines, settings, reset_topics=True)
        for cap in caps:
            delete_topics(settings, output_topics("backlog"))
            checkpoint = work / f"checkpoint-{cap}"
            shutil.rmtree(checkpoint, ignore_errors=True)
            argv = _cli("job", "--realm", "backlog", "--checkpoint", str(checkpoint), "--available-now",
                        "--bootstrap", info.bootstrap)
            if cap is not None:
                argv += ["--max-offsets-per-trigger", str(cap)]
            log = work / f"job-{cap}.log"
            started = time.monotonic()
            with open(log, "wb") as handle:
                process = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, cwd=REPO_ROOT,
                                           start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1",
                                                                        "PUBSUB_RUNTIME_DIR": str(work / "runtime")})
            peaks: dict[str, int] = {}
            stop = threading.Event()
            sampler = threading.Thread(target=peak_sampler, args=(process.pid, stop, peaks), daemon=True)
            sampler.start()
            try:
                code = process.wait(3600)
            finally:
                stop.set()
                sampler.join(5)
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            seconds = time.monotonic() - started
            text = log.read_text(errors="replace")
            batches = Counter(line.split(" ", 1)[0] for line in text.splitlines() if " batch " in line)
            checked = check_outputs(lines, settings, ["backlog"])
            run = {"max_offsets_per_trigger": cap, "exit": code, "seconds": round(seconds, 1),
                   "relay_batches": batches["relay"], "subscriber_batches": batches["subscribers"],
                   "peak_jvm_mib": round(peaks.get("jvm", 0) / 1024), "peak_python_workers_mib":
                   round(peaks.get("python_workers", 0) / 1024), "peak_driver_python_mib":
                   round(peaks.get("driver_python", 0) / 1024), "equal_to_simulator": checked.ok,
                   "checkpoint_mib": round(checkpoint_bytes(checkpoint) / 2**20, 1)}
            out["runs"].append(run)
            say(json.dumps(run))
    finally:
        broker.stop()
    return out


def add_plan_arguments(parser: argparse.ArgumentParser, plan: SoakPlan) -> None:
    """The live run's options, with ``plan``'s values as their defaults (the soak's and the long run's differ)."""
    parser.add_argument("--minutes", type=float, default=plan.minutes,
                        help=f"how long the live run is sampled (default: {plan.minutes:g})")
    parser.add_argument("--rate", type=float, default=plan.rate, help=f"publishes per second (default: {plan.rate:g})")
    parser.add_argument("--block-time", type=float, default=plan.block_time, metavar="SECONDS",
                        help=f"the author's block time (default: {plan.block_time:g})")
    parser.add_argument("--trigger-seconds", type=float, default=plan.trigger_seconds, metavar="SECONDS",
                        help=f"the job's trigger interval (default: {plan.trigger_seconds:g})")
    parser.add_argument("--sample-seconds", type=float, default=plan.sample_seconds, metavar="SECONDS",
                        help=f"seconds between two samples (default: {plan.sample_seconds:g})")
    parser.add_argument("--warmup-minutes", type=float, default=plan.warmup_minutes, metavar="M",
                        help=f"samples left out of the levels and slopes (default: {plan.warmup_minutes:g})")
    parser.add_argument("--state-reopen", choices=STATE_REOPEN_MODES, default=plan.state_reopen,
                        help=f"the job's checkpoint remedy (default: {plan.state_reopen})")
    parser.add_argument("--state-reopen-minutes", type=float, default=plan.state_reopen_minutes, metavar="M",
                        help=f"minutes between periodic restarts (default: {plan.state_reopen_minutes:g})")
    parser.add_argument("--churn", type=float, default=plan.churn_seconds, metavar="SECONDS",
                        help=f"seconds per deregister/register cycle of a publisher (default: {plan.churn_seconds:g})")
    restart = "never" if plan.author_restart_minutes is None else f"{plan.author_restart_minutes:g}"
    parser.add_argument("--author-restart-minutes", type=float, default=plan.author_restart_minutes, metavar="M",
                        help=f"stop the author and start it again this often, timing each start (default: {restart})")


def plan_from_args(args: argparse.Namespace) -> SoakPlan:
    """The plan the options of ``add_plan_arguments`` give."""
    return SoakPlan(minutes=args.minutes, rate=args.rate, block_time=args.block_time, churn_seconds=args.churn,
                    trigger_seconds=args.trigger_seconds, sample_seconds=args.sample_seconds,
                    state_reopen=args.state_reopen, state_reopen_minutes=args.state_reopen_minutes,
                    warmup_minutes=args.warmup_minutes, author_restart_minutes=args.author_restart_minutes)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="benchmarks.reliability.soak", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__.split("\n\nSoak.")[0])
    add_plan_arguments(parser, SoakPlan())
    parser.add_argument("--backlog", type=int, metavar="BLOCKS",
                        help="run the backlog measurement instead: a realm whose input holds BLOCKS blocks at start")
    parser.add_argument("--caps", default="none,2000,200",
                        help="maxOffsetsPerTrigger values for --backlog, comma-separated (default: none,2000,200)")
    parser.add_argument("--work", type=Path, metavar="DIR",
                        help="scratch folder for the broker, checkpoints and logs (default: a new temporary one)")
    parser.add_argument("--json", type=Path, default=None,
                        help="results file (default: benchmarks/results/soak.json, or soak_backlog.json)")
    parser.add_argument("--png", type=Path, default=REPO_ROOT / "docs" / "img" / "soak.png",
                        help="the plot of the soak's samples (default: docs/img/soak.png)")
    args = parser.parse_args(argv)
    stop_cleanly_on_sigterm()
    work = args.work or Path(tempfile.mkdtemp(prefix="pubsub-soak-"))
    module = "benchmarks.reliability.soak"
    if args.backlog:
        caps = [None if c == "none" else int(c) for c in args.caps.split(",")]
        backlog = run_backlog(args.backlog, caps, work)
        print(f"wrote {write_result('soak_backlog', backlog, module=module, argv=argv, path=args.json)}")
        return 0 if all(r["equal_to_simulator"] for r in backlog["runs"]) else 1
    plan = plan_from_args(args)
    result = run_soak(plan, work)
    plot(result, args.png)
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=2))
    print(f"wrote {write_result('soak', result, module=module, argv=argv, path=args.json)}")
    return 0 if result.get("equal_to_simulator") else 1


if __name__ == "__main__":
    sys.exit(main())
