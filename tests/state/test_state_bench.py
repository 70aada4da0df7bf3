"""benchmarks/state_bench.py runs every pattern on a small key set and reports a positive rate for each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import state_bench
from state import MemoryBackend, StateTransaction

EXPECTED = {"get-written", "get-loaded", "get-miss", "prefetch", "pallet-call", "nested", "put-top", "commit"}


def test_the_worker_reports_every_pattern_for_this_tree(capsys: pytest.CaptureFixture[str]) -> None:
    state_bench.worker(n=64)
    rates = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert Path(rates.pop("state")).resolve().is_relative_to(Path(state_bench.ROOT).resolve())
    assert set(rates) == EXPECTED
    assert all(rate > 0 for rate in rates.values())


def test_an_atomic_section_yields_its_transaction_and_can_be_reentered() -> None:
    txn = StateTransaction(MemoryBackend())
    section = txn.atomic()
    with section as inside:
        assert inside is txn
        with txn.atomic():
            txn.put("ns", b"k", b"v")
    with section:
        txn.put("ns", b"j", b"w")
    assert txn.pending_changes() == {"ns": {b"k": b"v", b"j": b"w"}}
