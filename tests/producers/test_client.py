"""The client API without Kafka: what it signs is what admission accepts, items no relay takes are refused
before signing, and a connection is found (or refused) without any set-up call."""

from __future__ import annotations

import json
import os
from pathlib import Path

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
    assert decode_versioned_xcm(admitted.envelope.data).instructions == tuple(items)
    registry_2001 = KeyRegistry({2001: frozenset({signer.public_key})})
    with pytest.raises(Unauthenticated):  # signed for kusama/2000: not valid on polkadot, nor for para 2001
        authenticate(registry, "polkadot", "upward", "2000", envelope.encode())
    with pytest.raises(Unauthenticated):
        authenticate(registry_2001, "kusama", "upward", "2001", envelope.encode())


@pytest.mark.parametrize(("items", "seqno", "words"), [
    ([], 1, "1 to 16"),
    ([Publish(bytes(32), b"x")] * 17, 1, "1 to 16"),
    ([Publish(bytes(32), bytes(1025))], 1, "at most 1024 bytes"),
    ([Publish(bytes(32), b"x")], 0, "above 0"),
])
def test_items_no_relay_takes_are_refused_before_signing(items: list[Publish], seqno: int, words: str) -> None:
    with pytest.raises(PublishError, match=words):
        build_publish(Signer(SEED), "polkadot", 1000, seqno, items)


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
def test_a_connection_that_cannot_work_is_refused_with_its_setting(kwargs: dict[str, str], setting: str) -> None:
    with pytest.raises(ConnectionSettingsError) as caught:
        Connection(**kwargs)
    assert caught.value.name == setting


def test_the_code_in_docs_api_is_taken_from_the_examples_a_test_runs() -> None:
    repo = Path(__file__).resolve().parents[2]
    blocks = (repo / "docs" / "api.md").read_text().split("```python\n")[1:]
    examples = "\n".join(path.read_text() for path in sorted((repo / "examples").glob("api_*.py")))
    assert len(blocks) == 3
    for block in blocks:
        assert block.split("```", 1)[0] in examples
