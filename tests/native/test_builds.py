"""The compiled build (setup.py, mypyc) against the pure-Python source: both load when they should, and give the
same outputs byte for byte. Each side runs in its own process, so this holds in either pass of ``make test``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from state.native import MANIFEST, PURE_PYTHON_ENV

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.jsonl"))
BUILDS = {"compiled": {}, "pure": {PURE_PYTHON_ENV: "1"}}


def run(args: list[str], build: str, cwd: Path = ROOT, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != PURE_PYTHON_ENV} | BUILDS[build]
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)


def loaded_build(build: str, cwd: Path = ROOT, pythonpath: Path | None = None) -> str:
    probe = "import state.native as n, pubsub_core.trie.node as m; print(n.compiled(), m.__file__)"
    return run(["-W", "always", "-c", probe], build, cwd, pythonpath).stdout.strip()


def test_make_setup_builds_the_compiled_protocol_and_the_switch_turns_it_off() -> None:
    compiled = loaded_build("compiled")
    pure = loaded_build("pure")
    assert compiled.startswith("True ") and not compiled.endswith(".py")
    assert pure.startswith("False ") and pure.endswith("node.py")


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("native") / "workload.jsonl"
    run(["-m", "cli.main", "workload", "-o", str(path), "--seed", "11", "--blocks", "30", "--publishers", "6",
         "--system-publishers", "2", "--subscribers", "4", "--keys", "12", "--subscribed-keys", "20",
         "--update-rate", "0.5", "--bad-records", "0.05"], "pure")
    return path


@pytest.mark.parametrize("seam", ["delta", "full"])
def test_both_builds_write_the_same_bytes(workload: Path, seam: str, tmp_path: Path) -> None:
    for log in [*EXAMPLES, workload]:
        outputs = {}
        for build in BUILDS:
            out = tmp_path / f"{log.stem}.{build}.jsonl"
            run(["-m", "cli.main", "simulate", str(log), "-o", str(out), "--seam", seam, "--relay-proofs",
                 "--quiet"], build)
            outputs[build] = out.read_bytes()
        assert outputs["compiled"] == outputs["pure"], log.name
        assert outputs["pure"].count(b"\n") > 10


def test_an_edited_source_runs_as_python_until_the_next_build(tmp_path: Path) -> None:
    """A copy of the built packages with one compiled source changed: the stale module's build is not used."""
    for package in ("pubsub_core", "state"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    for group_library in ROOT.glob("*__mypyc*.so"):
        shutil.copy2(group_library, tmp_path)
    assert loaded_build("compiled", tmp_path, tmp_path).startswith("True ")
    edited = tmp_path / MANIFEST.read_text().splitlines()[-1].partition(" ")[2]
    edited.write_text(edited.read_text() + "\n# edited\n")
    probe = run(["-W", "always", "-c", "import state.native as n; print(n.compiled())"], "compiled",
                tmp_path, tmp_path)
    assert probe.stdout.strip() == "False"
    assert "StaleCompiledBuild" in probe.stderr and edited.relative_to(tmp_path).as_posix() in probe.stderr
