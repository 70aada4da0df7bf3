"""Which runs can ship the venv as an archive: code loaded from this venv's site-packages (a wheel), never from a
checkout, whatever metadata a checkout's own egg-info folder carries."""

from __future__ import annotations

import sysconfig
from pathlib import Path

from streaming.shipping import editable_install, wants_archive


def test_code_in_site_packages_is_an_installed_wheel() -> None:
    site = Path(sysconfig.get_paths()["purelib"])
    assert editable_install(site / "streaming" / "shipping.py") is False


def test_code_anywhere_else_is_a_checkout(tmp_path: Path) -> None:
    (tmp_path / "rfc0160_pubsub.egg-info").mkdir()  # what a checkout's build leaves beside its packages
    assert editable_install(tmp_path / "streaming" / "shipping.py") is True


def test_this_checkout_runs_shared_under_auto_and_archive_only_when_asked() -> None:
    assert editable_install() is True  # the tests run from the checkout (make setup installs it editable)
    assert wants_archive("auto", "spark://127.0.0.1:7077") is False
    assert wants_archive("archive", "local[2]") is True
    assert wants_archive("auto", "local[2]") is False
