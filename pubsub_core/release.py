"""The release this code is: written next to every stored format (``state.formats``) so that a store names the
release that wrote it. Equal to the version in pyproject.toml (tests/deploy/test_release.py checks it)."""

from typing import Final

__all__ = ["RELEASE"]

RELEASE: Final = "0.2.0"
