"""A job started behind a produced log, reading it ten records a batch, on real Kafka and real Spark: its blocks run
ahead of the records they include, so Stage R's first waiting block passes ``stall_after_blocks`` while those
records sit unread on the topics. That is catching up: the batches say ``waiting`` (and how many records are
unread), never ``STALLED``; no WARNING; no ``Stalled`` record on the realm's health topic; and the outputs equal
the simulator's."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import pytest

from cli.commands.demo import demo_workload
from producers.transport.kafka_io import produce, read_topic
from producers.workload import generate
from streaming.job import BatchReport, run_job
from settings.settings import Settings
from supervise.verify import check_outputs, fresh_topics

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

SPEC = demo_workload(realm="behind")
"""The demo's workload (`pubsub demo`), in its own realm."""


def test_a_job_behind_its_input_is_catching_up_never_stalled(kafka_settings: Settings, tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    lines = [line.encode() for block in generate(SPEC) for line in block]
    records, realms = fresh_topics(lines, kafka_settings, reset_topics=True)
    assert "behind" in realms  # (its bad records include some for the default realm)
    produce(kafka_settings, records)
    settings = dataclasses.replace(kafka_settings, checkpoint_dir=tmp_path / "checkpoint", realms="behind",
                                   max_offsets_per_trigger=10)
    reports: list[BatchReport] = []
    with caplog.at_level(logging.INFO, logger="streaming.job"):
        summary = run_job(settings, available_now=True, on_batch=reports.append)
    lines_shown = [r.line() for r in reports]
    assert not [line for line in lines_shown if "STALLED" in line]
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    health = [json.loads(r.value or b"") for r in read_topic(kafka_settings, "behind.health")]
    assert not [h for h in health if h["kind"] == "Stalled"]
    held_back = [line for line in lines_shown if "(catching up:" in line]
    assert held_back, "no batch had a block past the threshold while its records were unread: the case is not met"
    assert "behind waiting: block" in held_back[0]
    assert summary.waiting == {} and summary.heights == {"behind": 16}
    result = check_outputs(lines, kafka_settings, ["behind"])
    assert not [t for t in result.topics if not t.ok], result.topics
    assert sum(t.matched for t in result.topics) == sum(t.expected for t in result.topics) > 0
