"""Shared test configuration: Hypothesis profiles (derandomized in CI so a run is reproducible), and the
``pure_python`` marker for tests that spy on Python functions (compiled code calls past their spies), and the
previous release's tree for the migration tests, and the checkout's .runtime/ as the runtime folder unless
``PUBSUB_RUNTIME_DIR`` names another."""

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from state.native import PURE_PYTHON_ENV, compiled
from tests.support.releases import PREVIOUS, Release, release_tree
from tests.support.paths import RUNTIME

os.environ.setdefault("PUBSUB_RUNTIME_DIR", str(RUNTIME))

settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile(
    "ci", max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("soak", max_examples=5000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On the compiled build, a ``pure_python`` test runs in ``make test``'s second, pure-Python pass instead."""
    if not compiled():
        return
    moved = pytest.mark.skip(reason=f"spies on Python functions: runs in the pure-Python pass ({PURE_PYTHON_ENV}=1)")
    for item in items:
        if "pure_python" in item.keywords:
            item.add_marker(moved)


@pytest.fixture(scope="session")
def previous_release() -> Iterator[Release]:
    """The release the current code takes over from, checked out from git once for the session."""
    with release_tree(PREVIOUS) as release:
        yield release
