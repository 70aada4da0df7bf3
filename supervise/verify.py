"""`pubsub verify`: run an event log through Kafka and the job, and compare every output topic with the simulator.

The log is produced to the realms' topics (fresh: on the embedded broker they are reset first; on an external
cluster they must not exist yet, or ``reset_topics`` deletes them), the job drains them (available-now, from a
fresh checkpoint), and each output topic is read back and compared, by record id, with what ``pubsub simulate``
writes for the same log. A stream never ends, so the simulator's end-of-input rejections (records no block
included, blocks that never got their records) are not expected from the job; they are counted apart.
"""

from __future__ import annotations

import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from producers.transport.kafka_io import produce, read_outputs, route_event_log
from producers.transport.topics import admin_client, ensure_realm_topics, realm_topic_names
from pubsub_core.simulator import Simulator
from pubsub_core.stages import LineParser, OutputRecord
from pubsub_core.stages.edge import ProducerRecord, to_kafka
from pubsub_core.stages.topics import OUTPUTS, realm_of, topic
from settings.protocol import load_protocol_config
from settings.settings import Settings
from streaming.job import BatchReport, JobSummary, run_job
from supervise.errors import BrokerError, VerifyStopped
from supervise.kafka_broker import delete_topics, ensure_kafka

__all__ = ["TopicComparison", "VerifyResult", "compare", "expected_outputs", "fresh_topics",
           "verify_log"]


@dataclass(frozen=True)
class TopicComparison:
    """One output topic: how the job's records compare with the simulator's, by id."""

    topic: str
    expected: int
    matched: int
    missing: int
    extra: int
    differing: int
    duplicates: int
    examples: tuple[str, ...] = ()
    reading: int = 0
    """``Stalled`` and ``Resumed`` health records on one side only: they describe how Stage R read the topics
    (docs/pipeline.md, "Health records"), which a rate limit on the job's batches changes; not a difference."""

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.differing)


@dataclass(frozen=True)
class VerifyResult:
    topics: tuple[TopicComparison, ...]
    pending_at_end: int
    job: JobSummary | None

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.topics)


def compare(expected: Iterable[str], actual: Iterable[str], topics: Sequence[str]) -> list[TopicComparison]:
    """Per topic: ``expected``/``actual`` are canonical output lines (``{"id", "key", "topic", "value"}``).
    A duplicate is a byte-identical extra copy (the job's output is at-least-once); any other copy differs. A
    ``Stalled`` or ``Resumed`` health record on one side only counts as ``reading``, not as missing or extra."""
    import json

    want: dict[str, dict[str, str]] = defaultdict(dict)
    for line in expected:
        body = json.loads(line)
        want[body["topic"]][str(body["id"])] = line
    got: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for line in actual:
        body = json.loads(line)
        got[body["topic"]][str(body["id"])].append(line)
    result = []
    for name in topics:
        w, g = want.get(name, {}), got.get(name, {})
        matched = sum(1 for i, line in w.items() if i in g and set(g[i]) == {line})
        differing = [i for i, line in w.items() if i in g and set(g[i]) != {line}]
        missing = [i for i in w if i not in g and not _reading_dependent(w[i])]
        extra = [i for i in g if i not in w and not _reading_dependent(g[i][0])]
        reading = sum(1 for i in w if i not in g) + sum(1 for i in g if i not in w) - len(missing) - len(extra)
        duplicates = sum(len(copies) - 1 for i, copies in g.items() if len(set(copies)) == 1)
        examples = tuple(f"missing {i}" for i in missing[:2]) + tuple(f"extra {i}" for i in extra[:2]) + tuple(
            f"differs {i}" for i in differing[:2])
        result.append(TopicComparison(name, len(w), matched, len(missing), len(extra), len(differing), duplicates,
                                      examples, reading))
    return result


def _reading_dependent(line: str) -> bool:
    """Whether an output line is a ``Stalled`` or ``Resumed`` health record."""
    import json

    body = json.loads(line)
    value = body.get("value")
    return (str(body.get("topic", "")).endswith(".health") and isinstance(value, dict)
            and value.get("kind") in ("Stalled", "Resumed"))


def expected_outputs(lines: Sequence[bytes], simulator: Simulator) -> tuple[list[OutputRecord], int]:
    """The simulator's records for the log, and how many end-of-input rejections it would add."""
    out: list[OutputRecord] = []
    for line in lines:
        out += simulator.feed_line(line)
    return out, len(simulator.finish())


def _records(lines: Sequence[bytes], default_realm: str) -> tuple[list[ProducerRecord], set[str]]:
    """The Kafka records of a log (what `pubsub produce` sends): routed lines, and the rejections of lines that
    cannot be routed; and the realms they name."""
    records: list[ProducerRecord] = []
    for item in route_event_log(lines, LineParser(default_realm)):
        records.append(to_kafka(item) if isinstance(item, OutputRecord) else item[0])
    return records, {realm_of(r.topic) for r in records}


def produce_log(lines: Sequence[bytes], settings: Settings, reset_topics: bool = False) -> list[str]:
    """Produce an event log to fresh topics (as `pubsub produce` would); returns the realms it names.
    ``settings`` must point at a serving cluster."""
    records, realms = fresh_topics(lines, settings, reset_topics)
    produce(settings, records)
    return realms


def fresh_topics(lines: Sequence[bytes], settings: Settings,
                 reset_topics: bool = False) -> tuple[list[ProducerRecord], list[str]]:
    """``produce_log`` up to producing: the log's records and realms, their topics made afresh and empty (so that
    a live job can be started on them before the log arrives)."""
    config = load_protocol_config(settings.protocol_config)
    records, realms = _records(lines, config.default_realm)
    every = [t for realm in sorted(realms) for t in realm_topic_names(realm)]
    existing = set(admin_client(settings).list_topics(timeout=10).topics) & set(every)
    if existing and not reset_topics:
        raise BrokerError(f"topics {sorted(existing)[:3]}... exist already on {settings.kafka_bootstrap}: "
                          "verify needs fresh topics (pass --reset-topics to delete them)")
    delete_topics(settings, sorted(existing))
    for realm in sorted(realms):
        ensure_realm_topics(settings, realm, partitions=settings.views_partitions)
    return records, sorted(realms)


def check_outputs(lines: Sequence[bytes], settings: Settings, realms: Sequence[str],
                  job: JobSummary | None = None) -> VerifyResult:
    """Read every output topic of ``realms`` and compare it with the simulator on ``lines``."""
    expected, pending = expected_outputs(lines, Simulator(load_protocol_config(settings.protocol_config)))
    names = [topic(realm, kind) for realm in realms for kind in OUTPUTS]
    actual = read_outputs(settings, names)
    return VerifyResult(tuple(compare([r.to_line() for r in expected], actual, names)), pending, job)


def verify_log(
    lines: Sequence[bytes],
    settings: Settings,
    reset_topics: bool = False,
    on_batch: Callable[[BatchReport], None] | None = None,
    checkpoint: Path | None = None,
) -> VerifyResult:
    """Produce ``lines`` to fresh topics, run the job to the end of them (from ``checkpoint``, default a fresh
    temporary folder), and compare each output topic. On the embedded broker (no bootstrap configured) the log's
    topics are always reset."""
    settings, broker = ensure_kafka(settings)
    realms = produce_log(lines, settings, reset_topics or broker is not None)
    with tempfile.TemporaryDirectory(prefix="pubsub-verify-") as scratch:
        # only the log's realms: other realms on the same cluster are not this check's business (nor its cost)
        job_settings = replace(settings, checkpoint_dir=checkpoint or Path(scratch) / "checkpoint",
                               realms=",".join(realms))
        summary = run_job(job_settings, available_now=True, on_batch=on_batch)
    if summary.stopped_by is not None:  # the job ended before the end of the log: there is nothing to compare
        raise VerifyStopped(summary.stopped_by, summary.batches)
    return check_outputs(lines, settings, realms, summary)


def summary_counts(result: VerifyResult) -> Counter[str]:
    """Totals over every topic (for a one-line summary)."""
    totals: Counter[str] = Counter()
    for t in result.topics:
        totals.update({"expected": t.expected, "matched": t.matched, "missing": t.missing, "extra": t.extra,
                       "differing": t.differing, "duplicates": t.duplicates})
    return totals
