"""The process settings that ``pubsub simulate`` and the job's Python workers apply (pubsub_core.process)."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pubsub_core.process import FULL_COLLECTION_THRESHOLD, tune_garbage_collector

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def restored_thresholds() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)


def test_only_full_collections_become_rare(restored_thresholds: tuple[int, int, int]) -> None:
    gc.set_threshold(123, 7, 10)
    tune_garbage_collector()
    assert gc.get_threshold() == (123, 7, FULL_COLLECTION_THRESHOLD)
    assert FULL_COLLECTION_THRESHOLD > 10  # rarer than CPython's default


def test_cycles_are_still_collected(restored_thresholds: tuple[int, int, int]) -> None:
    tune_garbage_collector()

    class Node:
        other: object

    first, second = Node(), Node()
    first.other, second.other = second, first
    del first, second
    assert gc.collect() >= 2  # an explicit collection still frees them; only the schedule changed


def test_pubsub_simulate_tunes_its_process() -> None:
    """The CLI applies it before simulating (checked in a fresh interpreter, so this process is untouched)."""
    code = (
        "import gc; from cli.commands import simulate\n"
        "seen = []\n"
        "real = simulate.Simulator\n"
        "def spy(*a, **k):\n"
        "    seen.append(gc.get_threshold()[2]); return real(*a, **k)\n"
        "simulate.Simulator = spy\n"
        "from cli.main import main\n"
        "main(['simulate', 'examples/minimal.jsonl', '-o', '/dev/null', '--quiet'])\n"
        "print(seen[0])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert int(done.stdout.split()[-1]) == FULL_COLLECTION_THRESHOLD
