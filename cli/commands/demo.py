"""`pubsub demo`: the protocol end to end on the embedded broker: a seeded workload through Kafka and the Spark job,
what the subscribers received, PoV per block, rejections, and the job compared with the simulator record by record."""

from __future__ import annotations

import argparse
import json
import shutil
import string
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

from cli.commands.common import console
from cli.commands.demo_live import add_live_arguments, run_live_demo
from cli.commands.verify import comparison_table

if TYPE_CHECKING:
    from producers.workload import WorkloadSpec

DEMO_REALM = "demo"
"""The demo's realm: its topics (``demo.*``) are reset on every run; the job serves only this realm."""
DEMO_MAX_POV = 3000
"""Relay blocks' max PoV size in the demo: small on purpose, so some blocks use up the subscribers' proof budget
and continue from a cursor in the next block (result ``incomplete``)."""


def demo_workload(seed: int = 9, blocks: int = 12, realm: str = DEMO_REALM) -> WorkloadSpec:
    """The demo's workload: a system and two registered publishers, three subscribers, TTLs that expire, a tenth
    of bad records, small blocks (``DEMO_MAX_POV``); the secured broker's test runs it too."""
    from producers.workload import WorkloadSpec

    return WorkloadSpec(seed=seed, blocks=blocks, publishers=2, system_publishers=1, subscribers=3, bad_records=0.1,
                        ttl_mix=((0, 0.6), (3, 0.4)), quiet_blocks=4, max_pov_size=DEMO_MAX_POV, realm=realm)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the protocol end to end through Kafka and Spark and print what it did",
        description=(
            "Start (or reuse) the embedded Kafka broker, generate a seeded workload (a system and two registered "
            "publishers, three subscribers, TTLs that expire, some bad records), produce it to fresh "
            f"'{DEMO_REALM}.*' topics, run the Spark job over it (Stage R, then Stage S; available-now), then print "
            "what each subscriber received, proof bytes per block and subscriber, rejections by reason, and the "
            "job's outputs compared record by record with the one-process simulator. Exit 0 only if they are equal. "
            "With --live: the live producer, the block author, the continuous job and a following consumer run "
            "together with a status view, then block-to-update latency percentiles and a latency/PoV plot."
        ),
        epilog="Examples: pubsub demo; pubsub demo --keep-broker (then pubsub consume --realm demo); "
               "pubsub demo --live --seconds 60 --rate 20.",
    )
    parser.add_argument("--config", type=Path, metavar="FILE", help="TOML settings file (default: $PUBSUB_CONFIG)")
    parser.add_argument("--bootstrap", metavar="HOST:PORT",
                        help=f"external Kafka (default: the embedded broker); its '{DEMO_REALM}.*' topics are reset")
    parser.add_argument("--seed", type=int, default=9, help="workload seed (default: 9)")
    parser.add_argument("--blocks", type=int, default=12, help="relay blocks with traffic (default: 12)")
    parser.add_argument("--max-offsets-per-trigger", type=int, default=50, metavar="N",
                        help="records per micro-batch and query (default: 50, so the relay takes a few batches)")
    parser.add_argument("--rows", type=int, default=6, metavar="N", help="updates shown per subscriber (default: 6)")
    parser.add_argument("--keep-broker", action="store_true", help="leave the embedded broker running afterwards")
    add_live_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.live:
        return run_live_demo(args)
    from producers.transport.kafka_io import read_outputs
    from producers.workload import generate
    from pubsub_core.stages.topics import topic
    from settings.paths import runtime_dir
    from settings.settings import load_settings
    from supervise.kafka_broker import EmbeddedKafka, ensure_kafka
    from supervise.verify import verify_log

    started = time.monotonic()
    spec = demo_workload(args.seed, args.blocks)
    counts: Counter[str] = Counter()
    lines = [line.encode() for block in generate(spec, counts) for line in block]
    checkpoint = runtime_dir() / "checkpoints" / "demo"
    protocol = runtime_dir() / "demo" / "protocol.json"  # lines that name no realm go to demo.rejected too
    protocol.parent.mkdir(parents=True, exist_ok=True)
    protocol.write_text(json.dumps({"default_realm": DEMO_REALM}) + "\n")
    settings = load_settings(
        overrides={"kafka_bootstrap": args.bootstrap, "realms": DEMO_REALM, "checkpoint_dir": checkpoint,
                   "max_offsets_per_trigger": args.max_offsets_per_trigger, "protocol_config": protocol},
        config_file=args.config,
    )
    broker = EmbeddedKafka()
    with console.status("Starting Kafka"):
        settings, embedded = ensure_kafka(settings, broker)
    try:
        where = "embedded broker" if embedded else "external cluster"
        console.print(f"[bold]1.[/] Kafka: {where} at {settings.kafka_bootstrap}")
        _print_workload(spec, counts, len(lines))
        console.print(f"[bold]3.[/] producing it to fresh '{DEMO_REALM}.*' topics and running the Spark job "
                      f"(local mode, available-now; checkpoint {checkpoint}):")
        shutil.rmtree(checkpoint, ignore_errors=True)
        result = verify_log(lines, settings, reset_topics=True, checkpoint=checkpoint,
                            on_batch=lambda report: console.print("   " + report.line()))
        names = {kind: topic(DEMO_REALM, kind) for kind in ("updates", "pov", "rejected")}
        outputs = _by_topic(read_outputs(settings, list(names.values())))
    finally:
        if embedded is not None and embedded.started_here and not args.keep_broker:
            embedded.stop()
    if result.job is not None:
        job = result.job
        console.print(f"   job done: {job.batches} batches, {job.input_rows} input rows, relay height "
                      f"{job.heights.get(DEMO_REALM, 0)}, {job.seconds:.1f}s")
    console.print("[bold]4.[/] what the job wrote")
    console.print(_updates_table(outputs[names["updates"]], args.rows))
    console.print(_pov_table(outputs[names["pov"]]))
    console.print(_rejections_table(outputs[names["rejected"]]))
    console.print("[bold]5.[/] the job's outputs against the simulator's, topic by topic")
    console.print(comparison_table(result))
    for t in result.topics:
        for example in t.examples:
            console.print(f"   {t.topic}: {example}")
    total = sum(t.expected for t in result.topics)
    ok = result.ok and total > 0 and sum(t.matched for t in result.topics) == total
    seconds = time.monotonic() - started
    if ok:
        console.print(f"Demo finished in {seconds:.1f}s: every one of {total} output records equals the simulator's; "
                      "[bold green]all checks passed[/].")
        return 0
    console.print(f"Demo finished in {seconds:.1f}s: [bold red]CHECKS FAILED[/]: the job's outputs differ from the "
                  "simulator's (table above).")
    return 1


def _print_workload(spec: Any, counts: Counter[str], lines: int) -> None:
    bad = {name.removeprefix("bad: "): n for name, n in sorted(counts.items()) if name.startswith("bad: ")}
    ttls = ", ".join(f"{ttl or 'none'}: {weight:.0%}" for ttl, weight in spec.ttl_mix)
    console.print(
        f"[bold]2.[/] workload (seed {spec.seed}): {lines} log lines, {counts['blocks']} relay blocks "
        f"(max PoV {spec.max_pov_size} bytes); {spec.system_publishers} system and {spec.publishers} registered "
        f"publishers, {spec.subscribers} subscribers; {counts['publishes']} publishes (TTL in blocks {ttls}), "
        f"{counts['downward messages']} downward and {counts['horizontal messages']} horizontal messages; "
        f"{sum(bad.values())} bad records ({', '.join(f'{k} {n}' for k, n in bad.items()) or 'none'})"
    )


def _by_topic(lines: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Output lines grouped by topic, one per record id (the job's output is at-least-once), in id order."""
    seen: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for line in lines:
        body = json.loads(line)
        seen[body["topic"]].setdefault(str(body["id"]), body)
    return defaultdict(list, {name: list(records.values()) for name, records in seen.items()})


def _digits(hex_text: str) -> str:
    """The hex digits of a byte string as output records carry it (``0x``-prefixed; bare digits accepted too)."""
    return hex_text.removeprefix("0x")


def _short_hex(text: str, keep: int = 8) -> str:
    digits = _digits(text)
    return "0x" + (digits if len(digits) <= 2 * keep else f"{digits[:keep]}…{digits[-4:]}")


def _short_value(hex_value: str, keep: int = 16) -> str:
    data = bytes.fromhex(_digits(hex_value))
    if not data:
        return "(empty)"
    if all(chr(b) in string.printable and b not in (0x0B, 0x0C) for b in data):
        text = data.decode("ascii").replace("\n", " ")
        return escape(repr(text if len(text) <= keep else text[:keep] + "…"))
    return f"{_short_hex(hex_value)} {len(data)} B"


def _updates_table(records: list[dict[str, Any]], rows: int) -> Table:
    table = Table(title=f"on_data_updated per subscriber ({DEMO_REALM}.updates), first {rows} of each")
    for column in ("subscriber", "block", "publisher", "key", "value"):
        table.add_column(column, justify="right" if column in ("block", "publisher") else "left")
    by_subscriber: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        by_subscriber[int(record["value"]["subscriber"])].append(record["value"])
    for subscriber in sorted(by_subscriber):
        updates = sorted(by_subscriber[subscriber], key=lambda u: (u["relay_block_number"], u["seq"]))
        kinds = Counter(u["kind"] for u in updates)
        for index, update in enumerate(updates[:rows]):
            value = _short_value(update["value"]) if update["kind"] == "set" else f"[yellow]({update['kind']})[/]"
            table.add_row(str(subscriber) if index == 0 else "", str(update["relay_block_number"]),
                          str(update["publisher"]), _short_hex(update["key"]), value)
        summary = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
        more = f"… {len(updates) - rows} more" if len(updates) > rows else "all shown"
        table.add_row("", "", "", f"[dim]{more}[/]", f"[dim]{summary}[/]", end_section=True)
    if not by_subscriber:
        table.add_row("(none)", "", "", "", "")
    return table


def _pov_table(records: list[dict[str, Any]]) -> Table:
    pov: dict[int, dict[int, dict[str, Any]]] = defaultdict(dict)
    for record in records:
        value = record["value"]
        pov[int(value["relay_block_number"])][int(value["subscriber"])] = value
    subscribers = sorted({s for per_block in pov.values() for s in per_block})
    table = Table(title=f"PoV per relay block ({DEMO_REALM}.pov): proof/budget bytes, ✓ = complete")
    table.add_column("block", justify="right")
    for subscriber in subscribers:
        table.add_column(f"sub {subscriber}", justify="right")
    if not subscribers:
        table.add_column("subscribers")
        table.add_row("", "(none)")
    results: Counter[str] = Counter()
    for block in sorted(pov):
        cells = []
        for subscriber in subscribers:
            value = pov[block].get(subscriber)
            if value is None:
                cells.append("")
                continue
            results[value["result"]] += 1
            result = "[green]✓[/]" if value["result"] == "complete" else f"[yellow]{value['result']}[/]"
            cells.append(f"{value['proof_bytes']}/{value['budget']['pubsub']} {result}")
        table.add_row(str(block), *cells)
    table.caption = ", ".join(f"{n} {result}" for result, n in sorted(results.items())) or "no PoV records"
    return table


def _rejections_table(records: list[dict[str, Any]]) -> Table:
    table = Table(title=f"rejections by reason ({DEMO_REALM}.rejected)")
    table.add_column("reason", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("count", justify="right", no_wrap=True)
    table.add_column("example", no_wrap=True, overflow="ellipsis", max_width=36)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        value = record["value"]
        groups[(str(value.get("reason")), str(value.get("status")))].append(value)
    for (reason, status), values in sorted(groups.items()):
        detail = str(values[0].get("detail", ""))
        table.add_row(escape(reason), escape(status), str(len(values)), escape(detail))
    if not groups:
        table.add_row("(none)", "", "0", "")
    return table
