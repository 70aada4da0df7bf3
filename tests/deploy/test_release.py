"""The release every stored format names (pubsub_core.release) is the package's version, and the CHANGELOG has
its entry."""

from __future__ import annotations

import tomllib

from pubsub_core.release import RELEASE
from tests.support.paths import REPO_ROOT


def test_the_release_written_into_stores_is_the_package_version_with_a_changelog_entry() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert RELEASE == project["version"]
    assert f"## {RELEASE}" in (REPO_ROOT / "CHANGELOG.md").read_text()
