"""The pipeline's Kafka topics as deliberate objects: their limits, configs and client settings, in one place.

A realm has five input topics (``<realm>.genesis|upward|horizontal|extrinsics|blocks``, one partition each, so a
topic's offsets are the positions the protocol numbers), five output topics (``updates``, ``events``,
``rejected``, ``pov``, ``seals``), the Stage R -> Stage S seam ``relay-views`` (names:
``pubsub_core.stages.topics``) and the block author's snapshot ``author-state`` (``producers.writers.author_state``). Every
topic is created with:

- ``max.message.bytes`` = ``MAX_MESSAGE_BYTES`` (16 MiB, ``pubsub_core.stages.limits``, the table of every size
  limit): an input record may be as large as the ingest cap (``MAX_INPUT_BYTES``, 8 MiB) plus its JSON envelope,
  hex doubling binary values; outputs and views carry such values too;
- ``compression.type=producer``: the broker stores the batch as the producer compressed it (``zstd``);
- ``cleanup.policy=delete``, and for inputs ``retention.ms=-1`` by default: the input log is the system of record.
  An operator may give ``upward``, ``horizontal``, ``extrinsics`` and ``blocks`` a finite retention longer than
  the longest outage of the job or the author (docs/operations.md, "Input retention"); ``genesis`` must stay.
  Outputs and views keep the broker's default retention (they can be recomputed);
- except ``author-state``: ``cleanup.policy=compact`` (one key, the latest snapshot is all a restart reads) with
  ``segment.ms`` of an hour, so its uncleaned tail stays short.

Producers send with idempotence on, ``acks=all``, ``compression.type=zstd`` and ``message.max.bytes`` = the
ceiling; readers fetch with limits above it (``consumer_config``). Kafka checks ``max.message.bytes``
against the *compressed* batch, librdkafka checks ``message.max.bytes`` against the uncompressed record, so
``pubsub produce`` checks each record's uncompressed size (``record_fits``) against its topic's limit before
sending: whether a record is refused never depends on how well it compresses.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from producers.errors import ProducerError
from producers.writers.author_state import AUTHOR_STATE
from pubsub_core.stages.limits import MAX_MESSAGE_BYTES, RECORD_OVERHEAD, MiB
from pubsub_core.stages.topics import INPUTS, OUTPUTS, VIEWS, topic

__all__ = [
    "COMPRESSION",
    "KAFKA_LOGGER",
    "TopicError",
    "TopicKind",
    "TopicSpec",
    "admin_client",
    "consumer_config",
    "create_topics",
    "ensure_realm_topics",
    "ensure_topics",
    "is_serving",
    "producer_config",
    "realm_is_valid",
    "realm_topic_names",
    "realm_topic_specs",
    "record_fits",
    "topic_config",
    "with_logger",
]

KAFKA_LOGGER = logging.getLogger("producers.kafka")
"""Where the Kafka client library's log lines go (``with_logger``), not stderr: a program that wants them configures
this logger; without that they are dropped (a library prints nothing of its own; its errors are raised)."""
KAFKA_LOGGER.addHandler(logging.NullHandler())
COMPRESSION = "zstd"
"""The producer's codec (checked against the embedded Kafka 4.3 broker; lz4 is the fallback if a cluster lacks
zstd, which needs Kafka >= 2.1)."""
_FETCH_HEADROOM = 4
"""Readers fetch up to this many ceiling-sized records per request."""
_ADMIN_TIMEOUT = 30.0
_STATE_SEGMENT_MS = 3_600_000
_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


class Settings(Protocol):
    """What the clients need of the settings object (settings.settings.Settings has it)."""

    def kafka_client_config(self) -> Mapping[str, str]: ...


class TopicError(ProducerError):
    """Creating or inspecting a topic failed; carries the topic and Kafka's reason."""

    def __init__(self, topic: str, reason: str) -> None:
        super().__init__(f"topic {topic}: {reason}")
        self.topic = topic
        self.reason = reason


class KafkaRefused(ProducerError):
    """The broker's ACLs refused an operation: names the principal, the operation and the topic."""

    def __init__(self, principal: str, operation: str, topic: str, code: str) -> None:
        super().__init__(f"Kafka refused {principal} {operation} on topic {topic} ({code})")
        self.principal = principal
        self.operation = operation
        self.topic = topic
        self.code = code


_REFUSALS = ("TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
             "CLUSTER_AUTHORIZATION_FAILED")


def principal(config: Mapping[str, str]) -> str:
    """Who a client logs in as: ``User:<SASL user>``, else ``User:ANONYMOUS`` (a client certificate's DN is the
    broker's to map)."""
    user = config.get("sasl.username") if str(config.get("security.protocol", "")).startswith("SASL_") else None
    return f"User:{user}" if user else "User:ANONYMOUS"


def refusal(settings: Settings, operation: str, topic: str, error: object) -> KafkaRefused | None:
    """``KafkaRefused`` if ``error`` (a KafkaError, KafkaException or its text) is an authorization failure."""
    text = str(error)
    for code in _REFUSALS:
        if code in text or (code == _REFUSALS[0] and "topic authorization failed" in text.lower()):
            return KafkaRefused(principal(settings.kafka_client_config()), operation, topic, code)
    return None


class TopicKind(Enum):
    """What a topic holds, which decides its configs."""

    INPUT = "input"
    OUTPUT = "output"
    SEAM = "seam"
    STATE = "state"


@dataclass(frozen=True)
class TopicSpec:
    """A topic to create: name, partition count and topic-level configs."""

    name: str
    partitions: int
    config: Mapping[str, str] = field(default_factory=dict)


def topic_config(kind: TopicKind, max_message_bytes: int = MAX_MESSAGE_BYTES) -> dict[str, str]:
    """The topic-level configs of a topic of this kind (see the module docstring)."""
    config = {"max.message.bytes": str(max_message_bytes), "compression.type": "producer", "cleanup.policy": "delete"}
    if kind is TopicKind.INPUT:
        config["retention.ms"] = "-1"
    if kind is TopicKind.STATE:
        config |= {"cleanup.policy": "compact", "segment.ms": str(_STATE_SEGMENT_MS)}
    return config


def realm_is_valid(realm: str) -> bool:
    """Whether every topic of ``realm`` is a legal Kafka topic name (1-249 of ``[A-Za-z0-9._-]``)."""
    return all(_TOPIC_NAME.match(topic(realm, name)) for name in (*INPUTS, *OUTPUTS, VIEWS, AUTHOR_STATE))


def realm_topic_specs(
    realm: str,
    *,
    inputs: bool = True,
    outputs: bool = True,
    seam: bool = True,
    partitions: int = 1,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
) -> list[TopicSpec]:
    """A realm's topics: inputs (and with them the author's snapshot topic) with one partition; outputs and the
    seam with ``partitions``."""
    if partitions < 1:
        raise TopicError(topic(realm, "*"), f"partitions must be at least 1, not {partitions}")
    specs: list[TopicSpec] = []
    if inputs:
        config = topic_config(TopicKind.INPUT, max_message_bytes)
        specs += [TopicSpec(topic(realm, name), 1, config) for name in INPUTS]
        specs.append(TopicSpec(topic(realm, AUTHOR_STATE), 1, topic_config(TopicKind.STATE, max_message_bytes)))
    if outputs:
        config = topic_config(TopicKind.OUTPUT, max_message_bytes)
        specs += [TopicSpec(topic(realm, name), partitions, config) for name in OUTPUTS]
    if seam:
        specs.append(TopicSpec(topic(realm, VIEWS), partitions, topic_config(TopicKind.SEAM, max_message_bytes)))
    return specs


def realm_topic_names(realm: str) -> list[str]:
    """Every topic of ``realm`` (``realm_topic_specs``'s names): what resetting a realm deletes, the author's
    snapshot included (a new realm must not resume from the old one's)."""
    return [spec.name for spec in realm_topic_specs(realm)]


def ensure_topics(settings: Settings, specs: Iterable[TopicSpec], admin: AdminClient | None = None) -> dict[str, int]:
    """Create the topics that do not exist yet (idempotent: existing topics are left as they are), wait until
    every one has leaders, and return each topic's ``max.message.bytes`` as the broker reports it (an existing
    topic may have been created with another limit). ``admin``: a client to reuse (``admin_client``), else a new
    one."""
    wanted = {spec.name: spec for spec in specs}
    admin = admin if admin is not None else admin_client(settings)
    try:
        existing = set(admin.list_topics(timeout=_ADMIN_TIMEOUT).topics)
        missing = [spec for name, spec in wanted.items() if name not in existing]
        if missing:
            futures = admin.create_topics(
                [NewTopic(s.name, num_partitions=s.partitions, replication_factor=1, config=dict(s.config)) for s in missing]
            )
            for name, future in futures.items():
                try:
                    future.result(timeout=_ADMIN_TIMEOUT)
                except KafkaException as exc:
                    if (refused := refusal(settings, "Create", name, exc)) is not None:
                        raise refused from exc
                    if "TOPIC_ALREADY_EXISTS" not in str(exc):
                        raise TopicError(name, f"could not create it: {exc}") from exc
        _await_leaders(admin, list(wanted))
        if missing:
            _await_logs(settings, {s.name: s.partitions for s in missing})
        return _limits(admin, list(wanted))
    except KafkaException as exc:
        raise TopicError(", ".join(sorted(wanted)), str(exc)) from exc


def ensure_realm_topics(
    settings: Settings,
    realm: str,
    *,
    inputs: bool = True,
    outputs: bool = True,
    seam: bool = True,
    partitions: int = 1,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    admin: AdminClient | None = None,
) -> dict[str, int]:
    """``ensure_topics`` of ``realm_topic_specs``: a realm's input, output and seam topics, ready to use."""
    specs = realm_topic_specs(
        realm, inputs=inputs, outputs=outputs, seam=seam, partitions=partitions, max_message_bytes=max_message_bytes
    )
    return ensure_topics(settings, specs, admin)


def create_topics(settings: Settings, topics: Iterable[str], partitions: int, config: Mapping[str, str] | None = None) -> None:
    """Generic topics (not a realm's): create the missing ones with ``partitions`` and ``config``, wait for leaders."""
    ensure_topics(settings, [TopicSpec(name, partitions, dict(config or {})) for name in dict.fromkeys(topics)])


def record_fits(key: bytes | None, value: bytes, headers: Iterable[tuple[str, bytes]], limit: int) -> bool:
    """Whether a record's uncompressed size plus ``RECORD_OVERHEAD`` is within a topic's ``max.message.bytes``."""
    size = len(key or b"") + len(value) + sum(len(name) + len(data) for name, data in headers)
    return size + RECORD_OVERHEAD <= limit


def producer_config(settings: Settings, max_message_bytes: int = MAX_MESSAGE_BYTES) -> dict[str, str]:
    """An idempotent, zstd-compressing producer whose records may reach the ceiling."""
    return {
        **settings.kafka_client_config(),
        "enable.idempotence": "true",
        "acks": "all",
        "compression.type": COMPRESSION,
        "message.max.bytes": str(max_message_bytes),
        "linger.ms": "5",
        "log_level": "3",
    }


def consumer_config(settings: Settings, group_id: str, max_message_bytes: int = MAX_MESSAGE_BYTES) -> dict[str, str]:
    """A reader (no commits, from the earliest offset) whose fetches hold records up to the ceiling."""
    fetch = _FETCH_HEADROOM * max_message_bytes
    return {
        **settings.kafka_client_config(),
        "group.id": group_id,
        "enable.auto.commit": "false",
        "enable.partition.eof": "true",
        "auto.offset.reset": "earliest",
        "fetch.max.bytes": str(fetch),
        "max.partition.fetch.bytes": str(max_message_bytes + MiB),
        "receive.message.max.bytes": str(fetch + MiB),
        "log_level": "3",
    }


def is_serving(bootstrap: str, timeout: float = 3.0, extra: dict[str, str] | None = None) -> bool:
    """Whether a Kafka cluster answers a metadata request at `bootstrap` within `timeout` seconds."""
    admin = AdminClient(
        {**(extra or {}), "bootstrap.servers": bootstrap, "socket.connection.setup.timeout.ms": "2000", "log_level": "0"}
    )
    try:
        metadata = admin.list_topics(timeout=timeout)
    except KafkaException:
        return False
    return bool(metadata.brokers)


def with_logger(config: Mapping[str, str]) -> dict[str, Any]:
    """A Kafka client's ``config`` with its log lines sent to ``KAFKA_LOGGER`` instead of stderr (librdkafka's
    default: a client that cannot reach its broker would print a line every second or so)."""
    return {**config, "logger": KAFKA_LOGGER}


def admin_client(settings: Settings) -> AdminClient:
    """An admin client of the settings' cluster; each new one connects afresh (16-19 ms on loopback), so a
    caller that makes several calls keeps one."""
    return AdminClient(with_logger({**settings.kafka_client_config(), "log_level": "3"}))


def _await_leaders(admin: AdminClient, topics: list[str]) -> None:
    deadline = time.monotonic() + _ADMIN_TIMEOUT
    while time.monotonic() < deadline:
        metadata = admin.list_topics(timeout=_ADMIN_TIMEOUT).topics
        ready = [t for t in topics if t in metadata and metadata[t].partitions and metadata[t].error is None]
        if len(ready) == len(topics) and all(p.leader >= 0 for t in topics for p in metadata[t].partitions.values()):
            return
        time.sleep(0.2)
    raise TopicError(", ".join(topics), f"no leader after {_ADMIN_TIMEOUT:.0f}s")


def _await_logs(settings: Settings, partitions: Mapping[str, int]) -> None:
    """Wait until every partition of the topics just created answers a ListOffsets request from its leader.

    Metadata names a new partition's leader a moment before the leader can append to it. An idempotent producer
    whose first batch is refused in that moment (retriably) while its next batch is accepted loses the first:
    the broker takes the second as the first of a producer it does not know yet, whatever its sequence number,
    and acknowledges the retried first batch as a duplicate. Seen 4 times in 150 runs of a 2 MB record followed
    by a small one, produced right after the topics were created: the small one alone at offset 0, both reported
    delivered. A partition that answers ListOffsets has its log, so nothing is produced before it can append.
    """
    consumer = Consumer(with_logger(consumer_config(settings, f"pubsub-topics-{uuid.uuid4().hex[:8]}")))
    try:
        deadline = time.monotonic() + _ADMIN_TIMEOUT
        for name, count in partitions.items():
            for partition in range(count):
                while True:
                    try:
                        consumer.get_watermark_offsets(TopicPartition(name, partition), timeout=_ADMIN_TIMEOUT)
                        break
                    except KafkaException as exc:
                        if time.monotonic() > deadline:
                            raise TopicError(name, f"partition {partition} not writable: {exc}") from exc
                        time.sleep(0.1)
    finally:
        consumer.close()


def _limits(admin: AdminClient, topics: list[str]) -> dict[str, int]:
    if not topics:
        return {}
    futures = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, name) for name in topics])
    limits: dict[str, int] = {}
    for resource, future in futures.items():
        entries = future.result(timeout=_ADMIN_TIMEOUT)
        limits[resource.name] = int(entries["max.message.bytes"].value)
    return limits
