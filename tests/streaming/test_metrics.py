"""The job's gauges from progress entries and topic tails, read back in Prometheus's text format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest

from producers.readers.realm_watch import PovUse, RealmFacts
from settings.errors import SettingsError
from settings.settings import Settings, load_settings
from streaming.metrics import JobMetrics, checkpoint_bytes, partition_lag

PROGRESS: dict[str, Any] = {
    "batchId": 7,
    "numInputRows": 12,
    "durationMs": {"triggerExecution": 1250, "addBatch": 900},
    "sources": [{"endOffset": json.dumps({"r.upward": {"0": 40, "1": 7}, "r.blocks": {"0": 9}}),
                 "latestOffset": json.dumps({"r.upward": {"0": 45, "1": 7}, "r.blocks": {"0": 11}})}],
    "stateOperators": [
        {"memoryUsedBytes": 1000, "numRowsTotal": 3,
         "customMetrics": {"rocksdbSstFileSize": 4096, "rocksdbZipFileBytesUncompressed": 500}},
        {"memoryUsedBytes": 24, "numRowsTotal": 2,
         "customMetrics": {"rocksdbSstFileSize": 100, "rocksdbZipFileBytesUncompressed": 20}},
    ],
}


def _text(metrics: JobMetrics) -> set[str]:
    return {line for line in generate_latest(metrics.registry).decode().splitlines() if not line.startswith("#")}


def test_lag_is_per_partition_between_the_batch_end_and_the_newest_offset() -> None:
    assert partition_lag(PROGRESS["sources"]) == {("r.upward", 0): 5, ("r.upward", 1): 0, ("r.blocks", 0): 2}


def test_lag_reads_offsets_already_parsed_and_ignores_what_is_not_offsets() -> None:
    sources: list[dict[str, Any]] = [{"endOffset": {"t": {"0": 1}}, "latestOffset": {"t": {"0": 4}}},
                                     {"endOffset": "not json"}]
    assert partition_lag(sources) == {("t", 0): 3}


def test_a_batch_feeds_lag_records_out_batch_time_and_state_gauges() -> None:
    metrics = JobMetrics(Settings())
    metrics.observe("relay", PROGRESS, {"r": 9}, {"r.events": 4, "r.seals": 2})
    metrics.observe("relay", PROGRESS, {"r": 8}, {"r.events": 1})
    lines = _text(metrics)
    assert {
        'pubsub_relay_height{realm="r"} 9.0',
        'pubsub_input_lag_records{partition="0",query="relay",topic="r.upward"} 5.0',
        'pubsub_input_lag_records{partition="0",query="relay",topic="r.blocks"} 2.0',
        'pubsub_records_out_total{topic="r.events"} 5.0',
        'pubsub_records_out_total{topic="r.seals"} 2.0',
        'pubsub_input_rows_total{query="relay"} 24.0',
        'pubsub_batches_total{query="relay"} 2.0',
        'pubsub_batch_duration_seconds{query="relay"} 1.25',
        'pubsub_state_memory_bytes{query="relay"} 1024.0',
        'pubsub_state_rows{query="relay"} 5.0',
        'pubsub_state_sst_bytes{query="relay"} 4196.0',
        'pubsub_state_snapshot_bytes{query="relay"} 520.0',
    } <= lines


def test_topic_tails_give_the_author_height_blocks_waiting_and_pov_use() -> None:
    metrics = JobMetrics(Settings())
    metrics.observe("relay", PROGRESS, {"r": 9}, {})
    metrics.take_facts("r", RealmFacts(author_height=12, relay_height=7, pov={3000: PovUse(9, 1500, 4456448)}))
    lines = _text(metrics)
    assert {
        'pubsub_author_height{realm="r"} 12.0',
        'pubsub_relay_height{realm="r"} 9.0',  # the newer of the two sources
        'pubsub_blocks_waiting{realm="r"} 3.0',
        'pubsub_pov_used_bytes{realm="r",subscriber="3000"} 1500.0',
        'pubsub_pov_budget_bytes{realm="r",subscriber="3000"} 4.456448e+06',
        'pubsub_pov_block{realm="r",subscriber="3000"} 9.0',
    } <= lines


def test_a_batch_that_seals_blocks_lowers_blocks_waiting_before_the_next_read_of_the_tails() -> None:
    metrics = JobMetrics(Settings())
    metrics.take_facts("r", RealmFacts(author_height=12, relay_height=2, pov={}))
    assert 'pubsub_blocks_waiting{realm="r"} 10.0' in _text(metrics)
    metrics.observe("relay", PROGRESS, {"r": 12}, {})  # the batch sealed the author's newest block
    assert {'pubsub_relay_height{realm="r"} 12.0', 'pubsub_blocks_waiting{realm="r"} 0.0'} <= _text(metrics)


def test_facts_come_from_genuine_records_and_skip_anything_else() -> None:
    facts = RealmFacts()
    facts.take("blocks", json.dumps({"position": 4}).encode())
    facts.take("blocks", b"garbage")
    facts.take("seals", json.dumps({"number": 3}).encode())
    facts.take("pov", json.dumps({"relay_block_number": 3, "subscriber": 3001, "consumed_proof_size": 80,
                                  "budget": {"pubsub": 1000}}).encode())
    facts.take("pov", json.dumps({"relay_block_number": 2, "subscriber": 3001, "consumed_proof_size": 5,
                                  "budget": {"pubsub": 1000}}).encode())  # older: does not replace block 3's
    facts.take("pov", json.dumps({"subscriber": "x"}).encode())
    assert (facts.author_height, facts.relay_height, facts.blocks_waiting) == (5, 3, 2)
    assert facts.pov == {3001: PovUse(3, 80, 1000)}


def test_checkpoint_bytes_counts_allocated_blocks(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"x" * 10_000)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b").write_bytes(b"y" * 5000)
    assert checkpoint_bytes(tmp_path) >= 15_000
    assert checkpoint_bytes(tmp_path / "missing") == 0


@pytest.mark.parametrize(("overrides", "name"), [
    ({"state_reopen": "sometimes"}, "state_reopen"),
    ({"state_reopen_minutes": 0}, "state_reopen_minutes"),
    ({"metrics_port": 70000}, "metrics_port"),
])
def test_bad_remedy_and_metrics_settings_are_typed_errors(overrides: dict[str, object], name: str) -> None:
    with pytest.raises(SettingsError, match=name):
        load_settings(overrides=overrides, environ={})


def test_metrics_and_remedy_settings_come_from_the_environment() -> None:
    settings = load_settings(environ={"PUBSUB_METRICS_PORT": "9464", "PUBSUB_STATE_REOPEN": "never",
                                      "PUBSUB_STATE_REOPEN_MINUTES": "5"})
    assert (settings.metrics_port, settings.state_reopen, settings.state_reopen_minutes) == (9464, "never", 5.0)
