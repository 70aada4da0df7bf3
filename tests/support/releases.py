"""Earlier releases, built from git for the migration tests: each runs from a temporary worktree of its commit,
with this checkout's virtual environment (the pinned packages), its own sources on PYTHONPATH, uncompiled
(``PUBSUB_PURE_PYTHON=1``), and this checkout's fetched jars (``jvm/lib``, symlinked).

A release that changes a stored format adds its line to ``RELEASES`` and becomes ``PREVIOUS``: the migration
tests then build their fixtures with it (as Flink's ``*MigrationTest`` suites take a list of versions).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.paths import REPO_ROOT

__all__ = ["PREVIOUS", "RELEASES", "Release", "release_tree"]

RELEASES = {
    "0.1.0": "49e1b1634c4e388ee8b96b172e176a58972874ef",
}
"""Release -> the commit it was cut from (every release whose formats the current code reads)."""
PREVIOUS = "0.1.0"
"""The release the current code takes over a deployment from."""


@dataclass(frozen=True, slots=True)
class Release:
    """An earlier release's tree, ready to run."""

    version: str
    tree: Path

    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(self.tree), "PUBSUB_PURE_PYTHON": "1"}

    def run(self, args: Sequence[str], log: Path | None = None, timeout: float = 900,
            stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        """``python <args>`` as this release, from its tree; its output appended to ``log`` (or captured)."""
        command = [sys.executable, *args]
        if log is None:
            return subprocess.run(command, cwd=self.tree, env=self.env(), input=stdin, capture_output=True,
                                  timeout=timeout, check=False)
        with log.open("ab") as out:
            return subprocess.run(command, cwd=self.tree, env=self.env(), input=stdin, stdout=out,
                                  stderr=subprocess.STDOUT, timeout=timeout, check=False)

    def python(self, script: str, payload: object, timeout: float = 900) -> object:
        """Run ``script`` as this release with ``payload`` (JSON) on stdin; its stdout parsed as JSON."""
        done = self.run(["-c", script], stdin=json.dumps(payload).encode(), timeout=timeout)
        assert done.returncode == 0, f"release {self.version}: {done.stderr.decode()[-3000:]}"
        return json.loads(done.stdout)


@contextmanager
def release_tree(version: str) -> Iterator[Release]:
    """Release ``version`` checked out in a temporary worktree (removed afterwards)."""
    commit = RELEASES[version]
    with tempfile.TemporaryDirectory(prefix=f"pubsub-{version}-") as parent:
        tree = Path(parent) / "tree"
        added = subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "add", "--detach", str(tree), commit],
                               capture_output=True, text=True, check=False)
        assert added.returncode == 0, (f"release {version} ({commit}) is not in this clone's history (a full "
                                       f"clone is needed): {added.stderr.strip()}")
        try:
            lib = REPO_ROOT / "jvm" / "lib"
            if lib.is_dir() and not (tree / "jvm" / "lib").exists():
                (tree / "jvm" / "lib").symlink_to(lib, target_is_directory=True)
            yield Release(version, tree)
        finally:
            subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "remove", "--force", str(tree)],
                           capture_output=True, check=False)
