"""A realm's status for a person (`pubsub status`): from a running job's metrics endpoint when one answers, else
from the realm's topics and the job's checkpoint. Reads only; it never starts a broker or a job.

The two sources give the same facts where both know them: relay and author height, blocks waiting, lag per input
partition, PoV use per subscriber, and a stall (the block, what it misses, since when, the void command that
undoes it). Only the running job knows its batch time and state size, and the positions a waiting block misses
right now; without it, lag is what the checkpoint's newest offsets leave unread, records out are each output
topic's size, and a stall is the open ``Stalled`` record of ``<realm>.health`` (the ranges its block still had to
fill when it was declared).
"""

from __future__ import annotations

import json
import shlex
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from producers.readers.realm_watch import PovUse, TailReadError, read_tails
from producers.schemas import RecordSchemaError, validate
from producers.transport.kafka_io import KafkaIOError, scan_topic
from producers.transport.topics import consumer_config
from pubsub_core.stages.edge import ConsumerRecord
from pubsub_core.stages.topics import INPUTS, OUTPUTS, kind_of, topic
from settings.checkpoint_location import FUSED_FOLDER, SPLIT_FOLDERS
from settings.settings import Settings
from supervise.errors import StatusUnavailable

__all__ = ["HEALTH_TAIL", "RealmStatus", "Stall", "checkpoint_offsets", "from_metrics", "from_topics", "open_stall",
           "render", "void_command"]

HEALTH_TAIL = 256
"""``from_topics`` reads at most this many of ``<realm>.health``'s newest records per partition (health records
are few: one Stalled, Voided and Resumed per stall), so the cost does not grow with the realm's age."""


@dataclass(frozen=True)
class Stall:
    """A realm's first waiting block as `pubsub status` shows it: the block and its ``<realm>.blocks@<offset>``,
    whether Stage R declared it stalled, what it misses (``stream/origin/position`` or ``.../first..last``), and
    since when, in words that say which clock. ``verb`` says what ``missing`` is: ``misses`` (the positions
    missing now, from the job) or ``waits for`` (the ranges its manifest still had to fill when it was declared
    stalled, from its ``Stalled`` record)."""

    block: int
    block_record: str
    stalled: bool
    missing: tuple[str, ...]
    since: str
    verb: str = "misses"


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
    stall: Stall | None = None


def from_metrics(url: str, realm: str, timeout: float = 3.0) -> RealmStatus:
    """The realm's facts from a running job's ``/metrics`` (``StatusUnavailable`` if nothing answers there)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            text = response.read().decode()
    except (OSError, urllib.error.URLError) as exc:
        raise StatusUnavailable(url, str(getattr(exc, "reason", exc))) from exc
    status = RealmStatus(realm, f"the job's metrics at {url}")
    pov: dict[int, dict[str, int]] = {}
    waiting: dict[str, float] = {}
    missing: dict[str, list[str]] = {}
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
            elif name in ("pubsub_realm_stalled", "pubsub_waiting_block", "pubsub_waiting_seconds"):
                waiting[name] = value
            elif name == "pubsub_waiting_missing" and value:
                missing.setdefault(labels["block_record"], []).append(labels["position"])
    status.pov = {s: PovUse(v.get("pubsub_pov_block", 0), v.get("pubsub_pov_used_bytes", 0),
                            v.get("pubsub_pov_budget_bytes", 0)) for s, v in sorted(pov.items())}
    block = int(waiting.get("pubsub_waiting_block", 0))
    if block:
        record, positions = next(iter(missing.items()), ("unknown", []))
        seconds = waiting.get("pubsub_waiting_seconds", 0.0)
        status.stall = Stall(block, record, bool(waiting.get("pubsub_realm_stalled")), tuple(sorted(positions)),
                             f"for {seconds:.0f} s (the job's clock)")
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
                          if kind_of(name) in OUTPUTS}
    if topic(realm, "health") in ends:
        stall = open_stall(realm, _tail(settings, topic(realm, "health")))
        # A block the seals show applied is not waiting, whatever a record says (anyone may write to the topic).
        if stall is not None and (status.relay_height is None or status.relay_height < stall.block):
            status.stall = stall
    if checkpoint is not None:
        relay = FUSED_FOLDER if (checkpoint / FUSED_FOLDER).is_dir() else SPLIT_FOLDERS[0]  # the query reading inputs
        done = checkpoint_offsets(checkpoint / relay)
        for name, parts in ends.items():
            if kind_of(name) in INPUTS:
                for partition, end in parts.items():
                    read = done.get(name, {}).get(str(partition), 0)
                    status.lag[(name, partition)] = max(0, end - read)
    return status


def _tail(settings: Settings, name: str) -> list[ConsumerRecord]:
    """The newest ``HEALTH_TAIL`` records of each partition of ``name``, oldest first (by Kafka timestamp)."""
    try:
        records = list(scan_topic(settings, name, timeout=10, offset=str(-HEALTH_TAIL)))
    except KafkaIOError as exc:
        raise StatusUnavailable(f"Kafka at {settings.kafka_bootstrap}", str(exc)) from exc
    return sorted(records, key=lambda r: (r.timestamp or 0, r.partition, r.offset))


def open_stall(realm: str, records: list[ConsumerRecord]) -> Stall | None:
    """The realm's ``Stalled`` record that no ``Resumed`` record of the same block followed, if any (the newest);
    a record that is not the realm's valid health record is ignored (anyone may write to a topic)."""
    open_records: dict[str, tuple[dict[str, object], int | None]] = {}
    for record in records:
        try:
            body = json.loads(record.value or b"")
            validate("health", body)
        except (ValueError, RecordSchemaError):
            continue
        if record.key != realm.encode() or body.get("realm") != realm:
            continue
        if body["kind"] == "Stalled":
            open_records[str(body["block_record"])] = (body, record.timestamp)
        elif body["kind"] == "Resumed":
            open_records.pop(str(body["block_record"]), None)
    if not open_records:
        return None
    body, timestamp = list(open_records.values())[-1]
    ranges = body["awaits"]
    assert isinstance(ranges, list)  # the schema says so
    missing = tuple(f"{r['stream']}/{r['origin']}/{r['first']}" + (f"..{r['last']}" if r["last"] != r["first"] else "")
                    for r in ranges)
    since = "unknown" if timestamp is None else datetime.fromtimestamp(timestamp / 1000, UTC).strftime(
        "since %Y-%m-%d %H:%M:%S UTC (its Stalled record)")
    return Stall(int(str(body["block"])), str(body["block_record"]), True, missing, since, "waits for")


def void_command(realm: str, block: int, bootstrap: str | None = None) -> str:
    """The ``pubsub author void`` command that voids the positions of ``block`` no authentic record fills (it signs
    with ``$PUBSUB_AUTHOR_KEY`` or ``--key-file``; without ``--yes`` it only prints them)."""
    words = ["pubsub", "author", "void", *(["--bootstrap", bootstrap] if bootstrap else []), "--realm", realm,
             "--block", str(block), "--yes"]
    return shlex.join(words)


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


def render(status: RealmStatus, bootstrap: str | None = None) -> list[str]:
    """The status as aligned lines, one fact a line; a stall first, with the command that undoes it (naming
    ``bootstrap`` when the status was read with one given)."""
    def row(label: str, value: object) -> str:
        return f"{label:<18}{value}"

    def known(value: object) -> str:
        return "unknown" if value is None else str(value)

    lines = [f"realm {status.realm} (from {status.source})"]
    stall = status.stall
    if stall is not None:
        misses = ", ".join(stall.missing) if stall.missing else "nothing now (an earlier refusal holds it)"
        lines.append(row("STALLED" if stall.stalled else "waiting",
                         f"block {stall.block} ({stall.block_record}) {stall.verb} {misses}, {stall.since}"))
        if stall.stalled:
            lines.append(row("undo with", void_command(status.realm, stall.block, bootstrap)))
            lines.append(row("", "(without --yes it prints what it would void; first check docs/operations.md, "
                                 "'A stalled realm')"))
    lines += [row("relay height", known(status.relay_height)),
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
