"""The short chaos run (benchmarks/reliability/chaos.py --short): live producer, block author and continuous job on
their own broker; the job's process group SIGKILLed 3 times, the broker SIGKILLed and restarted on the same data
once, the author SIGKILLed once; then the realm's export through the simulator must equal every output topic:
nothing lost, nothing divergent, only byte-identical duplicates."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.reliability.chaos import ChaosPlan, run_chaos

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def test_the_short_chaos_run_loses_nothing_and_diverges_nowhere(tmp_path: Path) -> None:
    plan = ChaosPlan.short(seed=3)
    result = run_chaos(plan, tmp_path / "chaos", say=print)
    figures = result.figures()
    assert figures["kills_survived"] == {"job": 3, "broker": 1, "author": 1}, figures
    blocks = figures["blocks"]
    assert isinstance(blocks, int) and blocks >= plan.blocks
    assert figures["records_lost"] == 0, (figures, result.unplanned_notes)
    assert figures["records_divergent"] == 0, (figures, result.unplanned_notes)
    assert figures["records_extra"] == 0, (figures, result.unplanned_notes)
    for kind in ("updates", "events", "pov", "seals"):
        assert result.topics[kind]["matched"] == result.topics[kind]["expected"] > 0, kind
    assert result.topics["seals"]["expected"] == figures["blocks"]
    assert result.pending_at_end == 0
