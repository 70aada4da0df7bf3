"""A stall seen live: the continuous job (local[2]) on the embedded broker, fed examples/stalled.jsonl in real time,
a block every --block-time seconds as an author writes them, its records just before their block. Block 3 includes
a position of which only a forged copy exists; the realm is declared stalled when block 3 + stall_after_blocks
(block 6, default 3) arrives. Two block times later the author's void order comes, and block 7 after it.

Measured from Kafka timestamps: threshold block -> ``Stalled`` record on polkadot.health, void order -> ``Resumed``
record; and on the driver's clock, the threshold block's write -> the first progress line that says STALLED.

    .venv/bin/python benchmarks/stall_live.py --block-time 2 --trigger-seconds 0.5
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.common import stop_cleanly_on_sigterm
from benchmarks.common import ROOT as REPO_ROOT
from producers.transport.kafka_io import produce, read_topic
from pubsub_core.codec.hexjson import unhex_0x
from pubsub_core.envelope import Envelope
from pubsub_core.relay import is_void
from pubsub_core.stages.edge import ConsumerRecord
from settings.settings import load_settings
from streaming.job import BatchReport, run_job
from supervise.kafka_broker import EmbeddedKafka, ensure_kafka
from supervise.verify import check_outputs, fresh_topics

LOG = REPO_ROOT / "examples" / "stalled.jsonl"
THRESHOLD_BLOCK_OFFSET = 5
"""Block 6 is the blocks topic's sixth record (offset 5): the third block queued behind block 3."""


def _kind(line: bytes) -> str:
    """``block``, ``void`` (a void order) or ``record`` (any other line) of an event-log line."""
    body = json.loads(line)
    return "record" if body["topic"] != "polkadot.blocks" else _block_kind(body["value"])


def _block_kind(value: dict[str, str]) -> str:
    return "void" if is_void(Envelope.decode(unhex_0x(value["value"])).data) else "block"


def _health(settings: object, kind: str, timeout: float) -> ConsumerRecord:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for record in read_topic(settings, "polkadot.health", timeout=5):  # type: ignore[arg-type]
            if json.loads(record.value or b"{}").get("kind") == kind:
                return record
        time.sleep(0.2)
    raise SystemExit(f"no {kind} record on polkadot.health within {timeout:.0f}s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--block-time", type=float, default=2.0, metavar="S")
    parser.add_argument("--trigger-seconds", type=float, default=0.5, metavar="S")
    args = parser.parse_args()
    stop_cleanly_on_sigterm()
    settings, broker = ensure_kafka(load_settings(), EmbeddedKafka())
    lines = LOG.read_bytes().splitlines()
    records, _ = fresh_topics(lines, settings, reset_topics=True)
    stop = threading.Event()
    lines_seen: list[tuple[float, str]] = []

    def on_batch(report: BatchReport) -> None:
        lines_seen.append((time.monotonic(), report.line()))
        print(report.line(), flush=True)

    found: dict[str, object] = {}

    def feed() -> None:
        """Write the log in real time and wait for the health records (the job runs on the main thread)."""
        try:
            first_block = next(i for i, line in enumerate(lines) if _kind(line) == "block")
            produce(settings, records[:first_block + 1])  # genesis, subscription, block 1: wait for Spark to serve it
            deadline = time.monotonic() + 300
            while not any("relay height polkadot 1" in line for _, line in lines_seen):
                if time.monotonic() > deadline:
                    raise SystemExit("the job did not serve block 1")
                time.sleep(0.2)
            blocks = 1
            for index in range(first_block + 1, len(lines)):
                kind = _kind(lines[index])
                if kind != "record":
                    time.sleep(args.block_time * (3 if kind == "void" else 1))
                produce(settings, [records[index]])
                if kind == "block":
                    blocks += 1
                    found[f"written {blocks}"] = time.monotonic()
            found["stalled"] = _health(settings, "Stalled", 120)
            found["resumed"] = _health(settings, "Resumed", 120)
            time.sleep(2 * args.trigger_seconds + 5)
        finally:
            stop.set()

    feeder = threading.Thread(target=feed)
    with tempfile.TemporaryDirectory(prefix="stall-live-") as scratch:
        job_settings = dataclasses.replace(settings, checkpoint_dir=Path(scratch) / "checkpoint", realms="polkadot",
                                           trigger_seconds=args.trigger_seconds)
        feeder.start()
        run_job(job_settings, on_batch=on_batch, stop=stop)
        feeder.join()
    stalled, resumed = found["stalled"], found["resumed"]
    assert isinstance(stalled, ConsumerRecord) and isinstance(resumed, ConsumerRecord)
    blocks_topic = read_topic(settings, "polkadot.blocks")
    threshold = next(r for r in blocks_topic if r.offset == THRESHOLD_BLOCK_OFFSET)
    void = next(r for r in blocks_topic if _block_kind(json.loads(r.value or b"")) == "void")
    shown = next((t for t, line in lines_seen if "STALLED" in line), None)
    written = found["written 6"]
    assert isinstance(written, float)
    result = check_outputs(lines, settings, ["polkadot"])
    assert stalled.timestamp and resumed.timestamp and threshold.timestamp and void.timestamp
    figures = {
        "block_time_s": args.block_time,
        "trigger_s": args.trigger_seconds,
        "threshold_block_to_stalled_record_s": (stalled.timestamp - threshold.timestamp) / 1000,
        "threshold_block_to_progress_line_s": None if shown is None else shown - written,
        "void_order_to_resumed_record_s": (resumed.timestamp - void.timestamp) / 1000,
        "outputs_equal_simulator": result.ok,
    }
    print(json.dumps(figures, indent=2))
    if broker is not None:
        broker.stop()
    return 0 if result.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
