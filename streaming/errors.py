"""Errors of the streaming layer: one root, one branch per component, each carrying the data that explains it."""

from __future__ import annotations

from pathlib import Path

from pubsub_core.errors import PubSubError

__all__ = [
    "BrokerError",
    "BrokerStartError",
    "CheckpointDiskFull",
    "CheckpointUnreadable",
    "ClusterError",
    "JarsMissingError",
    "MetricsError",
    "RecordWriteError",
    "SettingsError",
    "StatusUnavailable",
    "StreamingError",
]


class StreamingError(PubSubError):
    """Base class for errors of the Kafka/Spark infrastructure."""


class SettingsError(StreamingError):
    """A setting has an invalid value; names the setting, the value and where it came from."""

    def __init__(self, name: str, value: object, source: str, reason: str) -> None:
        shown = "***" if "password" in name else repr(value)
        super().__init__(f"setting {name}={shown} (from {source}) is invalid: {reason}")
        self.name = name
        self.source = source
        self.reason = reason


class JarsMissingError(StreamingError):
    """The Maven jars are not there: `make setup` (or mvn on jvm/pom.xml) has not run."""

    def __init__(self, folder: Path) -> None:
        super().__init__(f"no jars in {folder}; run `make setup` (it runs mvn on jvm/pom.xml)")
        self.folder = folder


class BrokerError(StreamingError):
    """The embedded Kafka broker could not be started, reached or stopped."""


class BrokerStartError(BrokerError):
    """The broker process exited or did not serve in time; carries the tail of its log."""

    def __init__(self, reason: str, log_path: Path, log_tail: str) -> None:
        super().__init__(f"the embedded Kafka broker did not start: {reason}; see {log_path}:\n{log_tail}")
        self.reason = reason
        self.log_path = log_path
        self.log_tail = log_tail


class ClusterError(StreamingError):
    """The local standalone Spark cluster could not be started or a submitted application failed."""

    def __init__(self, reason: str, log_path: Path | None = None, log_tail: str = "") -> None:
        where = f"; see {log_path}:\n{log_tail}" if log_path else ""
        super().__init__(f"{reason}{where}")
        self.reason = reason
        self.log_path = log_path
        self.log_tail = log_tail


def tail(path: Path, lines: int = 30) -> str:
    """The last lines of a log file (empty if it does not exist), for error messages."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class CheckpointDiskFull(StreamingError):
    """The disk holding the checkpoint is full: the micro-batch being written is not committed, so a restart
    after freeing space re-runs it from the last committed batch."""

    def __init__(self, checkpoint: Path, free_bytes: int | None) -> None:
        free = "unknown" if free_bytes is None else f"{free_bytes:,} bytes"
        super().__init__(
            f"the disk holding the checkpoint {checkpoint} is full (No space left on device; free: {free}). The "
            "batch being written was not committed: free space (or move the checkpoint) and restart the job, it "
            "resumes from the last committed batch.")
        self.checkpoint = checkpoint
        self.free_bytes = free_bytes


class CheckpointUnreadable(StreamingError):
    """A checkpoint file the job reads before Spark does could not be parsed; names the file and why."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"cannot read the checkpoint file {path}: {reason}")
        self.path = path
        self.reason = reason


class RecordWriteError(StreamingError):
    """Kafka did not take records a stage wrote: the micro-batch fails and runs again (nothing is committed)."""

    def __init__(self, topic: str, reason: str, failed: int) -> None:
        super().__init__(f"{failed} records were not delivered, first on topic {topic}: {reason}")
        self.topic = topic
        self.reason = reason
        self.failed = failed


class MetricsError(StreamingError):
    """The metrics endpoint could not be served (a port in use, an address not on this host)."""

    def __init__(self, host: str, port: int, reason: str) -> None:
        super().__init__(f"cannot serve metrics on {host}:{port}: {reason}")
        self.host, self.port = host, port


class StatusUnavailable(StreamingError):
    """Neither a running job's metrics nor the realm's topics could be read for `pubsub status`."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"cannot read the status from {where}: {reason}")
        self.where = where
