"""The secured embedded broker (`pubsub broker start --secure`): a SASL_SSL listener with a CA and certificate it
made, SCRAM users made at format time, StandardAuthorizer with the roles' ACLs (producers/transport/roles.py).
The job, the author's role and a consumer each log in as their own user; the job's outputs through it equal the
simulator's; a client without credentials, a collator writing ``<realm>.blocks`` and a consumer reading it are
refused by the broker, each command saying so in one line (topic, operation, principal), no traceback."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from producers.client import Connection
from producers.transport.kafka_io import read_outputs
from pubsub_core.simulator import simulate
from tests.support.paths import REPO_ROOT
from settings.settings import Settings
from streaming.job import run_job
from supervise.kafka_broker import BrokerInfo, embedded_settings
from supervise.verify import check_outputs

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

LOG = REPO_ROOT / "examples" / "minimal.jsonl"


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
    started = _pubsub(env, "broker", "start", "--secure", "--realm", "polkadot", "--para", "1000")
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
    lines = LOG.read_bytes().splitlines()
    assert _pubsub(env, "topics", "create", "--realm", "polkadot").returncode == 0  # the operator
    produced = _pubsub(env, "produce", "--event-log", str(LOG))
    assert produced.returncode == 0, produced.stderr

    blocks = tmp_path / "block.jsonl"
    blocks.write_bytes(next(line for line in lines if b'"polkadot.blocks"' in line) + b"\n")
    as_collator = {**env, "PUBSUB_KAFKA_SASL_USERNAME": "collator-1000"}
    assert _one_line(_pubsub(as_collator, "produce", "--event-log", str(blocks))) == (
        "pubsub: Kafka refused User:collator-1000 Write on topic polkadot.blocks (TOPIC_AUTHORIZATION_FAILED)")
    as_consumer = {**env, "PUBSUB_KAFKA_SASL_USERNAME": "consumer"}
    assert _one_line(_pubsub(as_consumer, "consume", "--topic", "polkadot.blocks")) == (
        "pubsub: Kafka refused User:consumer Read on topic polkadot.blocks (TOPIC_AUTHORIZATION_FAILED)")
    anonymous = {**env, "PUBSUB_KAFKA_BOOTSTRAP": info.bootstrap}
    line = _one_line(_pubsub(anonymous, "consume", "--topic", "polkadot.updates"))
    assert f"the configured Kafka cluster at {info.bootstrap} does not answer User:ANONYMOUS over PLAINTEXT" in line

    # the job as `job`, the outputs read back as `consumer`, against the simulator
    job = dataclasses.replace(embedded_settings(Settings(kafka_sasl_username="job"), info, home),
                              checkpoint_dir=tmp_path / "checkpoint", realms="polkadot")
    assert job.kafka_sasl_username == "job" and job.kafka_security_protocol == "SASL_SSL"
    summary = run_job(job, available_now=True)
    assert summary.heights == {"polkadot": sum(1 for r in simulate(lines) if r.topic == "polkadot.seals")}
    consumer = embedded_settings(Settings(kafka_sasl_username="consumer"), info, home)
    got = sorted(read_outputs(consumer, ["polkadot.updates"]))
    expected = sorted(r.to_line() for r in simulate(lines) if r.topic == "polkadot.updates")
    assert got == expected and expected
    operator = embedded_settings(Settings(), info, home)  # may read every output topic
    result = check_outputs(lines, operator, ["polkadot"])
    assert not [t for t in result.topics if not t.ok], result.topics
    assert sum(t.matched for t in result.topics) == sum(t.expected for t in result.topics) > 0
    following = _pubsub(as_consumer, "consume", "--topic", "polkadot.updates")
    assert following.returncode == 0 and sorted(following.stdout.splitlines()) == expected
    # the client API finds the broker's CA and the consumer's login as the commands do
    connection = Connection.from_environment(environ=as_consumer)
    assert (connection.security_protocol, connection.sasl_username, connection.ssl_ca_file) == (
        "SASL_SSL", "consumer", home / "tls" / "ca.pem")
    assert sorted(read_outputs(connection, ["polkadot.updates"])) == expected
