"""A stalled realm on real Kafka and real Spark: the job reads a log whose block 3 includes a record of which only
a forged copy exists, says so (a ``Stalled`` record on ``polkadot.health``, the waiting block in its summary), the
author's void order unsticks it, and every output topic then equals the simulator's, record for record."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from producers.transport.kafka_io import produce, read_topic
from pubsub_core.codec.hexjson import unhex_0x
from pubsub_core.envelope import Envelope
from pubsub_core.relay import is_void
from pubsub_core.simulator import simulate
from tests.support.paths import REPO_ROOT
from settings.settings import Settings
from streaming.job import run_job
from supervise.verify import check_outputs, fresh_topics

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
