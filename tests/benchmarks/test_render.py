"""Benchmark results as JSON (benchmarks/common.py) and the tables rendered from them (benchmarks/render.py)."""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path

import pytest

from benchmarks import render
from benchmarks.common import DOC, RESULTS_DIR, markdown_table, read_result, update_section, write_result


def test_a_result_names_the_command_commit_machine_and_date_that_produced_it(tmp_path: Path) -> None:
    path = write_result("example", {"rate": 3.5}, module="benchmarks.example", argv=["--runs", "2"],
                        path=tmp_path / "example.json")
    record = json.loads(path.read_text())
    assert record["benchmark"] == "example"
    assert record["command"] == "python -m benchmarks.example --runs 2"
    assert re.fullmatch(r"[0-9a-f]{7,40}(-dirty)?", record["commit"])
    assert record["date"] == datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    assert {"cores", "cpu", "memory_gib"} <= set(record["machine"])
    assert record["build"] in ("compiled", "pure-Python")
    assert read_result("example", path)["figures"] == {"rate": 3.5}


REFERENCES = {"simulator_digest.json"}
"""Not results: what ``benchmarks.simulator_bench`` checks the simulator's outputs against."""


@pytest.mark.parametrize("path", sorted(p for p in RESULTS_DIR.glob("*.json") if p.name not in REFERENCES),
                         ids=lambda p: p.name)
def test_every_stored_result_names_what_produced_it(path: Path) -> None:
    record = json.loads(path.read_text())
    assert {"benchmark", "command", "commit", "date", "machine", "figures"} <= set(record)
    assert path.stem.startswith(record["benchmark"])  # soak_changelog_off.json: a soak with other options
    assert record["command"].startswith("python -m benchmarks.")


def test_a_section_between_its_markers_is_replaced_and_the_prose_around_it_kept(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("# T\n\nprose before\n<!-- BEGIN a -->\nold table\n<!-- END a -->\nprose after\n"
                   "<!-- BEGIN b -->\nother\n<!-- END b -->\n")
    assert update_section(doc, "a", "\nnew table\n")
    assert doc.read_text() == ("# T\n\nprose before\n<!-- BEGIN a -->\nnew table\n<!-- END a -->\nprose after\n"
                               "<!-- BEGIN b -->\nother\n<!-- END b -->\n")
    assert not update_section(doc, "missing", "x")


def test_a_markdown_table_aligns_its_first_column_left_and_the_others_right() -> None:
    assert markdown_table(["a", "b"], [[1, "x"]]) == "| a | b |\n|---|---:|\n| 1 | x |"
    assert markdown_table(["a", "b"], [], "rl").splitlines()[1] == "|---:|---|"


@pytest.mark.parametrize("name", sorted(render.RENDERERS))
def test_every_committed_result_renders_into_its_marked_section(name: str) -> None:
    """The results in the repository and the renderer agree, and docs/benchmarks.md holds the section."""
    if not (RESULTS_DIR / f"{name}.json").exists():
        pytest.fail(f"benchmarks/results/{name}.json is missing: run its benchmark")
    body = render.render(name)
    record = read_result(name)
    assert body.startswith(f"Produced by `{record['command']}` at commit `{record['commit']}` on {record['date']}")
    assert "\n|---" in body
    text = DOC.read_text()
    section = text[text.index(f"<!-- BEGIN {name} -->"):text.index(f"<!-- END {name} -->")]
    assert body.strip() in section, f"docs/benchmarks.md's {name} table is stale: python -m benchmarks.render"
