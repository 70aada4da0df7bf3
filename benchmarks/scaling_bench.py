"""Scaling: the standard workload at 1, 2, 4 and 8 times its publishers and subscribers, each through the
one-process simulator in a fresh subprocess, and how each cost grows with the scale.

The workload is the standard one (``benchmarks/simulator_bench.py``) with publishers, system publishers and subscribers
multiplied by the scale; keys per publisher (20) and subscribed keys per subscriber (40) stay the same, so the
publishes per block and the subscriber count both grow with the scale. Per scale point it measures:

- publishes per CPU second (``time.process_time`` around the run; the log is read line by line inside it),
  and the CPU split: Stage R (everything in ``Simulator.feed_line`` / ``finish`` but Stage S: line routing,
  ingest, admission, the relay block, the views) vs Stage S (``SubscriberStage.step``, all subscribers) vs
  output encoding (``OutputRecord.to_line``, what the sink would write);
- peak RSS of the worker (``ru_maxrss``) and the state at the end: bytes (keys + values) held by the relay
  stage's and the subscriber stages' ``MemoryBackend``\\ s, and the largest state page: each namespace laid out
  as the Spark job stores it (``SparkStateBackend`` with the job's pages per namespace), the largest page's
  encoded size;
- output records per block, in total and on the busiest output topic (records and bytes);
- seam bytes per view: the canonical JSON of each ``RelayView`` Stage R emits (the ``relay-views`` record body).

The sizes of views and the state measurement run outside the timed CPU (their time is subtracted).

    .venv/bin/python -m benchmarks.scaling_bench                  # 1, 2, 4, 8x: 1.5 minutes, up to 5 under load
    .venv/bin/python -m benchmarks.scaling_bench --scales 1 2     # a quick look
    .venv/bin/python -m benchmarks.scaling_bench --admission      # Stage R's per-origin share: admission.json
    .venv/bin/python -m benchmarks.render scaling admission       # their tables in docs/benchmarks.md

The whole run takes about 1.5 minutes of CPU at 4,000-5,000 publishes/s (logs are written once and kept in
/tmp/scaling_bench); ``--blocks-8x 50`` halves the 8x point if the protocol gets slower: every figure is per
block or per publish, but state that accumulates (a backlog of upward messages) is then smaller. Results:
benchmarks/results/scaling.json and, if matplotlib is installed, docs/img/scaling.png.
The machine is shared: CPU time, not wall time, and ratios between points of the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import read_result, save_plot, write_result
from benchmarks.render import RENDERERS

ROOT = Path(__file__).resolve().parents[1]
PLOT = ROOT / "docs" / "img" / "scaling.png"
LOG_DIR = Path("/tmp/scaling_bench")

BASE = {"publishers": 20, "system_publishers": 4, "subscribers": 6}
"""The standard workload: what a scale multiplies."""
FIXED = ["--seed", "3", "--keys", "20", "--subscribed-keys", "40", "--update-rate", "0.5", "--bad-records", "0.01"]
"""What stays the same at every scale (keys per publisher, subscribed keys per subscriber, rates)."""
BLOCKS = 100
BLOCK_TIME_S = 6.0
"""The relay block time (producers/writers/live.py ``BLOCK_TIME``): the budget of one block's sequential work."""
PARTITION_MB_S = 10.0
"""Assumed sustained write throughput of one Kafka partition (MB/s), for the topic limit: a conservative
figure for one partition on one broker with acks=all (not measured here; set with --partition-mb-s)."""
STATE_MB_S = 20.0
"""How fast a large state value moves to or from Spark's state store (why a stage makes few, large state calls:
docs/design.md, "Dataflow")."""
VIEWS_PARTITIONS = 2
"""Partitions of a ``relay-views`` topic by default (settings/settings.py ``views_partitions``)."""


# -- pure helpers (tested in tests/benchmarks/test_scaling_bench.py) -----------------------------------------------


def workload_flags(scale: int, blocks: int) -> list[str]:
    """The ``pubsub workload`` flags of the standard workload at ``scale`` times its publishers and subscribers."""
    if scale < 1 or blocks < 1:
        raise ValueError(f"scale and blocks must be positive, got scale {scale} and blocks {blocks}")
    return ["--blocks", str(blocks), "--publishers", str(BASE["publishers"] * scale),
            "--system-publishers", str(BASE["system_publishers"] * scale),
            "--subscribers", str(BASE["subscribers"] * scale), *FIXED]


def state_bytes(namespaces: Mapping[str, Mapping[bytes, bytes]]) -> int:
    """Bytes a backend holds: every key and value."""
    return sum(len(key) + len(value) for entries in namespaces.values() for key, value in entries.items())


@dataclass(frozen=True, slots=True)
class Page:
    """The largest encoded state page of a backend: its namespace, page number, entries and bytes."""

    namespace: str = ""
    page: int = 0
    entries: int = 0
    bytes: int = 0


def largest_page(namespaces: Mapping[str, Mapping[bytes, bytes]], pages_per_namespace: int) -> Page:
    """Lay the namespaces out as the Spark job stores them (``SparkStateBackend``, ``pages_per_namespace`` pages
    each, on a dict standing in for MapState) and return the largest stored page."""
    from state.spark import SparkStateBackend, decode_page

    store: dict[tuple[Any, ...], tuple[Any, ...]] = {}

    class _MapState:
        def getValue(self, key: tuple[Any, ...], /) -> tuple[Any, ...] | None:
            return store.get(key)

        def updateValue(self, key: tuple[Any, ...], value: tuple[Any, ...], /) -> None:
            store[key] = value

        def removeKey(self, key: tuple[Any, ...], /) -> None:
            store.pop(key, None)

    backend = SparkStateBackend(_MapState(), default_pages=pages_per_namespace)
    backend.write_many({name: dict(entries) for name, entries in namespaces.items()})
    best = Page()
    for (namespace, page), (data,) in sorted(store.items(), key=lambda item: str(item[0])):
        if isinstance(namespace, str) and page >= 0 and len(data) > best.bytes:
            best = Page(namespace, page, len(decode_page(bytes(data), namespace, page)), len(data))
    return best


@dataclass
class Point:
    """One scale point's figures (what the worker measures, plus the flags it ran)."""

    scale: int
    flags: list[str]
    blocks: int = 0
    publishes: int = 0
    cpu_s: float = 0.0
    relay_s: float = 0.0
    subscriber_s: float = 0.0
    encode_s: float = 0.0
    peak_rss_kb: int = 0
    rss_before_kb: int = 0
    relay_state_bytes: int = 0
    subscriber_state_bytes: int = 0
    subscriber_state_max_bytes: int = 0
    largest_page: dict[str, Any] = field(default_factory=dict)
    largest_namespace: dict[str, Any] = field(default_factory=dict)
    relay_namespaces: dict[str, int] = field(default_factory=dict)
    outputs: int = 0
    topic_records: dict[str, int] = field(default_factory=dict)
    topic_bytes: dict[str, int] = field(default_factory=dict)
    views: int = 0
    view_bytes: int = 0
    view_max_bytes: int = 0
    log_bytes: int = 0
    generate_s: float = 0.0

    @property
    def publishes_per_s(self) -> float:
        return self.publishes / self.cpu_s if self.cpu_s else 0.0

    @property
    def publishes_per_block(self) -> float:
        return self.publishes / self.blocks if self.blocks else 0.0

    @property
    def cpu_per_block_s(self) -> float:
        return self.cpu_s / self.blocks if self.blocks else 0.0

    @property
    def relay_share(self) -> float:
        return self.relay_s / self.cpu_s if self.cpu_s else 0.0

    @property
    def outputs_per_block(self) -> float:
        return self.outputs / self.blocks if self.blocks else 0.0

    @property
    def bytes_per_view(self) -> float:
        return self.view_bytes / self.views if self.views else 0.0

    def busiest_topic(self) -> tuple[str, int, int]:
        """The output topic with the most records: (topic, records, bytes)."""
        if not self.topic_records:
            return "", 0, 0
        name = max(sorted(self.topic_records), key=lambda t: self.topic_records[t])
        return name, self.topic_records[name], self.topic_bytes.get(name, 0)


# -- the worker: one scale point in a fresh process ----------------------------------------------------------------


def _backend_namespaces(backend: object) -> dict[str, dict[bytes, bytes]]:
    from state import MemoryBackend

    if not isinstance(backend, MemoryBackend):
        raise TypeError(f"the simulator's stages should hold MemoryBackends, found {type(backend).__name__}")
    return {name: backend.scan(name) for name in backend.namespaces()}


def run_point(log: Path, pages_per_namespace: int) -> dict[str, Any]:
    """Run the log through a Simulator with Stage R, Stage S and output encoding timed apart; the figures."""
    from producers.readers.log_lines import event_log_lines
    from pubsub_core.relay import canonical_json
    from pubsub_core.simulator import Simulator
    from pubsub_core.stages import ProtocolConfig
    from pubsub_core.stages.records import OutputRecord, RelayView
    from pubsub_core.stages.relay_stage import RelayStep

    clock = time.process_time
    acc = {"subscriber_s": 0.0, "untimed_s": 0.0, "blocks": 0, "views": 0, "view_bytes": 0, "view_max_bytes": 0}

    class TimedSimulator(Simulator):
        """The simulator, with each subscriber's Stage S timed and each view's seam size taken (untimed)."""

        def run_step(self, realm: str, step: RelayStep) -> list[OutputRecord]:
            # Simulator.run_step (without relay_proofs) with timers around each Stage S step; the test checks
            # that the outputs stay those of the plain simulator.
            acc["blocks"] += 1
            out = list(step.outputs)
            for view in step.views:
                stage = self._stage_for(realm, view)
                start = clock()
                out += stage.step(view)
                middle = clock()
                size = len(canonical_json(view.to_json()).encode())
                acc["views"] += 1
                acc["view_bytes"] += size
                acc["view_max_bytes"] = max(acc["view_max_bytes"], size)
                acc["subscriber_s"] += middle - start
                acc["untimed_s"] += clock() - middle
            return out

        def _stage_for(self, realm: str, view: RelayView) -> Any:
            from pubsub_core.stages.subscriber_stage import SubscriberStage

            stage = self.subscribers.get((realm, view.subscriber))
            if stage is None:
                stage = self.subscribers[(realm, view.subscriber)] = SubscriberStage(
                    realm, view.subscriber, self.config.subscriber)
            return stage

    publishes = outputs = 0
    topic_records: dict[str, int] = {}
    topic_bytes: dict[str, int] = {}
    encode_s = 0.0
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = clock()
    simulator = TimedSimulator(ProtocolConfig())
    with log.open("rb") as source:
        for batch in _batches(simulator, (line for line, _ in event_log_lines(source))):
            t0 = clock()
            for record in batch:
                size = len(record.to_line().encode()) + 1
                topic_records[record.topic] = topic_records.get(record.topic, 0) + 1
                topic_bytes[record.topic] = topic_bytes.get(record.topic, 0) + size
                outputs += 1
                if record.topic.endswith(".events"):
                    event = record.value.get("event")
                    if isinstance(event, dict) and event.get("event") == "DataPublished":
                        publishes += int(event.get("items_count", 1))
            encode_s += clock() - t0
    cpu_s = clock() - start - float(acc["untimed_s"])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    # State at the end: bytes, the largest namespace and the largest page as the Spark job would store them.
    sizes: dict[str, int] = {}
    relay_namespaces: dict[str, int] = {}
    pages: list[tuple[str, Page]] = []
    namespaces: list[tuple[int, str, str, int]] = []
    owners = [(f"relay {realm}", stage.backend) for realm, stage in sorted(simulator.relays.items())]
    owners += [(f"subscriber {para}", stage.backend) for (_, para), stage in sorted(simulator.subscribers.items())]
    for owner, backend in owners:
        spaces = _backend_namespaces(backend)
        sizes[owner] = state_bytes(spaces)
        pages.append((owner, largest_page(spaces, pages_per_namespace)))
        namespaces += [(state_bytes({name: entries}), owner, name, len(entries)) for name, entries in spaces.items()]
        if owner.startswith("relay"):
            for name, entries in spaces.items():
                relay_namespaces[name] = relay_namespaces.get(name, 0) + state_bytes({name: entries})
    page_owner, page = max(pages, key=lambda item: item[1].bytes)
    biggest = max(namespaces)
    subscriber_sizes = [size for owner, size in sizes.items() if owner.startswith("subscriber")]
    return {
        "blocks": acc["blocks"], "publishes": publishes, "cpu_s": cpu_s,
        "relay_s": cpu_s - encode_s - float(acc["subscriber_s"]), "subscriber_s": acc["subscriber_s"],
        "encode_s": encode_s, "peak_rss_kb": peak, "rss_before_kb": rss_before,
        "relay_state_bytes": sum(size for owner, size in sizes.items() if owner.startswith("relay")),
        "subscriber_state_bytes": sum(subscriber_sizes), "subscriber_state_max_bytes": max(subscriber_sizes, default=0),
        "largest_page": {"stage": page_owner, **asdict(page), "pages_per_namespace": pages_per_namespace},
        "largest_namespace": {"stage": biggest[1], "namespace": biggest[2], "entries": biggest[3], "bytes": biggest[0]},
        "relay_namespaces": dict(sorted(relay_namespaces.items(), key=lambda item: -item[1])[:10]),
        "outputs": outputs, "topic_records": topic_records, "topic_bytes": topic_bytes,
        "views": acc["views"], "view_bytes": acc["view_bytes"], "view_max_bytes": acc["view_max_bytes"],
    }


def _batches(simulator: Any, raw: Iterable[bytes]) -> Iterable[list[Any]]:
    for line in raw:
        yield simulator.feed_line(line)
    yield simulator.finish()


# -- the driver ----------------------------------------------------------------------------------------------------


def make_log(scale: int, blocks: int, directory: Path) -> tuple[Path, float]:
    """The scale point's event log, written by this checkout's ``pubsub workload`` (kept between runs: the
    same flags always write the same bytes); its path and the seconds generating it took (0 if reused)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"scale{scale}_blocks{blocks}.jsonl"
    if path.exists():
        return path, 0.0
    start = time.monotonic()
    partial = path.with_suffix(".partial")
    subprocess.run([sys.executable, "-m", "cli.main", "workload", "-o", str(partial), *workload_flags(scale, blocks)],
                   cwd=ROOT, check=True, capture_output=True)
    partial.rename(path)
    return path, time.monotonic() - start


def run_worker(log: Path, pages_per_namespace: int) -> dict[str, Any]:
    """One scale point in a fresh Python process (no point warms another's caches or shares its heap)."""
    command = [sys.executable, "-m", "benchmarks.scaling_bench", "--worker", str(log), "--pages", str(pages_per_namespace)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the worker on {log} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def job_pages_per_namespace() -> int:
    """The Spark job's pages per state namespace (imports streaming.operators, hence pyspark, in this process)."""
    from streaming.operators import NAMESPACE_PAGES

    return NAMESPACE_PAGES


def plot(points: Sequence[Point], path: Path) -> bool:
    """Four panels against the scale; False (and no file) without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    scales = [p.scale for p in points]
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    ax = axes[0][0]
    ax.stackplot(scales, [p.relay_s / p.blocks * 1e3 for p in points], [p.subscriber_s / p.blocks * 1e3 for p in points],
                 [p.encode_s / p.blocks * 1e3 for p in points], labels=["Stage R", "Stage S (all)", "output encoding"])
    ax.set(title="CPU per block", xlabel="scale", ylabel="ms")
    ax.legend(loc="upper left")
    ax = axes[0][1]
    ax.plot(scales, [p.publishes_per_s for p in points], "o-")
    ax.set(title="publishes per CPU second", xlabel="scale", ylim=(0, None))
    ax = axes[1][0]
    ax.plot(scales, [p.relay_state_bytes / 1e6 for p in points], "o-", label="relay state")
    ax.plot(scales, [p.subscriber_state_bytes / 1e6 for p in points], "o-", label="subscriber states (all)")
    ax.plot(scales, [p.largest_page.get("bytes", 0) / 1e6 for p in points], "o-", label="largest page")
    ax.plot(scales, [p.peak_rss_kb * 1024 / 1e6 for p in points], "o--", label="peak RSS of the process")
    ax.set(title="state at the end (log)", xlabel="scale", ylabel="MB", yscale="log")
    ax.legend(loc="upper left")
    ax = axes[1][1]
    ax.plot(scales, [p.bytes_per_view / 1e3 for p in points], "o-", label="seam kB per view")
    ax.plot(scales, [p.view_bytes / p.blocks / 1e3 for p in points], "o-", label="seam kB per block (all views)")
    ax.plot(scales, [p.outputs_per_block for p in points], "o-", label="output records per block")
    ax.plot(scales, [p.publishes_per_block for p in points], "o--", label="publishes applied per block")
    ax.set(title="seam, outputs, publishes (log)", xlabel="scale", yscale="log")
    ax.legend(loc="upper left")
    for row in axes:
        for ax in row:
            ax.set_xscale("log", base=2)
            ax.set_xticks(scales, [f"{s}x" for s in scales])
            ax.grid(alpha=0.3)
    save_plot(fig, path)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--blocks", type=int, default=BLOCKS, help="blocks with traffic per point")
    parser.add_argument("--blocks-8x", type=int, default=BLOCKS,
                        help="blocks at scales of 8 and above (fewer to shorten the run)")
    parser.add_argument("--logs", type=Path, default=LOG_DIR, help="where the event logs are kept (made if missing)")
    parser.add_argument("--json", type=Path, default=None,
                        help="where the results go (default: benchmarks/results/scaling.json, or admission.json)")
    parser.add_argument("--admission", action="store_true",
                        help="cProfile the 1x point: Stage R's per-origin work an admission stage could take")
    parser.add_argument("--admission-worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--timing", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--pages", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        print(json.dumps(run_point(args.worker, args.pages)))
        return
    if args.admission_worker is not None:
        measure = admission_timing if args.timing else admission_profile
        print(json.dumps(measure(args.admission_worker)))
        return
    if args.admission:
        log, _ = make_log(1, args.blocks, args.logs)
        figures = {}
        for mode in ("profile", "timing"):
            command = [sys.executable, "-m", "benchmarks.scaling_bench", "--admission-worker", str(log)]
            # Both on the pure-Python build: cProfile sees Python functions only, and the timing wraps module
            # functions, which the compiled build's modules call directly, past any wrapper.
            env = {**os.environ, "PUBSUB_PURE_PYTHON": "1"}
            done = subprocess.run(command + (["--timing"] if mode == "timing" else []), cwd=ROOT, env=env,
                                  capture_output=True, text=True, check=True)
            figures[mode] = json.loads(done.stdout.strip().splitlines()[-1])
        path = write_result("admission", figures, module="benchmarks.scaling_bench", path=args.json,
                            build_run="pure-Python")
        print(RENDERERS["admission"](read_result("admission", path)))
        print(f"wrote {path}")
        return

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    pages = job_pages_per_namespace()
    points: list[Point] = []
    weights = {scale: scale * (args.blocks_8x if scale >= 8 else args.blocks) for scale in args.scales}
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                  TimeElapsedColumn()) as progress:
        task = progress.add_task("scaling", total=2 * sum(weights.values()))
        for scale in args.scales:
            blocks = args.blocks_8x if scale >= 8 else args.blocks
            progress.update(task, description=f"{scale}x: writing the workload")
            log, generate_s = make_log(scale, blocks, args.logs)
            progress.advance(task, weights[scale] * 0.3)
            progress.update(task, description=f"{scale}x: simulating")
            figures = run_worker(log, pages)
            point = Point(scale=scale, flags=workload_flags(scale, blocks), log_bytes=log.stat().st_size,
                          generate_s=generate_s, **figures)
            points.append(point)
            progress.advance(task, weights[scale] * 1.7)
            progress.console.print(
                f"{scale}x: {point.publishes:,} publishes in {point.cpu_s:.1f} s CPU = {point.publishes_per_s:,.0f}/s, "
                f"Stage R {point.relay_share:.0%}, {point.outputs_per_block:,.0f} outputs/block, "
                f"{point.bytes_per_view / 1e3:,.1f} kB/view, peak RSS {point.peak_rss_kb / 1024:,.0f} MiB")
    figures = {"pages_per_namespace": pages, "block_time_s": BLOCK_TIME_S, "partition_mb_s": PARTITION_MB_S,
               "points": [{**asdict(p), "publishes_per_s": p.publishes_per_s, "relay_share": p.relay_share}
                          for p in points]}
    path = write_result("scaling", figures, module="benchmarks.scaling_bench", path=args.json)
    print(RENDERERS["scaling"](read_result("scaling", path)))
    if args.json is None and plot(points, PLOT):  # a run written elsewhere leaves the docs' plot alone
        print(f"wrote {PLOT.relative_to(ROOT)}")
    print(f"wrote {path}")


# -- the admission-stage question: how much of Stage R is per-origin work ------------------------------------------


def _admission_functions() -> dict[str, Any]:
    """The functions the admission profile sums, as code objects (names repeat: ``Admission.authenticate`` wraps
    the module's ``authenticate``), imported from whatever tree is on sys.path."""
    from pubsub_core.envelope import admission, envelope
    from pubsub_core.relay import machine
    from pubsub_core.simulator import Simulator
    from pubsub_core.stages import ingest
    from pubsub_core.stages.subscriber_stage import SubscriberStage
    from pubsub_core.xcm import barriers, types

    return {
        "route": ingest.LineParser.route, "ingest_record": ingest.ingest_record,
        "authenticate": admission.authenticate, "decode_versioned_xcm": types.decode_versioned_xcm,
        "admit": admission.Admission.admit, "refusal": admission.Admission._refusal,
        "verify_ed25519": envelope.verify_ed25519, "barrier_check": barriers.BarrierChain.check,
        "validate_upward": machine.RelayMachine._validate_upward, "validate_call": machine._validate_call,
        "validate_header": machine._validate_header, "no_validation": machine._no_validation,
        "feed_line": Simulator.feed_line, "finish": Simulator.finish, "step": SubscriberStage.step,
    }


ADMISSION_PARTS: dict[str, list[str]] = {
    "record decoding (log line / Kafka row to a typed record)": ["route", "ingest_record"],
    "envelope decode, ed25519 signature, membership (authenticate)": ["authenticate"],
    "XCM decode of upward messages (custom validation)": ["decode_versioned_xcm"],
}
"""Per-origin work Stage R does that an admission stage keyed by origin could do first: cumulative CPU of each
function (none calls another). The seqno dedup, size and rate checks are ``Admission.admit`` minus what it calls of
``authenticate`` and of the validators (the validators' XCM decode is counted above)."""


def admission_profile(log: Path) -> dict[str, Any]:
    """cProfile of the plain simulator on ``log``: Stage R's CPU and the per-origin parts of it, in seconds."""
    import cProfile
    import pstats

    from producers.readers.log_lines import event_log_lines
    from pubsub_core.simulator import Simulator
    from pubsub_core.stages import ProtocolConfig

    with log.open("rb") as source:
        raw = [line for line, _ in event_log_lines(source)]
    profiler = cProfile.Profile()
    profiler.enable()
    simulator = Simulator(ProtocolConfig())
    for line in raw:
        simulator.feed_line(line)
    simulator.finish()
    profiler.disable()
    table: dict[tuple[str, int, str], Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    keys = {name: (f.__code__.co_filename, f.__code__.co_firstlineno, f.__code__.co_name)
            for name, f in _admission_functions().items()}

    def cumulative(name: str) -> float:
        return float(table[keys[name]][3]) if keys[name] in table else 0.0

    def calls(name: str) -> int:
        return int(table[keys[name]][1]) if keys[name] in table else 0

    def edge(callee: str, caller: str) -> float:
        """CPU of ``callee`` when called from ``caller`` (cumulative, that call edge only)."""
        entry = table.get(keys[callee])
        return float(entry[4].get(keys[caller], (0, 0, 0.0, 0.0))[3]) if entry else 0.0

    # Cumulative times, never a sum of tottime: cProfile charges its own overhead to cumulative time, so the
    # two do not add up (about 2% apart here).
    total = cumulative("feed_line") + cumulative("finish")
    subscriber = cumulative("step")
    relay = total - subscriber
    parts = {label: sum(cumulative(name) for name in names) for label, names in ADMISSION_PARTS.items()}
    validators = sum(edge(name, "refusal") for name in ("validate_call", "validate_header", "no_validation"))
    # The upward validator is a lambda around _validate_upward: count _validate_upward's time under admit.
    validators += cumulative("validate_upward")
    parts["seqno dedup, size, rate and penalty checks (Admission.admit, less the above)"] = (
        cumulative("admit") - edge("authenticate", "admit") - validators)
    return {
        "profiled_s": total, "stage_r_s": relay, "stage_s_s": subscriber, "parts_s": parts,
        "signature_s": cumulative("verify_ed25519"), "barrier_s": edge("barrier_check", "validate_upward"),
        "validators_s": validators,
        "calls": {"authenticate": calls("authenticate"), "admit": calls("admit"),
                  "verify_ed25519": calls("verify_ed25519")},
    }


ADMISSION_TIMERS: dict[str, str] = {
    "route": "record decoding (log line / Kafka row to a typed record)",
    "ingest_record": "record decoding (log line / Kafka row to a typed record)",
    "authenticate": "envelope decode, ed25519 signature, membership (authenticate)",
    "verify_ed25519": "envelope decode, ed25519 signature, membership (authenticate)",
    "validate_upward": "XCM decode of upward messages (custom validation)",
    "admit": "seqno dedup, size, rate and penalty checks (Admission.admit, less the above)",
}
"""The same parts timed without a profiler: each wrapped function's CPU less that of wrapped functions it calls."""


def admission_timing(log: Path) -> dict[str, Any]:
    """The per-origin parts of Stage R timed by wrapping the functions (``process_time``, no profiler: cProfile
    inflates Python-heavy code more than the C of ed25519). Patches this worker process's modules only."""
    from producers.readers.log_lines import event_log_lines
    from pubsub_core.envelope import admission, envelope
    from pubsub_core.relay import machine
    from pubsub_core.simulator import Simulator
    from pubsub_core.simulator import simulator as simulator_module
    from pubsub_core.stages import ProtocolConfig, ingest
    from pubsub_core.stages.subscriber_stage import SubscriberStage
    from pubsub_core.xcm import barriers

    clock = time.process_time
    totals: dict[str, float] = {}
    calls: dict[str, int] = {}
    stack: list[float] = []

    def timed(name: str, function: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = clock()
            stack.append(0.0)
            try:
                return function(*args, **kwargs)
            finally:
                nested = stack.pop()
                elapsed = clock() - start
                totals[name] = totals.get(name, 0.0) + elapsed - nested
                calls[name] = calls.get(name, 0) + 1
                if stack:
                    stack[-1] += elapsed

        return wrapper

    patches: list[tuple[Any, str]] = [
        (ingest.LineParser, "route"), (simulator_module, "ingest_record"), (admission, "authenticate"),
        (envelope, "verify_ed25519"), (machine.RelayMachine, "_validate_upward"), (admission.Admission, "admit"),
        (barriers.BarrierChain, "check"), (SubscriberStage, "step"),
    ]
    for owner, attribute in patches:
        setattr(owner, attribute, timed(attribute.lstrip("_"), getattr(owner, attribute)))
    with log.open("rb") as source:
        raw = [line for line, _ in event_log_lines(source)]
    start = clock()
    simulator = Simulator(ProtocolConfig())
    for line in raw:
        simulator.feed_line(line)
    simulator.finish()
    total = clock() - start
    subscriber = totals.get("step", 0.0)
    parts: dict[str, float] = {}
    for name, label in ADMISSION_TIMERS.items():
        parts[label] = parts.get(label, 0.0) + totals.get(name, 0.0)
    return {"total_s": total, "stage_r_s": total - subscriber, "stage_s_s": subscriber, "parts_s": parts,
            "signature_s": totals.get("verify_ed25519", 0.0), "barrier_s": totals.get("check", 0.0),
            "calls": calls}


if __name__ == "__main__":
    main()
