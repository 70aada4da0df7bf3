"""The driver's reads and writes of files in a checkpoint on a Hadoop file system (``HadoopPath``: ``hdfs://``,
``s3a://``), through the Spark session's own Hadoop FileSystem and configuration, so they reach the same store,
with the same credentials, as the queries' checkpoints. A local checkpoint (``Path``) is read with Python's file
API by the callers, as before."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from settings.checkpoint_location import HadoopPath
from streaming.errors import CheckpointUnreachable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["PROBE_SETTINGS", "check_reachable", "create_private", "list_names", "read_text", "space_used"]

PROBE_SETTINGS: dict[str, str] = {
    "ipc.client.connect.max.retries": "2",
    "ipc.client.connect.max.retries.on.timeouts": "2",
    "ipc.client.connect.timeout": "5000",
}
"""Hadoop's IPC client settings (core-default.xml) for the start-up check alone: three connection attempts of at
most 5 s each, where Hadoop's defaults (10 retries on a refused connection, 45 of 20 s on a timeout) would keep a
job whose NameNode is down or unreachable waiting for up to a quarter of an hour before saying anything. The
queries keep the session's settings, so a running job still rides out a NameNode restart."""

_UNREACHABLE = ("java.net.ConnectException", "java.net.NoRouteToHostException", "java.net.SocketTimeoutException",
                "java.net.UnknownHostException", "org.apache.hadoop.net.ConnectTimeoutException")
"""Java exceptions that mean the server named by the URI's authority did not answer."""


def _fs_path(spark: SparkSession, location: HadoopPath) -> tuple[Any, Any]:
    """(FileSystem, Path) of ``location`` in the session's JVM."""
    jvm: Any = spark._jvm  # pyspark's py4j gateway: the way to Hadoop's FileSystem from Python
    path = jvm.org.apache.hadoop.fs.Path(location.uri)
    return path.getFileSystem(spark._jsc.hadoopConfiguration()), path


def check_reachable(spark: SparkSession, location: HadoopPath) -> None:
    """Asks the file system of ``location`` whether the folder exists, on a connection of its own with
    ``PROBE_SETTINGS``; raises ``CheckpointUnreachable`` (the URI, what failed, Hadoop's root cause) if it fails."""
    jvm: Any = spark._jvm
    conf = jvm.org.apache.hadoop.conf.Configuration(spark._jsc.hadoopConfiguration())
    for key, value in PROBE_SETTINGS.items():
        conf.set(key, value)
    path = jvm.org.apache.hadoop.fs.Path(location.uri)
    try:
        fs = jvm.org.apache.hadoop.fs.FileSystem.newInstance(path.toUri(), conf)
        try:
            fs.exists(path)
        finally:
            fs.close()
    except Exception as err:
        chain = _java_chain(getattr(err, "java_exception", None))
        if not chain:  # not an error of Hadoop's (py4j's own, a bug): as it is
            raise
        if any(name in _UNREACHABLE for name, _ in chain):
            parts = urlsplit(location.uri)
            server = f"{'NameNode' if parts.scheme == 'hdfs' else 'server'} {parts.netloc or '(default)'}"
            attempts = int(PROBE_SETTINGS["ipc.client.connect.max.retries"]) + 1
            what = f"its {server} did not answer in {attempts} attempts"
        else:
            what = "Hadoop's file system refused it"
        name, message = chain[-1]
        raise CheckpointUnreachable(location, what, f"{name}: {message}" if message else name) from err


def _java_chain(throwable: Any) -> list[tuple[str, str]]:
    """(class name, first line of the message) of a Java throwable and each of its causes, outermost first."""
    chain: list[tuple[str, str]] = []
    while throwable is not None and len(chain) < 30:
        message = throwable.getMessage()
        chain.append((str(throwable.getClass().getName()), str(message).splitlines()[0] if message else ""))
        throwable = throwable.getCause()
    return chain


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
