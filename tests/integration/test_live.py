"""Live operation against a real broker: the live producer (sending, delivery counts, restarts that reuse no
position or seqno), `pubsub export` (a produced example log simulates to the same outputs), and
`pubsub consume --follow` (each update once, stopped with SIGINT)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from cli.main import main
from producers.transport.kafka_io import produce, read_topic
from producers.transport.topics import ensure_realm_topics
from producers.workload import WorkloadSpec, signer
from producers.writers.author import AuthorLimits, BlockAuthor, latest_snapshot
from producers.writers.live import LiveSpec, run_live
from pubsub_core.envelope import Envelope, Topic
from pubsub_core.relay import InputRecord, canonical_json
from pubsub_core.stages import OutputRecord
from pubsub_core.stages.edge import ProducerRecord, to_kafka
from settings.settings import Settings

pytestmark = pytest.mark.kafka

ROOT = Path(__file__).resolve().parents[2]


def fresh_realm() -> str:
    return f"live{uuid.uuid4().hex[:10]}"


def envelopes(settings: Settings, topic: str) -> list[tuple[str, int, Envelope]]:
    """(origin, position, envelope) of each record of an input topic, in offset order."""
    out = []
    for record in read_topic(settings, topic):
        body = InputRecord.from_json(json.loads(record.value or b""))
        out.append((body.origin, body.position, Envelope.decode(body.value)))
    return out


def test_the_live_producer_sends_at_its_rate_and_counts_deliveries(kafka_settings: Settings) -> None:
    realm = fresh_realm()
    spec = LiveSpec(WorkloadSpec(seed=1, realm=realm), rate=20.0, seconds=3.0)
    report = run_live(kafka_settings, spec, threading.Event())

    assert report.setup == {"genesis": 1, "registrations": 2, "subscriptions": 2}
    assert report.sent == report.delivered and not report.failed
    assert report.sent["extrinsics"] == 4 and report.sent["genesis"] == 1
    assert 2.9 <= report.seconds <= 4.0
    assert 45 <= report.publishes_delivered <= 63  # 20/s for 3 s, the first message due at once
    assert 14 <= report.publishes_per_second <= 21
    upward = envelopes(kafka_settings, f"{realm}.upward")
    assert len(upward) == report.sent["upward"]
    per_para: dict[str, int] = {}
    for origin, _, _ in upward:
        per_para[origin] = per_para.get(origin, 0) + 1
    assert sorted(per_para) == ["1000", "2000", "2001"] and max(per_para.values()) - min(per_para.values()) <= 1


@pytest.mark.parametrize("snapshot", [False, True], ids=["whole-topics", "from-the-author-snapshot"])
def test_a_restart_reuses_no_position_or_seqno_even_after_hostile_records(kafka_settings: Settings,
                                                                          snapshot: bool) -> None:
    """Without an author the restart reads the topics whole; with one, from its snapshot's offsets."""
    realm = fresh_realm()
    spec = LiveSpec(WorkloadSpec(seed=2, realm=realm), rate=20.0, seconds=1.0)
    first = run_live(kafka_settings, spec, threading.Event())
    if snapshot:
        author = BlockAuthor(kafka_settings, realm, signer("author"), limits=AuthorLimits(max_records=5))
        author.start(genesis_timeout=20)
        author.write_block()  # some records included, the rest buffered in the snapshot
        author.close()
        keys = frozenset({signer("author").public_key})
        deadline = time.monotonic() + 10  # the commit markers land just after commit_transaction returns
        while (written := latest_snapshot(kafka_settings, realm, keys)) is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert written is not None and written.offsets["upward"] > 0 and written.buffered
    genuine = envelopes(kafka_settings, f"{realm}.upward")
    # An attacker writes a forged envelope far ahead and replays a genuine one at a later position.
    origin, position, envelope = genuine[0]
    forged = signer("attacker").sign(Topic(realm, "upward", origin), 10**6, b"x")
    hostile = [InputRecord("upward", origin, 10**6, forged.encode()),
               InputRecord("upward", origin, position + 500, envelope.encode())]
    produce(kafka_settings, [ProducerRecord(f"{realm}.upward", origin.encode(),
                                            canonical_json(r.to_json()).encode()) for r in hostile])

    second = run_live(kafka_settings, spec, threading.Event())
    assert second.setup == {} and not second.failed
    assert len(read_topic(kafka_settings, f"{realm}.genesis")) == 1
    assert len(read_topic(kafka_settings, f"{realm}.extrinsics")) == first.sent["extrinsics"] == 4
    records = [r for r in envelopes(kafka_settings, f"{realm}.upward") if r[1] < 1000 and r[1] != position + 500]
    assert len(records) == first.sent["upward"] + second.sent["upward"]
    positions: dict[str, list[int]] = {}
    seqnos: dict[tuple[str, bytes], list[int]] = {}
    for origin, at, env in records:
        positions.setdefault(origin, []).append(at)
        seqnos.setdefault((origin, env.sender), []).append(env.seqno)
    assert all(got == list(range(len(got))) for got in positions.values())
    assert all(got == list(range(1, len(got) + 1)) for got in seqnos.values())


def test_export_of_a_produced_example_simulates_to_the_same_outputs(kafka_settings: Settings, tmp_path: Path) -> None:
    realm = fresh_realm()
    lines = (ROOT / "examples" / "small.jsonl").read_text().replace('"polkadot.', f'"{realm}.').splitlines()
    original = tmp_path / "small.jsonl"
    original.write_text("\n".join(lines) + "\n")
    bootstrap = ["--bootstrap", str(kafka_settings.kafka_bootstrap)]
    assert main(["produce", *bootstrap, "--event-log", str(original), "--realm", realm]) == 0
    exported = tmp_path / "exported.jsonl"
    assert main(["export", *bootstrap, "--realm", realm, "-o", str(exported)]) == 0

    def simulate(log: Path) -> list[str]:
        out = tmp_path / f"{log.stem}.out"
        assert main(["simulate", str(log), "-o", str(out), "--quiet"]) == 0
        return sorted(out.read_text().splitlines())

    # small.jsonl has one line `produce` cannot route (malformed JSON): never on an input topic, so not
    # exported; its rejection is the only difference.
    outputs = simulate(original)
    unroutable = [line for line in outputs if '"id":"ingest/' in line and f'"record":"{realm}.' not in line]
    assert len(unroutable) == 1
    assert len(exported.read_text().splitlines()) == len(lines) - 1
    replayed = simulate(exported)
    assert replayed == [line for line in outputs if line not in unroutable]
    assert any('"id":"ingest/' in line for line in replayed)  # the bad-hex line's rejection, same offset


def test_follow_shows_each_update_once_and_stops_on_sigint(kafka_settings: Settings) -> None:
    realm = fresh_realm()
    ensure_realm_topics(kafka_settings, realm, inputs=False, seam=False)
    updates = f"{realm}.updates"

    def update(subscriber: int, block: int, seq: int) -> ProducerRecord:
        value = {"subscriber": subscriber, "relay_block_number": block, "publisher": 1000, "key": "ab" * 32,
                 "value": "3432", "kind": "set", "seq": seq}
        return to_kafka(OutputRecord(updates, str(subscriber), f"{subscriber}-{block}-u{seq}", value))

    a, b, c, d = update(3000, 2, 0), update(3000, 2, 1), update(3001, 2, 0), update(3000, 3, 0)
    produce(kafka_settings, [a, b, a, c, b])
    command = [str(ROOT / ".venv" / "bin" / "pubsub"), "consume", "--follow", "--realm", realm, "--json",
               "--bootstrap", str(kafka_settings.kafka_bootstrap)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in process.stdout or ():
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()

    def take(count: int) -> list[str]:
        got: list[str] = []
        deadline = time.monotonic() + 60
        while len(got) < count:
            try:
                got.append(lines.get(timeout=max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                process.kill()
                pytest.fail(f"follow printed {got} only; stderr: {process.communicate()[1]}")
        return got

    try:
        shown = take(3)
        produce(kafka_settings, [c, a, d])  # two more copies, then one new update (one partition: seen in order)
        shown += take(1)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert [json.loads(line)["id"] for line in shown] == ["3000-2-u0", "3000-2-u1", "3001-2-u0", "3000-3-u0"]
    assert json.loads(shown[0]) == {"id": "3000-2-u0", "key": "3000", "topic": updates,
                                    "value": json.loads(a.value)}
    assert lines.empty()
    assert err.strip().splitlines()[-1] == "4 updates shown, 4 duplicates dropped."
    assert sys.executable  # the test runs under the project's venv, like the console script it starts
