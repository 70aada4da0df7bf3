"""The job's progress line per micro-batch: what it shows, and that the latency benchmark still reads it."""

from __future__ import annotations

import logging

import pytest

from benchmarks.latency_bench import _BATCH
from pubsub_core.stages.records import OutputRecord
from pubsub_core.stages.stall import Declared, WaitingStatus
from streaming.job import BatchReport, JobSummary, RealmWaits, _report, unread_records
from streaming.operators import waiting_key


def _progress(duration_ms: dict[str, int], commit_ms: int) -> dict[str, object]:
    """A query progress as Spark's ``recentProgress`` gives it (the fields ``_report`` reads)."""
    return {"batchId": 7, "numInputRows": 12, "durationMs": duration_ms, "sources": [],
            "stateOperators": [{"commitTimeMs": commit_ms}], "observedMetrics": {}}


def test_the_line_names_the_slow_phases_longest_first() -> None:
    report = _report("relay", _progress({"triggerExecution": 900, "addBatch": 620, "queryPlanning": 140,
                                         "walCommit": 40, "latestOffset": 99}, commit_ms=180))
    line = report.line()
    assert line.startswith("relay batch 7: 12 rows in -> nothing")
    assert line.endswith(" | addBatch 0.6s, stateCommit 0.2s, queryPlanning 0.1s | 0.9s")
    match = _BATCH.match(line)
    assert match is not None and match.group(4) == "0.9"


def test_a_fast_batch_shows_no_phases() -> None:
    report = BatchReport("subscribers", 3, 5, {"updates": 2}, {}, 0, 0.3, {"addBatch": 0.09})
    assert report.line() == "subscribers batch 3: 5 rows in -> updates 2 | lag 0 | 0.3s"


def _stalled_progress(waiting: list[str]) -> dict[str, object]:
    progress = _progress({"triggerExecution": 400}, commit_ms=0)
    progress["observedMetrics"] = {"relay": {"seals": 0, "heights": ["polkadot:2"], "waiting": waiting}}
    return progress


STATUS = WaitingStatus(3, "polkadot.blocks@2", 4, ("upward/1000/1",), True, 5, 1200)


def test_a_stalled_realm_is_on_the_line_with_what_it_misses_and_for_how_long(caplog: pytest.LogCaptureFixture) -> None:
    clock = [100.0]
    waits = RealmWaits(lambda: clock[0])
    summary = JobSummary()
    report = _report("relay", _stalled_progress([waiting_key("polkadot", STATUS)]))
    assert report.waiting == {"polkadot": STATUS}
    with caplog.at_level(logging.INFO, logger="streaming.job"):
        first = waits.seen(report, summary)
        clock[0] = 107.4
        later = waits.seen(report, summary)
    assert first.line().startswith("relay batch 7: 12 rows in -> nothing | relay height polkadot 2 | polkadot "
                                   "STALLED: block 3 (polkadot.blocks@2) misses upward/1000/1; 4 later blocks queued;"
                                   " holding 5 records and blocks, 1200 bytes for 0s")
    assert " for 7s | 0.4s" in later.line() and _BATCH.match(later.line())
    assert summary.waiting == {"polkadot": STATUS}
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "realm polkadot STALLED: block 3" in warnings[0].getMessage()
    with caplog.at_level(logging.INFO, logger="streaming.job"):
        moved = waits.seen(_report("relay", _stalled_progress([waiting_key("polkadot", None)])), summary)
    assert "STALLED" not in moved.line() and summary.waiting == {}
    assert caplog.records[-1].levelno == logging.INFO and "moves again" in caplog.records[-1].getMessage()


def test_a_block_waiting_short_of_the_threshold_is_shown_but_not_warned(caplog: pytest.LogCaptureFixture) -> None:
    waiting = WaitingStatus(3, "polkadot.blocks@2", 1, ("upward/1000/1",), False, 2, 300)
    with caplog.at_level(logging.INFO, logger="streaming.job"):
        report = RealmWaits().seen(_report("relay", _stalled_progress([waiting_key("polkadot", waiting)])),
                                   JobSummary())
    assert "| polkadot waiting: block 3 (polkadot.blocks@2) misses upward/1000/1; 1 later blocks" in report.line()
    assert not caplog.records


HELD_BACK = WaitingStatus(3, "polkadot.blocks@2", 4, ("upward/1000/1",), True, 5, 1200,
                          (("upward", "1000", 1, 1),), ("upward",))
"""Stage R's status of a block past the threshold (``stalled``: as a reader with nothing unread would declare it)."""


def _reading(waiting: list[str], end: int, latest: int) -> dict[str, object]:
    """A relay batch that read ``polkadot.upward`` partition 0 up to ``end`` of the ``latest`` offset it saw."""
    progress = _stalled_progress(waiting)
    progress["sources"] = [{"endOffset": {"polkadot.upward": {"0": end}, "polkadot.blocks": {"0": 7}},
                            "latestOffset": {"polkadot.upward": {"0": latest}, "polkadot.blocks": {"0": 7}}}]
    return progress


def test_a_block_waiting_while_its_topics_are_unread_is_catching_up_not_stalled(
        caplog: pytest.LogCaptureFixture) -> None:
    """Stage R's threshold passed, but 151 records of polkadot.upward, the stream the block misses, are unread:
    waiting, no WARNING, no health record; once the batch reads upward to the end and the block still waits, the
    job declares it (one ``Stalled`` record, one WARNING), and ``Resumed`` when it moves."""
    written: list[OutputRecord] = []
    waits = RealmWaits(after_blocks=3, publish=written.extend)
    summary = JobSummary()
    with caplog.at_level(logging.INFO, logger="streaming.job"):
        behind = waits.seen(_report("relay", _reading([waiting_key("polkadot", HELD_BACK)], 20, 171)), summary)
    assert behind.unread == {"polkadot.upward": 151, "polkadot.blocks": 0}
    line = behind.line()
    assert "STALLED" not in line and "| polkadot waiting: block 3" in line
    assert "(catching up: 151 records unread on its input topics)" in line
    assert not written and not caplog.records and not summary.waiting["polkadot"].stalled

    with caplog.at_level(logging.INFO, logger="streaming.job"):
        read = waits.seen(_report("relay", _reading([waiting_key("polkadot", HELD_BACK)], 171, 171)), summary)
        waits.seen(_report("relay", _reading([waiting_key("polkadot", HELD_BACK)], 171, 171)), summary)
    assert "| polkadot STALLED: block 3" in read.line()
    assert [(r.topic, r.id, r.value) for r in written] == [("polkadot.health", "stalled/polkadot.blocks@2", {
        "kind": "Stalled", "realm": "polkadot", "block": 3, "block_record": "polkadot.blocks@2", "after_blocks": 3,
        "awaits": [{"stream": "upward", "origin": "1000", "first": 1, "last": 1}]})]
    assert [r.levelno for r in caplog.records] == [logging.WARNING]

    waits.seen(_report("relay", _reading([waiting_key("polkadot", None)], 172, 172)), summary)
    assert [r.id for r in written] == ["stalled/polkadot.blocks@2", "resumed/polkadot.blocks@2"]


def test_a_restarted_job_resumes_what_an_earlier_run_declared() -> None:
    written: list[OutputRecord] = []
    waits = RealmWaits(publish=written.extend, declared={"polkadot": Declared(3, "polkadot.blocks@2")})
    report = waits.seen(_report("relay", _reading([waiting_key("polkadot", None)], 9, 9)), JobSummary())
    assert report.waiting == {"polkadot": None}
    assert [(r.id, r.value["kind"]) for r in written] == [("resumed/polkadot.blocks@2", "Resumed")]


def test_unread_records_are_counted_per_topic_from_the_batch_offsets() -> None:
    progress = {"sources": [{"endOffset": '{"a.upward": {"0": 5, "1": 9, "2": 1}, "a.blocks": {"0": 1}}',
                             "latestOffset": '{"a.upward": {"0": 8, "1": 9, "2": 4}, "a.blocks": {"0": 3}}'}]}
    assert unread_records(progress) == {"a.upward": 6, "a.blocks": 2}
    assert unread_records({"sources": [{"endOffset": None, "latestOffset": None}]}) == {}
