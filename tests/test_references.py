"""Every reference in the code and the docs points at something a reader can open: the repository's own docs
(docs/design.md, docs/decisions.md, ...) or a public source by name and section (docs/design.md, "Sources").
Names of documents that live outside the repository, such as numbered spec files, an out-of-tree design file or
research notes, must not come back.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUFFIXES = (".py", ".md", ".toml", ".txt", ".yml", ".yaml", ".cfg")
SKIPPED_DIRS = {".git", ".venv", "build", ".runtime", "lib", "node_modules", "__pycache__", ".hypothesis"}
"""Folders that hold what is installed, built or run, not what the repository says (jvm/lib holds fetched jars)."""

OUTSIDE: dict[str, re.Pattern[str]] = {
    "a numbered spec file": re.compile(r"\bseeds?[- ]?0{2}[0-4]\b|\bseeds 0{2}[0-4] and", re.IGNORECASE),
    "the out-of-tree design file": re.compile(r"(?<![\w/])DESIGN\.md"),
    "the research notes": re.compile(r"referenc[e]/|\breferenc[e] §|\.\./shared/|shared/referenc[e]", re.IGNORECASE),
}
"""What a reference to a document outside the repository looks like. The out-of-tree design file's name is in
capitals; the repository's own is docs/design.md."""


def repository_files() -> Iterator[Path]:
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info"))
        for name in sorted(files):
            if name.endswith(SUFFIXES) or name in {"Makefile", "Dockerfile"}:
                yield Path(folder) / name


def outside_references(path: str, text: str) -> list[str]:
    """Each line of ``text`` (the file at ``path``) that names a document outside the repository, with why."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in OUTSIDE.items():
            if pattern.search(line):
                found.append(f"{path}:{number}: names {what}: {line.strip()[:100]}")
    return found


def test_no_reference_points_outside_the_repository() -> None:
    files = list(repository_files())
    assert len(files) > 100, f"only {len(files)} files found under {ROOT}"
    found = [hit for path in files
             for hit in outside_references(path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8"))]
    assert not found, "references a reader cannot open (cite docs/design.md or a public source):\n" + "\n".join(found)


@pytest.mark.parametrize(
    "line",
    [
        "as seed " + "003 says",
        "(Seed " + "002, \"Root changed\")",
        "the seed-" + "004 envelope",
        "seeds " + "000 and 002's origin",
        "per DESIGN" + ".md",
        "see shared/" + "refer" + "ence/spark-kafka-notes.md",
        "reference " + "§1.5 order",
        "format notes (../" + "shared/vectors/trie.json)",
    ],
)
def test_each_kind_of_outside_reference_is_caught(line: str) -> None:
    assert outside_references("x.py", line) != []


@pytest.mark.parametrize(
    "line",
    [
        "docs/design.md, \"Invariants\"",
        "[design.md](design.md)",
        "the pub-sub spec, \"Parachain self-deletion\"",
        "pubsub workload --seed 7 --blocks 12",
        "xxh64 with seed 0, little-endian",
        "the reference code's order",
    ],
)
def test_references_a_reader_can_open_pass(line: str) -> None:
    assert outside_references("x.md", line) == []
