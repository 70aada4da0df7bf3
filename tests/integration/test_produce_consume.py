"""`pubsub produce` and `pubsub consume` against a real broker: routing, rejections, limits, the output wire format."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from cli.main import main
from producers.transport.kafka_io import TOO_LARGE, read_outputs, read_topic, send
from producers.transport.topics import TopicKind, TopicSpec, ensure_realm_topics, ensure_topics, topic_config
from pubsub_core.simulator import Simulator
from pubsub_core.stages import IngestError, LineParser, OutputRecord, ProtocolConfig, split_topic
from pubsub_core.stages.edge import ProducerRecord, to_kafka
from pubsub_core.stages.limits import MAX_MESSAGE_BYTES, MiB
from pubsub_core.stages.topics import INPUTS, OUTPUTS, input_topics
from settings.settings import Settings

pytestmark = pytest.mark.kafka

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def fresh_realm() -> str:
    return f"r{uuid.uuid4().hex[:10]}"


def in_realm(line: str, realm: str) -> str:
    """An example line moved to `realm` (lines that are not JSON objects stay as they are)."""
    try:
        entry = json.loads(line)
    except json.JSONDecodeError:
        return line
    if isinstance(entry, dict) and isinstance(entry.get("topic"), str):
        entry["topic"] = entry["topic"].replace("polkadot.", f"{realm}.", 1)
    return json.dumps(entry)


def pubsub(settings: Settings, *args: str) -> int:
    return main([args[0], "--bootstrap", str(settings.kafka_bootstrap), *args[1:]])


def ingest_rejections(lines: list[str], realm: str) -> list[str]:
    """The simulator's rejections of lines it could not route (not those of routed records it could not decode,
    which are the job's), as output lines."""
    simulator = Simulator(ProtocolConfig(default_realm=realm))
    return [o.to_line() for line in lines for o in simulator.feed_line(line)
            if o.id.startswith("ingest/") and not _names_an_input(str(o.value["record"]))]


def _names_an_input(log_id: str) -> bool:
    try:
        split_topic(log_id.rpartition("@")[0])
    except IngestError:
        return False
    return True


def test_an_example_log_lands_on_its_input_topics_in_line_order(kafka_settings: Settings, tmp_path: Path) -> None:
    realm = fresh_realm()
    lines = [in_realm(line, realm) for line in (EXAMPLES / "small.jsonl").read_text().splitlines()]
    log = tmp_path / "small.jsonl"
    log.write_text("\n".join(lines) + "\n")
    assert pubsub(kafka_settings, "produce", "--event-log", str(log), "--realm", realm) == 0

    router = LineParser(realm)
    expected: dict[str, list[tuple[int, bytes | None, bytes]]] = {name: [] for name in input_topics(realm)}
    for line in lines:
        routed = router.route(line)
        if not isinstance(routed, OutputRecord):
            record, offset = routed
            assert isinstance(record, ProducerRecord)
            expected[record.topic].append((offset, record.key, record.value))
    assert sum(map(len, expected.values())) == len(lines) - 1  # small.jsonl has one malformed line
    for name, records in expected.items():
        got = read_topic(kafka_settings, name)
        assert {r.partition for r in got} <= {0}
        assert [(r.offset, r.key, r.value) for r in got] == records, name
    rejected = read_outputs(kafka_settings, [f"{realm}.rejected"])
    assert rejected == ingest_rejections(lines, realm) and len(rejected) == 1

    admin = AdminClient({**kafka_settings.kafka_client_config()})
    metadata = admin.list_topics(timeout=10).topics
    assert all(len(metadata[name].partitions) == 1 for name in input_topics(realm))
    assert all(f"{realm}.{name}" in metadata for name in (*OUTPUTS, "relay-views"))
    resource = ConfigResource(ConfigResource.Type.TOPIC, f"{realm}.blocks")
    configs = admin.describe_configs([resource])[resource].result(timeout=10)
    assert {k: configs[k].value for k in ("max.message.bytes", "compression.type", "retention.ms", "cleanup.policy")} \
        == {"max.message.bytes": str(MAX_MESSAGE_BYTES), "compression.type": "producer", "retention.ms": "-1",
            "cleanup.policy": "delete"}


def test_unroutable_lines_become_the_simulators_rejections(
    kafka_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    realm = fresh_realm()
    text_lines = ['{"topic": ', '{"key": "k", "value": {}}', f'{{"topic": "{realm}.nope", "key": "k", "value": 1}}',
                  '"just a string"', "", f'{{"topic": "{realm}.upward", "key": "2000", "value": {{"x": 1}}}}',
                  '{"topic": "nodot", "key": 7, "value": 1}']
    not_utf8 = f'{{"topic": "{realm}.upward", "key": "\xff", "value": "a"}}'.encode("latin-1")
    log = tmp_path / "bad.jsonl"
    log.write_bytes(b"\n".join([*(line.encode() for line in text_lines), not_utf8, b"   "]) + b"\n")

    assert pubsub(kafka_settings, "produce", "--event-log", str(log), "--realm", realm) == 0
    assert "MalformedJson" in capsys.readouterr().err
    assert pubsub(kafka_settings, "consume", "--topic", f"{realm}.rejected") == 0
    printed = capsys.readouterr().out.splitlines()
    router = LineParser(realm)  # the simulator's edge; for the lines that are text, the simulator's own outputs:
    expected = [o.to_line() for raw in log.read_bytes().splitlines()
                for o in [router.feed(raw)] if isinstance(o, OutputRecord)]
    assert expected[:5] == ingest_rejections(text_lines, realm)
    assert sorted(printed) == sorted(expected) and len(printed) == 6  # rejected has 2 partitions: sort
    last = json.loads(expected[-1])
    assert last["id"] == "ingest/line-8" and last["value"]["reason"] == "MalformedJson"  # the file's line 8
    assert [(r.key, r.value) for r in read_topic(kafka_settings, f"{realm}.upward")] == [(b"2000", b'{"x":1}')]

    again = fresh_realm()
    assert pubsub(kafka_settings, "produce", "--event-log", str(log), "--realm", again, "--strict") == 1


def test_a_2mb_record_round_trips_and_one_over_the_ceiling_is_rejected(
    kafka_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    realm = fresh_realm()
    big = os.urandom(1_000_000).hex()  # 2 MB of text, twice Kafka's 1 MB default
    lines = [json.dumps({"topic": f"{realm}.upward", "key": "2000", "value": {"blob": big}}),
             json.dumps({"topic": f"{realm}.upward", "key": "2001", "value": {"small": 1}})]
    log = tmp_path / "big.jsonl"
    log.write_text("\n".join(lines) + "\n")
    assert pubsub(kafka_settings, "produce", "--event-log", str(log), "--realm", realm, "--strict") == 0
    assert pubsub(kafka_settings, "consume", "--topic", f"{realm}.upward") == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(p["key"], p["value"]) for p in printed] == [("2000", {"blob": big}), ("2001", {"small": 1})]

    small_ceiling = fresh_realm()
    log.write_text("\n".join(line.replace(f"{realm}.", f"{small_ceiling}.") for line in lines) + "\n")
    args = ["--event-log", str(log), "--realm", small_ceiling, "--max-message-bytes", str(MiB)]
    assert pubsub(kafka_settings, "produce", *args) == 0
    assert pubsub(kafka_settings, "produce", *args, "--strict") == 1
    rejected = [json.loads(line) for line in read_outputs(kafka_settings, [f"{small_ceiling}.rejected"])]
    assert [(r["id"], r["key"], r["value"]["reason"]) for r in rejected] == \
        [(f"ingest/{small_ceiling}.upward@0", "2000", TOO_LARGE)] * 2
    assert [r.key for r in read_topic(kafka_settings, f"{small_ceiling}.upward")] == [b"2001", b"2001"]


def test_records_kafka_refuses_for_size_are_refusals_not_errors(kafka_settings: Settings) -> None:
    realm = fresh_realm()
    limits = ensure_topics(kafka_settings, [TopicSpec(f"{realm}.small", 1, topic_config(TopicKind.OUTPUT, MiB))])
    assert limits == {f"{realm}.small": MiB}
    incompressible = os.urandom(2 * MiB)
    records = [ProducerRecord(f"{realm}.small", b"a", incompressible), ProducerRecord(f"{realm}.small", b"b", b"ok"),
               ProducerRecord(f"{realm}.small", b"c", b"x" * (17 * MiB))]
    report = send(kafka_settings, records)  # the broker refuses the first, the client the third
    assert [(r.index, r.reason) for r in report.refused] == [(2, TOO_LARGE), (0, TOO_LARGE)] or \
        sorted((r.index, r.reason) for r in report.refused) == [(0, TOO_LARGE), (2, TOO_LARGE)]
    assert report.delivered == {f"{realm}.small": 1}
    assert [r.key for r in read_topic(kafka_settings, f"{realm}.small")] == [b"b"]


def test_consume_prints_simulator_lines_with_ids(kafka_settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    realm = fresh_realm()
    ensure_realm_topics(kafka_settings, realm, inputs=False, partitions=2)
    simulator = Simulator(ProtocolConfig(default_realm="polkadot"))
    outputs = [o for line in (EXAMPLES / "minimal.jsonl").read_text().splitlines() for o in simulator.feed_line(line)]
    outputs = [OutputRecord(o.topic.replace("polkadot.", f"{realm}.", 1), o.key, o.id, o.value) for o in outputs]
    assert len({o.topic for o in outputs}) >= 4
    report = send(kafka_settings, [to_kafka(o) for o in outputs])
    assert not report.refused
    assert pubsub(kafka_settings, "consume", "--realm", realm) == 0
    captured = capsys.readouterr()
    assert sorted(captured.out.splitlines()) == sorted(o.to_line() for o in outputs)
    assert f"{len(outputs)} records" in captured.err
    assert sorted(read_outputs(kafka_settings, [f"{realm}.{name}" for name in OUTPUTS])) == \
        sorted(o.to_line() for o in outputs)

    send(kafka_settings, [ProducerRecord(f"{realm}.seals", None, b"\x00not json")])
    assert pubsub(kafka_settings, "consume", "--topic", f"{realm}.seals", "--max", "100") == 0
    # a null key may land on either partition, and consume prints partition by partition: find it, not the last
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [p for p in printed if p["id"] is None] == [
        {"id": None, "key": None, "topic": f"{realm}.seals", "value": "\x00not json"}]
    assert pubsub(kafka_settings, "consume", "--realm", realm, "--max", "2", "--raw") == 0
    raw = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(raw) == 2 and all({"partition", "offset", "id"} <= set(r) for r in raw)


def test_produce_then_consume_through_the_console_script(kafka_settings: Settings, tmp_path: Path) -> None:
    realm = fresh_realm()
    log = tmp_path / "minimal.jsonl"
    log.write_text("\n".join(in_realm(line, realm) for line in (EXAMPLES / "minimal.jsonl").read_text().splitlines()))
    common = ["--bootstrap", str(kafka_settings.kafka_bootstrap)]
    run = [sys.executable, "-m", "cli.main"]
    produced = subprocess.run([*run, "produce", *common, "--event-log", str(log), "--realm", realm, "--strict"],
                              capture_output=True, text=True, timeout=120)
    assert produced.returncode == 0, produced.stderr
    assert "Sent 7 records" in produced.stderr
    consumed = subprocess.run([*run, "consume", *common, "--topic", f"{realm}.{INPUTS[1]}", "--raw"],
                              capture_output=True, text=True, timeout=120)
    assert consumed.returncode == 0, consumed.stderr
    assert [json.loads(line)["offset"] for line in consumed.stdout.splitlines()] == [0, 1]
