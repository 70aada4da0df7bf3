"""A stalled realm on real Kafka and real Spark: the job reads a log whose block 3 includes a record of which only
a forged copy exists, says so (a ``Stalled`` record on ``polkadot.health``, the waiting block in its summary), the
author's void order unsticks it, and every output topic then equals the simulator's, record for record."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import threading
import time
from pathlib import Path

import pytest

from producers.transport.kafka_io import produce, read_topic
from pubsub_core.codec.hexjson import unhex_0x
from pubsub_core.envelope import Envelope
from pubsub_core.relay import is_void
from pubsub_core.simulator import simulate
from pubsub_core.stages.edge import ProducerRecord
from settings.settings import Settings
from streaming.job import run_job
from supervise.kafka_broker import free_port
from supervise.verify import check_outputs, fresh_topics
from tests.support.paths import REPO_ROOT

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

LOG = REPO_ROOT / "examples" / "stalled.jsonl"


def void_line(line: bytes) -> bool:
    """Whether an event-log line is a ``blocks`` record carrying a void order."""
    body = json.loads(line)
    if body["topic"] != "polkadot.blocks":
        return False
    return is_void(Envelope.decode(unhex_0x(body["value"]["value"])).data)


def test_a_stalled_realm_is_seen_then_the_void_order_unsticks_it_as_in_the_simulator(
        kafka_settings: Settings, tmp_path: Path) -> None:
    lines = LOG.read_bytes().splitlines()
    cut = next(i for i, line in enumerate(lines) if void_line(line))
    records, realms = fresh_topics(lines, kafka_settings, reset_topics=True)
    assert len(records) == len(lines) and realms == ["polkadot"]
    settings = dataclasses.replace(kafka_settings, checkpoint_dir=tmp_path / "checkpoint", realms="polkadot")

    produce(kafka_settings, records[:cut])
    stalled = run_job(settings, available_now=True)
    expected = {r.id: r.to_line() for r in simulate(lines) if r.topic == "polkadot.health"}
    health = [(r.key, r.value) for r in read_topic(kafka_settings, "polkadot.health")]
    assert len(health) == 1
    body = json.loads(health[0][1] or b"")
    assert body == json.loads(expected["stalled/polkadot.blocks@2"])["value"]
    assert body["kind"] == "Stalled" and body["block"] == 3
    status = stalled.waiting["polkadot"]
    assert (status.block, status.missing, status.stalled, status.later_blocks) == (3, ("upward/1000/1",), True, 3)
    assert stalled.heights == {"polkadot": 2}

    produce(kafka_settings, records[cut:])
    resumed = run_job(settings, available_now=True)
    assert resumed.waiting == {} and resumed.heights == {"polkadot": 7}
    result = check_outputs(lines, kafka_settings, realms)
    bad = [t for t in result.topics if not t.ok or t.reading]
    assert not bad, f"differences: {bad}"
    by_topic = {t.topic: t for t in result.topics}
    assert by_topic["polkadot.health"].matched == 3  # Stalled, Resumed, Voided
    assert by_topic["polkadot.rejected"].matched == 2  # the forged copy, the voided position
    assert sum(t.matched for t in result.topics) == sum(t.expected for t in result.topics)
    # Resumed: `pubsub status` says nothing of a stall, even with a forged Stalled record for a block the seals
    # show applied (anyone may write to the topic).
    argv = ["--bootstrap", str(kafka_settings.kafka_bootstrap), "--realm", "polkadot", "--checkpoint",
            str(tmp_path / "none")]
    assert "STALLED" not in status_text(argv)
    forged = {**json.loads(expected["stalled/polkadot.blocks@2"])["value"], "block": 6, "block_record": "polkadot.blocks@5"}
    produce(kafka_settings, [ProducerRecord("polkadot.health", b"polkadot", json.dumps(forged).encode())])
    assert "STALLED" not in status_text(argv)


def test_pubsub_author_void_finds_the_missing_position_on_kafka_and_its_order_unsticks_the_job(
        kafka_settings: Settings, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """The same log without its void order: ``pubsub author void`` reads the topics, prints the one missing
    position, writes nothing without --yes, then writes the order; the job's outputs equal the simulator's on the
    log with the order in it."""
    from cli.main import main
    from producers.transport.kafka_io import topic_size
    from pubsub_core.hashing import blake2_256

    lines = LOG.read_bytes().splitlines()
    cut = next(i for i, line in enumerate(lines) if void_line(line))
    records, realms = fresh_topics(lines, kafka_settings, reset_topics=True)
    settings = dataclasses.replace(kafka_settings, checkpoint_dir=tmp_path / "checkpoint", realms="polkadot")
    produce(kafka_settings, records[:cut])
    assert run_job(settings, available_now=True).waiting["polkadot"].stalled
    key = tmp_path / "author.key"
    key.write_text(blake2_256(b"rfc0160/workload/author").hex())  # producers.workload.signer("author")
    command = ["author", "void", "--bootstrap", str(kafka_settings.kafka_bootstrap), "--realm", "polkadot",
               "--block", "3", "--key-file", str(key)]
    assert main(command) == 0
    printed = capfd.readouterr().out
    assert "block 3 of polkadot (polkadot.blocks@2): void 1 position(s)" in printed and "upward/1000/1" in printed
    assert topic_size(kafka_settings, "polkadot.blocks") == 6  # nothing written without --yes
    assert main([*command, "--yes"]) == 0
    produce(kafka_settings, records[cut + 1:])
    resumed = run_job(settings, available_now=True)
    assert resumed.waiting == {} and resumed.heights == {"polkadot": 7}
    result = check_outputs(lines, kafka_settings, realms)
    bad = [t for t in result.topics if not t.ok or t.reading]
    assert not bad, f"differences: {bad}"
    assert sum(t.matched for t in result.topics) == sum(t.expected for t in result.topics) > 0


BLOCK_SECONDS = 6.0
"""The live test's block time: the relay chain's own."""
THRESHOLD_BLOCK_OFFSET = 5
"""Block 6, the third block queued behind block 3 (stall_after_blocks = 3), is the blocks topic's sixth record."""


def status_text(argv: list[str]) -> str:
    """What ``pubsub status`` prints on stdout (run in this process, next to the job's thread)."""
    from cli.main import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["status", *argv]) == 0
    return out.getvalue()


def test_pubsub_status_names_the_missing_record_within_one_block_time_from_the_endpoint_and_the_topics(
        kafka_settings: Settings, tmp_path: Path) -> None:
    """The continuous job (real Spark, real Kafka) fed examples/stalled.jsonl a block every block time, as an author
    writes them: before block 6 `pubsub status` says nothing of a stall; once block 6 is written (the stall
    threshold), within one block time, it prints STALLED with block 3, the missing upward/1000/1, since when and
    the void command, both from the job's metrics endpoint and from the topics alone."""
    lines = LOG.read_bytes().splitlines()
    cut = next(i for i, line in enumerate(lines) if void_line(line))
    records, _ = fresh_topics(lines, kafka_settings, reset_topics=True)
    blocks = [i for i, line in enumerate(lines[:cut]) if json.loads(line)["topic"] == "polkadot.blocks"]
    port = free_port()
    settings = dataclasses.replace(kafka_settings, checkpoint_dir=tmp_path / "checkpoint", realms="polkadot",
                                   trigger_seconds=0.5, metrics_port=port)
    bootstrap = str(kafka_settings.kafka_bootstrap)
    from_topics = ["--bootstrap", bootstrap, "--realm", "polkadot", "--checkpoint", str(tmp_path / "none")]
    from_endpoint = [*from_topics, "--metrics-url", f"http://127.0.0.1:{port}/metrics"]
    undo = f"undo with         pubsub author void --bootstrap {bootstrap} --realm polkadot --block 3 --yes"
    stop = threading.Event()
    heights: list[int] = []
    found: dict[str, object] = {}

    def feed() -> None:
        try:
            produce(kafka_settings, records[:blocks[0] + 1])
            deadline = time.monotonic() + 300
            while not heights and time.monotonic() < deadline:  # Spark serves block 1: the job is up
                time.sleep(0.2)
            previous = blocks[0]
            for number, index in enumerate(blocks[1:], start=2):
                time.sleep(BLOCK_SECONDS)
                if index == blocks[THRESHOLD_BLOCK_OFFSET]:
                    found["before"] = status_text(from_endpoint) + status_text(from_topics)
                produce(kafka_settings, records[previous + 1:index + 1])  # the block's records, then the block
                previous = index
            written = time.monotonic()
            shown: dict[str, float] = {}
            while len(shown) < 2 and time.monotonic() < written + 3 * BLOCK_SECONDS:
                for name, argv in (("endpoint", from_endpoint), ("topics", from_topics)):
                    text = status_text(argv)
                    if name not in shown and "STALLED" in text:
                        shown[name] = time.monotonic() - written
                        found[name] = text
            found["seconds"] = shown
        finally:
            stop.set()

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        run_job(settings, on_batch=lambda report: heights.extend(report.heights.values()), stop=stop)
    finally:
        stop.set()
        feeder.join()
    assert "STALLED" not in str(found["before"]) and "undo" not in str(found["before"])
    seconds = found["seconds"]
    assert isinstance(seconds, dict) and set(seconds) == {"endpoint", "topics"}, found
    assert all(s <= BLOCK_SECONDS for s in seconds.values()), seconds
    endpoint, topics = str(found["endpoint"]).splitlines(), str(found["topics"]).splitlines()
    assert endpoint[1].startswith("STALLED           block 3 (polkadot.blocks@2) misses upward/1000/1, for ")
    assert topics[1].startswith("STALLED           block 3 (polkadot.blocks@2) waits for upward/1000/1, since ")
    assert endpoint[2] == topics[2] == undo
