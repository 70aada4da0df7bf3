"""docs/simulator.md: its example lines are real (verbatim lines of the examples or of their outputs) and its
Python snippet runs."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from pathlib import Path

from pubsub_core.relay import canonical_json
from tests.simulator.test_examples import EXAMPLES, NAMES, example, simulated

DOC = Path(__file__).resolve().parents[2] / "docs" / "simulator.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.S)


def test_every_json_example_is_a_real_input_or_output_line() -> None:
    inputs = {line for name in NAMES for line in example(name)}
    outputs = {line for name in NAMES for line in simulated(name)}
    found = blocks("json")
    assert len(found) >= 8
    for text in found:
        line = canonical_json(json.loads(text))
        assert line in inputs or line in outputs, line[:120]


def test_the_python_snippet_runs() -> None:
    (snippet,) = blocks("python")
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(EXAMPLES.parent)
    try:
        with contextlib.redirect_stdout(out):
            exec(snippet, {})
    finally:
        os.chdir(cwd)
    assert out.getvalue().splitlines() == list(simulated("minimal.jsonl"))
