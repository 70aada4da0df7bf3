"""`pubsub produce`: send an event log to its realms' Kafka input topics; what cannot go there goes to `rejected`."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cli.commands.common import add_kafka_arguments, console, count, default_realm, settings_from
from cli.errors import Interrupted, UsageError
from producers.kafka_io import TOO_LARGE, KafkaIOError, ProducedRecord, SendInterrupted, produce, route_event_log, send
from producers.topics import MAX_MESSAGE_BYTES, ensure_realm_topics, realm_is_valid, record_fits
from pubsub_core.stages import IngestError, LineRouter, OutputRecord
from pubsub_core.stages.ingest import rejection
from streaming.settings import Settings
from supervise.kafka_broker import ensure_kafka

INVALID_TOPIC = "InvalidTopicName"
"""Rejection reason of a line whose realm cannot name Kafka topics."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "produce",
        help="send an event log to the realms' Kafka input topics",
        description=(
            "Read a JSON-lines event log (docs/simulator.md) and send each line to its topic "
            "(<realm>.genesis|upward|horizontal|extrinsics|blocks, one partition each, in line order), creating a "
            "realm's input, output and relay-views topics the first time the realm appears. A line that cannot be "
            "routed (not UTF-8 or not JSON, no topic, unknown stream) becomes the rejection record `pubsub simulate` "
            "writes for it, sent to <realm>.rejected; so does a record too large for its topic (RecordTooLarge). "
            "Nothing is dropped: the summary counts records per topic and refusals per reason."
        ),
        epilog="Examples: pubsub produce --event-log examples/small.jsonl; "
               "pubsub workload -o - --realm kusama | pubsub produce --event-log - --strict. Ctrl-C stops it and "
               "says how many records were delivered. "
               "Topic configs, limits and compression: docs/operations.md, 'Topics and limits'.",
    )
    add_kafka_arguments(parser)
    parser.add_argument("--event-log", type=Path, required=True, metavar="FILE",
                        help="the JSON-lines event log to send ('-' reads stdin)")
    parser.add_argument("--realm", metavar="NAME",
                        help="realm whose rejected topic takes lines that name none (default: the topic prefix's)")
    parser.add_argument("--max-message-bytes", type=int, default=MAX_MESSAGE_BYTES, metavar="BYTES",
                        help=f"ceiling of a record and of the topics created (default: {MAX_MESSAGE_BYTES}, 16 MiB)")
    parser.add_argument("--strict", action="store_true", help="exit 1 if any line was refused")
    parser.set_defaults(func=run)


@dataclass
class Tally:
    """Records sent per topic and refusals per reason, for the summary."""

    topics: Counter[str] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)

    def print(self, bootstrap: str | None) -> None:
        table = Table(title="Records sent", show_edge=False)
        table.add_column("topic")
        table.add_column("records", justify="right")
        for topic, records in sorted(self.topics.items()):
            table.add_row(topic, str(records))
        console.print(table)
        if self.refusals:
            refused = Table(title="Refused lines", show_edge=False)
            refused.add_column("reason")
            refused.add_column("lines", justify="right")
            for reason, lines in sorted(self.refusals.items()):
                refused.add_row(reason, str(lines))
            console.print(refused)
        console.print(f"Sent {count(sum(self.topics.values()), 'record')} to {bootstrap}; "
                      f"{count(sum(self.refusals.values()), 'line')} refused.")


class EventLogSender:
    """Turns routed lines into Kafka records: creates each realm's topics on first sight, checks each record
    against its topic's size limit, and replaces what cannot be sent with its rejection record."""

    def __init__(self, settings: Settings, realm: str, max_message_bytes: int) -> None:
        self.settings = settings
        self.realm = realm
        self.max_message_bytes = max_message_bytes
        self.limits: dict[str, int] = {}
        self.realms: set[str] = set()
        self.origins: dict[int, tuple[str, int]] = {}
        """Index in the sent sequence -> (topic, offset) of each routed record, to name a late refusal."""
        self.tally = Tally()

    def records(self, routed: Iterable[tuple[ProducedRecord, int] | OutputRecord]) -> Iterator[ProducedRecord]:
        """The records to send, in line order."""
        index = 0
        for item in routed:
            if isinstance(item, OutputRecord):
                record = self.refuse(item)
            else:
                record, offset = item
                realm = record.topic.rpartition(".")[0]
                if not realm_is_valid(realm):
                    error = IngestError(INVALID_TOPIC, f"{realm!r} cannot name Kafka topics ([A-Za-z0-9._-], <= 249)")
                    record = self.refuse(self.rejection(self.realm, record, offset, error))
                else:
                    self.ensure(realm)
                    limit = min(self.limits[record.topic], self.max_message_bytes)
                    if record_fits(record.key, record.value, record.headers, limit):
                        self.origins[index] = (record.topic, offset)
                    else:
                        size = len(record.key or b"") + len(record.value)
                        error = IngestError(TOO_LARGE, f"{size} bytes over the topic's limit of {limit} bytes")
                        record = self.refuse(self.rejection(realm, record, offset, error))
            index += 1
            yield record

    def refuse(self, rejected: OutputRecord) -> ProducedRecord:
        """A rejection as the record to send, counted by reason."""
        self.ensure(rejected.topic.rpartition(".")[0])
        self.tally.refusals[str(rejected.value["reason"])] += 1
        return ProducedRecord.from_output(rejected)

    def ensure(self, realm: str) -> None:
        if realm not in self.realms:
            partitions = self.settings.views_partitions
            self.limits |= ensure_realm_topics(
                self.settings, realm, partitions=partitions, max_message_bytes=self.max_message_bytes
            )
            self.realms.add(realm)

    @staticmethod
    def rejection(realm: str, record: ProducedRecord, offset: int, error: IngestError) -> OutputRecord:
        key = (record.key or b"").decode("utf-8", errors="replace")
        return rejection(realm, key, f"{record.topic}@{offset}", error)


def run(args: argparse.Namespace) -> int:
    if str(args.event_log) != "-" and not args.event_log.is_file():
        raise UsageError(f"no event log at {args.event_log}")
    settings, _ = ensure_kafka(settings_from(args))
    realm = args.realm or default_realm(settings)
    sender = EventLogSender(settings, realm, args.max_message_bytes)
    with ExitStack() as stack:
        source: BinaryIO = sys.stdin.buffer if str(args.event_log) == "-" else stack.enter_context(args.event_log.open("rb"))
        total = None if str(args.event_log) == "-" else args.event_log.stat().st_size
        progress = stack.enter_context(Progress(
            TextColumn("producing"), BarColumn(), DownloadColumn(), TextColumn("{task.fields[lines]} lines"),
            TimeElapsedColumn(), console=console, transient=True, disable=not console.is_terminal,
        ))
        task = progress.add_task("produce", total=total, lines=0)

        read = [0]

        def lines() -> Iterator[bytes]:
            for number, raw in enumerate(source, 1):
                read[0] = number
                progress.update(task, advance=len(raw), lines=number)
                yield raw

        records = sender.records(route_event_log(lines(), LineRouter(realm)))
        try:
            report = send(settings, records, max_message_bytes=args.max_message_bytes)
        except SendInterrupted as stopped:
            raise Interrupted(f"interrupted after reading {read[0]} lines: {sum(stopped.report.delivered.values())} "
                              f"records delivered to {settings.kafka_bootstrap} of {stopped.sent} sent"
                              + (f", {stopped.undelivered} not confirmed" if stopped.undelivered else "")
                              + "; producing the log again sends the delivered ones twice") from None
    sender.tally.topics.update(report.delivered)
    late = []
    for refusal in report.refused:  # refused by Kafka itself despite the size check (e.g. a lower broker limit)
        origin = sender.origins.get(refusal.index)
        if origin is None:  # a rejection record itself was refused: nowhere left to put it
            raise KafkaIOError(refusal.record.topic, f"a rejection record was refused: {refusal.detail}")
        topic, offset = origin
        error = IngestError(refusal.reason, refusal.detail)
        late.append(sender.refuse(EventLogSender.rejection(topic.rpartition(".")[0], refusal.record, offset, error)))
    if late:
        produce(settings, late)
        sender.tally.topics.update(record.topic for record in late)
    sender.tally.print(settings.kafka_bootstrap)
    return 1 if args.strict and sender.tally.refusals else 0
