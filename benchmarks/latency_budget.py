"""Where a block's latency goes: the live pipeline (as `pubsub demo --live` runs it) with the job's batch log on,
each block's way from its record on ``<realm>.blocks`` to its last update on ``<realm>.updates`` cut into spans.

Per block (from the block after Spark served the set-up): the block record's Kafka timestamp (the author's clock),
its first view on the seam and its latest update (Stage R's and Stage S's producers' clocks), Spark's progress per
batch (the trigger's start and its ``durationMs`` phases) and the operator calls' spans (``streaming.spans``), all
on this host's clock. Consecutive instants, so the spans of a block add up to its block-to-last-update time:

    block record -> Stage R's batch starts      the relay batch running when the block came, then the Kafka
                                                 produce and the wait for the next trigger
    -> its Python call starts                   Spark's planning phases, then task launch, Kafka fetch, state
                                                 store, Arrow
    -> the view's record                        rows, state reads, the protocol, writing (Stage R's call)
    -> Stage S's batch starts                   the subscribers batch running then, then the seam's delivery and
                                                 the wait for the next trigger
    -> the last update's record                 planning, launch, the calls of other subscribers before it in the
                                                 same worker, rows, state reads, the protocol, writing

The fused job (``stages = "fused"``) has no seam: its one call per realm runs Stage R and the block's subscribers,
so a block's way ends at the last update written by that call; the seam's and Stage S's spans are 0, and Stage R's
protocol and writing include Stage S's.

With --compare NAME=VALUE[,NAME=VALUE] (settings, given to the job as PUBSUB_ variables; repeatable, one arm
each) each block time runs the baseline and then each arm, --rounds times, interleaved, so all see the same
machine. Writes benchmarks/results/latency_budget.json (or --out).

    .venv/bin/python -m benchmarks.latency_budget                        # 6 s and 1 s blocks
    .venv/bin/python -m benchmarks.latency_budget --compare trigger_seconds=0.1 --compare shuffle_partitions=1
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import read_result, stop_cleanly_on_sigterm, write_result
from benchmarks.latency_bench import add_live_arguments, fitting_rate
from benchmarks.render import RENDERERS
from producers.readers.latency import percentile
from producers.workload import WorkloadSpec
from settings.paths import runtime_dir
from settings.settings import ENV_PREFIX, load_settings
from streaming.spans import OperatorSpans
from supervise.kafka_broker import EmbeddedKafka, ensure_kafka
from supervise.live_run import LivePlan, LiveRun, LiveSnapshot

SPANS: tuple[tuple[str, str], ...] = (
    ("relay_running", "the relay batch running when the block came"),
    ("relay_trigger", "Kafka produce, wait for Stage R's trigger"),
    ("relay_planning", "Stage R: Spark's planning (offsets, WAL, plan)"),
    ("relay_launch", "Stage R: task launch, Kafka fetch, state store, Arrow"),
    ("relay_rows", "Stage R: reading rows"),
    ("relay_state", "Stage R: state reads"),
    ("relay_protocol", "Stage R: the protocol (fused: and Stage S's)"),
    ("relay_write", "Stage R: writing, up to the view (fused: the last update)"),
    ("seam_running", "the subscribers batch running when the view came"),
    ("seam_trigger", "seam delivery, wait for Stage S's trigger"),
    ("subscribers_planning", "Stage S: Spark's planning (offsets, WAL, plan)"),
    ("subscribers_launch", "Stage S: task launch, Kafka fetch, state store, Arrow"),
    ("subscribers_before", "Stage S: other subscribers first in its worker"),
    ("subscribers_rows", "Stage S: reading rows"),
    ("subscribers_state", "Stage S: state reads"),
    ("subscribers_protocol", "Stage S: the protocol"),
    ("subscribers_write", "Stage S: writing, up to the last update"),
)
"""The spans of a block's way, in order, and their labels."""

_AFTER_PLANNING = {"addBatch", "commitOffsets", "triggerExecution"}
"""Progress phases that are not before the batch's tasks (the rest: latestOffset, walCommit, getBatch,
queryPlanning... come first)."""


@dataclass(frozen=True)
class Batch:
    """One micro-batch that ran, from the job's batch log (ms since the epoch)."""

    start: float
    end: float
    planning: float
    spans: tuple[OperatorSpans, ...]


def read_batches(path: Path) -> dict[str, list[Batch]]:
    """Query name -> its batches, in order, from a batch log (``streaming.job.log_batch``)."""
    out: dict[str, list[Batch]] = {"relay": [], "subscribers": []}
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        progress = entry["progress"]
        phases = {name: float(ms) for name, ms in (progress.get("durationMs") or {}).items()}
        start = datetime.datetime.fromisoformat(progress["timestamp"]).timestamp() * 1000
        planning = sum(ms for name, ms in phases.items() if name not in _AFTER_PLANNING)
        spans = tuple(OperatorSpans(**body) for body in entry["spans"])
        out.setdefault(entry["query"], []).append(
            Batch(start, start + phases.get("triggerExecution", 0.0), planning, spans))
    return out


def _containing(batches: Sequence[Batch], millis: float) -> Batch | None:
    """The batch running at ``millis`` (start <= millis <= end), if any."""
    return next((b for b in batches if b.start <= millis <= b.end), None)


def _call_spans(batch: Batch, at: float, begun: float, call: OperatorSpans, prefix: str) -> dict[str, float]:
    """``batch``'s start to ``at`` (an output of ``call``): planning, launch up to the worker's first call of the
    batch (``begun``), the calls before ``call``, then ``call``'s own spans, the rest being its writing."""
    out = {f"{prefix}_planning": batch.planning, f"{prefix}_launch": begun - batch.start - batch.planning}
    if prefix == "subscribers":
        out["subscribers_before"] = call.start - begun
    out[f"{prefix}_rows"] = call.rows
    out[f"{prefix}_state"] = call.state_read
    out[f"{prefix}_protocol"] = call.protocol - call.state_read
    out[f"{prefix}_write"] = at - call.start - call.rows - call.protocol
    return out


def _waits(previous: Sequence[Batch], since: float, until: float, prefix: str) -> dict[str, float]:
    """From ``since`` to ``until`` (a batch's start): the part a batch running at ``since`` still took, then the
    rest."""
    running = _containing(previous, since)
    busy = max(0.0, min(running.end, until) - since) if running is not None and running.end <= until else 0.0
    return {f"{prefix}_running": busy, f"{prefix}_trigger": until - since - busy}


def block_spans(snapshot: LiveSnapshot, batches: Mapping[str, Sequence[Batch]], realm: str,
                number: int) -> dict[str, float] | None:
    """Block ``number``'s spans in ms (``SPANS``) and ``total``, or None if a part of its way is not found."""
    block, view, last = snapshot.blocks.get(number), snapshot.views.get(number), snapshot.last_update.get(number)
    if block is None or last is None:
        return None
    update, subscriber = last
    if not batches["subscribers"]:
        return _fused_spans(batches["relay"], block, update, realm)
    if view is None:
        return None
    relay = _containing(batches["relay"], view)
    subs = _containing(batches["subscribers"], update)
    if relay is None or subs is None:
        return None
    relay_call = next((s for s in relay.spans if s.group == realm), None)
    sub_call = next((s for s in subs.spans if s.group == f"{realm}/{subscriber}"), None)
    if relay_call is None or sub_call is None:
        return None
    first = min(s.start for s in subs.spans if s.pid == sub_call.pid)
    out = _waits(batches["relay"], block, relay.start, "relay")
    out.update(_call_spans(relay, view, relay_call.start, relay_call, "relay"))
    out.update(_waits(batches["subscribers"], view, subs.start, "seam"))
    out.update(_call_spans(subs, update, first, sub_call, "subscribers"))
    out["total"] = float(update - block)
    return out


def _fused_spans(batches: Sequence[Batch], block: float, update: float, realm: str) -> dict[str, float] | None:
    """A block's spans in the fused job: to its batch's start, then the realm's call up to the last update."""
    batch = _containing(batches, update)
    call = None if batch is None else next((s for s in batch.spans if s.group == realm), None)
    if batch is None or call is None:
        return None
    out = dict.fromkeys((name for name, _ in SPANS), 0.0)
    out.update(_waits(batches, block, batch.start, "relay"))
    out.update(_call_spans(batch, update, call.start, call, "relay"))
    out["total"] = float(update - block)
    return out


def group_cpu_seconds(group: int) -> float:
    """CPU seconds (user + system) of the live processes of process group ``group`` (the job: its driver, Spark's
    JVM and the Python workers), from /proc: the per-batch cost shows here even where a loaded machine makes
    latency wander."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[2]) == group:  # after the name: state, ppid, pgrp, ..., utime (12), stime (13)
            total += int(fields[11]) + int(fields[12])
    return total / ticks


def budget(per_block: Sequence[Mapping[str, float]]) -> dict[str, Any]:
    """Mean and p50 of each span over the blocks (the means add up to the mean total), and the total's p50, p99."""
    if not per_block:
        return {"blocks": 0}
    spans = {name: {"mean_ms": round(statistics.fmean(b[name] for b in per_block), 1),
                    "p50_ms": round(percentile([b[name] for b in per_block], 50), 1)} for name, _ in SPANS}
    totals = [b["total"] for b in per_block]
    return {"blocks": len(per_block), "spans": spans,
            "total": {"mean_ms": round(statistics.fmean(totals), 1), "p50_ms": round(percentile(totals, 50), 1),
                      "p99_ms": round(percentile(totals, 99), 1), "max_ms": round(max(totals), 1)}}


def run_one(settings: Any, block_time: float, args: argparse.Namespace, arm: str,
            changes: Mapping[str, str]) -> dict[str, Any]:
    """One live run at ``block_time`` with ``changes`` (settings) applied to the job: its budget and latency."""
    rate = fitting_rate(args.rate, args.publishers, args.keys, block_time)
    realm = f"budget-{str(block_time).replace('.', '_')}s"
    workload = WorkloadSpec(seed=1, publishers=args.publishers - 2, system_publishers=2, subscribers=args.subscribers,
                            keys=args.keys, subscribed_keys=args.subscribed_keys, realm=realm)
    home = runtime_dir() / "latency-budget" / realm
    batch_log = home / "batches.jsonl"
    batch_log.unlink(missing_ok=True)
    env = {ENV_PREFIX + "BATCH_LOG": str(batch_log), **{ENV_PREFIX + k.upper(): v for k, v in changes.items()}}
    trigger = float(changes.get("trigger_seconds", args.trigger_seconds))
    plan = LivePlan(realm, workload, rate, block_time, home / "checkpoint", home / "logs", trigger,
                    tuple(sorted(env.items())))
    print(f"[{block_time:g}s blocks, {arm}] {rate:g} publishes/s, {args.seconds:g}s of traffic", flush=True)
    started = time.monotonic()
    load = os.getloadavg()
    with LiveRun(settings, plan) as run:
        run.start()
        steady = run.warm_up()
        job = run.supervisor.parts["job"].process.pid  # the leader of its own process group
        cpu = group_cpu_seconds(job)
        run.start_traffic()
        end = time.monotonic() + args.seconds
        run.wait(lambda _: time.monotonic() >= end, args.seconds + 60, "traffic")
        cpu = group_cpu_seconds(job) - cpu
        snapshot = run.drain(timeout=args.drain_timeout)
    batches = read_batches(batch_log)
    numbered = [(n, spans) for n in sorted(snapshot.blocks) if n >= steady
                if (spans := block_spans(snapshot, batches, realm, n)) is not None]
    blocks = [spans for _, spans in numbered]
    summary = snapshot.latency(steady)
    result = {"block_time_s": block_time, "arm": arm, "changes": dict(changes), "rate": rate,
              "trigger_seconds": trigger, "traffic_seconds": args.seconds, "measured_from_block": steady,
              "blocks_seen": sum(1 for n in snapshot.blocks if n >= steady), "budget": budget(blocks),
              "latency": summary.to_json(), "job_cpu_seconds": round(cpu, 1), "load_average": [round(x, 2) for x in load],
              "load_average_after": [round(x, 2) for x in os.getloadavg()],
              "wall_seconds": round(time.monotonic() - started, 1),
              "per_block": [{"block": n, **{name: round(ms, 1) for name, ms in spans.items()}} for n, spans in numbered]}
    total = result["budget"].get("total", {})
    print(f"  {summary.line()}; block to last update mean {total.get('mean_ms', 0):.0f} ms over "
          f"{result['budget']['blocks']} blocks ({result['wall_seconds']}s)", flush=True)
    return result


def _changes(arm: str) -> dict[str, str]:
    """``NAME=VALUE[,NAME=VALUE]`` as settings."""
    out = {}
    for pair in arm.split(","):
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SystemExit(f"--compare takes NAME=VALUE (a setting), not {pair!r}")
        out[name.strip().lower()] = value.strip()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(prog="benchmarks.latency_budget", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    add_live_arguments(parser)
    parser.add_argument("--compare", action="append", default=[], metavar="NAME=VALUE[,NAME=VALUE]",
                        help="the settings of an arm run beside the baseline, repeatable (default: none)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of baseline and arms per block time (default: 1)")
    parser.add_argument("--out", type=Path, default=None,
                        help="results file (default: benchmarks/results/latency_budget.json)")
    args = parser.parse_args()
    arms = [_changes(arm) for arm in args.compare]
    stop_cleanly_on_sigterm()
    settings, broker = ensure_kafka(load_settings(), EmbeddedKafka())
    runs = []
    try:
        for block_time in args.block_time or [6.0, 1.0]:
            for _ in range(args.rounds if arms else 1):
                runs.append(run_one(settings, block_time, args, "baseline", {}))
                runs += [run_one(settings, block_time, args, "changed", changes) for changes in arms]
    finally:
        if broker is not None and broker.started_here:
            broker.stop()
    path = write_result("latency_budget", {"runs": runs, "spans": dict(SPANS)}, module="benchmarks.latency_budget",
                        path=args.out)
    print(RENDERERS["latency_budget"](read_result("latency_budget", path)))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
