"""Errors of what supervises several parts (the embedded broker, a local cluster, a live run, verify, status): one
root, each error carrying the data that explains it."""

from __future__ import annotations

from pathlib import Path

from pubsub_core.errors import PubSubError

__all__ = ["BrokerError", "BrokerStartError", "ClusterError", "PartFailed", "PartTimeout", "StatusUnavailable",
           "SuperviseError", "VerifyStopped", "tail"]


class SuperviseError(PubSubError):
    """Base class for errors of the supervised parts: a broker, a cluster, a live run's processes."""


class BrokerError(SuperviseError):
    """The embedded Kafka broker could not be started, reached or stopped."""


class BrokerStartError(BrokerError):
    """The broker process exited or did not serve in time; carries the tail of its log."""

    def __init__(self, reason: str, log_path: Path, log_tail: str) -> None:
        super().__init__(f"the embedded Kafka broker did not start: {reason}; see {log_path}:\n{log_tail}")
        self.reason = reason
        self.log_path = log_path
        self.log_tail = log_tail


class ClusterError(SuperviseError):
    """The local standalone Spark cluster could not be started or a submitted application failed."""

    def __init__(self, reason: str, log_path: Path | None = None, log_tail: str = "") -> None:
        where = f"; see {log_path}:\n{log_tail}" if log_path else ""
        super().__init__(f"{reason}{where}")
        self.reason = reason
        self.log_path = log_path
        self.log_tail = log_tail


class PartFailed(SuperviseError):
    """A supervised part exited while it should have been running; carries its name, exit code and log tail."""

    def __init__(self, name: str, code: int, log: Path, tail: str) -> None:
        super().__init__(f"{name} exited with code {code} (log {log}):\n{tail}")
        self.name = name
        self.code = code
        self.log = log


class PartTimeout(SuperviseError):
    """A live run did not reach an expected point in time (e.g. the job did not catch up with the author)."""

    def __init__(self, what: str, seconds: float) -> None:
        super().__init__(f"{what} (waited {seconds:.0f}s)")
        self.what = what


class StatusUnavailable(SuperviseError):
    """Neither a running job's metrics nor the realm's topics could be read for `pubsub status`."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"cannot read the status from {where}: {reason}")
        self.where = where


def tail(path: Path, lines: int = 30) -> str:
    """The last lines of a log file (empty if it does not exist), for error messages."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class VerifyStopped(SuperviseError):
    """A signal stopped the job that ``verify`` ran before it reached the end of the log: nothing was compared."""

    def __init__(self, signal_name: str, batches: int) -> None:
        super().__init__(f"the job was stopped by {signal_name} after {batches} batches, before the end of the log; "
                         "nothing was compared (run verify again, it starts afresh)")
        self.signal_name = signal_name
        self.batches = batches
