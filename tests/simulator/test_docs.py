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


def _shape(body: object) -> object:
    """The keys of a JSON value, recursively: what an example documents even when values drift."""
    if isinstance(body, dict):
        return {key: _shape(value) for key, value in body.items() if key not in ("child_roots", "manifest")}
    return type(body).__name__


def test_every_json_example_is_a_real_input_or_output_line() -> None:
    """Inputs verbatim; outputs by id with the same shape (their values follow the protocol packages)."""
    inputs = {line for name in NAMES for line in example(name)}
    outputs: dict[str, object] = {}
    for name in NAMES:  # minimal.jsonl first: the docs quote it
        for line in simulated(name):
            outputs.setdefault(json.loads(line)["id"], json.loads(line))
    found = blocks("json")
    assert len(found) >= 8
    for text in found:
        body = json.loads(text)
        if "id" in body:
            assert body["id"] in outputs, body["id"]
            assert _shape(body) == _shape(outputs[body["id"]]), body["id"]
        else:
            assert canonical_json(body) in inputs, text[:120]


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
