"""The package as a user gets it: a wheel built (through an sdist) from a clean copy of the checkout's sources, and
a fresh venv with that wheel installed by pip, both in temporary folders; shared by the tests that run it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

from tests.support.paths import REPO_ROOT

__all__ = ["BASE_PYTHON", "build_wheel", "install", "run", "site_packages", "user_env"]

PACKAGES = tuple(name.rstrip("*") for name in
                 tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"])
SOURCES = (*PACKAGES, "jvm", "examples", "pyproject.toml", "setup.py", "README.md", "MANIFEST.in", "Makefile")
"""What a clean clone holds of the package (settings/jars, a link to jvm/lib here, is copied as the jars)."""
LEFT_BEHIND = shutil.ignore_patterns("__pycache__", "*.so", "native_build.txt", "lib", "test-lib", "target",
                                     ".fetched")
"""Build results of the checkout that a clean clone lacks (jvm/lib is left: the jars come through settings/jars)."""
BASE_PYTHON = Path(getattr(sys, "_base_executable", sys.executable))
"""The interpreter the checkout's venv was made from: fresh venvs are made from it too."""


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 900) -> str:
    """``argv``'s output (stdout, then stderr: the CLI writes its report there), asserting it exited 0."""
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{argv[:3]} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def _build(hook: str, source: Path, dist: Path) -> Path:
    """setuptools' PEP 517 ``hook`` run in ``source`` (the pure-Python build: no mypyc, quick), its file in ``dist``."""
    env = {**os.environ, "PUBSUB_PURE_PYTHON_BUILD": "1"}
    code = f"from setuptools import build_meta as b; print('built:', b.{hook}({str(dist)!r}))"
    out = run([sys.executable, "-c", code], source, env)
    (name,) = [line.removeprefix("built: ") for line in out.splitlines() if line.startswith("built: ")]
    return dist / name


def _clean_clone(dest: Path) -> Path:
    dest.mkdir()
    for name in SOURCES:
        path = REPO_ROOT / name
        if path.is_dir():
            shutil.copytree(path, dest / name, ignore=LEFT_BEHIND)
        else:
            shutil.copy2(path, dest / name)
    return dest


def build_wheel(root: Path) -> Path:
    """The wheel built from the sdist built from a clean copy of the checkout (as `pip install <sdist>` would)."""
    sdist = _build("build_sdist", _clean_clone(root / "clone"), root / "dist")
    with tarfile.open(sdist) as archive:
        archive.extractall(root / "unpacked", filter="data")
    (source,) = (root / "unpacked").iterdir()
    return _build("build_wheel", source, root / "dist")


def install(wheel: Path, venv: Path) -> Path:
    """A fresh venv at ``venv`` with ``wheel`` and its pinned dependencies installed by pip."""
    run([str(BASE_PYTHON), "-m", "venv", str(venv)], venv.parent)
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)],
        venv.parent)
    return venv


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3.*/site-packages"))


def user_env(home: Path) -> dict[str, str]:
    """A user's environment: no checkout, venv, runtime folder, jar folder or Spark of ours named anywhere."""
    ours = ("PUBSUB_", "SPARK_", "PYSPARK_", "PYTHON", "VIRTUAL_ENV")
    env = {name: value for name, value in os.environ.items() if not name.startswith(ours)}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and not Path(p).resolve().is_relative_to(REPO_ROOT))
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"))
    return env
