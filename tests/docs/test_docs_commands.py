"""The offline commands of the README and docs/operations.md run as written: every line of their ```bash blocks
whose `pubsub` commands need no Kafka or Spark (`simulate`, `workload` without --live, `--help`, `--version`) runs
in bash, from a folder holding the examples, through the real entry point. A line whose comment starts with
`pubsub:` documents an error: it must exit non-zero with that line on stderr. Paths under /tmp/ are moved into
the test's own folder (the machine is shared); nothing else is changed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "README.md", ROOT / "docs" / "operations.md")
OFFLINE = {"simulate", "workload", "--help", "--version"}
_BLOCK = re.compile(r"```bash\n(.*?)```", re.S)
_COMMENT = re.compile(r"\s+#\s?(.*)$")
_PUBSUB = re.compile(r"(?:^|[\s|(;&])(?:\.venv/bin/)?pubsub\s+(\S+)([^|;&)]*)")


def commands(path: Path) -> list[tuple[str, str | None]]:
    """Each command line of the file's bash blocks (continuations joined) with its comment, if any."""
    found = []
    for block in _BLOCK.findall(path.read_text()):
        for line in block.replace("\\\n", " ").splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            comment = _COMMENT.search(line)
            found.append((line[: comment.start()] if comment else line, comment.group(1) if comment else None))
    return found


def is_offline(command: str) -> bool:
    calls = _PUBSUB.findall(command)
    if not calls or command.lstrip().startswith(("make", "export", "$", "diff")):
        return False
    return all(sub in OFFLINE and "--live" not in rest for sub, rest in calls)


OFFLINE_COMMANDS = [(path.name, command, comment) for path in DOCS for command, comment in commands(path)
                    if is_offline(command)]


def test_the_docs_have_offline_commands_to_run() -> None:
    assert {name for name, _, _ in OFFLINE_COMMANDS} == {"README.md", "operations.md"}
    assert len(OFFLINE_COMMANDS) >= 4


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the examples, `pubsub` and `.venv/bin/pubsub` running this checkout, and events.jsonl."""
    folder = tmp_path_factory.mktemp("docs")
    shutil.copytree(ROOT / "examples", folder / "examples")
    (folder / ".venv" / "bin").mkdir(parents=True)
    shim = f'#!/bin/sh\nexec "{sys.executable}" -m cli.main "$@"\n'
    for place in (folder / ".venv" / "bin" / "pubsub", folder / "bin" / "pubsub"):
        place.parent.mkdir(exist_ok=True)
        place.write_text(shim)
        place.chmod(0o755)
    done = subprocess.run([str(folder / "bin" / "pubsub"), "workload", "-o", "events.jsonl", "--seed", "7"],
                          cwd=folder, env=_env(folder), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return folder


def _env(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUBSUB_")}
    return {**env, "PYTHONPATH": str(ROOT), "PATH": f"{folder / 'bin'}:{env['PATH']}"}


@pytest.mark.parametrize(("doc", "command", "comment"), OFFLINE_COMMANDS,
                         ids=[f"{name}:{command.strip()[:60]}" for name, command, _ in OFFLINE_COMMANDS])
def test_an_offline_command_of_the_docs_runs_as_written(doc: str, command: str, comment: str | None,
                                                        workdir: Path) -> None:
    local = command.replace("/tmp/", f"{workdir}/tmp/")
    (workdir / "tmp").mkdir(exist_ok=True)
    done = subprocess.run(["bash", "-o", "pipefail", "-c", local], cwd=workdir, env=_env(workdir),
                          capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    if comment is not None and comment.startswith("pubsub:"):
        assert done.returncode != 0
        expected = comment.split("(...)")[0].strip()
        assert done.stderr.strip().startswith(expected), (expected, done.stderr)
    else:
        assert done.returncode == 0, (doc, command, done.stderr)


API = ROOT / "docs" / "api.md"
_PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


@pytest.mark.kafka
def test_the_client_api_commands_and_snippets_run_as_written(workdir: Path) -> None:
    """docs/api.md's command lines, then its Python snippets, each as pasted, in order, with the real embedded broker
    the first line starts (its runtime folder the test's own) and nothing else set; the broker is stopped after."""
    lines = commands(API)
    assert lines and lines[0][0].split() == ["pubsub", "broker", "start"], lines
    snippets = _PYTHON_BLOCK.findall(API.read_text())
    assert len(snippets) == 3
    env = {**_env(workdir), "PUBSUB_RUNTIME_DIR": str(workdir / "runtime")}
    python = workdir / ".venv" / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')  # this checkout's venv, as .venv/bin/python
    python.chmod(0o755)
    try:
        outputs = []
        for command, _ in lines:
            done = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=workdir, env=env,
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0 and "Traceback" not in done.stderr, (command, done.stderr)
            outputs.append(done.stdout)
        for snippet in snippets:
            done = subprocess.run([str(python), "-c", snippet], cwd=workdir, env=env, capture_output=True, text=True,
                                  timeout=300)
            assert done.returncode == 0 and done.stderr == "", (snippet, done.stderr)
            outputs.append(done.stdout)
    finally:
        subprocess.run(["pubsub", "broker", "stop"], cwd=workdir, env=env, capture_output=True, timeout=120)
    published = [line for line in outputs if '"topic": "polkadot.upward"' in line]
    assert published and '"key": "1000"' in published[0]
    assert outputs[-1].startswith("polkadot.upward ")  # the snippet published after the command did
