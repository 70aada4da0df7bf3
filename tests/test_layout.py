"""The layout's import rules (docs/design.md, "Layout"), read from every module's syntax tree: imports at any depth
(inside functions and ``if TYPE_CHECKING:`` too) count, since each is a dependency of the package.

- ``pubsub_core`` imports nothing of ours but ``state``; ``state`` imports nothing of ours.
- ``settings`` (the ground floor: settings, runtime paths, protocol-config loading) imports nothing of ours but
  ``pubsub_core`` and ``state``; every other package may import it.
- Only the job imports ``streaming``: ``streaming`` itself, the modules that run or host it (``JOB_MODULES``),
  benchmarks and tests. ``producers`` imports neither ``supervise`` nor ``cli``; ``supervise`` not ``cli``; nothing
  imports ``cli`` but tests and benchmarks (its commands hold no logic others need); no runtime package imports
  ``benchmarks`` or ``tests``.
- Only ``streaming`` imports pyspark (benchmarks reach Spark through it; tests may use Spark's own API to check ours).
- Only ``producers``, ``streaming``, ``supervise``, ``cli`` and tests import a Kafka client.
- No import circles between modules, function-level imports included (an import outside ``if TYPE_CHECKING:``
  runs, and importing ``a.b.c`` runs ``a`` and ``a.b`` first).
- One record model at the Kafka edge (``pubsub_core/stages/edge.py``): no other class holds a topic with a key or
  value as bytes; one table of size limits (``pubsub_core/stages/limits.py``): no other ``MAX_..._BYTES`` in the
  runtime packages; one builder of a ``rejected`` record (``pubsub_core.stages.records.rejection``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pubsub_core", "state", "settings", "streaming", "producers", "supervise", "cli", "benchmarks", "tests")
RUNTIME = {"pubsub_core", "state", "settings", "streaming", "producers", "supervise", "cli"}
NOT_RUNTIME = {"benchmarks", "tests"}
OURS = set(PACKAGES)

FORBIDDEN: dict[str, set[str]] = {
    "pubsub_core": OURS - {"pubsub_core", "state"},
    "state": OURS - {"state"},
    "settings": OURS - {"settings", "pubsub_core", "state"},
    "producers": {"supervise", "cli"} | NOT_RUNTIME,
    "streaming": {"supervise", "cli"} | NOT_RUNTIME,
    "supervise": {"cli"} | NOT_RUNTIME,
    "cli": NOT_RUNTIME,
    "benchmarks": {"tests"},
    "tests": set(),
}
"""Packages of ours each package must not import."""

JOB_MODULES = frozenset({"cli/commands/job.py", "supervise/verify.py", "supervise/cluster.py"})
"""The modules outside ``streaming`` that import it: the job's command, the verify run (it runs the job) and the
local Spark cluster (it starts Spark with the job's session settings)."""
CLI_ENTRY = "cli.main"
"""The one module of ``cli`` another package may import: the ``pubsub`` entry point (benchmarks run commands)."""

ONLY: dict[str, set[str]] = {
    "streaming": {"streaming", "benchmarks", "tests"},
    "cli": {"cli", "tests"},
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


def exempt(path: str, module: str) -> bool:
    """The named exceptions to ``ONLY``: the job's modules import ``streaming``, anyone the ``pubsub`` entry point."""
    return (module.split(".", 1)[0] == "streaming" and path in JOB_MODULES) or module == CLI_ENTRY


def violations(path: str, source: str) -> list[Violation]:
    """The rules ``source`` (the file at ``path``, relative to the repository) breaks."""
    package = path.split("/", 1)[0]
    found = []
    for line, module in imported(ast.parse(source, filename=path)):
        top = module.split(".", 1)[0]
        if top in FORBIDDEN.get(package, set()):
            found.append(Violation(path, line, module, f"{package} must not import {top}"))
            continue
        allowed = ONLY.get(top)
        if allowed is not None and package not in allowed and not exempt(path, module):
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
    assert not broken, "import rules broken (docs/design.md, \"Layout\"):\n" + "\n".join(broken)


def test_the_rules_name_the_file_line_and_import_of_each_break() -> None:
    source = "import os\n\ndef f():\n    from streaming.job import run_job\n    import pyspark.sql\n"
    assert [str(v) for v in violations("producers/example.py", source)] == [
        "producers/example.py:4: imports streaming.job (only benchmarks, streaming, tests may import streaming)",
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
    ("pubsub_core/x.py", "from settings.settings import Settings"),
    ("state/x.py", "import settings.paths"),
    ("settings/x.py", "from producers.transport.topics import producer_config"),
    ("settings/x.py", "import streaming.pipeline"),
    ("producers/x.py", "from streaming.pipeline import KAFKA_SOURCE_OPTIONS"),
    ("supervise/live_run.py", "from streaming.job import run_job"),
    ("cli/commands/simulate.py", "from streaming.job import run_job"),
    ("benchmarks/x.py", "from cli.commands.demo_live import run_live_demo"),
    ("producers/x.py", "from cli.commands.produce import print_tally"),
])
def test_each_forbidden_import_is_caught(path: str, source: str) -> None:
    assert len(violations(path, source)) == 1


@pytest.mark.parametrize(("path", "source"), [
    ("pubsub_core/x.py", "from state import StateTransaction"),
    ("pubsub_core/x.py", "from .records import RelayView"),
    ("supervise/verify.py", "from streaming.job import run_job\nfrom confluent_kafka import Consumer"),
    ("cli/commands/job.py", "from streaming.job import run_job"),
    ("producers/x.py", "from settings.settings import Settings"),
    ("cli/x.py", "from settings.protocol import load_protocol_config"),
    ("settings/x.py", "from pubsub_core.stages import ProtocolConfig\nfrom state import StateTransaction"),
    ("benchmarks/x.py", "from cli.main import main"),
    ("benchmarks/x.py", "from streaming.spark_session import build_spark"),
    ("tests/x.py", "from pyspark.sql import Row"),
])
def test_allowed_imports_pass(path: str, source: str) -> None:
    assert violations(path, source) == []


# -- import circles ------------------------------------------------------------------------------------------------
def module_name(path: str) -> str:
    """``a/b/c.py`` -> ``a.b.c``; ``a/b/__init__.py`` -> ``a.b``."""
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def runs_at_import(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports of a module that run (at its import or when a function runs): all but those under
    ``if TYPE_CHECKING:``, which only the type checker reads."""
    checking = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                for statement in node.body for n in ast.walk(statement)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in checking:
            yield node


def dependencies(path: str, source: str, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that importing the module at ``path`` (or running its functions) imports: each
    named module and the packages above it (importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first),
    but not the packages the module itself sits in (they are being imported already)."""
    name = module_name(path)
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    found = set()
    for node in runs_at_import(ast.parse(source, filename=path)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        for target in targets:
            parts = target.split(".")
            for end in range(1, len(parts) + 1):
                candidate = ".".join(parts[:end])
                if candidate in modules and candidate != name and not name.startswith(candidate + "."):
                    found.add(candidate)
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph`` (module -> modules it imports): its strongly connected components of more
    than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph.get(step, ())))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def import_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """Module -> the modules it imports, for files given as path (relative to the repository) -> source."""
    modules = {module_name(path) for path in sources}
    return {module_name(path): dependencies(path, source, modules) for path, source in sources.items()}


def test_no_module_imports_itself_through_others() -> None:
    sources = {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8")
               for package in PACKAGES for path in package_files(package)}
    graph = import_graph(sources)
    assert len(graph) > 300, "the walk did not read the repository's modules"
    assert circles(graph) == []


def test_a_circle_through_a_function_level_import_or_a_package_init_is_found() -> None:
    sources = {
        "a/__init__.py": "from a.machine import Machine\n",
        "a/machine.py": "def f():\n    from b.adapter import Adapter\n",
        "b/__init__.py": "",
        "b/adapter.py": "from a.port import Port\n",  # runs a/__init__.py, which imports a.machine
        "a/port.py": "",
        "c/one.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from c.two import T\n",
        "c/two.py": "from c.one import f\n",
    }
    assert circles(import_graph(sources)) == [["a", "a.machine", "b.adapter"]]


def test_a_module_importing_its_own_package_is_no_circle() -> None:
    sources = {"a/__init__.py": "from a.x import X\n", "a/x.py": "from a.y import Y\nfrom . import z\n",
               "a/y.py": "", "a/z.py": ""}
    assert circles(import_graph(sources)) == []


# -- one record model, one size table, one rejection builder ---------------------------------------------------------
EDGE = "pubsub_core/stages/edge.py"
LIMITS = "pubsub_core/stages/limits.py"
REJECTION_BUILDER = "pubsub_core/stages/records.py"


def kafka_record_classes(source: str) -> list[str]:
    """Classes whose fields hold a Kafka record: a ``topic`` beside a ``key`` or ``value`` typed as bytes."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            fields = {s.target.id: ast.unparse(s.annotation) for s in node.body
                      if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
            if "topic" in fields and any("bytes" in fields.get(name, "") for name in ("key", "value")):
                found.append(node.name)
    return found


def size_limits(source: str) -> list[str]:
    """Module-level names of a size limit in bytes (``MAX_..._BYTES``)."""
    targets = [t for node in ast.parse(source).body if isinstance(node, ast.Assign | ast.AnnAssign)
               for t in (node.targets if isinstance(node, ast.Assign) else [node.target])]
    return [t.id for t in targets if isinstance(t, ast.Name) and t.id.startswith("MAX_") and t.id.endswith("_BYTES")]


def rejection_builders(source: str) -> list[int]:
    """Lines that build a ``rejected`` output record by hand (an ``OutputRecord(...)`` naming ``rejected``)."""
    return [node.lineno for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name) and node.func.id == "OutputRecord" and "rejected" in ast.unparse(node)]


def runtime_sources() -> dict[str, str]:
    return {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8")
            for package in sorted(RUNTIME | {"benchmarks"}) for path in package_files(package)}


def test_one_record_type_each_way_at_the_kafka_edge() -> None:
    found = {(path, name) for path, source in runtime_sources().items() for name in kafka_record_classes(source)}
    assert found == {(EDGE, "ProducerRecord"), (EDGE, "ConsumerRecord")}


def test_one_table_of_size_limits() -> None:
    found = {path for path, source in runtime_sources().items() if path.split("/")[0] in RUNTIME and size_limits(source)}
    assert found == {LIMITS}


def test_one_builder_of_a_rejected_record() -> None:
    found = {f"{path}:{line}" for path, source in runtime_sources().items() for line in rejection_builders(source)}
    assert {line.split(":")[0] for line in found} == {REJECTION_BUILDER}, sorted(found)
    assert len(found) == 1


def test_the_edge_rules_catch_a_second_model_a_stray_limit_and_a_hand_built_rejection() -> None:
    assert kafka_record_classes("class Row(NamedTuple):\n    topic: str\n    value: bytes | None\n") == ["Row"]
    assert kafka_record_classes("class Line:\n    topic: str\n    key: str\n") == []
    assert size_limits("MAX_RECORD_BYTES = 15 * 1024 * 1024\nBUNDLE_BYTES = 1\n") == ["MAX_RECORD_BYTES"]
    assert rejection_builders('r = OutputRecord(f"{realm}.rejected", key, i, v)\n') == [1]
