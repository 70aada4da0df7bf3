"""`pubsub demo`: the walking skeleton end to end on the embedded broker, in two runs, with a checked summary."""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections import Counter
from typing import Any

from rich.table import Table

from cli.commands.common import add_kafka_arguments, console, settings_from
from producers.kafka_io import ProducedRecord, produce, read_topic, synthetic_records
from streaming.kafka_broker import EmbeddedKafka, create_topics, delete_topics, ensure_kafka
from streaming.paths import runtime_dir


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the skeleton end to end and print what it did",
        description=(
            "Start (or reuse) the embedded Kafka broker, send records and two malformed ones, run the Spark job, "
            "send more, run the job again from its checkpoint, then read the output back and check it: every input "
            "reflected once, per-key counts exact, state continued across the restart, bad input rejected."
        ),
    )
    add_kafka_arguments(parser)
    parser.add_argument("--count", type=int, default=200, help="records per run (default: 200)")
    parser.add_argument("--keys", type=int, default=8, help="distinct keys (default: 8)")
    parser.add_argument("--keep-broker", action="store_true", help="leave the embedded broker running afterwards")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from streaming.job import build_query
    from streaming.spark_session import build_spark

    started = time.monotonic()
    checkpoint = runtime_dir() / "checkpoints" / "demo"
    settings = settings_from(args, topic_prefix=args.topic_prefix or "demo.", checkpoint_dir=checkpoint)
    broker = EmbeddedKafka()
    with console.status("Starting Kafka"):
        settings, embedded = ensure_kafka(settings, broker)
    where = "embedded broker" if embedded else "external cluster"
    console.print(f"[bold]1.[/] Kafka: {where} at {settings.kafka_bootstrap}")
    topics = [settings.input, settings.output, settings.rejected]
    delete_topics(settings, topics)
    shutil.rmtree(checkpoint, ignore_errors=True)
    create_topics(settings, topics)
    console.print(f"   fresh topics {', '.join(topics)}; checkpoint {checkpoint}")
    try:
        with console.status("Starting Spark (local mode, RocksDB state store)"):
            spark = build_spark(settings, app_name="rfc0160-pubsub-demo")
        total_rows = 0
        for run_number in (1, 2):
            records = list(synthetic_records(settings.input, args.count, args.keys, start=(run_number - 1) * args.count))
            if run_number == 1:
                records += [ProducedRecord(settings.input, None, b'{"n": -1}'), ProducedRecord(settings.input, b"key-0", b"not json")]
            produce(settings, records)
            console.print(f"[bold]{run_number + 1}.[/] produced {len(records)} records; running the job (available-now)")
            t0 = time.monotonic()
            query = build_query(spark, settings, available_now=True, query_name=f"demo_run_{run_number}")
            try:
                query.awaitTermination()
            finally:
                query.stop()
            rows = sum(int(p["numInputRows"]) for p in query.recentProgress)
            total_rows += rows
            console.print(f"   job processed {rows} input rows in {len(query.recentProgress)} batches, {time.monotonic() - t0:.1f}s")
        output = read_topic(settings, settings.output)
        rejected = read_topic(settings, settings.rejected)
    finally:
        if embedded is not None and embedded.started_here and not args.keep_broker:
            embedded.stop()
    return _report(output, rejected, args.count * 2, args.keys, total_rows, time.monotonic() - started)


def _report(output: list[Any], rejected: list[Any], sent: int, keys: int, rows: int, seconds: float) -> int:
    """Check and print the outcome; exit code 1 if a check fails."""
    bodies = [json.loads(r.value) for r in output]
    ids = Counter(body["id"] for body in bodies)
    final: dict[str, int] = {}
    for body in bodies:
        final[body["key"]] = max(final.get(body["key"], 0), body["seq"])
    table = Table(title="Per-key state after two runs")
    for column in ("key", "records", "last seq", "last digest"):
        table.add_column(column)
    for key in sorted(final):
        last = max((b for b in bodies if b["key"] == key), key=lambda b: b["seq"])
        table.add_row(key, str(sum(1 for b in bodies if b["key"] == key)), str(final[key]), last["digest"][:16] + "…")
    console.print(table)
    checks = {
        f"every input reflected: {len(ids)} distinct output ids for {sent} good records": len(ids) == sent,
        f"no duplicates: {len(bodies) - len(ids)} repeated records": len(bodies) == len(ids),
        f"state continued across runs: per-key counts sum to {sum(final.values())}": sum(final.values()) == sent
        and len(final) == keys,
        f"bad input rejected, not fatal: {len(rejected)} records on the rejected topic": len(rejected) == 2,
        f"input rows read by the job: {rows}": rows == sent + 2,
    }
    for text, ok in checks.items():
        console.print(f"   {'[green]ok[/]' if ok else '[red]FAILED[/]'}  {text}")
    console.print(f"Demo finished in {seconds:.1f}s: {'all checks passed' if all(checks.values()) else 'CHECKS FAILED'}.")
    return 0 if all(checks.values()) else 1
