"""A class data sharing archive of Spark's driver JVM: what a restarted job's JVM maps instead of loading.

A session's start loads, parses and verifies some 10,000 classes from Spark's jars, most of a restart's JVM time
(docs/benchmarks.md, "Recovery after a crash"). The JDK's dynamic class data sharing (``-XX:ArchiveClassesAtExit``)
writes the classes a JVM loaded into one file at its exit; a JVM started with ``-XX:SharedArchiveFile`` maps them
from it. ``class_archive_build.build_class_archive`` runs a session and a stateful streaming query on the job's
confs and writes that file, only when asked (`pubsub job --write-class-archive`, `make class-archive`); the job
then starts its JVM with it (``spark_session.spark_conf``). A JVM whose jars, class path or Java differ from the archive's runs without it
(``-Xshare:auto``, the default): a stale archive costs its gain, never a failure. A damaged one would be worse: a JVM
maps an archive cut short (a full disk, a half copy) and dies of SIGBUS at its start, ``-XX:+VerifySharedSpaces``
or not. So the build writes a manifest beside the archive (``<archive>.json``: its format version and the
archive's size), and the job maps only an archive whose size its manifest confirms; any other runs without it,
with a warning.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from settings.paths import runtime_dir
from settings.settings import Settings

__all__ = ["MANIFEST_VERSION", "archive_in_use", "default_archive", "dump_options", "manifest_of", "use_options",
           "write_manifest"]

log = logging.getLogger(__name__)

MANIFEST_VERSION = 1
"""The format of ``<archive>.json``: ``{"version": 1, "bytes": <the archive's size>}``."""

QUIET = "-Xlog:cds=error,cds+dynamic=error"
"""The JVM's class-sharing messages at error level only: a dump lists every class it skips (signed jars, old
class file versions) as a warning, several hundred lines in Spark's log."""


def default_archive() -> Path:
    """Where `pubsub job --write-class-archive` writes the archive by default: the runtime folder, beside the
    SPARK_HOME of links the archive's class path names (``spark_session.worker_spark_home``)."""
    return runtime_dir() / "jvm" / "spark-driver.jsa"


def manifest_of(archive: Path) -> Path:
    """The manifest the build writes beside ``archive``."""
    return archive.with_name(f"{archive.name}.json")


def write_manifest(archive: Path, manifest: Path) -> None:
    """Write ``manifest`` (whole or not at all) for the archive now at ``archive``."""
    partial = manifest.with_name(f".{manifest.name}.{os.getpid()}")
    partial.write_text(json.dumps({"version": MANIFEST_VERSION, "bytes": archive.stat().st_size}) + "\n")
    os.replace(partial, manifest)


def _whole(archive: Path) -> str | None:
    """None if ``archive`` is as its manifest says, else why not."""
    try:
        manifest = json.loads(manifest_of(archive).read_text())
        size = archive.stat().st_size
    except (OSError, ValueError) as err:
        return f"no readable manifest beside it ({err})"
    if not isinstance(manifest, dict) or manifest.get("version") != MANIFEST_VERSION:
        return f"its manifest is not of version {MANIFEST_VERSION}"
    if manifest.get("bytes") != size:
        return f"it holds {size} bytes, its manifest says {manifest.get('bytes')}"
    return None


def archive_in_use(settings: Settings) -> Path | None:
    """The archive the job's driver JVM maps: ``spark_class_archive`` if set, else ``default_archive`` if it was
    built; None when there is none, or when it is not whole (a warning says why)."""
    archive = settings.spark_class_archive or default_archive()
    if settings.spark_class_archive is None and not archive.is_file():
        return None
    if (damaged := _whole(archive)) is not None:
        log.warning("class archive %s not used: %s; `pubsub job --write-class-archive` writes it again", archive,
                    damaged)
        return None
    return archive


def use_options(archive: Path) -> tuple[str, ...]:
    """The driver JVM's options to map ``archive``."""
    return (f"-XX:SharedArchiveFile={archive}", QUIET)


def dump_options(target: Path) -> tuple[str, ...]:
    """The driver JVM's options to write what it loaded to ``target`` at its exit."""
    return (f"-XX:ArchiveClassesAtExit={target}", QUIET)
