"""Where the project's files live: the JVM jars beside the installed package, the runtime folder per user.

Nothing here depends on running from the checkout: an installed wheel carries its jars in ``settings/jars``
(package data), and in the checkout `make setup` links that folder to jvm/lib, where Maven puts them. The runtime
folder (brokers, checkpoints, logs) is ``$PUBSUB_RUNTIME_DIR``, else the per-user data folder of the XDG base
directory specification (``$XDG_DATA_HOME/rfc0160-pubsub``, ``~/.local/share/rfc0160-pubsub`` by default), never
the folder the code is installed in. The checkout's Makefile and test suite set ``PUBSUB_RUNTIME_DIR`` to the
checkout's .runtime/.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["APP_FOLDER", "PACKAGE_DIR", "jars_dir", "jvm_lib_dir", "runtime_dir", "runtime_folder"]

PACKAGE_DIR = Path(__file__).resolve().parent
"""The installed ``settings`` package (its jars/ is package data)."""
APP_FOLDER = "rfc0160-pubsub"
"""The folder of ours inside the per-user data folder."""


def runtime_folder(environ: Mapping[str, str] | None = None) -> Path:
    """The runtime folder ``environ`` (default: this process's environment) names, not created."""
    env = os.environ if environ is None else environ
    override = env.get("PUBSUB_RUNTIME_DIR")
    if override:
        return Path(override)
    data_home = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME") or Path.home()) / ".local" / "share")
    return Path(data_home) / APP_FOLDER


def runtime_dir() -> Path:
    """Scratch space for brokers, checkpoints and logs (``runtime_folder``), created on first use."""
    path = runtime_folder()
    path.mkdir(parents=True, exist_ok=True)
    return path


def jars_dir() -> Path:
    """The folder of the JVM jar folders: $PUBSUB_JARS_DIR if set, else the package's own ``jars``."""
    override = os.environ.get("PUBSUB_JARS_DIR")
    return Path(override) if override else PACKAGE_DIR / "jars"


def jvm_lib_dir(name: str) -> Path:
    """A folder of jars built from jvm/pom.xml by `make setup`: "kafka" (broker), "spark-kafka" (connector) or
    "local-fs" (``streaming.spark_session.LOCAL_FILE_SYSTEM``)."""
    return jars_dir() / name
