"""The checkout the tests run from: its examples/, its .runtime/ and the sources the tests read."""

from __future__ import annotations

from pathlib import Path

__all__ = ["REPO_ROOT", "RUNTIME"]

REPO_ROOT = Path(__file__).resolve().parents[2]
RUNTIME = REPO_ROOT / ".runtime"
"""The runtime folder of a test run that names none (``PUBSUB_RUNTIME_DIR``), as `make` sets it: one per checkout,
so suites run from two checkouts of the same user never share a broker or a checkpoint."""
