"""The driver's reads and writes of files in a checkpoint on a Hadoop file system (``HadoopPath``: ``hdfs://``,
``s3a://``), through the Spark session's own Hadoop FileSystem and configuration, so they reach the same store,
with the same credentials, as the queries' checkpoints. A local checkpoint (``Path``) is read with Python's file
API by the callers, as before."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from settings.checkpoint_location import HadoopPath

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["create_private", "list_names", "read_text", "space_used"]


def _fs_path(spark: SparkSession, location: HadoopPath) -> tuple[Any, Any]:
    """(FileSystem, Path) of ``location`` in the session's JVM."""
    jvm: Any = spark._jvm  # pyspark's py4j gateway: the way to Hadoop's FileSystem from Python
    path = jvm.org.apache.hadoop.fs.Path(location.uri)
    return path.getFileSystem(spark._jsc.hadoopConfiguration()), path


def read_text(spark: SparkSession, location: HadoopPath) -> str | None:
    """The file's text (UTF-8); None if it does not exist."""
    fs, path = _fs_path(spark, location)
    if not fs.exists(path):
        return None
    jvm: Any = spark._jvm
    stream = fs.open(path)
    try:
        return str(jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
    finally:
        stream.close()


def list_names(spark: SparkSession, location: HadoopPath) -> list[str]:
    """Names of the entries in the folder; empty if it does not exist."""
    fs, path = _fs_path(spark, location)
    if not fs.exists(path):
        return []
    return [str(status.getPath().getName()) for status in fs.listStatus(path)]


def create_private(spark: SparkSession, location: HadoopPath, text: str) -> bool:
    """Writes ``text`` to a new file readable by its owner only (mode 0600 under any umask that keeps the owner's
    bits); False, leaving it alone, if the file exists already."""
    fs, path = _fs_path(spark, location)
    if fs.exists(path):
        return False
    jvm: Any = spark._jvm
    mode = jvm.org.apache.hadoop.fs.permission.FsPermission("600")
    try:
        stream = fs.create(path, mode, False, 4096, fs.getDefaultReplication(path), fs.getDefaultBlockSize(path), None)
    except Exception:  # noqa: BLE001 - py4j wraps Java's FileAlreadyExistsException: another driver won the race
        if fs.exists(path):
            return False
        raise
    try:
        stream.write(text.encode())
    finally:
        stream.close()
    return True


def space_used(spark: SparkSession, location: HadoopPath) -> int:
    """Bytes the folder takes on its file system (replicas included, as ``hdfs dfs -du -s`` counts them); 0 if it
    does not exist."""
    fs, path = _fs_path(spark, location)
    if not fs.exists(path):
        return 0
    return int(fs.getContentSummary(path).getSpaceConsumed())
