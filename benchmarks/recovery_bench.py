"""Recovery after a crash: the live job SIGKILLed (its whole process group) and restarted on its checkpoint.

On a broker of its own, the live producer, the block author and `pubsub job` run as in the chaos run
(benchmarks/reliability/chaos.py). Once the job delivers, each run waits ``--settle`` seconds, SIGKILLs the job's
process group, restarts it at once, and measures from the restart:
- the first committed batch (the earlier of the queries' first batch end, as Spark's progress reports it: the fused
  job's one query, the split job's two);
- the first update (an ``on_data_updated`` record on ``<realm>.updates``) for a relay block the author wrote after
  the kill, as a consumer of that topic sees it;
- where the time went, from the job's start-up lines (``streaming.startup``): interpreter and imports, Kafka and
  topics, Spark's launcher, JVM start, Spark session, the queries' start, each query's first batch (the state
  stores loaded and the uncommitted batch run again), then the catch-up up to the first update.
With ``--variants``, runs alternate between the variants (job environments), so each is measured under the same
load. The ``standby`` variant starts `pubsub job --standby` beside the running job during the settle time and
restarts nothing: the standby takes over at the kill, and its figures count from the kill (its phases: the
take-over, the queries' start, the first batch, the catch-up). Writes benchmarks/results/recovery.json.

    python -m benchmarks.recovery_bench                       # 5 restarts of the job as configured
    python -m benchmarks.recovery_bench --runs 5 --variants default class-archive standby
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, stop_cleanly_on_sigterm, write_result
from benchmarks.reliability.chaos import ChaosPlan, Parts, _cli, tail
from benchmarks.reliability.follow import TopicFollower
from benchmarks.reliability.soak import tree_rss
from producers.transport.topics import ensure_realm_topics
from pubsub_core.stages.edge import ConsumerRecord
from pubsub_core.stages.topics import topic
from settings.settings import Settings, load_settings
from streaming.stage_layout import FUSED
from streaming.stuck import tree_activity
from streaming.startup import PHASE_LINE
from supervise.kafka_broker import EmbeddedKafka
from supervise.live_run import WORKLOAD_AUTHOR_SEED

PHASES = ("interpreter and imports", "Kafka and topics", "Spark's launcher", "JVM start", "Spark session",
          "queries started")
"""The job's start-up phases up to its queries' start, in order (``streaming.job.run_job``)."""
TAKE_OVER = "standby took over"
"""A standby's phase: the lock taken, once the job before it has ended."""
STANDBY_PHASES = (TAKE_OVER, "queries started")
"""A standby's phases from the kill up to its queries' start."""
FIRST_BATCHES = ("relay first batch", "subscribers first batch")
STAGES_LINE = re.compile(r"streaming\.job: stages (?P<stages>\w+): ")
"""The job's line naming its layout (``streaming.job.run_job``): a fused job runs one query, named relay."""


def first_batches(log: Path) -> tuple[str, ...]:
    """The first batch lines a start of the job logs: its queries' (from its stages line; both until it says)."""
    match = STAGES_LINE.search(log.read_text(errors="replace"))
    return FIRST_BATCHES[:1] if match is not None and match["stages"] == FUSED else FIRST_BATCHES


VARIANTS = ("default", "class-archive", "standby")
"""The job as configured (in a fresh runtime folder: no class archive); with a class archive for its JVM, built
first (`pubsub job --write-class-archive`); a warm standby with the class archive (`pubsub job --standby`)."""
STANDBY_WATCH = 4.0
"""Seconds, at least, over which a waiting standby's CPU is measured."""
STANDBY_WAITING = "standby: Spark is up; waiting for the job"
"""The line a standby prints once its session is up (``streaming.job``)."""


def variant_env(name: str, work: Path) -> dict[str, str]:
    """The job's environment of a variant (``class-archive`` builds the archive in the job's runtime folder)."""
    runtime = {"PUBSUB_RUNTIME_DIR": str(work / "runtime")}
    if name == "default":
        return {}
    if name == "standby":
        return {**variant_env("class-archive", work), "PUBSUB_STANDBY": "true"}
    if name == "class-archive":
        archive = {"PUBSUB_SPARK_CLASS_ARCHIVE": str(work / "spark-driver.jsa")}
        if not (work / "spark-driver.jsa").exists():  # built once, shared with the standby variant
            subprocess.run(_cli("job", "--write-class-archive"), check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
                           env={**os.environ, **runtime, **archive})
        return archive
    raise SystemExit(f"unknown variant {name!r}: one of {', '.join(VARIANTS)}")


def tree_usage(pid: int) -> tuple[float, int]:
    """CPU seconds used so far and resident bytes now of ``pid`` and every process below it."""
    activity = tree_activity(pid)
    return (0.0 if activity is None else activity[0]), sum(tree_rss(pid).values()) * 1024


class UpdateTracker(TopicFollower):
    """When each relay block first appeared on ``<realm>.blocks`` and when its first update appeared on
    ``<realm>.updates`` (this process's monotonic clock)."""

    def __init__(self, settings: Settings, realm: str) -> None:
        super().__init__(settings, [topic(realm, "blocks"), topic(realm, "updates")], f"recovery-{realm}")
        self.lock = threading.Lock()
        self.block_seen: dict[int, float] = {}
        self.update_seen: dict[int, float] = {}

    def take(self, record: ConsumerRecord) -> None:
        try:
            body = json.loads(record.value or b"")
        except (UnicodeDecodeError, json.JSONDecodeError):
            return
        now = time.monotonic()
        with self.lock:
            if record.topic.endswith(".blocks"):
                self.block_seen.setdefault(int(body["position"]) + 1, now)
            else:
                self.update_seen.setdefault(int(body["relay_block_number"]), now)

    def first_update_after(self, since: float) -> tuple[int, float] | None:
        """The first update for a block the author wrote after ``since``: (its block, when it was seen)."""
        with self.lock:
            later = [n for n, t in self.block_seen.items() if t > since]
            if not later:
                return None
            first = min(later)
            seen = [(t, n) for n, t in self.update_seen.items() if n >= first]
            return (min(seen)[1], min(seen)[0]) if seen else None


def phases_of(log: Path) -> dict[str, float]:
    """Each start-up phase's end in the job's log, in seconds since its process started."""
    pattern = re.compile(PHASE_LINE)
    found: dict[str, float] = {}
    for line in log.read_text(errors="replace").splitlines():
        if (match := pattern.search(line)) is not None:
            found.setdefault(match["phase"], float(match["at"]))
    return found


def split(phases: Mapping[str, float], first_update: float | None, origin: float = 0.0) -> dict[str, float]:
    """The restart's time per phase: each phase's end minus the previous one's; ``first batch`` from the queries'
    start to the earlier first batch; ``catch-up`` from there to the first update. ``origin``: the time the first
    phase counts from (a standby's: the kill, in seconds since its process started)."""
    out: dict[str, float] = {}
    last = origin
    for name in STANDBY_PHASES if TAKE_OVER in phases else PHASES:
        if name in phases:
            out[name] = round(phases[name] - last, 3)
            last = phases[name]
    firsts = [phases[name] for name in FIRST_BATCHES if name in phases]
    if firsts:
        out["first batch"] = round(min(firsts) - last, 3)
        last = min(firsts)
    if first_update is not None:
        out["catch-up"] = round(first_update - last, 3)
    return out


class RecoveryRun:
    def __init__(self, work: Path, plan: ChaosPlan, settle: float) -> None:
        self.work = work
        self.plan = plan
        self.settle = settle
        self.realm = f"recovery{uuid.uuid4().hex[:6]}"
        self.broker = EmbeddedKafka(home=work / "kafka")
        self.parts = Parts(work / "logs")
        self.bootstrap = ""
        self.tracker: UpdateTracker | None = None

    def job_argv(self) -> list[str]:
        return _cli("job", "--realm", self.realm, "--checkpoint", str(self.work / "checkpoint"),
                    "--trigger-seconds", f"{self.plan.trigger_seconds:g}", "--bootstrap", self.bootstrap)

    def start_job(self, env: Mapping[str, str]) -> float:
        """Start the job; returns the start's monotonic time."""
        self.parts.start("job", self.job_argv(), env={"PUBSUB_RUNTIME_DIR": str(self.work / "runtime"),
                                                      "COLUMNS": "400", **env})
        return time.monotonic()

    def wait_for(self, what: str, seconds: float, done: Callable[[], bool]) -> None:
        end = time.monotonic() + seconds
        while not done():
            for proc in self.parts.exited():
                raise RuntimeError(f"{proc.name} exited: {tail(proc.log, 5)}")
            if time.monotonic() > end:
                raise RuntimeError(f"{what}: not within {seconds:.0f}s")
            time.sleep(0.1)

    def start(self, env: Mapping[str, str]) -> dict[str, Any]:
        """Broker, topics, tracker, producer, author and the job from an empty checkpoint; returns the cold start."""
        p = self.plan
        self.bootstrap = self.broker.start().bootstrap
        settings = load_settings(overrides={"kafka_bootstrap": self.bootstrap})
        ensure_realm_topics(settings, self.realm, partitions=settings.views_partitions)
        tracker = self.tracker = UpdateTracker(settings, self.realm).start()
        began = self.start_job(env)
        self.parts.start("producer", _cli(
            "workload", "--live", "--realm", self.realm, "--rate", f"{p.rate:g}", "--block-time", f"{p.block_time:g}",
            "--seed", str(p.seed), "--publishers", str(p.publishers), "--system-publishers", str(p.system_publishers),
            "--subscribers", str(p.subscribers), "--keys", str(p.keys), "--subscribed-keys", str(p.subscribed_keys),
            "--ttl-mix", p.ttl_mix, "--bootstrap", self.bootstrap))
        self.parts.start("author", _cli("author", "--realm", self.realm, "--block-time", f"{p.block_time:g}",
                                        "--bootstrap", self.bootstrap),
                         env={"PUBSUB_AUTHOR_KEY": WORKLOAD_AUTHOR_SEED.hex()})
        self.wait_for("the job's first update", 600, lambda: bool(tracker.update_seen))
        first = min(tracker.update_seen.values())
        return self.record(began, first, began)

    def record(self, restarted: float, update_at: float | None, killed: float) -> dict[str, Any]:
        """The figures of a start at ``restarted`` (monotonic; a standby's: the kill), from the job's log."""
        proc = self.parts.procs["job"]
        self.wait_for("the job's first batch lines", 120,
                      lambda: all(name in phases_of(proc.log) for name in first_batches(proc.log)))
        origin = restarted - proc.started  # 0 for a restart; a standby's: the kill, on its own clock
        phases = phases_of(proc.log)
        first_update = None if update_at is None else update_at - restarted
        first_batch = min(phases[name] for name in first_batches(proc.log)) - origin
        return {"first_batch_s": round(first_batch, 3),
                "first_update_s": None if first_update is None else round(first_update, 3),
                "phases": split(phases, None if first_update is None else first_update + origin, origin),
                "phase_ends": phases,
                "killed_to_restart_s": round(restarted - killed, 3),
                "load_average": [round(x, 2) for x in os.getloadavg()]}

    def restart(self, env: Mapping[str, str]) -> dict[str, Any]:
        """One kill and restart (with ``PUBSUB_STANDBY`` in ``env``: a standby started beforehand), measured."""
        tracker = self.tracker
        assert tracker is not None
        standby = env.get("PUBSUB_STANDBY") == "true"
        settled = time.monotonic() + self.settle
        if standby:  # started during the settle time, beside the running job, as an operator would have it
            waiting = self.parts.start("standby", self.job_argv(), env={
                "PUBSUB_RUNTIME_DIR": str(self.work / "runtime"), "COLUMNS": "400", **env})
            self.wait_for("the standby's session", 120, lambda: STANDBY_WAITING in waiting.log.read_text())
            time.sleep(1.0)  # its start-up's last threads settle
            cpu_from, watched_from = tree_usage(waiting.process.pid)[0], time.monotonic()
        time.sleep(max(STANDBY_WATCH if standby else 0.0, settled - time.monotonic()))
        if standby:  # what a waiting standby costs: its share of a core and its memory (the JVM's and Python's)
            cpu_to, rss = tree_usage(waiting.process.pid)
            waited = {"standby_cpu_share": round((cpu_to - cpu_from) / (time.monotonic() - watched_from), 4),
                      "standby_rss_mib": round(rss / 2**20)}
        load = [round(x, 2) for x in os.getloadavg()]
        killed = time.monotonic()
        self.parts.kill("job")
        if standby:
            self.parts.procs["job"] = self.parts.procs.pop("standby")
            restarted = killed
        else:
            restarted = self.start_job(env)
        self.wait_for("an update for a block written after the kill", 300,
                      lambda: tracker.first_update_after(killed) is not None)
        found = tracker.first_update_after(killed)
        assert found is not None
        result = self.record(restarted, found[1], killed)
        result["load_average_before"] = load
        if standby:
            result.update(waited)
        result["first_block_after_kill"] = found[0]
        return result

    def stop(self) -> None:
        self.parts.stop_all()
        if self.tracker is not None:
            self.tracker.stop()
        self.broker.stop()


def summary(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Median, minimum and maximum of each figure over ``runs``."""
    def spread(values: list[float]) -> dict[str, float]:
        return {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
                "max": round(max(values), 3)}

    out: dict[str, Any] = {"runs": len(runs)}
    for key in ("first_batch_s", "first_update_s", "standby_cpu_share", "standby_rss_mib"):
        values = [float(r[key]) for r in runs if r.get(key) is not None]
        if values:
            out[key] = spread(values)
    names: list[str] = []
    for r in runs:
        names += [n for n in r["phases"] if n not in names]
    out["phases"] = {name: spread([float(r["phases"][name]) for r in runs
                                   if name in r["phases"]]) for name in names}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks.recovery_bench",
                                     formatter_class=argparse.RawDescriptionHelpFormatter, description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="kills and restarts per variant (default: 5)")
    parser.add_argument("--variants", nargs="+", default=["default"], choices=VARIANTS,
                        help="job set-ups, alternated run by run (default: default)")
    parser.add_argument("--settle", type=float, default=8.0,
                        help="seconds the job runs between its recovery and the next kill (default: 8)")
    parser.add_argument("--json", type=Path, default=None, help="results file (default: benchmarks/results/recovery.json)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="copy the run's logs and the job's runtime folder (Spark's log, batch log) here")
    args = parser.parse_args(argv)
    stop_cleanly_on_sigterm()
    work = Path(tempfile.mkdtemp(prefix="pubsub-recovery-"))
    envs = {name: variant_env(name, work) for name in args.variants}
    plan = ChaosPlan(trigger_seconds=Settings().trigger_seconds, block_time=1.0)  # the job's default trigger
    run = RecoveryRun(work, plan, args.settle)
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in args.variants}
    try:
        cold = run.start(envs[args.variants[0]])
        print(json.dumps({"cold": cold}), flush=True)
        for index in range(args.runs * len(args.variants)):
            name = args.variants[index % len(args.variants)]
            measured = run.restart(envs[name])
            print(json.dumps({name: measured}), flush=True)
            results[name].append(measured)
    finally:
        run.stop()
        if args.keep is not None:
            shutil.copytree(work, args.keep, ignore=shutil.ignore_patterns("kafka", "checkpoint", "spark-home", "*.jsa"),
                            dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)
    figures = {"plan": {"block_time": plan.block_time, "trigger_seconds": plan.trigger_seconds, "rate": plan.rate,
                        "settle_seconds": args.settle},
               "cold_start": cold,
               "variants": {name: {"summary": summary(runs), "runs": runs} for name, runs in results.items()}}
    path = write_result("recovery", figures, module="benchmarks.recovery_bench", argv=argv, path=args.json)
    print(json.dumps({name: v["summary"] for name, v in figures["variants"].items()}, indent=1))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
