"""`pubsub status`'s reading of a job's metrics endpoint (a real HTTP server) and of a checkpoint's offsets."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from producers.readers.realm_watch import PovUse, RealmFacts, TailReadError
from pubsub_core.stages.edge import ConsumerRecord
from pubsub_core.stages.stall import WaitingStatus
from settings.settings import Settings
from streaming.metrics import JobMetrics
from supervise.errors import StatusUnavailable
from supervise.kafka_broker import free_port
from supervise.status import RealmStatus, Stall, checkpoint_offsets, from_metrics, from_topics, open_stall, render

PROGRESS = {"numInputRows": 3, "durationMs": {"triggerExecution": 400},
            "sources": [{"endOffset": json.dumps({"r.blocks": {"0": 8}, "q.blocks": {"0": 1}}),
                         "latestOffset": json.dumps({"r.blocks": {"0": 10}, "q.blocks": {"0": 4}})}],
            "stateOperators": [{"memoryUsedBytes": 2 * 2**20, "numRowsTotal": 1}]}


def test_the_status_of_one_realm_is_read_from_a_running_jobs_endpoint(tmp_path: Path) -> None:
    port = free_port()
    metrics = JobMetrics(dataclasses.replace(Settings(), metrics_port=port, checkpoint_dir=tmp_path))
    url = metrics.start()
    try:
        metrics.observe("relay", PROGRESS, {"r": 7, "q": 1}, {"r.seals": 7, "q.seals": 1})
        metrics.take_facts("r", RealmFacts(author_height=9, pov={3000: PovUse(7, 120, 1000)}))
        metrics.take_facts("q", RealmFacts(author_height=1, pov={3001: PovUse(1, 5, 10)}))
        status = from_metrics(url, "r")
    finally:
        metrics.close()
    assert (status.relay_height, status.author_height, status.blocks_waiting) == (7, 9, 2)
    assert status.lag == {("r.blocks", 0): 2}  # the other realm's partition is not r's
    assert status.records_out == {"r.seals": 7}
    assert status.pov == {3000: PovUse(7, 120, 1000)}
    assert status.batch_seconds == {"relay": 0.4} and status.state_bytes == {"relay": 2 * 2**20}
    lines = render(status)
    assert lines[1:4] == ["relay height      7", "author height     9", "blocks waiting    2"]
    assert "PoV 3000          120 of 1,000 bytes (12.0%) at block 7" in lines
    assert "state memory      relay 2.0 MiB" in lines


def test_no_endpoint_is_a_typed_error_naming_where() -> None:
    url = f"http://127.0.0.1:{free_port()}/metrics"
    with pytest.raises(StatusUnavailable, match=url):
        from_metrics(url, "r")


@pytest.mark.slow
def test_topics_that_cannot_be_read_are_a_typed_error_naming_the_broker_and_the_topics() -> None:
    bootstrap = f"127.0.0.1:{free_port()}"
    with pytest.raises(StatusUnavailable, match=f"Kafka at {bootstrap}") as raised:
        from_topics(Settings(kafka_bootstrap=bootstrap), "r", None)
    cause = raised.value.__cause__
    assert isinstance(cause, TailReadError)
    assert cause.topics == ("r.blocks", "r.seals", "r.pov")


def test_the_lag_without_a_job_comes_from_the_newest_batch_in_the_checkpoint(tmp_path: Path) -> None:
    offsets = tmp_path / "relay" / "offsets"
    offsets.mkdir(parents=True)
    (offsets / "3").write_text('v1\n{"batchWatermarkMs":0}\n{"r.upward":{"0":2,"1":5}}\n')
    (offsets / "10").write_text('v1\n{"batchWatermarkMs":0}\n{"r.upward":{"0":9,"1":6},"r.blocks":{"0":4}}\n')
    (offsets / ".10.crc").write_text("x")
    assert checkpoint_offsets(tmp_path / "relay") == {"r.upward": {"0": 9, "1": 6}, "r.blocks": {"0": 4}}
    assert checkpoint_offsets(tmp_path / "subscribers") == {}


def test_unknown_facts_are_said_to_be_unknown() -> None:
    assert render(RealmStatus("r", "the topics"))[1:] == ["relay height      unknown", "author height     unknown",
                                                          "blocks waiting    unknown"]


def test_a_stalled_realm_is_named_first_from_the_endpoint_with_the_command_that_undoes_it(tmp_path: Path) -> None:
    port = free_port()
    metrics = JobMetrics(dataclasses.replace(Settings(), metrics_port=port, checkpoint_dir=tmp_path))
    url = metrics.start()
    try:
        waiting = WaitingStatus(3, "r.blocks@2", 3, ("upward/1000/1", "extrinsics/root/4"), True, 5, 1200)
        metrics.waiting("r", waiting, 25.4)
        metrics.waiting("q", WaitingStatus(8, "q.blocks@9", 1, ("upward/2000/7",), False, 2, 10), 1.0)
        stalled = from_metrics(url, "r")
        other = from_metrics(url, "q")
        metrics.waiting("r", None, 0.0)  # it moves again: no stall, no missing position left behind
        moved = from_metrics(url, "r")
    finally:
        metrics.close()
    assert stalled.stall == Stall(3, "r.blocks@2", True, ("extrinsics/root/4", "upward/1000/1"),
                                  "for 25 s (the job's clock)")
    assert other.stall is not None and not other.stall.stalled and other.stall.missing == ("upward/2000/7",)
    assert moved.stall is None
    lines = render(stalled, "127.0.0.1:9092")
    assert lines[1] == ("STALLED           block 3 (r.blocks@2) misses extrinsics/root/4, upward/1000/1, "
                        "for 25 s (the job's clock)")
    assert lines[2] == "undo with         pubsub author void --bootstrap 127.0.0.1:9092 --realm r --block 3 --yes"
    assert render(other)[1].startswith("waiting           block 8 (q.blocks@9) misses upward/2000/7")
    assert not any("undo" in line for line in render(other))  # waiting is not stalled: nothing to undo
    assert not any(line.startswith(("STALLED", "waiting")) for line in render(moved))


def health(offset: int, body: dict[str, object], key: bytes = b"r", timestamp: int = 1_790_000_000_000) -> ConsumerRecord:
    return ConsumerRecord("r.health", 0, offset, key, json.dumps({"realm": "r", **body}).encode(), (),
                          timestamp + offset * 1000)


STALLED = {"kind": "Stalled", "block": 3, "block_record": "r.blocks@2", "after_blocks": 3,
           "awaits": [{"stream": "upward", "origin": "1000", "first": 1, "last": 1},
                      {"stream": "horizontal", "origin": "2000", "first": 4, "last": 6}]}


def test_a_stall_is_read_from_the_open_stalled_record_of_the_health_topic() -> None:
    stall = open_stall("r", [health(0, STALLED)])
    assert stall == Stall(3, "r.blocks@2", True, ("upward/1000/1", "horizontal/2000/4..6"),
                          "since 2026-09-21 14:13:20 UTC (its Stalled record)", "waits for")
    assert render(RealmStatus("r", "the topics", stall=stall))[1:3] == [
        "STALLED           block 3 (r.blocks@2) waits for upward/1000/1, horizontal/2000/4..6, "
        "since 2026-09-21 14:13:20 UTC (its Stalled record)",
        "undo with         pubsub author void --realm r --block 3 --yes"]
    resumed = {"kind": "Resumed", "block": 3, "block_record": "r.blocks@2"}
    assert open_stall("r", [health(0, STALLED), health(1, resumed)]) is None
    # Anyone may write to the topic: another realm's key, a body that is not a health record, are not a stall.
    assert open_stall("r", [health(0, STALLED, key=b"q"), health(1, {"kind": "Stalled", "block": 3})]) is None
