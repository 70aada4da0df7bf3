"""A class data sharing archive of Spark's driver JVM: what a restarted job's JVM maps instead of loading.

A session's start loads, parses and verifies some 10,000 classes from Spark's jars, most of a restart's JVM time
(docs/benchmarks.md, "Recovery after a crash"). The JDK's dynamic class data sharing (``-XX:ArchiveClassesAtExit``)
writes the classes a JVM loaded into one file at its exit; a JVM started with ``-XX:SharedArchiveFile`` maps them
from it. ``class_archive_build.build_class_archive`` runs a session and a stateful streaming query on the job's
confs and writes that file, only when asked (`pubsub job --write-class-archive`, `make class-archive`); the job
then starts its JVM with it (``spark_session.spark_conf``). A JVM whose jars, class path or Java differ from the archive's runs without it
(``-Xshare:auto``, the default): a stale archive costs its gain, never a failure.
"""

from __future__ import annotations

from pathlib import Path

from settings.paths import runtime_dir
from settings.settings import Settings

__all__ = ["archive_in_use", "default_archive", "dump_options", "use_options"]

QUIET = "-Xlog:cds=error,cds+dynamic=error"
"""The JVM's class-sharing messages at error level only: a dump lists every class it skips (signed jars, old
class file versions) as a warning, several hundred lines in Spark's log."""


def default_archive() -> Path:
    """Where `pubsub job --write-class-archive` writes the archive by default: the runtime folder, beside the
    SPARK_HOME of links the archive's class path names (``spark_session.worker_spark_home``)."""
    return runtime_dir() / "jvm" / "spark-driver.jsa"


def archive_in_use(settings: Settings) -> Path | None:
    """The archive the job's driver JVM maps: ``spark_class_archive`` if set, else ``default_archive`` if it was
    built; None when there is none."""
    if settings.spark_class_archive is not None:
        return settings.spark_class_archive
    default = default_archive()
    return default if default.is_file() else None


def use_options(archive: Path) -> tuple[str, ...]:
    """The driver JVM's options to map ``archive``."""
    return (f"-XX:SharedArchiveFile={archive}", QUIET)


def dump_options(target: Path) -> tuple[str, ...]:
    """The driver JVM's options to write what it loaded to ``target`` at its exit."""
    return (f"-XX:ArchiveClassesAtExit={target}", QUIET)
