"""The layout's import rules (DESIGN.md, "Layout"), read from every module's syntax tree: imports at any depth
(inside functions and ``if TYPE_CHECKING:`` too) count, since each is a dependency of the package.

- ``pubsub_core`` imports nothing of ours but ``state``; ``state`` imports nothing of ours.
- ``producers`` imports neither ``streaming`` nor ``supervise`` nor ``cli``; ``streaming`` neither ``supervise``
  nor ``cli``; ``supervise`` not ``cli``; no runtime package imports ``benchmarks`` or ``tests``.
- Only ``streaming`` imports pyspark (benchmarks reach Spark through it; tests may use Spark's own API to check ours).
- Only ``producers``, ``streaming``, ``supervise``, ``cli`` and tests import a Kafka client.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pubsub_core", "state", "streaming", "producers", "supervise", "cli", "benchmarks", "tests")
RUNTIME = {"pubsub_core", "state", "streaming", "producers", "supervise", "cli"}
NOT_RUNTIME = {"benchmarks", "tests"}
OURS = set(PACKAGES)

FORBIDDEN: dict[str, set[str]] = {
    "pubsub_core": OURS - {"pubsub_core", "state"},
    "state": OURS - {"state"},
    "producers": {"streaming", "supervise", "cli"} | NOT_RUNTIME,
    "streaming": {"supervise", "cli"} | NOT_RUNTIME,
    "supervise": {"cli"} | NOT_RUNTIME,
    "cli": NOT_RUNTIME,
    "benchmarks": {"tests"},
    "tests": set(),
}
"""Packages of ours each package must not import."""

ONLY: dict[str, set[str]] = {
    "pyspark": {"streaming", "tests"},
    "confluent_kafka": {"producers", "streaming", "supervise", "cli", "tests"},
    "kafka": {"producers", "streaming", "supervise", "cli", "tests"},
}
"""Third-party packages only these packages may import."""


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    module: str
    rule: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: imports {self.module} ({self.rule})"


def imported(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Every absolute module an ``import`` or ``from ... import`` names, with its line (relative imports stay
    inside their package)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module


def violations(path: str, source: str) -> list[Violation]:
    """The rules ``source`` (the file at ``path``, relative to the repository) breaks."""
    package = path.split("/", 1)[0]
    found = []
    for line, module in imported(ast.parse(source, filename=path)):
        top = module.split(".", 1)[0]
        if top in FORBIDDEN.get(package, set()):
            found.append(Violation(path, line, module, f"{package} must not import {top}"))
        allowed = ONLY.get(top)
        if allowed is not None and package not in allowed:
            found.append(Violation(path, line, module, f"only {', '.join(sorted(allowed))} may import {top}"))
    return found


def package_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", PACKAGES)
def test_every_module_of_the_package_keeps_the_import_rules(package: str) -> None:
    files = package_files(package)
    assert files, f"no Python files under {package}/"
    broken = [str(v) for path in files
              for v in violations(path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8"))]
    assert not broken, "import rules broken (DESIGN.md, \"Layout\"):\n" + "\n".join(broken)


def test_the_rules_name_the_file_line_and_import_of_each_break() -> None:
    source = "import os\n\ndef f():\n    from streaming.job import run_job\n    import pyspark.sql\n"
    assert [str(v) for v in violations("producers/example.py", source)] == [
        "producers/example.py:4: imports streaming.job (producers must not import streaming)",
        "producers/example.py:5: imports pyspark.sql (only streaming, tests may import pyspark)",
    ]


@pytest.mark.parametrize(("path", "source"), [
    ("pubsub_core/x.py", "from streaming import settings"),
    ("pubsub_core/x.py", "import confluent_kafka"),
    ("state/x.py", "from pubsub_core.errors import PubSubError"),
    ("streaming/x.py", "from supervise.kafka_broker import ensure_kafka"),
    ("producers/x.py", "from supervise import live_run"),
    ("benchmarks/x.py", "from pyspark.sql import SparkSession"),
    ("benchmarks/x.py", "from confluent_kafka import Consumer"),
    ("cli/x.py", "import benchmarks.pipeline_bench"),
])
def test_each_forbidden_import_is_caught(path: str, source: str) -> None:
    assert len(violations(path, source)) == 1


@pytest.mark.parametrize(("path", "source"), [
    ("pubsub_core/x.py", "from state import StateTransaction"),
    ("pubsub_core/x.py", "from .records import RelayView"),
    ("supervise/x.py", "from streaming.job import run_job\nfrom confluent_kafka import Consumer"),
    ("benchmarks/x.py", "from streaming.spark_session import build_spark"),
    ("tests/x.py", "from pyspark.sql import Row"),
])
def test_allowed_imports_pass(path: str, source: str) -> None:
    assert violations(path, source) == []
