"""The short fuzz run: 20,000 mutated inputs spread over every target, seeded, 0 failures.

The long run is ``python -m benchmarks.reliability.fuzz --inputs 1000000`` (docs/reliability.md). A failure here leaves
its reproducer under tmp_path (not tests/fuzz/regressions: copy it there once the bug is fixed)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from benchmarks.reliability.fuzz import BUILDERS, campaign, inputs, target

INPUTS = 20_000
SEED = 12


@pytest.mark.slow
def test_twenty_thousand_inputs_end_accepted_or_typed(tmp_path: Path) -> None:
    stats = campaign(list(BUILDERS), INPUTS, SEED, regressions=tmp_path)
    assert sum(s.inputs for s in stats.values()) == INPUTS
    failures = {name: dict(s.failures) for name, s in stats.items() if s.failures}
    assert not failures, (failures, sorted(str(p) for p in tmp_path.rglob("*.bin"))[:10])
    for name, s in stats.items():
        assert s.inputs >= INPUTS // len(BUILDERS)
        assert s.rejections, f"{name}: no mutated input was rejected: the mutations do not reach it"


def test_the_same_seed_runs_the_same_inputs() -> None:
    for name in BUILDERS:
        t = target(name)
        first = [x for _, x in zip(range(len(t.corpus) + 30), inputs(t, 5))]
        again = [x for _, x in zip(range(len(t.corpus) + 30), inputs(t, 5))]
        other = [x for _, x in zip(range(len(t.corpus) + 30), inputs(t, 6))]
        assert first == again and first != other


def test_every_corpus_input_is_valid() -> None:
    """The seed corpora hold valid encodings: none fails, and most are accepted as they are (a few bad records of
    the generated workload are in the log corpora on purpose; a header is applied without the records its
    manifest names, so ``ManifestMismatch`` is its usual end)."""
    from benchmarks.reliability.fuzz import Oracle, execute

    with Oracle():
        for name in BUILDERS:
            t = target(name)
            sample = random.Random(0).sample(t.corpus, min(40, len(t.corpus)))
            outcomes = [execute(t, data) for data in sample]
            assert not [o.label for o in outcomes if o.failed], name
            ends = [o.kind if o.kind == "accepted" else o.label for o in outcomes]
            good = ("accepted", "ManifestMismatch") if name == "header" else ("accepted",)
            assert sum(end in good for end in ends) >= len(sample) // 2, (name, ends)
