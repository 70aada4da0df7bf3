"""The public Python client of the pipeline: follow a realm's updates once each, read a topic, and publish signed
data for one's own parachain (docs/api.md; examples/api_*.py run as tests).

Nothing needs setting up first: a ``Client`` finds Kafka by itself (``Connection.from_environment``: the
``bootstrap`` given, else ``$PUBSUB_KAFKA_BOOTSTRAP``, else the embedded broker ``pubsub broker start`` runs).
Every error is a ``ClientError`` or another ``ProducerError`` (``KafkaIOError`` for Kafka I/O). Kafka's client
library logs to the ``producers.kafka`` logger, never to stderr (``producers.transport.topics.KAFKA_LOGGER``).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from producers.errors import ProducerError
from producers.readers.follow import FollowStats, SeenWindow, Start, follow
from producers.schemas import RecordSchemaError, validate
from producers.transport.kafka_io import produce, read_outputs, read_topic, scan_topic
from producers.writers.live import resume_point
from pubsub_core.codec.types import U32_MAX
from pubsub_core.envelope import Envelope, KeyRegistry, Signer, Topic
from pubsub_core.relay import InputRecord, canonical_json
from pubsub_core.stages import GenesisRecord
from pubsub_core.stages.edge import ConsumerRecord, ProducerRecord
from pubsub_core.stages.ingest import decode_record
from pubsub_core.stages.topics import OUTPUTS, topic
from pubsub_core.subscriber import Update
from pubsub_core.xcm import Publish as PublishInstruction
from pubsub_core.xcm import Xcm, encode_versioned_xcm
from pubsub_core.xcm.types import MAX_PUBLISH_VALUE_LENGTH
from settings.kafka_security import SECURITY_PROTOCOLS, KafkaSecurity, KafkaSecurityError, read_credentials
from settings.paths import runtime_folder

__all__ = [
    "Client",
    "ClientError",
    "Connection",
    "ConnectionSettingsError",
    "FollowStats",
    "InvalidRecordError",
    "NoKafkaError",
    "Publish",
    "PublishError",
    "Published",
    "Publisher",
    "SECURITY_PROTOCOLS",
    "Signer",
    "UnknownSignerError",
    "Update",
    "build_publish",
]

MAX_PUBLISHES_PER_MESSAGE = 16
"""Publish instructions one upward message may carry (the relay's default ``max_publish_instructions``)."""


class ClientError(ProducerError):
    """Base class of the client API's own errors."""


class NoKafkaError(ClientError):
    """No Kafka cluster to talk to: none given, none in the environment, no embedded broker running."""

    def __init__(self) -> None:
        super().__init__("no Kafka cluster: pass bootstrap='host:port', set PUBSUB_KAFKA_BOOTSTRAP, or start the "
                         "embedded broker with `pubsub broker start`")


class ConnectionSettingsError(ClientError, ValueError):
    """A connection setting that cannot work (names the setting and why)."""

    def __init__(self, name: str, value: object, reason: str) -> None:
        shown = "***" if "password" in name else repr(value)
        super().__init__(f"connection setting {name}={shown} is invalid: {reason}")
        self.name = name
        self.reason = reason


class PublishError(ClientError, ValueError):
    """Publish items that no relay would take (no item, too many, a value over the XCM bound, a bad key or TTL)."""


class UnknownSignerError(PublishError):
    """The publisher's key is not one the realm's genesis lists for its para: Stage R would refuse every message it
    signs (``NotMember``), so nothing is produced. Carries the para, the key and the keys the genesis lists."""

    def __init__(self, realm: str, para: int, public_key: bytes, listed: frozenset[bytes]) -> None:
        keys = ", ".join("0x" + k.hex() for k in sorted(listed)) or "none"
        super().__init__(f"the key 0x{public_key.hex()} is not one {realm}'s genesis lists for para {para} "
                         f"(it lists: {keys}); sign with the seed of a listed key")
        self.realm = realm
        self.para = para
        self.public_key = public_key
        self.listed = listed


@dataclass(frozen=True)
class Publish:
    """One item to publish: a 32-byte ``key``, a ``value`` of at most 1024 bytes (XCM's bound) and a ``ttl`` in
    blocks (0: never expires), checked when made (``PublishError``). ``build_publish`` turns it into XCM's
    ``Publish`` instruction (``instruction()``)."""

    key: bytes
    value: bytes
    ttl: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.key, bytes) or len(self.key) != 32:
            raise PublishError(f"a Publish key is 32 bytes, got {_size(self.key)}")
        if not isinstance(self.value, bytes) or len(self.value) > MAX_PUBLISH_VALUE_LENGTH:
            raise PublishError(f"a published value is at most {MAX_PUBLISH_VALUE_LENGTH} bytes, got {_size(self.value)}")
        if isinstance(self.ttl, bool) or not isinstance(self.ttl, int) or not 0 <= self.ttl <= U32_MAX:
            raise PublishError(f"a Publish TTL is a block count from 0 (never expires) to {U32_MAX}, got {self.ttl!r}")

    def instruction(self) -> PublishInstruction:
        """XCM's ``Publish { key, value, ttl }`` instruction (``pubsub_core.xcm``)."""
        return PublishInstruction(self.key, self.value, self.ttl)


def _size(data: object) -> str:
    return f"{len(data)} bytes" if isinstance(data, bytes) else f"a {type(data).__name__}, not bytes"


class InvalidRecordError(ClientError):
    """A record on an output topic that is not what its schema says (anyone may write to any topic); carries
    where it is and why."""

    def __init__(self, record: ConsumerRecord, reason: str) -> None:
        super().__init__(f"record {record.topic}@{record.partition}:{record.offset} is not valid: {reason}")
        self.record = record
        self.reason = reason


@dataclass(frozen=True)
class Connection:
    """Where Kafka is and how to authenticate to it (the producers' ``Settings`` protocol)."""

    bootstrap: str
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    ssl_ca_file: Path | None = None
    """PEM file of the CA that signed the brokers' certificates (``SSL``, ``SASL_SSL``); None: the system's CAs."""
    ssl_cert_file: Path | None = None
    """This client's certificate (PEM), for mutual TLS, with ``ssl_key_file``."""
    ssl_key_file: Path | None = None
    ssl_key_password: str | None = field(default=None, repr=False)
    ssl_check_hostname: bool = True
    """Whether the broker's certificate must name the host dialled."""

    def __post_init__(self) -> None:
        if not self.bootstrap or any(":" not in part for part in self.bootstrap.split(",")):
            raise ConnectionSettingsError("bootstrap", self.bootstrap, "expected host:port[,host:port]")
        if self.security_protocol not in SECURITY_PROTOCOLS:
            raise ConnectionSettingsError("security_protocol", self.security_protocol,
                                          f"one of {', '.join(SECURITY_PROTOCOLS)}")
        if self.security_protocol.startswith("SASL") and not self.sasl_mechanism:
            raise ConnectionSettingsError("sasl_mechanism", None, f"{self.security_protocol} needs a SASL mechanism "
                                          "(e.g. PLAIN, SCRAM-SHA-256)")
        try:
            self.security().check()
        except KafkaSecurityError as exc:
            raise ConnectionSettingsError(exc.setting, getattr(self, exc.setting, None), exc.reason) from None

    def security(self) -> KafkaSecurity:
        return KafkaSecurity(self.security_protocol, self.sasl_mechanism, self.sasl_username, self.sasl_password,
                             self.ssl_ca_file, self.ssl_cert_file, self.ssl_key_file, self.ssl_key_password,
                             self.ssl_check_hostname)

    def kafka_client_config(self) -> dict[str, str]:
        """librdkafka properties for this connection (secrets in them: never print the result)."""
        return {"bootstrap.servers": self.bootstrap, **self.security().librdkafka()}

    @classmethod
    def from_environment(cls, bootstrap: str | None = None, environ: Mapping[str, str] | None = None) -> Connection:
        """``bootstrap``, else ``$PUBSUB_KAFKA_BOOTSTRAP``, else the running embedded broker; security settings from
        ``PUBSUB_KAFKA_SECURITY_PROTOCOL`` and ``PUBSUB_KAFKA_SASL_*``. ``NoKafkaError`` when none is found."""
        env = os.environ if environ is None else environ
        found = bootstrap or env.get("PUBSUB_KAFKA_BOOTSTRAP")
        if not found:
            found = embedded_broker_bootstrap(env)
            if not found:
                raise NoKafkaError()
            home = runtime_folder(env) / "kafka"
            if (home / "credentials.json").exists() and "SASL_SSL://" in _read(home / "server.properties"):
                # a secured embedded broker: its CA, and the login of $PUBSUB_KAFKA_SASL_USERNAME (else operator)
                user = env.get("PUBSUB_KAFKA_SASL_USERNAME") or "operator"
                password = env.get("PUBSUB_KAFKA_SASL_PASSWORD") or read_credentials(home / "credentials.json").get(user)
                return cls(found, "SASL_SSL", "SCRAM-SHA-512", user, password, home / "tls" / "ca.pem")
        files = {name: Path(env[f"PUBSUB_KAFKA_{name.upper()}"]) if env.get(f"PUBSUB_KAFKA_{name.upper()}") else None
                 for name in ("ssl_ca_file", "ssl_cert_file", "ssl_key_file")}
        check = env.get("PUBSUB_KAFKA_SSL_CHECK_HOSTNAME", "true").strip().lower() not in ("false", "0", "no")
        return cls(found, env.get("PUBSUB_KAFKA_SECURITY_PROTOCOL", "PLAINTEXT"),
                   env.get("PUBSUB_KAFKA_SASL_MECHANISM") or None, env.get("PUBSUB_KAFKA_SASL_USERNAME") or None,
                   env.get("PUBSUB_KAFKA_SASL_PASSWORD") or None, files["ssl_ca_file"], files["ssl_cert_file"],
                   files["ssl_key_file"], env.get("PUBSUB_KAFKA_SSL_KEY_PASSWORD") or None, check)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def embedded_broker_bootstrap(environ: Mapping[str, str]) -> str | None:
    """The bootstrap of the embedded broker ``pubsub broker start`` runs, from the record it keeps in the runtime
    folder (``settings.paths.runtime_folder``), if its process is alive; else None."""
    try:
        info = json.loads((runtime_folder(environ) / "kafka" / "broker.json").read_text())
        pid, port, host = int(info["pid"]), int(info["port"]), str(info.get("host", "127.0.0.1"))
        os.kill(pid, 0)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return f"{host}:{port}"


def build_publish(signer: Signer, realm: str, para: int, seqno: int, items: Iterable[Publish]) -> Envelope:
    """The signed envelope of one upward message of ``para`` carrying ``items`` (one XCM ``Publish`` each), as
    sequence number ``seqno`` of ``signer`` on ``<realm>.upward`` (docs/envelope.md). ``PublishError`` for items
    no relay would take."""
    chosen = tuple(items)
    if not 1 <= len(chosen) <= MAX_PUBLISHES_PER_MESSAGE:
        raise PublishError(f"an upward message carries 1 to {MAX_PUBLISHES_PER_MESSAGE} Publish items, got {len(chosen)}")
    for item in chosen:
        if not isinstance(item, Publish):
            raise PublishError(f"an item to publish is a producers.client.Publish, got a {type(item).__name__}")
    if not 0 <= para < 1 << 32 or not 0 < seqno < 1 << 64:
        raise PublishError(f"para {para} must be a u32 and seqno {seqno} a u64 above 0")
    data = encode_versioned_xcm(Xcm(tuple(item.instruction() for item in chosen)))
    return signer.sign(Topic(realm, "upward", str(para)), seqno, data)


@dataclass(frozen=True)
class Published:
    """One upward message sent: where it went (topic, key), its place (position) and seqno, and its value."""

    topic: str
    key: str
    position: int
    seqno: int
    record: InputRecord


class Publisher:
    """Publishes signed data for one parachain of one realm: ``publish([Publish(key, value, ttl), ...])``.

    Positions and seqnos continue from what the realm's ``upward`` topic holds for this para (read at the first
    publish, under the realm's genesis, so a restarted publisher never reuses a position or a seqno). One
    publisher per (realm, para) at a time: two would take the same positions."""

    def __init__(self, connection: Connection, realm: str, para: int, signer: Signer) -> None:
        self.connection = connection
        self.realm = realm
        self.para = para
        self.signer = signer
        self._next: tuple[int, int] | None = None
        self._registry: KeyRegistry | None = None

    @property
    def topic(self) -> str:
        return topic(self.realm, "upward")

    def registry(self) -> KeyRegistry:
        """The realm's keys, from its genesis (read once; a realm without one yet counts this key as the para's).
        ``UnknownSignerError`` if the genesis does not list this publisher's key for its para."""
        if self._registry is None:
            genesis = read_topic(self.connection, topic(self.realm, "genesis"), limit=1)
            registry = KeyRegistry({self.para: frozenset({self.signer.public_key})})
            if genesis:
                decoded = decode_record(genesis[0].topic, genesis[0].key, genesis[0].value, genesis[0].offset).value
                if isinstance(decoded, GenesisRecord):
                    registry = decoded.registry
            listed = registry.para_keys.get(self.para, frozenset())
            if self.signer.public_key not in listed:
                raise UnknownSignerError(self.realm, self.para, self.signer.public_key, listed)
            self._registry = registry
        return self._registry

    def _resume(self) -> tuple[int, int]:
        """(next position, next seqno) of this para on the topic."""
        registry = self.registry()
        origin = ("upward", str(self.para))
        point = resume_point(scan_topic(self.connection, self.topic), self.realm, registry, {origin})
        return point.positions.get(origin, 0), point.seqnos.get((*origin, self.signer.public_key), 0) + 1

    def publish(self, items: Iterable[Publish]) -> Published:
        """Sign ``items`` as the para's next upward message and produce it (waiting for Kafka's acknowledgement).
        ``UnknownSignerError`` (before anything is produced) if the realm's genesis does not list this key for
        the para."""
        position, seqno = self._next if self._next is not None else self._resume()
        envelope = build_publish(self.signer, self.realm, self.para, seqno, items)
        record = InputRecord("upward", str(self.para), position, envelope.encode())
        produce(self.connection, [ProducerRecord(self.topic, str(self.para).encode(),
                                                 canonical_json(record.to_json()).encode())])
        self._next = (position + 1, seqno + 1)
        return Published(self.topic, str(self.para), position, seqno, record)


class Client:
    """A connection to the pipeline's Kafka: read topics, follow updates, publish (module docstring)."""

    def __init__(self, connection: Connection | None = None, *, bootstrap: str | None = None) -> None:
        self.connection = connection if connection is not None else Connection.from_environment(bootstrap)

    def read(self, topic: str, *, limit: int | None = None, timeout: float = 30.0) -> list[ConsumerRecord]:
        """Every record ``topic`` holds now (with ``limit``, at most that many, the first ones of each partition),
        in partition and offset order. ``KafkaIOError`` if the topic does not exist, or if Kafka does not answer
        within ``timeout`` seconds (no record for that long, too)."""
        return read_topic(self.connection, topic, timeout, limit)

    def outputs(self, realm: str, kinds: Iterable[str] = OUTPUTS) -> list[str]:
        """The realm's output records (``kinds``, by default all six: updates, events, rejected, pov, seals,
        health) as the lines ``pubsub simulate`` writes, topic by topic in partition and offset order: sort both
        to compare them."""
        return read_outputs(self.connection, [topic(realm, kind) for kind in kinds])

    def follow_updates(
        self,
        realm: str,
        *,
        subscriber: int | None = None,
        from_beginning: bool = True,
        idle_seconds: float | None = None,
        stop: threading.Event | None = None,
        on_invalid: Callable[[InvalidRecordError], None] | None = None,
        stats: FollowStats | None = None,
    ) -> Iterator[Update]:
        """Each update of ``<realm>.updates`` (for ``subscriber`` only, if given) once, as it arrives: a copy with
        an ``id`` already seen (the job writes at least once) is dropped. Runs until ``stop`` is set, the caller
        stops iterating, or no record came for ``idle_seconds``. A record that is not an update (its schema, its
        id) raises ``InvalidRecordError``, or goes to ``on_invalid`` and is skipped."""
        stop = stop if stop is not None else threading.Event()
        idle = _IdleStop(stop, idle_seconds)
        key = None if subscriber is None else str(subscriber)
        start = Start.BEGINNING if from_beginning else Start.NOW
        records = cast(Generator[ConsumerRecord, None, None],  # follow is a generator function
                       follow(self.connection, topic(realm, "updates"), stop, start=start, key=key, stats=stats,
                              seen=SeenWindow()))
        try:
            for record in records:
                idle.reset()
                try:
                    update = _update(record)
                except InvalidRecordError as error:
                    if on_invalid is None:
                        raise
                    on_invalid(error)
                    continue
                yield update
        finally:
            idle.cancel()
            records.close()  # its consumer leaves the group now, not when the generator is collected

    def publisher(self, realm: str, para: int, seed: bytes) -> Publisher:
        """A ``Publisher`` for ``para`` in ``realm`` signing with the ed25519 key of the 32-byte ``seed``, checked
        at once against the realm's genesis: ``UnknownSignerError`` if it does not list that key for the para."""
        if not isinstance(seed, bytes) or len(seed) != 32:
            raise PublishError(f"an ed25519 seed is 32 bytes, got {_size(seed)}")
        publisher = Publisher(self.connection, realm, para, Signer(seed))
        publisher.registry()
        return publisher


def _update(record: ConsumerRecord) -> Update:
    value = record.parsed_value()
    try:
        validate("update", value)
        if not isinstance(value, dict):  # never: the schema says it is an object
            raise InvalidRecordError(record, "an update is a JSON object")
        return Update.from_json(value)
    except (RecordSchemaError, ValueError) as exc:  # the schema, or an id that is not its content's
        raise InvalidRecordError(record, str(exc)) from exc


class _IdleStop:
    """Sets ``stop`` once ``seconds`` pass without ``reset`` (never, for None): one watching thread, and a reset
    per record is only a clock read."""

    def __init__(self, stop: threading.Event, seconds: float | None) -> None:
        self.stop = stop
        self.seconds = seconds
        self.last = time.monotonic()
        self._done = threading.Event()
        if seconds is not None:
            threading.Thread(target=self._watch, args=(seconds,), name="follow-idle", daemon=True).start()

    def _watch(self, seconds: float) -> None:
        while not self._done.wait(max(0.01, self.last + seconds - time.monotonic())):
            if time.monotonic() - self.last >= seconds:
                self.stop.set()
                return

    def reset(self) -> None:
        self.last = time.monotonic()

    def cancel(self) -> None:
        self._done.set()
