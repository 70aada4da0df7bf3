"""Untrusted transport through Kafka and the job: forged, foreign and replayed copies of genuine records and blocks, and
lines of hostile bytes, end as typed rejections; every other output is the clean log's, and the job equals the
simulator on the attacked log (so the simulator tests' "nothing else changed" holds for the job too)."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import pytest

from producers.transport.kafka_io import read_outputs
from settings.settings import Settings
from supervise.verify import verify_log
from tests.integration.test_pipeline import assert_equal
from tests.simulator.test_forgery import added, attacked, clean_outputs, settled

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

HOSTILE_LINES = [
    b"\xff\xfe not utf-8 at all",
    b"[" * 5000 + b"]" * 5000,
    b'{"topic": "polkadot.upward", "key": "2000", "value": {"stream": "upward", "origin": "2000", '
    b'"position": 1e400, "value": "0x00"}}',
    b'{"topic": "polkadot.upward", "key": "2000", "value": {"stream": "upward", "origin": "2000", '
    b'"position": 123456789012345678901234567890, "value": "0x00"}}',
    b'{"topic": "polkadot.extrinsics", "key": "root", "value": {"stream": "extrinsics", "origin": "root", '
    b'"position": -3, "value": "0x00"}}',
    b'{"topic": "polkadot.blocks", "key": "author", "value": "not json at all"}',
    b'{"topic": "polkadot.horizontal", "key": "2000", "value": {"stream": "horizontal", "origin": "2000", '
    b'"position": 0.5, "value": "0x00"}}',
    b'{"topic": "polkadot.genesis", "key": "polkadot", "value": {"registry": [1, 2, 3]}}',
]


@pytest.mark.parametrize(("stream", "where"), [("upward", "before"), ("horizontal", "between"),
                                               ("extrinsics", "after"), ("blocks", "before")])
def test_hostile_copies_through_the_job_change_nothing_but_their_rejections(
        kafka_settings: Settings, tmp_path: Path, stream: str, where: str) -> None:
    lines, expected_refusals = attacked(stream, where, seed=1)
    result = verify_log([line.encode() for line in lines], dataclasses.replace(kafka_settings, max_offsets_per_trigger=9),
                        reset_topics=True, checkpoint=tmp_path / "checkpoint")
    assert_equal(result)
    outputs = read_outputs(kafka_settings, [t.topic for t in result.topics])
    kept, refused = added(outputs)
    assert refused == expected_refusals
    # Stalled/Resumed health records describe how the job's batches read the topics (9 offsets a trigger here)
    assert Counter(settled(kept)) == Counter(settled(added(list(clean_outputs()))[0]))


def test_hostile_lines_through_produce_and_the_job_are_typed_rejections(kafka_settings: Settings,
                                                                        tmp_path: Path) -> None:
    clean = [line.encode() for line in clean_outputs_log()]
    lines = clean[:3] + HOSTILE_LINES + clean[3:]
    result = verify_log(lines, kafka_settings, reset_topics=True, checkpoint=tmp_path / "checkpoint")
    assert_equal(result)
    rejected = [json.loads(line) for line in read_outputs(kafka_settings, ["polkadot.rejected"])]
    hostile = [r for r in rejected if r["id"].startswith("ingest/")]
    assert len(hostile) == len(HOSTILE_LINES)
    assert all(r["value"]["status"] == "rejected" and r["value"]["reason"] and len(r["value"]["detail"]) <= 300
               for r in hostile)


def clean_outputs_log() -> list[str]:
    from tests.simulator.test_forgery import clean_log

    return list(clean_log())
