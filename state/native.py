"""Which build of the protocol runs: the mypyc-compiled modules (the default build) or the pure-Python source.

Both come from the same files (setup.py compiles them) and the suite checks that they give the same outputs
byte for byte. The source runs instead of the compiled modules when ``PUBSUB_PURE_PYTHON=1`` (for debugging,
profiling with Python tools, and the tests that spy on Python functions), and when a compiled source has
changed since the build (its SHA-256 differs from the build's manifest), so an edit never runs stale code.
This module is never compiled: it decides before anything compiled loads, which is why it sits in ``state``, the
package every protocol module imports first.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import os
import sys
import warnings
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

__all__ = ["PURE_PYTHON_ENV", "StaleCompiledBuild", "build_name", "choose_build", "compiled"]

PURE_PYTHON_ENV = "PUBSUB_PURE_PYTHON"
MANIFEST = Path(__file__).with_name("native_build.txt")
"""Written by setup.py: ``<sha256> <path>`` per compiled source, paths relative to the packages' parent."""
_PACKAGES = ("pubsub_core", "state")
_SOURCE_ONLY = (importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES)


class StaleCompiledBuild(UserWarning):
    """A compiled module's source changed since the build: the source runs until ``make native``."""


class _SourceOnlyFinder(MetaPathFinder):
    """Finds this project's modules among their ``.py`` files only (never a compiled extension)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname.partition(".")[0] not in _PACKAGES:
            return None
        for entry in path if path is not None else sys.path:
            spec = importlib.machinery.FileFinder(entry or ".", _SOURCE_ONLY).find_spec(fullname, target)
            if spec is not None and spec.loader is not None:
                return spec
        return None


def _changed_source() -> str | None:
    """The first compiled source whose bytes differ from the build's, or None when the build is current."""
    root = MANIFEST.parent.parent
    for line in MANIFEST.read_text().splitlines():
        digest, _, path = line.partition(" ")
        try:
            current = hashlib.sha256((root / path).read_bytes()).hexdigest()
        except OSError:
            return path
        if current != digest:
            return path
    return None


def choose_build() -> None:
    """Run the pure-Python source when asked to, or when the compiled build is missing or stale (once)."""
    if any(isinstance(finder, _SourceOnlyFinder) for finder in sys.meta_path):
        return
    if os.environ.get(PURE_PYTHON_ENV) != "1":
        if not MANIFEST.exists():
            return  # a pure-Python build: nothing compiled to avoid
        changed = _changed_source()
        if changed is None:
            return
        warnings.warn(f"{changed} changed since the protocol was compiled: running the pure-Python source "
                      "(`make native` rebuilds)", StaleCompiledBuild, stacklevel=2)
    sys.meta_path.insert(0, _SourceOnlyFinder())


def compiled() -> bool:
    """True when the protocol's modules running in this process are the compiled ones (one build compiles
    ``pubsub_core`` and ``state`` together, so a module of ``state`` tells)."""
    from state import transaction

    return not (transaction.__file__ or "").endswith(".py")


def build_name() -> str:
    """``compiled`` or ``pure-Python``: which build this process runs, for logs and summaries."""
    return "compiled" if compiled() else "pure-Python"
