"""The latency budget's arithmetic: a block's spans, read from the job's batch log, add up to its block-to-update
time, and each lands where the instants say."""

from __future__ import annotations

import datetime
import json
import time
from pathlib import Path

from benchmarks.latency_budget import SPANS, block_spans, budget, read_batches
from streaming.job import BatchReport, log_batch
from streaming.spans import OperatorSpans
from supervise.live_run import LiveSnapshot

EPOCH = 1_800_000_000_000.0


def _iso(millis: float) -> str:
    return datetime.datetime.fromtimestamp(millis / 1000, datetime.timezone.utc).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")


def _call(stage: str, group: str, pid: int, start: float) -> OperatorSpans:
    return OperatorSpans(stage, group, pid, start, rows=4.0, protocol=30.0, state_read=10.0, write=2.0,
                         state_write=3.0, deliver=5.0, end=start + 44.0)


def _log(path: Path, query: str, batch: int, start: float, phases: dict[str, int],
         calls: tuple[OperatorSpans, ...]) -> None:
    progress = {"batchId": batch, "timestamp": _iso(start), "durationMs": phases, "numInputRows": 1,
                "observedMetrics": {"ignored": object()}}
    report = BatchReport(query, batch, 1, {}, {}, None, phases["triggerExecution"] / 1000, spans=calls)
    log_batch(path, query, progress, report)


def test_a_block_s_spans_add_up_to_its_block_to_last_update_time(tmp_path: Path) -> None:
    log = tmp_path / "batches.jsonl"
    # relay batch 1 runs 900..1300 (the block comes at 1000), batch 2 from 1500 reads it: planning 20 + 10 + 30,
    # its call starts at 1600 and the view is written at 1700
    _log(log, "relay", 1, EPOCH + 900, {"latestOffset": 5, "addBatch": 350, "triggerExecution": 400}, ())
    _log(log, "relay", 2, EPOCH + 1500, {"latestOffset": 20, "walCommit": 10, "queryPlanning": 30,
                                         "addBatch": 250, "commitOffsets": 15, "triggerExecution": 330},
         (_call("relay", "r", 7, EPOCH + 1600),))
    # subscribers batch 5 runs 1650..1800 (the view comes at 1700), batch 6 from 1900: subscriber 3001's call
    # follows 3000's in the same worker; the last update at 2100
    _log(log, "subscribers", 5, EPOCH + 1650, {"addBatch": 100, "triggerExecution": 150}, ())
    _log(log, "subscribers", 6, EPOCH + 1900, {"latestOffset": 40, "addBatch": 300, "triggerExecution": 400},
         (_call("subscriber", "r/3000", 8, EPOCH + 1960), _call("subscriber", "r/3001", 8, EPOCH + 2010),
          _call("subscriber", "r/3002", 9, EPOCH + 1950)))
    snapshot = LiveSnapshot(blocks={4: int(EPOCH + 1000)}, views={4: int(EPOCH + 1700)},
                            last_update={4: (int(EPOCH + 2100), 3001)})

    spans = block_spans(snapshot, read_batches(log), "r", 4)

    assert spans is not None
    assert spans["total"] == 1100
    assert sum(spans[name] for name, _ in SPANS) == spans["total"]
    assert (spans["relay_running"], spans["relay_trigger"]) == (300, 200)
    assert (spans["relay_planning"], spans["relay_launch"]) == (60, 40)
    assert (spans["relay_rows"], spans["relay_state"], spans["relay_protocol"]) == (4, 10, 20)
    assert spans["relay_write"] == 100 - 4 - 30
    assert (spans["seam_running"], spans["seam_trigger"]) == (100, 100)
    assert (spans["subscribers_planning"], spans["subscribers_launch"], spans["subscribers_before"]) == (40, 20, 50)
    assert spans["subscribers_write"] == 90 - 4 - 30


def test_a_fused_block_s_way_ends_in_the_realm_s_call_and_its_spans_add_up(tmp_path: Path) -> None:
    log = tmp_path / "batches.jsonl"
    # the fused job logs only the relay query: batch 1 runs 900..1300 (the block comes at 1000), batch 2 from 1500
    # reads it (planning 60), its call starts at 1600 and writes the block's last update at 1750; no view
    _log(log, "relay", 1, EPOCH + 900, {"latestOffset": 5, "addBatch": 350, "triggerExecution": 400}, ())
    _log(log, "relay", 2, EPOCH + 1500, {"latestOffset": 20, "walCommit": 10, "queryPlanning": 30,
                                         "addBatch": 300, "triggerExecution": 380},
         (_call("fused", "r", 7, EPOCH + 1600),))
    snapshot = LiveSnapshot(blocks={4: int(EPOCH + 1000)}, views={}, last_update={4: (int(EPOCH + 1750), 3001)})

    spans = block_spans(snapshot, read_batches(log), "r", 4)

    assert spans is not None and spans["total"] == 750
    assert sum(spans[name] for name, _ in SPANS) == 750
    assert (spans["relay_running"], spans["relay_trigger"], spans["relay_planning"], spans["relay_launch"]) == (
        300, 200, 60, 40)
    assert spans["relay_write"] == 150 - 4 - 30
    assert all(spans[name] == 0 for name, _ in SPANS if name.startswith(("seam_", "subscribers_")))


def test_a_block_whose_update_no_logged_batch_wrote_is_left_out(tmp_path: Path) -> None:
    log = tmp_path / "batches.jsonl"
    _log(log, "relay", 2, EPOCH + 1500, {"addBatch": 250, "triggerExecution": 330}, (_call("relay", "r", 7, EPOCH + 1600),))
    snapshot = LiveSnapshot(blocks={4: int(EPOCH + 1000)}, views={4: int(EPOCH + 1700)},
                            last_update={4: (int(EPOCH + 2100), 3001)})
    assert block_spans(snapshot, read_batches(log), "r", 4) is None


def test_the_budget_s_span_means_add_up_to_the_mean_total() -> None:
    blocks = [{**{name: float(i + k) for k, (name, _) in enumerate(SPANS)}} for i in range(3)]
    for block in blocks:
        block["total"] = sum(block[name] for name, _ in SPANS)
    result = budget(blocks)
    assert result["blocks"] == 3
    assert round(sum(s["mean_ms"] for s in result["spans"].values()), 1) == result["total"]["mean_ms"]
    assert budget([]) == {"blocks": 0}


def test_the_batch_log_setting_is_a_path_from_the_environment(tmp_path: Path) -> None:
    from settings.settings import load_settings

    assert load_settings(environ={"PUBSUB_BATCH_LOG": str(tmp_path / "b.jsonl")}).batch_log == tmp_path / "b.jsonl"
    assert load_settings(environ={}).batch_log is None


def test_a_process_group_s_cpu_seconds_count_its_members_only() -> None:
    import subprocess
    import sys

    from benchmarks.latency_budget import group_cpu_seconds

    busy = subprocess.Popen([sys.executable, "-c", "import time\nt = time.process_time()\n"
                             "while time.process_time() - t < 0.5: pass\ntime.sleep(30)"], start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while group_cpu_seconds(busy.pid) < 0.5 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert 0.5 <= group_cpu_seconds(busy.pid) < 5
        assert group_cpu_seconds(2**22 + 7) == 0  # no such group
    finally:
        busy.kill()
        busy.wait()


def test_the_batch_log_moves_aside_past_its_limit_and_keeps_one_old_file(tmp_path: Path) -> None:
    log = tmp_path / "batches.jsonl"
    for batch in range(6):
        _log_limited(log, batch, limit=600)
    old = tmp_path / "batches.jsonl.1"
    assert old.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["batches.jsonl", "batches.jsonl.1"]
    assert log.stat().st_size + old.stat().st_size <= 2 * (600 + 400)
    ids = [json.loads(line)["progress"]["batchId"] for f in (old, log) for line in f.read_text().splitlines()]
    assert ids == sorted(ids) and ids[-1] == 5


def _log_limited(path: Path, batch: int, limit: int) -> None:
    progress = {"batchId": batch, "timestamp": _iso(EPOCH), "durationMs": {"triggerExecution": 1}}
    log_batch(path, "relay", progress, BatchReport("relay", batch, 0, {}, {}, None, 0.001), limit=limit)
