"""The `pubsub` command against a real broker, run as a user runs it (the entry point in a subprocess): consume's
Kafka options, `pubsub topics`, export that leaves no file when it fails, produce interrupted by Ctrl-C, rejections
on their own realm's topic, and a broker restart that keeps its data unless --fresh."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from producers.transport.kafka_io import produce, topic_size
from producers.transport.topics import realm_topic_specs
from producers.writers.author_state import AUTHOR_STATE
from pubsub_core.stages.edge import ProducerRecord
from pubsub_core.stages.topics import INPUTS, OUTPUTS, VIEWS, topic
from settings.settings import Settings
from tests.support.terminal import ctrl_c_reaches_it

pytestmark = pytest.mark.kafka

ROOT = Path(__file__).resolve().parents[2]


def _env(settings: Settings | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUBSUB_")}
    if settings is not None:
        env["PUBSUB_KAFKA_BOOTSTRAP"] = str(settings.kafka_bootstrap)
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def pubsub(settings: Settings | None, *args: str, cwd: Path = ROOT,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli.main", *args], capture_output=True, text=True,
                          env=_env(settings, **(env or {})), timeout=180, cwd=cwd)


def fresh_realm() -> str:
    return f"e{uuid.uuid4().hex[:10]}"


def one_line_error(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    return done.stderr.strip()


def test_topics_create_makes_a_realms_topics_as_produce_does_idempotently(kafka_settings: Settings) -> None:
    realm = fresh_realm()
    for _ in range(2):
        done = pubsub(kafka_settings, "topics", "create", "--realm", realm, "--partitions", "3")
        assert done.returncode == 0, done.stderr
    listed = pubsub(kafka_settings, "topics", "list", "--realm", realm)
    assert listed.returncode == 0
    rows = dict(line.split("\t") for line in listed.stdout.splitlines())
    expected = ({topic(realm, name): "1" for name in (*INPUTS, AUTHOR_STATE)}
                | {topic(realm, name): "3" for name in (*OUTPUTS, VIEWS)})
    assert rows == expected
    admin = AdminClient(dict(kafka_settings.kafka_client_config()))
    specs = {spec.name: spec for spec in realm_topic_specs(realm, partitions=3)}
    futures = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, name) for name in specs])
    for resource, future in futures.items():
        configs = future.result(timeout=30)
        for key, value in specs[resource.name].config.items():
            assert configs[key].value == value, (resource.name, key)
    assert configs["max.message.bytes"].value == str(16 * 1024 * 1024)
    assert one_line_error(pubsub(kafka_settings, "topics", "create", "--realm", "bad realm!"), 2)


def _fill(settings: Settings, name: str, count: int) -> None:
    produce(settings, [ProducerRecord(name, b"k", json.dumps({"n": n}).encode(), (("id", f"id-{n}".encode()),))
                       for n in range(count)])


def _offsets(stdout: str) -> list[int]:
    return [json.loads(line)["offset"] for line in stdout.splitlines()]


def test_consume_reads_a_partition_from_an_offset_like_kcat(kafka_settings: Settings) -> None:
    realm = fresh_realm()
    assert pubsub(kafka_settings, "topics", "create", "--realm", realm).returncode == 0
    name = topic(realm, "upward")
    _fill(kafka_settings, name, 10)
    cases = {("--offset", "-3"): [7, 8, 9], ("--offset", "5", "--max", "2"): [5, 6], ("--offset", "end"): [],
             ("--offset", "beginning", "--max", "1"): [0], ("--partition", "0", "--offset", "8"): [8, 9]}
    for extra, expected in cases.items():
        done = pubsub(kafka_settings, "consume", "--topic", name, "--raw", *extra)
        assert done.returncode == 0, done.stderr
        assert _offsets(done.stdout) == expected, extra
    assert "no partition 1" in one_line_error(pubsub(kafka_settings, "consume", "--topic", name, "--partition", "1"), 1)
    assert "offset 'soon'" in one_line_error(pubsub(kafka_settings, "consume", "--topic", name, "--offset", "soon"), 1)


def test_consume_with_a_group_resumes_where_the_last_run_stopped(kafka_settings: Settings) -> None:
    realm = fresh_realm()
    assert pubsub(kafka_settings, "topics", "create", "--realm", realm).returncode == 0
    name = topic(realm, "upward")
    _fill(kafka_settings, name, 10)
    group = f"g-{realm}"
    runs = [("--max", "4"), ("--max", "4"), (), ()]
    seen = [_offsets(pubsub(kafka_settings, "consume", "--topic", name, "--raw", "--group", group, *extra).stdout)
            for extra in runs]
    assert seen == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9], []]
    _fill(kafka_settings, name, 2)  # a follower sees only what is new
    again = pubsub(kafka_settings, "consume", "--topic", name, "--raw", "--group", group)
    assert _offsets(again.stdout) == [10, 11]
    other = pubsub(kafka_settings, "consume", "--topic", name, "--raw", "--group", group + "-b", "--offset", "-1")
    assert _offsets(other.stdout) == [11]  # a new group starts at --offset


def test_consume_prints_timestamps_and_headers_and_writes_files_whole(kafka_settings: Settings, tmp_path: Path) -> None:
    realm = fresh_realm()
    assert pubsub(kafka_settings, "topics", "create", "--realm", realm).returncode == 0
    name = topic(realm, "upward")
    before = int(time.time() * 1000)
    _fill(kafka_settings, name, 3)
    done = pubsub(kafka_settings, "consume", "--topic", name, "--print-timestamp", "--print-headers", "-o", "-",
                  cwd=tmp_path)
    assert done.returncode == 0 and not (tmp_path / "-").exists()
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["headers"] for line in lines] == [{"id": f"id-{n}"} for n in range(3)]
    assert [line["id"] for line in lines] == [f"id-{n}" for n in range(3)]
    assert all(before - 60_000 <= line["timestamp"] <= int(time.time() * 1000) for line in lines)
    plain = pubsub(kafka_settings, "consume", "--topic", name, "-o", str(tmp_path / "out.jsonl"))
    assert plain.returncode == 0 and "3 records from" in plain.stderr
    assert [json.loads(line)["value"] for line in (tmp_path / "out.jsonl").read_text().splitlines()] == \
        [{"n": n} for n in range(3)]
    one = pubsub(kafka_settings, "consume", "--topic", name, "--max", "1")
    assert "1 record from" in one.stderr


def test_export_of_a_missing_realm_leaves_no_file(kafka_settings: Settings, tmp_path: Path) -> None:
    out = tmp_path / "f.jsonl"
    line = one_line_error(pubsub(kafka_settings, "export", "--realm", fresh_realm(), "-o", str(out)), 1)
    assert "topic not found" in line
    assert list(tmp_path.iterdir()) == []
    out.write_text("kept\n")
    one_line_error(pubsub(kafka_settings, "export", "--realm", fresh_realm(), "-o", str(out)), 1)
    assert out.read_text() == "kept\n"


def test_an_unroutable_line_goes_to_its_own_realms_rejected_topic_with_its_line_number(
    kafka_settings: Settings, tmp_path: Path
) -> None:
    realm = fresh_realm()
    log = tmp_path / "events.jsonl"
    assert pubsub(None, "workload", "-o", str(log), "--realm", realm, "--blocks", "1", "--bad-records", "0").returncode == 0
    lines = log.read_text().splitlines()
    lines.insert(2, json.dumps({"topic": f"{realm}.sideways", "key": "2000", "value": {}}))
    log.write_text("\n".join(lines) + "\n")
    simulated = pubsub(None, "simulate", str(log), "--quiet")
    expected = [line for line in simulated.stdout.splitlines() if '"id":"ingest/' in line]
    assert len(expected) == 1 and f'"topic":"{realm}.rejected"' in expected[0] and "ingest/line-3" in expected[0]
    assert pubsub(kafka_settings, "produce", "--event-log", str(log)).returncode == 0  # default realm: polkadot
    consumed = pubsub(kafka_settings, "consume", "--topic", f"{realm}.rejected")
    assert consumed.stdout.splitlines() == expected


def test_ctrl_c_during_produce_exits_130_and_says_how_many_records_were_delivered(kafka_settings: Settings,
                                                                                   tmp_path: Path) -> None:
    realm = fresh_realm()
    log = tmp_path / "events.jsonl"
    assert pubsub(None, "workload", "-o", str(log), "--realm", realm, "--blocks", "3", "--bad-records", "0").returncode == 0
    lines = log.read_bytes().splitlines(keepends=True)
    process = subprocess.Popen([sys.executable, "-m", "cli.main", "produce", "--event-log", "-"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=_env(kafka_settings), cwd=ROOT, preexec_fn=ctrl_c_reaches_it)
    assert process.stdin is not None
    process.stdin.write(b"".join(lines))
    process.stdin.flush()  # stdin stays open: produce waits for more lines, as from a slow pipe
    inputs = [topic(realm, name) for name in INPUTS]
    deadline = time.monotonic() + 120
    while True:
        assert process.poll() is None and time.monotonic() < deadline
        try:
            if sum(topic_size(kafka_settings, name) for name in inputs) == len(lines):
                break
        except Exception:  # the topics do not exist yet  # noqa: BLE001
            pass
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    err = stderr.decode()
    assert process.returncode == 130, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"pubsub: interrupted after reading {len(lines)} lines: {len(lines)} records delivered")


@pytest.mark.spark
def test_ctrl_c_during_verify_exits_130_and_compares_nothing(kafka_settings: Settings, tmp_path: Path) -> None:
    out = tmp_path / "verify.out"  # stdout and stderr, in the order a terminal shows them
    with open(out, "wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "verify", str(ROOT / "examples" / "busy.jsonl"), "--reset-topics",
             "--max-offsets-per-trigger", "10", "--checkpoint", str(tmp_path / "checkpoint")],
            stdout=sink, stderr=subprocess.STDOUT, env=_env(kafka_settings, PUBSUB_RUNTIME_DIR=str(tmp_path)),
            cwd=ROOT, preexec_fn=ctrl_c_reaches_it)
    deadline = time.monotonic() + 600
    while "relay batch 1:" not in out.read_text(errors="replace"):  # the job runs: Ctrl-C it mid-log
        assert process.poll() is None and time.monotonic() < deadline, out.read_text(errors="replace")[-2000:]
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    process.wait(120)
    said = out.read_text(errors="replace")
    assert process.returncode == 130, said[-2000:]
    assert "Traceback" not in said and "differ" not in said, said[-2000:]
    assert said.strip().splitlines()[-1].startswith("pubsub: the job was stopped by SIGINT after "), said[-2000:]


def test_a_stopped_broker_keeps_its_data_and_read_only_commands_do_not_start_one(tmp_path: Path) -> None:
    env = {"PUBSUB_RUNTIME_DIR": str(tmp_path)}
    started = pubsub(None, "broker", "start", env=env)
    try:
        assert started.returncode == 0, started.stderr
        assert pubsub(None, "topics", "create", "--realm", "kept", env=env).returncode == 0
        assert pubsub(None, "broker", "stop", env=env).returncode == 0
        line = one_line_error(pubsub(None, "consume", "--topic", "kept.updates", env=env), 1)
        assert "no Kafka broker is running" in line and "pubsub broker start" in line
        assert pubsub(None, "broker", "status", env=env).returncode == 1  # consume started none
        assert pubsub(None, "broker", "start", env=env).returncode == 0
        listed = pubsub(None, "topics", "list", env=env).stdout
        assert "kept.genesis\t1" in listed and "kept.updates\t2" in listed
        assert "broker stop` first" in one_line_error(pubsub(None, "broker", "start", "--fresh", env=env), 2)
        assert pubsub(None, "broker", "stop", env=env).returncode == 0
        assert pubsub(None, "broker", "start", "--fresh", env=env).returncode == 0
        assert "kept." not in pubsub(None, "topics", "list", env=env).stdout
    finally:
        pubsub(None, "broker", "stop", env=env)
