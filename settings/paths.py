"""Where the project's files live, resolved from this file so that a fresh clone works from any directory."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["REPO_ROOT", "jvm_lib_dir", "repo_python_path", "runtime_dir"]

REPO_ROOT = Path(__file__).resolve().parent.parent
"""The project checkout (settings/ sits directly under it)."""


def runtime_dir() -> Path:
    """Scratch space for brokers, checkpoints and logs: $PUBSUB_RUNTIME_DIR, else .runtime/ in the checkout."""
    override = os.environ.get("PUBSUB_RUNTIME_DIR")
    path = Path(override) if override else REPO_ROOT / ".runtime"
    path.mkdir(parents=True, exist_ok=True)
    return path


def jvm_lib_dir(name: str) -> Path:
    """A folder of jars fetched by `make setup` from jvm/pom.xml: "kafka" (broker) or "spark-kafka" (connector)."""
    return REPO_ROOT / "jvm" / "lib" / name


def repo_python_path() -> str:
    """$PYTHONPATH with the checkout first (once): what the Python processes the job starts import the project by."""
    paths = [str(REPO_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return os.pathsep.join(dict.fromkeys(paths))
