"""Errors of the settings package: one root, each error carrying the data that explains it."""

from __future__ import annotations

from pathlib import Path

from pubsub_core.errors import PubSubError

__all__ = ["JarsMissingError", "SettingsError", "SetupError"]


class SetupError(PubSubError):
    """Base class for a deployment that is configured or installed wrongly (a setting, a missing jar folder)."""


class SettingsError(SetupError):
    """A setting has an invalid value; names the setting, the value and where it came from."""

    def __init__(self, name: str, value: object, source: str, reason: str) -> None:
        shown = "***" if "password" in name else repr(str(value) if isinstance(value, Path) else value)
        super().__init__(f"setting {name}={shown} (from {source}) is invalid: {reason}")
        self.name = name
        self.source = source
        self.reason = reason


class JarsMissingError(SetupError):
    """The JVM jars are not there. An installed wheel carries them (settings/jars); in a checkout `make setup` has
    not run: it fetches jvm/lib/kafka and jvm/lib/spark-kafka with Maven (the target ``jvm/lib/.fetched``), builds
    jvm/lib/local-fs/pubsub-local-fs.jar with javac and links settings/jars to jvm/lib."""

    def __init__(self, folder: Path) -> None:
        target = "jvm/lib/local-fs/pubsub-local-fs.jar" if folder.name == "local-fs" else "jvm/lib/.fetched"
        super().__init__(f"no jars in {folder}; in a checkout run `make setup` (or only `make {target}`); "
                         "an installed wheel carries them, or PUBSUB_JARS_DIR names a folder of them")
        self.folder = folder
        self.target = target
