"""Replays every saved fuzz reproducer (tests/fuzz/regressions/<target>/<sha>.bin): each must now end accepted or
as a typed rejection under the fuzzer's oracle (no untyped exception, no hang over 2 s, no memory blow-up)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.reliability.fuzz import BUILDERS, REGRESSIONS, Oracle, execute, target

CASES = sorted(REGRESSIONS.glob("*/*.bin"))


def test_every_reproducer_names_a_target() -> None:
    assert {path.parent.name for path in CASES} <= set(BUILDERS)


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_reproducer_ends_typed(path: Path) -> None:
    with Oracle():
        outcome = execute(target(path.parent.name), path.read_bytes())
    assert not outcome.failed, outcome.label
