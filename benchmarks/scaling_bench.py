"""Scaling table (issue 11, target 6): the issue's workload at 1, 2, 4 and 8 times its publishers and subscribers,
each through the one-process simulator in a fresh subprocess, and how each cost grows with the scale.

The workload is the issue's (``benchmarks/simulator_bench.py``) with publishers, system publishers and subscribers
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
    .venv/bin/python -m benchmarks.scaling_bench --from-results   # re-render scaling.md and the plot
    .venv/bin/python -m benchmarks.scaling_bench --admission      # target 4: Stage R's per-origin share

The whole run takes about 1.5 minutes of CPU at 4,000-5,000 publishes/s (logs are written once and kept in
/tmp/scaling_bench); ``--blocks-8x 50`` halves the 8x point if the protocol gets slower: every figure is per
block or per publish, but state that accumulates (a backlog of upward messages, see the markdown) is then
smaller. Results: benchmarks/results/scaling.json, a markdown section in benchmarks/results/scaling.md (for docs/benchmarks.md) and, if matplotlib is installed, docs/img/scaling.png.
The machine is shared: CPU time, not wall time, and ratios between points of the same run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "scaling.json"
MARKDOWN = ROOT / "benchmarks" / "results" / "scaling.md"
PLOT = ROOT / "docs" / "img" / "scaling.png"
LOG_DIR = Path("/tmp/scaling_bench")

BASE = {"publishers": 20, "system_publishers": 4, "subscribers": 6}
"""The issue's workload: what a scale multiplies."""
FIXED = ["--seed", "3", "--keys", "20", "--subscribed-keys", "40", "--update-rate", "0.5", "--bad-records", "0.01"]
"""What stays the same at every scale (keys per publisher, subscribed keys per subscriber, rates)."""
BLOCKS = 100
BLOCK_TIME_S = 6.0
"""The relay block time (producers/live.py ``BLOCK_TIME``): the budget of one block's sequential work."""
PARTITION_MB_S = 10.0
"""Assumed sustained write throughput of one Kafka partition (MB/s), for the topic limit: a conservative
figure for one partition on one broker with acks=all (not measured here; set with --partition-mb-s)."""
STATE_MB_S = 20.0
"""How fast a large state value moves to or from Spark's state store (DESIGN.md: 'tens of MB/s')."""
VIEWS_PARTITIONS = 2
"""Partitions of a ``relay-views`` topic by default (streaming/settings.py ``views_partitions``)."""
MAX_RECORD_BYTES = 15 * 1024 * 1024
"""streaming/operators.py: an output record above this becomes a RecordTooLarge rejection."""


# -- pure helpers (tested in tests/benchmarks/test_scaling_bench.py) -----------------------------------------------


def workload_flags(scale: int, blocks: int) -> list[str]:
    """The ``pubsub workload`` flags of the issue's workload at ``scale`` times its publishers and subscribers."""
    if scale < 1 or blocks < 1:
        raise ValueError(f"scale and blocks must be positive, got scale {scale} and blocks {blocks}")
    return ["--blocks", str(blocks), "--publishers", str(BASE["publishers"] * scale),
            "--system-publishers", str(BASE["system_publishers"] * scale),
            "--subscribers", str(BASE["subscribers"] * scale), *FIXED]


def growth_exponent(scales: Sequence[float], costs: Sequence[float]) -> float:
    """The exponent k of cost ~ scale^k: least-squares slope of log(cost) on log(scale) over the positive points."""
    points = [(math.log(s), math.log(c)) for s, c in zip(scales, costs, strict=True) if s > 0 and c > 0]
    if len(points) < 2:
        raise ValueError("a growth exponent needs two points with positive scale and cost")
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    if spread == 0:
        raise ValueError("a growth exponent needs two different scales")
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread


def growth_word(exponent: float) -> str:
    """How a cost grows, in words: constant (k < 0.25), sublinear, linear (0.85..1.15), superlinear, quadratic+."""
    if exponent < 0.25:
        return "about constant"
    if exponent < 0.85:
        return "sublinear"
    if exponent <= 1.15:
        return "linear"
    if exponent < 1.85:
        return "superlinear"
    return "quadratic or worse"


def scale_reaching(scales: Sequence[float], costs: Sequence[float], limit: float) -> float | None:
    """The scale (relative to the first point's) at which the cost, extrapolated from the last point with the
    fitted exponent, reaches ``limit``; None if it does not grow."""
    exponent = growth_exponent(scales, costs)
    if exponent <= 0.05:
        return None
    return float(scales[-1] * (limit / costs[-1]) ** (1.0 / exponent))


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


def point_from_json(body: Mapping[str, Any]) -> Point:
    known = {name for name in Point.__dataclass_fields__}
    return Point(**{key: value for key, value in body.items() if key in known})


# -- the worker: one scale point in a fresh process ----------------------------------------------------------------


def _backend_namespaces(backend: object) -> dict[str, dict[bytes, bytes]]:
    from state import MemoryBackend

    if not isinstance(backend, MemoryBackend):
        raise TypeError(f"the simulator's stages should hold MemoryBackends, found {type(backend).__name__}")
    return {name: backend.scan(name) for name in backend.namespaces()}


def run_point(log: Path, pages_per_namespace: int) -> dict[str, Any]:
    """Run the log through a Simulator with Stage R, Stage S and output encoding timed apart; the figures."""
    from cli.commands.simulate import lines
    from pubsub_core.relay import canonical_json
    from pubsub_core.simulator import Simulator
    from pubsub_core.stages import SimulatorConfig
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
    simulator = TimedSimulator(SimulatorConfig())
    with log.open("rb") as source:
        for batch in _batches(simulator, (line for line, _ in lines(source))):
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


def _mb(value: float) -> str:
    return f"{value / 1e6:.2f} MB" if value >= 1e5 else f"{value / 1e3:.1f} kB"


def render_markdown(points: Sequence[Point], meta: Mapping[str, Any]) -> str:
    """The section for docs/benchmarks.md: the table, how each cost grows and where the next limit is."""
    rows = [
        "| scale | publishers (system) | subscribers | blocks | publishes/block | publishes/s (CPU) | CPU/block | "
        "Stage R share | "
        "state: relay / subscribers | largest page | outputs/block | busiest topic records/block | seam bytes/view "
        "(max) | peak RSS |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in points:
        _, busiest, _ = p.busiest_topic()
        rows.append(
            f"| {p.scale}x | {BASE['publishers'] * p.scale} ({BASE['system_publishers'] * p.scale}) | "
            f"{BASE['subscribers'] * p.scale} | {p.blocks} | {p.publishes_per_block:,.0f} | {p.publishes_per_s:,.0f} | {p.cpu_per_block_s * 1e3:,.0f} ms | "
            f"{p.relay_share:.0%} | {_mb(p.relay_state_bytes)} / {_mb(p.subscriber_state_bytes)} | "
            f"{_mb(p.largest_page.get('bytes', 0))} | {p.outputs_per_block:,.0f} | {busiest / max(p.blocks, 1):,.0f} | "
            f"{p.bytes_per_view / 1e3:,.1f} kB ({p.view_max_bytes / 1e3:,.1f} kB) | {p.peak_rss_kb / 1024:,.0f} MiB |")
    lines = [
        "## Scaling (issue 11, target 6)",
        "",
        f"The issue's workload (`pubsub workload --seed 3 --keys 20 --subscribed-keys 40 --update-rate 0.5 "
        f"--bad-records 0.01`) at 1 to {points[-1].scale} times its {BASE['publishers']} publishers, "
        f"{BASE['system_publishers']} system publishers and {BASE['subscribers']} subscribers, keys per publisher and "
        f"subscribed keys per subscriber unchanged; each point through the simulator in a fresh process "
        f"(`python -m benchmarks.scaling_bench`, {meta.get('date', '')}, commit {str(meta.get('commit', ''))[:10]}, "
        f"Python {meta.get('python', '')}). CPU time (`process_time`) on a shared 2-core machine: compare points "
        f"of one run, not runs. "
        + (f"The {points[-1].scale}x point runs {points[-1].blocks} blocks instead of "
           f"{points[0].blocks}; every figure is per block or per publish. "
           if points[-1].blocks != points[0].blocks else "")
        + "Blocks include the workload's quiet blocks at the end. State is keys + values held by the stages' "
        "MemoryBackends at the end; the largest page is a namespace laid out as the Spark job stores it "
        f"({meta.get('pages_per_namespace', '?')} pages per namespace); a view's bytes are the canonical JSON "
        "of the RelayView Stage R emits on the seam.",
        "",
        *rows,
        "",
    ]
    if len(points) < 2:
        return "\n".join(lines) + "\n"
    first, last = points[0], points[-1]
    # The relay chain's own limit: UMP dispatch is weighted (preferred_dispatchable_upward_messages_step_weight per
    # block); past it, upward messages wait in the relay dispatch queues and publishes per block stop following s.
    # Growth is fitted over the points before that (if two or more), so a backlog does not pass for a trend.
    expected = [first.publishes_per_block * p.scale / first.scale for p in points]
    saturated = [p for p, e in zip(points, expected, strict=True) if p.publishes_per_block < 0.9 * e]
    fitted = [p for p in points if p not in saturated]
    if len(fitted) < 2:
        fitted = list(points)
    fit_scales = [float(p.scale) for p in fitted]

    def grows(values: Sequence[float]) -> tuple[float, str]:
        k = growth_exponent(fit_scales, values)
        return k, growth_word(k)

    def reaching(values: Sequence[float], limit: float) -> float | None:
        return scale_reaching(fit_scales, values, limit)

    costs = [
        ("CPU per block, total", [p.cpu_per_block_s for p in fitted]),
        ("CPU per block, Stage R", [p.relay_s / p.blocks for p in fitted]),
        ("CPU per block, Stage S (all subscribers)", [p.subscriber_s / p.blocks for p in fitted]),
        ("publishes applied per block", [p.publishes_per_block for p in fitted]),
        ("CPU per publish", [p.cpu_s / max(p.publishes, 1) for p in fitted]),
        ("relay state bytes", [float(p.relay_state_bytes) for p in fitted]),
        ("subscriber state bytes (all)", [float(p.subscriber_state_bytes) for p in fitted]),
        ("largest state page", [float(p.largest_page.get("bytes", 0)) for p in fitted]),
        ("outputs per block", [p.outputs_per_block for p in fitted]),
        ("seam bytes per view", [p.bytes_per_view for p in fitted]),
        ("seam bytes per block (all views)", [p.view_bytes / p.blocks for p in fitted]),
        ("peak RSS", [float(p.peak_rss_kb) for p in fitted]),
    ]
    span = f"{fitted[0].scale}x to {fitted[-1].scale}x"
    lines += [f"How each cost grows with the scale s (exponent k of cost ~ s^k, least squares over {span}"
              + (f", the points before the UMP dispatch limit; {', '.join(f'{p.scale}x' for p in saturated)} "
                 "in the table only" if saturated else "")
              + "; publishes per block and subscribers both grow as s):", ""]
    for name, values in costs:
        k, word = grows(values)
        lines.append(f"- {name}: {word} (k = {k:.2f}; {values[0]:.3g} at {fitted[0].scale}x, {values[-1]:.3g} at "
                     f"{fitted[-1].scale}x)")
    edge = fitted[-1]
    relay_per_block = [p.relay_s / p.blocks for p in fitted]
    reach = reaching(relay_per_block, BLOCK_TIME_S)
    busiest_name, busiest_records, busiest_bytes = edge.busiest_topic()
    busiest_rate = busiest_bytes / edge.blocks / BLOCK_TIME_S
    page_bytes = [float(p.largest_page.get("bytes", 0)) for p in fitted]
    page = last.largest_page
    view_reach = reaching([float(p.view_max_bytes) for p in fitted], MAX_RECORD_BYTES)
    topic_reach = reaching([p.busiest_topic()[2] / p.blocks / BLOCK_TIME_S for p in fitted], PARTITION_MB_S * 1e6)
    page_reach = reaching(page_bytes, STATE_MB_S * 1e6 * 0.1)
    seam_rate = [p.view_bytes / p.blocks / BLOCK_TIME_S for p in fitted]
    seam_reach = reaching(seam_rate, VIEWS_PARTITIONS * PARTITION_MB_S * 1e6)
    page_names = ", ".join(f"{p.scale}x `{p.largest_page.get('namespace', '')}`" for p in points)

    def at(scale: float | None) -> str:
        if scale is None:
            return "never (it does not grow)"
        return f"about {scale:,.0f}x" if scale < 10_000 else "beyond 10,000x"

    queue_lines = "; ".join(
        f"{p.scale}x: {p.publishes_per_block:,.0f} applied per block for {e:,.0f} expected, relay state's largest "
        f"namespace `{next(iter(p.relay_namespaces), '')}` {_mb(next(iter(p.relay_namespaces.values()), 0))}"
        for p, e in zip(points, expected, strict=True))
    lines += [
        "",
        "Where the next limit is:",
        "",
        ("- **The relay chain's UMP dispatch weight, first**: publishes applied per block follow the scale up to "
         f"{max((p.scale for p in points if p not in saturated), default=0)}x and fall behind from "
         f"{saturated[0].scale}x ({queue_lines}). That is the protocol, not the implementation: UMP dispatch per "
         "block is capped by `preferred_dispatchable_upward_messages_step_weight`, the rest waits in "
         "`RelayDispatchQueues` (growing block after block until the queue limits refuse candidates), and it costs "
         "state (the superlinear relay state and largest page below). Past this point more publishers need a "
         "larger dispatch weight or more relay chains (realms), not a faster Stage R."
         if saturated else
         "- **The relay chain's UMP dispatch weight**: not reached; publishes applied per block follow the scale "
         f"({queue_lines})."),
        f"- **The sequential Stage R** (one per realm): its share of the CPU goes from {first.relay_share:.0%} at 1x "
        f"to {last.relay_share:.0%} at {last.scale}x ({', '.join(f'{p.relay_share:.0%}' for p in points)}); its CPU "
        f"per block grows {grows(relay_per_block)[1]} ({relay_per_block[0] * 1e3:,.0f} ms at {fitted[0].scale}x to "
        f"{relay_per_block[-1] * 1e3:,.0f} ms at {edge.scale}x). Stage S parallelises by subscriber, Stage R does "
        f"not: with Stage S spread over many cores, a block still takes Stage R's time, so more cores buy at most "
        f"1 / {last.relay_share:.2f} = {1 / max(last.relay_share, 1e-9):.1f}x. At this speed (simulator, in-memory "
        f"state; the Spark job adds state round trips) Stage R alone fills the {BLOCK_TIME_S:.0f} s block time at "
        f"{at(reach)} the issue's workload (extrapolated): far beyond the UMP limit, so Stage R's speed sets the "
        f"latency of a block, not the capacity of a realm.",
        f"- **A state page**: the largest page at {last.scale}x is {_mb(page.get('bytes', 0))} "
        f"({page.get('entries', 0)} entries of {page.get('stage', '')}'s `{page.get('namespace', '')}`, page "
        f"{page.get('page', 0)} of {page.get('pages_per_namespace', '?')}; largest namespace: "
        f"{last.largest_namespace.get('stage', '')}'s `{last.largest_namespace.get('namespace', '')}`, "
        f"{_mb(last.largest_namespace.get('bytes', 0))}); before the UMP limit it grows {grows(page_bytes)[1]} "
        f"({page_bytes[0] / 1e3:,.1f} kB at {fitted[0].scale}x, {page_bytes[-1] / 1e3:,.1f} kB at {edge.scale}x). "
        f"At {STATE_MB_S:.0f} MB/s a page costs {page.get('bytes', 0) / (STATE_MB_S * 1e6) * 1e3:,.1f} ms to load and "
        f"as much to write back per micro-batch that touches it; at the pre-limit growth it reaches 0.1 s of a block "
        f"({STATE_MB_S * 0.1:.0f} MB) at {at(page_reach)}, but a UMP backlog reaches it sooner (it grows every block "
        f"past the limit); more pages per namespace is the remedy (a stored-format migration). The largest page's "
        f"namespace by point: {page_names}"
        + ("; a page of one entry (the genesis record, whose key registry grows with the paras) is one value that "
           "more pages cannot split." if any(p.largest_page.get("entries") == 1 for p in points) else "."),
        f"- **The seam**: {last.bytes_per_view / 1e3:,.1f} kB per view on average at {last.scale}x "
        f"({first.bytes_per_view / 1e3:,.1f} kB at 1x), {last.view_bytes / last.blocks / 1e6:,.2f} MB of views per "
        f"block in all; "
        f"the largest view ({last.view_max_bytes / 1e3:,.1f} kB) reaches the {MAX_RECORD_BYTES // 2**20} MiB record "
        f"limit at {at(view_reach)}. A view carries the nodes of its subscriber's proof that its previous view did "
        f"not (the default delta seam), and here most of each proof is new every block (every publisher updates half "
        f"its keys); with the subscribed keys fixed, it grows {grows([p.bytes_per_view for p in fitted])[1]} only "
        f"because its keys "
        f"spread over more publishers' child tries and the relay trie above them gets deeper; the total per block "
        f"grows with the subscribers times that ({grows([p.view_bytes / p.blocks for p in fitted])[1]}): "
        f"{seam_rate[-1] / 1e6:,.2f} MB/s at {edge.scale}x on a {BLOCK_TIME_S:.0f} s block time, written by the one "
        f"sequential Stage R; the relay-views topic's default {VIEWS_PARTITIONS} partitions (at an assumed "
        f"{PARTITION_MB_S:.0f} MB/s each) fill at {at(seam_reach)}, the nearest of the Kafka limits.",
        f"- **A topic**: the busiest output topic at {edge.scale}x is `{busiest_name}` with "
        f"{busiest_records / edge.blocks:,.0f} records ({busiest_bytes / edge.blocks / 1e6:,.2f} MB) per block, "
        f"{busiest_rate / 1e6:,.3f} MB/s at a {BLOCK_TIME_S:.0f} s block time, against an assumed "
        f"{PARTITION_MB_S:.0f} MB/s for one Kafka partition: the topic needs a second partition at {at(topic_reach)} "
        f"(it is keyed, so more partitions split it).",
        "",
    ]
    return "\n".join(lines)


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
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def _commit() -> str:
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


def write_outputs(points: Sequence[Point], meta: Mapping[str, Any]) -> None:
    MARKDOWN.write_text(render_markdown(points, meta))
    plotted = plot(points, PLOT)
    print(f"wrote {MARKDOWN.relative_to(ROOT)}" + (f" and {PLOT.relative_to(ROOT)}" if plotted else
                                                   " (no matplotlib: no plot)"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--blocks", type=int, default=BLOCKS, help="blocks with traffic per point")
    parser.add_argument("--blocks-8x", type=int, default=BLOCKS,
                        help="blocks at scales of 8 and above (fewer to shorten the run)")
    parser.add_argument("--logs", type=Path, default=LOG_DIR, help="where the event logs are kept (made if missing)")
    parser.add_argument("--from-results", action="store_true", help=f"re-render {MARKDOWN.name} from {RESULTS.name}")
    parser.add_argument("--admission", action="store_true",
                        help="cProfile the 1x point: Stage R's per-origin work an admission stage could take (target 4)")
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
            # cProfile sees Python functions only: the profile runs on the pure-Python build, the timing on
            # the build a user runs.
            env = {**os.environ, **({"PUBSUB_PURE_PYTHON": "1"} if mode == "profile" else {})}
            done = subprocess.run(command + (["--timing"] if mode == "timing" else []), cwd=ROOT, env=env,
                                  capture_output=True, text=True, check=True)
            figures[mode] = json.loads(done.stdout.strip().splitlines()[-1])
        print(render_admission(figures["profile"], figures["timing"]))
        return
    if args.from_results:
        body = json.loads(RESULTS.read_text())
        write_outputs([point_from_json(p) for p in body["points"]], body)
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
    meta = {"date": time.strftime("%Y-%m-%d"), "commit": _commit(), "python": platform.python_version(),
            "load_average": os.getloadavg(), "pages_per_namespace": pages, "block_time_s": BLOCK_TIME_S,
            "partition_mb_s": PARTITION_MB_S, "points": [{**asdict(p), "publishes_per_s": p.publishes_per_s,
                                                          "relay_share": p.relay_share} for p in points]}
    RESULTS.write_text(json.dumps(meta, indent=2) + "\n")
    write_outputs(points, meta)


# -- the admission-stage question (issue 11, target 4) --------------------------------------------------------------


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
        "route": ingest.LineRouter.route, "ingest_record": ingest.ingest_record,
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

    from cli.commands.simulate import lines
    from pubsub_core.simulator import Simulator
    from pubsub_core.stages import SimulatorConfig

    with log.open("rb") as source:
        raw = [line for line, _ in lines(source)]
    profiler = cProfile.Profile()
    profiler.enable()
    simulator = Simulator(SimulatorConfig())
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
    from cli.commands.simulate import lines
    from pubsub_core.envelope import admission, envelope
    from pubsub_core.relay import machine
    from pubsub_core.simulator import Simulator
    from pubsub_core.simulator import simulator as simulator_module
    from pubsub_core.stages import SimulatorConfig, ingest
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
        (ingest.LineRouter, "route"), (simulator_module, "ingest_record"), (admission, "authenticate"),
        (envelope, "verify_ed25519"), (machine.RelayMachine, "_validate_upward"), (admission.Admission, "admit"),
        (barriers.BarrierChain, "check"), (SubscriberStage, "step"),
    ]
    for owner, attribute in patches:
        setattr(owner, attribute, timed(attribute.lstrip("_"), getattr(owner, attribute)))
    with log.open("rb") as source:
        raw = [line for line, _ in lines(source)]
    start = clock()
    simulator = Simulator(SimulatorConfig())
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


def render_admission(profile: Mapping[str, Any], timing: Mapping[str, Any]) -> str:
    """The two measurements of the per-origin parts as one markdown table (shares of Stage R's CPU)."""
    p_relay, t_relay = profile["stage_r_s"], timing["stage_r_s"]
    rows = ["| per-origin work in Stage R | cProfile: CPU s | share | timed, no profiler: CPU s | share |",
            "|---|---:|---:|---:|---:|"]
    for label, seconds in profile["parts_s"].items():
        timed = timing["parts_s"].get(label, 0.0)
        rows.append(f"| {label} | {seconds:.3f} | {seconds / p_relay:.1%} | {timed:.3f} | {timed / t_relay:.1%} |")
    p_sum, t_sum = sum(profile["parts_s"].values()), sum(timing["parts_s"].values())
    rows.append(f"| **all of it** | **{p_sum:.3f}** | **{p_sum / p_relay:.1%}** | **{t_sum:.3f}** | "
                f"**{t_sum / t_relay:.1%}** |")
    p_sig, t_sig = profile["signature_s"], timing["signature_s"]
    rows.append(f"| (of which ed25519 verification, {profile['calls']['verify_ed25519']:,} calls) | {p_sig:.3f} | "
                f"{p_sig / p_relay:.1%} | {t_sig:.3f} | {t_sig / t_relay:.1%} |")
    p_bar, t_bar = profile["barrier_s"], timing["barrier_s"]
    rows.append(f"| (not counted: XCM barrier check, reads the relay's config) | {p_bar:.3f} | {p_bar / p_relay:.1%} | "
                f"{t_bar:.3f} | {t_bar / t_relay:.1%} |")
    return (f"Stage R: {p_relay:.2f} s of {profile['profiled_s']:.2f} s under cProfile, {t_relay:.2f} s of "
            f"{timing['total_s']:.2f} s timed without it (the rest is Stage S); "
            f"{profile['calls']['authenticate']:,} authentications, {profile['calls']['admit']:,} admissions.\n\n"
            + "\n".join(rows) + "\n")

if __name__ == "__main__":
    main()
