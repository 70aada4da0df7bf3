"""A realm's status for a person (`pubsub status`): from a running job's metrics endpoint when one answers, else
from the realm's topics and the job's checkpoint. Reads only; it never starts a broker or a job.

The two sources give the same facts where both know them: relay and author height, blocks waiting, lag per input
partition, PoV use per subscriber. Only the running job knows its batch time and state size; without it, lag is
what the checkpoint's newest offsets leave unread, and records out are each output topic's size.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from producers.readers.realm_watch import PovUse, TailReadError, read_tails
from producers.transport.topics import consumer_config
from pubsub_core.stages.topics import INPUTS, OUTPUTS, topic
from settings.settings import Settings
from supervise.errors import StatusUnavailable

__all__ = ["RealmStatus", "checkpoint_offsets", "from_metrics", "from_topics", "render"]


@dataclass
class RealmStatus:
    """The facts `pubsub status` prints; None where the source does not know them."""

    realm: str
    source: str
    relay_height: int | None = None
    author_height: int | None = None
    blocks_waiting: int | None = None
    lag: dict[tuple[str, int], int] = field(default_factory=dict)
    records_out: dict[str, int] = field(default_factory=dict)
    batch_seconds: dict[str, float] = field(default_factory=dict)
    state_bytes: dict[str, int] = field(default_factory=dict)
    checkpoint_bytes: int | None = None
    pov: dict[int, PovUse] = field(default_factory=dict)


def from_metrics(url: str, realm: str, timeout: float = 3.0) -> RealmStatus:
    """The realm's facts from a running job's ``/metrics`` (``StatusUnavailable`` if nothing answers there)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            text = response.read().decode()
    except (OSError, urllib.error.URLError) as exc:
        raise StatusUnavailable(url, str(getattr(exc, "reason", exc))) from exc
    status = RealmStatus(realm, f"the job's metrics at {url}")
    pov: dict[int, dict[str, int]] = {}
    prefix = f"{realm}."
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels, value = sample.labels, sample.value
            if labels.get("realm", realm) != realm:
                continue
            name = sample.name
            if name == "pubsub_relay_height":
                status.relay_height = int(value)
            elif name == "pubsub_author_height":
                status.author_height = int(value)
            elif name == "pubsub_blocks_waiting":
                status.blocks_waiting = int(value)
            elif name == "pubsub_input_lag_records" and labels["topic"].startswith(prefix):
                status.lag[(labels["topic"], int(labels["partition"]))] = int(value)
            elif name == "pubsub_records_out_total" and labels["topic"].startswith(prefix):
                status.records_out[labels["topic"]] = int(value)
            elif name == "pubsub_batch_duration_seconds":
                status.batch_seconds[labels["query"]] = value
            elif name == "pubsub_state_memory_bytes":
                status.state_bytes[labels["query"]] = int(value)
            elif name == "pubsub_checkpoint_bytes":
                status.checkpoint_bytes = int(value)
            elif name in ("pubsub_pov_used_bytes", "pubsub_pov_budget_bytes", "pubsub_pov_block"):
                pov.setdefault(int(labels["subscriber"]), {})[name] = int(value)
    status.pov = {s: PovUse(v.get("pubsub_pov_block", 0), v.get("pubsub_pov_used_bytes", 0),
                            v.get("pubsub_pov_budget_bytes", 0)) for s, v in sorted(pov.items())}
    return status


def checkpoint_offsets(query_checkpoint: Path) -> dict[str, dict[str, int]]:
    """The source offsets the newest batch of a query's checkpoint ends at (``offsets/<batch>``: a version line,
    the batch's metadata, then one JSON line per source); empty if it has none."""
    folder = query_checkpoint / "offsets"
    batches = sorted((int(p.name) for p in folder.glob("[0-9]*") if p.name.isdigit()), reverse=True)
    for batch in batches:
        try:
            lines = (folder / str(batch)).read_text().splitlines()
        except OSError:
            continue
        offsets: dict[str, dict[str, int]] = {}
        for line in lines[2:]:
            try:
                source = json.loads(line)
            except ValueError:
                continue
            if isinstance(source, dict):
                for name, parts in source.items():
                    if isinstance(parts, dict):
                        offsets[name] = {str(p): int(o) for p, o in parts.items()}
        return offsets
    return {}


def from_topics(settings: Settings, realm: str, checkpoint: Path | None) -> RealmStatus:
    """The realm's facts from its topics' tails and ends, and lag from ``checkpoint`` (the job's folder) if given."""
    try:
        facts = read_tails(settings, [realm])[realm]
    except TailReadError as exc:
        raise StatusUnavailable(f"Kafka at {settings.kafka_bootstrap}", exc.reason) from exc
    status = RealmStatus(realm, f"the topics on {settings.kafka_bootstrap}"
                         + (f" and the checkpoint {checkpoint}" if checkpoint else ""),
                         facts.relay_height, facts.author_height, facts.blocks_waiting, pov=dict(sorted(facts.pov.items())))
    ends = _ends(settings, [topic(realm, kind) for kind in (*INPUTS, *OUTPUTS)])
    status.records_out = {name: sum(parts.values()) for name, parts in ends.items()
                          if name.rpartition(".")[2] in OUTPUTS}
    if checkpoint is not None:
        done = checkpoint_offsets(checkpoint / "relay")
        for name, parts in ends.items():
            if name.rpartition(".")[2] in INPUTS:
                for partition, end in parts.items():
                    read = done.get(name, {}).get(str(partition), 0)
                    status.lag[(name, partition)] = max(0, end - read)
    return status


def _ends(settings: Settings, names: list[str]) -> dict[str, dict[int, int]]:
    """Each existing topic's end offset per partition (records written, transaction markers included)."""
    consumer = Consumer({**consumer_config(settings, f"pubsub-status-{uuid.uuid4().hex[:8]}"), "log_level": "0"})
    try:
        found = consumer.list_topics(timeout=10).topics
        out: dict[str, dict[int, int]] = {}
        for name in names:
            if name in found and found[name].error is None:
                out[name] = {p: consumer.get_watermark_offsets(TopicPartition(name, p), timeout=10)[1]
                             for p in sorted(found[name].partitions)}
        return out
    except KafkaException as exc:
        raise StatusUnavailable(f"Kafka at {settings.kafka_bootstrap}", str(exc)) from exc
    finally:
        consumer.close()


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def render(status: RealmStatus) -> list[str]:
    """The status as aligned lines, one fact a line."""
    def row(label: str, value: object) -> str:
        return f"{label:<18}{value}"

    def known(value: object) -> str:
        return "unknown" if value is None else str(value)

    lines = [f"realm {status.realm} (from {status.source})",
             row("relay height", known(status.relay_height)),
             row("author height", known(status.author_height)),
             row("blocks waiting", known(status.blocks_waiting))]
    if status.lag:
        lines.append(row("input lag", ", ".join(f"{t}/{p} {n}" for (t, p), n in sorted(status.lag.items()))))
    if status.records_out:
        lines.append(row("records out", ", ".join(f"{t} {n}" for t, n in sorted(status.records_out.items()))))
    if status.batch_seconds:
        lines.append(row("batch time", ", ".join(f"{q} {s:.2f} s" for q, s in sorted(status.batch_seconds.items()))))
    if status.state_bytes:
        lines.append(row("state memory", ", ".join(f"{q} {_mib(n)}" for q, n in sorted(status.state_bytes.items()))))
    if status.checkpoint_bytes is not None:
        lines.append(row("checkpoint", _mib(status.checkpoint_bytes)))
    for subscriber, use in status.pov.items():
        share = f" ({100 * use.used / use.budget:.1f}%)" if use.budget else ""
        lines.append(row(f"PoV {subscriber}", f"{use.used:,} of {use.budget:,} bytes{share} at block {use.block}"))
    return lines
