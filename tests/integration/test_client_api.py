"""The client API's examples (examples/api_*.py) run as a user runs them, against the real embedded broker, with
nothing but $PUBSUB_KAFKA_BOOTSTRAP set: publish for one's own para (the simulator then applies what the topic
holds), follow updates once each while the topic holds copies and a forged record, read a topic."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from producers.client import Client, Connection, FollowStats, InvalidRecordError, Publish
from producers.readers.export import export_realm
from producers.schemas import validate
from producers.transport.kafka_io import produce, read_topic, route_event_log
from producers.transport.topics import ensure_realm_topics
from producers.workload import LogBuilder, signer
from pubsub_core.envelope import KeyRegistry
from pubsub_core.hashing import blake2_256
from pubsub_core.relay import Genesis
from pubsub_core.simulator import simulate
from pubsub_core.stages import GenesisRecord, LineParser
from pubsub_core.stages.edge import ProducerRecord, to_kafka
from settings.settings import Settings

pytestmark = pytest.mark.kafka

REPO = Path(__file__).resolve().parents[2]


def run_example(name: str, settings: Settings, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PUBSUB_KAFKA_BOOTSTRAP": str(settings.kafka_bootstrap), "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, str(REPO / "examples" / name), *args], capture_output=True, text=True,
                          env=env, timeout=timeout, check=False, cwd="/")


def fresh_realm(settings: Settings) -> str:
    realm = f"api{uuid.uuid4().hex[:8]}"
    ensure_realm_topics(settings, realm, partitions=2)
    return realm


def simulated(log: str, realm: str) -> list[ProducerRecord]:
    """The outputs of an example log, moved to ``realm``, as their Kafka records."""
    lines = (REPO / "examples" / log).read_bytes().splitlines()
    return [to_kafka(record) for record in simulate(lines)
            if record.topic.startswith("polkadot.")]


def moved(record: ProducerRecord, realm: str) -> ProducerRecord:
    return ProducerRecord(record.topic.replace("polkadot.", f"{realm}.", 1), record.key, record.value, record.headers)


def test_a_publish_signed_by_the_client_is_applied_by_the_relay(kafka_settings: Settings) -> None:
    realm = fresh_realm(kafka_settings)
    seed, author = blake2_256(b"api-test/collator-1000"), signer("author")
    collator = Client(Connection(str(kafka_settings.kafka_bootstrap))).publisher(realm, 1000, seed).signer
    genesis = GenesisRecord(KeyRegistry({1000: frozenset({collator.public_key})},
                                        author_keys=frozenset({author.public_key})), Genesis((), ()))
    produce(kafka_settings, [ProducerRecord(f"{realm}.genesis", realm.encode(), json.dumps(genesis.to_json()).encode())])

    first = run_example("api_publish.py", kafka_settings, realm, "1000", seed.hex(), "temperature=21")
    second = run_example("api_publish.py", kafka_settings, realm, "1000", seed.hex(), "temperature=22", "humidity=40")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert [json.loads(done.stdout) for done in (first, second)] == [
        {"topic": f"{realm}.upward", "key": "1000", "position": 0, "seqno": 1},
        {"topic": f"{realm}.upward", "key": "1000", "position": 1, "seqno": 2},  # resumed from the topic
    ]
    for record in read_topic(kafka_settings, f"{realm}.upward"):
        validate("input-record", json.loads(record.value or b""))

    log = LogBuilder(realm)  # the block author's block including both messages
    log.since_block = {("upward", "1000"): 1}
    log.block()
    routed = [item for item in route_event_log([line.encode() for line in log.lines], LineParser(realm))]
    produce(kafka_settings, [item[0] for item in routed if isinstance(item, tuple)])

    lines: list[str] = []
    export_realm(kafka_settings, realm, lines.append)
    outputs = [json.loads(record.to_line()) for record in simulate(lines)]
    assert [o for o in outputs if o["topic"].endswith(".rejected")] == []
    events = [o["value"]["event"] for o in outputs if o["topic"] == f"{realm}.events"]
    assert [(e["para"], e["outcome"]) for e in events if e["event"] == "MessageExecuted"] == [(1000, "Complete")] * 2
    assert [e["publisher"] for e in events if e["event"] == "DataPublished"] == [1000] * 3  # one per key
    (seal,) = [o["value"] for o in outputs if o["topic"] == f"{realm}.seals"]
    assert seal["applied"] == 2 and "1000" in seal["child_roots"]


def test_following_updates_shows_each_once_and_skips_a_forged_record(kafka_settings: Settings) -> None:
    realm = fresh_realm(kafka_settings)
    updates = [moved(r, realm) for r in simulated("small.jsonl", realm) if r.topic.endswith(".updates")]
    forged = ProducerRecord(f"{realm}.updates", b"3000", b'{"kind":"set"}', (("id", b"forged"),))
    produce(kafka_settings, [*updates, forged, *updates[: len(updates) // 2]])  # the job writes at least once

    done = run_example("api_follow.py", kafka_settings, realm, "--idle", "4")
    assert done.returncode == 0, done.stderr
    shown = [json.loads(line) for line in done.stdout.splitlines()]
    expected = [json.loads(record.value) for record in updates]
    assert len(shown) == len(expected) > 10
    assert sorted(shown, key=lambda u: u["id"]) == sorted(expected, key=lambda u: u["id"])
    assert "skipped" in done.stderr and f"{realm}.updates@" in done.stderr  # the forged record, named

    one = run_example("api_follow.py", kafka_settings, realm, "--idle", "4", "--subscriber", "3001")
    assert {u["subscriber"] for u in map(json.loads, one.stdout.splitlines())} == {3001}

    stats, invalid = FollowStats(), list[InvalidRecordError]()  # the same in this process: every copy counted as a duplicate
    client = Client(Connection(str(kafka_settings.kafka_bootstrap)))
    followed = list(client.follow_updates(realm, idle_seconds=3, stats=stats, on_invalid=invalid.append))
    assert len(followed) == len(updates) and stats.duplicates == len(updates) // 2
    assert [error.record.id for error in invalid] == ["forged"]


def test_reading_a_topic_gives_its_records_checked_against_the_schema(kafka_settings: Settings) -> None:
    realm = fresh_realm(kafka_settings)
    seals = [moved(r, realm) for r in simulated("minimal.jsonl", realm) if r.topic.endswith(".seals")]
    produce(kafka_settings, seals)
    done = run_example("api_read.py", kafka_settings, f"{realm}.seals")
    assert done.returncode == 0, done.stderr
    read = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted((r["id"], r["key"], r["value"]) for r in read) == sorted(
        (dict(s.headers)["id"].decode(), (s.key or b"").decode(), json.loads(s.value)) for s in seals)

    expected = sorted(r.to_line() for r in simulate((REPO / "examples" / "minimal.jsonl").read_bytes().splitlines())
                      if r.topic == "polkadot.seals")
    lines = Client(Connection(str(kafka_settings.kafka_bootstrap))).outputs(realm, ["seals"])
    assert sorted(line.replace(f'"{realm}.seals"', '"polkadot.seals"') for line in lines) == expected

    produce(kafka_settings, [ProducerRecord(f"{realm}.seals", b"9", b'{"number":9}', (("id", b"seal/9"),))])
    bad = run_example("api_read.py", kafka_settings, f"{realm}.seals")
    assert bad.returncode == 1 and "does not follow urn:rfc0160-pubsub:schema:seal:v1" in bad.stderr


def test_a_seed_the_genesis_does_not_list_for_the_para_is_refused_at_once(kafka_settings: Settings) -> None:
    """A wrong seed is a typed error when the publisher is made (the genesis read), with the keys the genesis lists,
    and nothing reaches the upward topic; the example's own script says so in one line."""
    from producers.client import UnknownSignerError

    realm = fresh_realm(kafka_settings)
    listed = signer("collator/1000")
    genesis = GenesisRecord(KeyRegistry({1000: frozenset({listed.public_key})}), Genesis((), ()))
    produce(kafka_settings, [ProducerRecord(f"{realm}.genesis", realm.encode(), json.dumps(genesis.to_json()).encode())])
    client = Client(Connection(str(kafka_settings.kafka_bootstrap)))
    wrong = blake2_256(b"api-test/not-a-collator")
    with pytest.raises(UnknownSignerError) as raised:
        client.publisher(realm, 1000, wrong)
    assert raised.value.para == 1000 and raised.value.listed == frozenset({listed.public_key})
    assert "0x" + listed.public_key.hex() in str(raised.value)
    done = run_example("api_publish.py", kafka_settings, realm, "1000", wrong.hex(), "price=1")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "is not one" in done.stderr
    assert read_topic(kafka_settings, f"{realm}.upward") == []
    right = client.publisher(realm, 1000, blake2_256(b"rfc0160/workload/collator/1000"))
    assert right.publish([Publish(blake2_256(b"price"), b"1", 0)]).position == 0
