"""The secured embedded broker (`pubsub broker start --secure`): a SASL_SSL listener with a CA and certificate it
made, SCRAM users made at format time, StandardAuthorizer with the roles' ACLs (producers/transport/roles.py).
The demo's workload goes through it as each role would send it: governance writes the genesis and the extrinsics,
each para's collator its own upward and horizontal records, `pubsub author` (as ``author``) reads them and writes
the blocks, the job (as ``job``) serves them, a consumer reads the updates; the job's outputs equal the simulator's
over the realm's topics as they ended (`pubsub export`). A client without credentials, a collator writing
``<realm>.blocks`` and a consumer reading it are refused by the broker, each command saying so in one line (topic,
operation, principal), no traceback."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cli.commands.demo import demo_workload
from producers.client import Connection
from producers.transport.kafka_io import read_outputs
from producers.workload import generate
from pubsub_core.simulator import simulate
from supervise.live_run import WORKLOAD_AUTHOR_SEED
from tests.support.paths import REPO_ROOT
from settings.settings import Settings
from streaming.job import run_job
from supervise.kafka_broker import BrokerInfo, embedded_settings
from supervise.verify import check_outputs

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

REALM = "polkadot"
SEGMENTS = [[line.encode() for line in block] for block in generate(demo_workload(blocks=4, realm=REALM))]
"""The demo's workload, shorter (4 blocks with traffic, not 12: the same actors, TTL mix, bad records and small
blocks), block by block: what was sent before each block, then the block."""
WORKLOAD = [line for segment in SEGMENTS for line in segment]


def _by_principal(lines: list[bytes]) -> dict[str, list[bytes]]:
    """The workload's input lines by the user that sends them: the genesis and extrinsics by ``governance``, the
    upward and horizontal records by their origin para's ``collator-N``. Left out: the workload's own blocks (the
    author writes the realm's) and the lines naming no input topic, which `pubsub produce` could not route (their
    rejection is the producer's, not the job's: tests/integration/test_live.py)."""
    senders: dict[str, list[bytes]] = defaultdict(list)
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        kind = str(record.get("topic", "")).removeprefix(f"{REALM}.")
        if kind in ("genesis", "extrinsics"):
            senders["governance"].append(line)
        elif kind in ("upward", "horizontal"):
            senders[f"collator-{record['key']}"].append(line)
    return senders


def _pubsub(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli.main", *args], capture_output=True, text=True, env=env,
                          cwd=REPO_ROOT, timeout=180)


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, (done.returncode, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.startswith("pubsub: ")]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[tuple[dict[str, str], BrokerInfo, Path]]:
    """`pubsub broker start --secure` in a runtime folder of its own; yields the commands' environment, the broker
    and its folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUBSUB_")}
    env.update(PUBSUB_RUNTIME_DIR=str(tmp_path / "runtime"), PYTHONWARNINGS="ignore", PYTHONPATH=str(REPO_ROOT))
    paras = [user.removeprefix("collator-") for user in _by_principal(WORKLOAD) if user.startswith("collator-")]
    started = _pubsub(env, "broker", "start", "--secure", "--realm", REALM, *(a for p in paras for a in ("--para", p)))
    assert started.returncode == 0, started.stderr
    home = tmp_path / "runtime" / "kafka"
    try:
        info = BrokerInfo(**json.loads((home / "broker.json").read_text()))
        assert info.secure and "Secured: SASL_SSL with SCRAM-SHA-512" in started.stderr
        assert oct((home / "credentials.json").stat().st_mode & 0o777) == "0o600"
        yield env, info, home
    finally:
        _pubsub(env, "broker", "stop")


def test_each_role_under_its_own_principal_and_the_broker_refuses_the_others(
        secured: tuple[dict[str, str], BrokerInfo, Path], tmp_path: Path) -> None:
    env, info, home = secured
    assert _pubsub(env, "topics", "create", "--realm", REALM).returncode == 0  # the operator
    assert {"governance", "collator-1000", "collator-2000"} <= _by_principal(WORKLOAD).keys()
    # block by block, as the demo's workload was written: each sender produces what it sent before the block, then
    # the author, as `author`, reads it and writes the block (resuming from its snapshot), the demo's small PoV size
    as_author = {**env, "PUBSUB_KAFKA_SASL_USERNAME": "author", "PUBSUB_AUTHOR_KEY": WORKLOAD_AUTHOR_SEED.hex()}
    def produce(number: int, user: str, lines: list[bytes]) -> None:
        sent = tmp_path / f"{number}-{user}.jsonl"
        sent.write_bytes(b"".join(line + b"\n" for line in lines))
        produced = _pubsub({**env, "PUBSUB_KAFKA_SASL_USERNAME": user}, "produce", "--event-log", str(sent), "--strict")
        assert produced.returncode == 0, (user, produced.stderr)

    for number, segment in enumerate(SEGMENTS, start=1):
        with ThreadPoolExecutor() as senders:  # the senders of a block's records at once, as they would be
            list(senders.map(lambda sent: produce(number, *sent), _by_principal(segment).items()))
        authored = _pubsub(as_author, "author", "--realm", REALM, "--once", "--block-time", "0", "--max-pov-size",
                           str(demo_workload().max_pov_size), "--genesis-timeout", "30")
        assert authored.returncode == 0 and len(authored.stdout.splitlines()) == 1, authored.stderr
    heights = len(SEGMENTS)

    # the workload's own block, sent by a collator: refused; so is a consumer reading the author's blocks, and a
    # client that does not log in
    block = tmp_path / "block.jsonl"
    block.write_bytes(next(line for line in WORKLOAD if f'"{REALM}.blocks"'.encode() in line) + b"\n")
    as_collator = {**env, "PUBSUB_KAFKA_SASL_USERNAME": "collator-1000"}
    assert _one_line(_pubsub(as_collator, "produce", "--event-log", str(block))) == (
        "pubsub: Kafka refused User:collator-1000 Write on topic polkadot.blocks (TOPIC_AUTHORIZATION_FAILED)")
    as_consumer = {**env, "PUBSUB_KAFKA_SASL_USERNAME": "consumer"}
    assert _one_line(_pubsub(as_consumer, "consume", "--topic", "polkadot.blocks")) == (
        "pubsub: Kafka refused User:consumer Read on topic polkadot.blocks (TOPIC_AUTHORIZATION_FAILED)")
    anonymous = {**env, "PUBSUB_KAFKA_BOOTSTRAP": info.bootstrap}
    line = _one_line(_pubsub(anonymous, "consume", "--topic", "polkadot.updates"))
    assert f"the configured Kafka cluster at {info.bootstrap} does not answer User:ANONYMOUS over PLAINTEXT" in line

    # the job as `job`; the realm's topics as they ended, exported by the operator, simulate to its outputs
    job = dataclasses.replace(embedded_settings(Settings(kafka_sasl_username="job"), info, home),
                              checkpoint_dir=tmp_path / "checkpoint", realms=REALM)
    assert job.kafka_sasl_username == "job" and job.kafka_security_protocol == "SASL_SSL"
    summary = run_job(job, available_now=True)
    assert summary.heights == {REALM: heights}
    exported = tmp_path / "exported.jsonl"
    assert _pubsub(env, "export", "--realm", REALM, "-o", str(exported)).returncode == 0
    log = exported.read_bytes().splitlines()
    blocks = [line for line in log if f'"{REALM}.blocks"'.encode() in line]
    assert len(blocks) == heights and not set(blocks) & set(WORKLOAD)  # the author's blocks, not the workload's
    operator = embedded_settings(Settings(), info, home)  # may read every output topic
    result = check_outputs(log, operator, [REALM])
    assert not [t for t in result.topics if not t.ok], result.topics
    assert sum(t.matched for t in result.topics) == sum(t.expected for t in result.topics) > 0
    expected = sorted(r.to_line() for r in simulate(log) if r.topic == f"{REALM}.updates")
    # the demo's mix reached the job: bad records rejected, values whose TTL expired
    assert any(r.topic == f"{REALM}.rejected" for r in simulate(log)) and any('"kind":"expired"' in u for u in expected)

    # the updates read back as `consumer`: by the job's reader, the command and the client API
    consumer = embedded_settings(Settings(kafka_sasl_username="consumer"), info, home)
    assert sorted(read_outputs(consumer, [f"{REALM}.updates"])) == expected
    following = _pubsub(as_consumer, "consume", "--topic", f"{REALM}.updates")
    assert following.returncode == 0 and sorted(following.stdout.splitlines()) == expected
    connection = Connection.from_environment(environ=as_consumer)
    assert (connection.security_protocol, connection.sasl_username, connection.ssl_ca_file) == (
        "SASL_SSL", "consumer", home / "tls" / "ca.pem")
    assert sorted(read_outputs(connection, [f"{REALM}.updates"])) == expected
