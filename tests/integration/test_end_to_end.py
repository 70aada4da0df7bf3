"""Kafka -> Spark (transformWithState on RocksDB) -> Kafka, on the real broker and a real local Spark session."""

from __future__ import annotations

from collections import Counter

import pytest
from pyspark.sql import SparkSession

from producers.kafka_io import ProducedRecord, produce, read_topic, synthetic_records
from streaming.job import build_query
from streaming.settings import Settings
from tests.integration.helpers import as_outputs, expected_outputs

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def _run_available_now(spark: SparkSession, settings: Settings) -> int:
    query = build_query(spark, settings, available_now=True)
    try:
        query.awaitTermination(timeout=300)
        assert query.exception() is None
    finally:
        query.stop()
    return sum(int(p["numInputRows"]) for p in query.recentProgress)


def test_every_input_gives_one_deterministic_output_and_state_continues_across_runs(
    spark: SparkSession, job_settings: Settings
) -> None:
    first = list(synthetic_records(job_settings.input, 150, keys=6))
    bad = [ProducedRecord(job_settings.input, None, b'{"n": 1}'), ProducedRecord(job_settings.input, b"key-1", b"[1]")]
    produce(job_settings, first + bad)
    assert _run_available_now(spark, job_settings) == 152

    produce(job_settings, synthetic_records(job_settings.input, 90, keys=6, start=150))
    assert _run_available_now(spark, job_settings) == 90

    output = as_outputs(read_topic(job_settings, job_settings.output))
    rejected = as_outputs(read_topic(job_settings, job_settings.rejected))
    expected = expected_outputs(job_settings)
    # Same records, same bytes as the plain-Python fold over the input topic, and no duplicates.
    assert Counter(output + rejected) == Counter(expected)
    assert len(output) == 240 and len(rejected) == 2
    assert {r.value.split('"reason":')[1] for r in rejected} == {
        '"the record has no key"}',
        '"the value is a JSON list, not an object"}',
    }
    # State continued across the two runs: each key's sequence numbers are exactly 1..40.
    import json

    seqs: dict[str, list[int]] = {}
    for record in output:
        body = json.loads(record.value)
        seqs.setdefault(body["key"], []).append(body["seq"])
    assert {key: sorted(values) for key, values in seqs.items()} == {
        f"key-{k}": list(range(1, 41)) for k in range(6)
    }
