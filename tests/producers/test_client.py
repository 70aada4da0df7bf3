"""The client API without Kafka: what it signs is what admission accepts, items no relay takes are refused
before signing, and a connection is found (or refused) without any set-up call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import producers.client as client
from producers.client import (
    Connection,
    ConnectionSettingsError,
    NoKafkaError,
    Publish,
    PublishError,
    build_publish,
)
from producers.errors import ProducerError
from pubsub_core.envelope import KeyRegistry, Signer
from pubsub_core.envelope.admission import Unauthenticated, authenticate
from pubsub_core.hashing import blake2_256
from pubsub_core.xcm import decode_versioned_xcm

SEED = blake2_256(b"client-test/collator")


def test_the_public_names_are_exported() -> None:
    assert {"Client", "Connection", "Publisher", "Record", "build_publish", "ClientError"} <= set(client.__all__)
    assert all(hasattr(client, name) for name in client.__all__)
    assert issubclass(client.ClientError, ProducerError)


def test_a_built_publish_passes_admission_for_its_para_and_no_other() -> None:
    signer = Signer(SEED)
    items = [Publish(blake2_256(b"price"), b"42", 0), Publish(blake2_256(b"volume"), b"7", 10)]
    envelope = build_publish(signer, "kusama", 2000, 5, items)
    registry = KeyRegistry({2000: frozenset({signer.public_key})})
    admitted = authenticate(registry, "kusama", "upward", "2000", envelope.encode())
    assert admitted.envelope.seqno == 5
    assert decode_versioned_xcm(admitted.envelope.data).instructions == tuple(item.instruction() for item in items)
    registry_2001 = KeyRegistry({2001: frozenset({signer.public_key})})
    with pytest.raises(Unauthenticated):  # signed for kusama/2000: not valid on polkadot, nor for para 2001
        authenticate(registry, "polkadot", "upward", "2000", envelope.encode())
    with pytest.raises(Unauthenticated):
        authenticate(registry_2001, "kusama", "upward", "2001", envelope.encode())


@pytest.mark.parametrize(("items", "seqno", "words"), [
    ([], 1, "1 to 16"),
    ([Publish(bytes(32), b"x")] * 17, 1, "1 to 16"),
    ([Publish(bytes(32), b"x")], 0, "above 0"),
])
def test_items_no_relay_takes_are_refused_before_signing(items: list[Publish], seqno: int, words: str) -> None:
    with pytest.raises(PublishError, match=words):
        build_publish(Signer(SEED), "polkadot", 1000, seqno, items)


@pytest.mark.parametrize(("key", "value", "ttl", "words"), [
    (b"abcde", b"v", 0, "key is 32 bytes, got 5 bytes"),
    (bytes(32), b"v", -1, "TTL is a block count from 0"),
    (bytes(32), b"v", 1 << 32, "TTL is a block count from 0"),
    (bytes(32), bytes(1025), 0, "at most 1024 bytes, got 1025 bytes"),
    ("k" * 32, b"v", 0, "got a str, not bytes"),
])
def test_an_item_no_relay_takes_is_a_publish_error_when_made(key: bytes, value: bytes, ttl: int, words: str) -> None:
    with pytest.raises(PublishError, match=words) as raised:
        Publish(key, value, ttl)
    assert isinstance(raised.value, ProducerError)


def test_every_error_the_client_exports_derives_from_the_producer_error_root() -> None:
    errors = [getattr(client, name) for name in client.__all__
              if isinstance(getattr(client, name), type) and issubclass(getattr(client, name), BaseException)]
    assert {e.__name__ for e in errors} >= {"ClientError", "PublishError", "UnknownSignerError", "NoKafkaError"}
    assert all(issubclass(e, ProducerError) for e in errors)
    assert client.Signer is Signer  # build_publish's signer, exported with it


def test_a_connection_comes_from_the_argument_then_the_environment() -> None:
    assert Connection.from_environment("h:1", environ={"PUBSUB_KAFKA_BOOTSTRAP": "e:2"}).bootstrap == "h:1"
    found = Connection.from_environment(environ={"PUBSUB_KAFKA_BOOTSTRAP": "e:2",
                                                 "PUBSUB_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
                                                 "PUBSUB_KAFKA_SASL_MECHANISM": "PLAIN",
                                                 "PUBSUB_KAFKA_SASL_PASSWORD": "hunter2"})
    assert found.kafka_client_config()["sasl.password"] == "hunter2" and "hunter2" not in repr(found)


def test_the_embedded_broker_is_found_from_its_record(tmp_path: Path) -> None:
    environ = {"PUBSUB_RUNTIME_DIR": str(tmp_path)}
    with pytest.raises(NoKafkaError, match="pubsub broker start"):
        Connection.from_environment(environ=environ)
    (tmp_path / "kafka").mkdir()
    record = {"pid": os.getpid(), "port": 41234, "controller_port": 41235, "data_dir": str(tmp_path)}
    (tmp_path / "kafka" / "broker.json").write_text(json.dumps(record))
    assert Connection.from_environment(environ=environ).bootstrap == "127.0.0.1:41234"


@pytest.mark.parametrize(("kwargs", "setting"), [
    ({"bootstrap": "nohostport"}, "bootstrap"),
    ({"bootstrap": "h:1", "security_protocol": "TLS"}, "security_protocol"),
    ({"bootstrap": "h:1", "security_protocol": "SASL_PLAINTEXT"}, "sasl_mechanism"),
])
def test_a_connection_that_cannot_work_is_refused_with_its_setting(kwargs: dict[str, Any], setting: str) -> None:
    with pytest.raises(ConnectionSettingsError) as caught:
        Connection(**kwargs)
    assert caught.value.name == setting


NO_BROKER = """
import json, sys, time
from producers.client import Client
from producers.errors import ProducerError
client = Client(bootstrap="127.0.0.1:1")
started = time.monotonic()
try:
    if sys.argv[1] == "read":
        client.read(topic="polkadot.seals", timeout=3)
    else:
        list(client.follow_updates("polkadot", idle_seconds=3))
    error = None
except ProducerError as exc:
    error = type(exc).__name__ + ": " + str(exc)
print(json.dumps({"seconds": time.monotonic() - started, "error": error}))
"""


@pytest.mark.parametrize("call", ["read", "follow"])
def test_without_a_broker_the_client_keeps_its_timeout_and_prints_nothing(call: str) -> None:
    """No broker at the address: ``read(timeout=3)`` and ``follow_updates(idle_seconds=3)`` end with a typed error
    after about 3 s (not librdkafka's own 10 s), and Kafka's client library writes nothing to stderr (its log lines
    go to the ``producers.kafka`` logger). The bound is generous: what is measured is that the timeout is kept."""
    root = Path(__file__).resolve().parents[2]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PUBSUB_")}, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-c", NO_BROKER, call], capture_output=True, text=True, env=env,
                          timeout=120, cwd=root)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    result = json.loads(done.stdout)
    assert result["error"] is not None and result["error"].startswith("KafkaIOError: ")
    assert "did not answer" in result["error"]
    assert 3.0 <= result["seconds"] < 3.0 + 4.0, result


def test_outputs_reads_all_six_output_kinds_by_default_as_the_docs_say() -> None:
    import inspect

    from pubsub_core.stages.topics import OUTPUTS

    assert inspect.signature(client.Client.outputs).parameters["kinds"].default == OUTPUTS
    assert "health" in OUTPUTS and len(OUTPUTS) == 6
    api = " ".join((Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text().split())
    assert f"all six kinds: {', '.join(OUTPUTS)}" in api
