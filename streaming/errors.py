"""Errors of the streaming layer: one root, one branch per component, each carrying the data that explains it."""

from __future__ import annotations

from pathlib import Path

from pubsub_core.errors import PubSubError
from settings.checkpoint_location import CheckpointLocation

__all__ = [
    "BatchStuck",
    "CheckpointDiskFull",
    "CheckpointInUse",
    "CheckpointUnreachable",
    "CheckpointUnreadable",
    "ClassArchiveNotWritten",
    "KafkaUnavailable",
    "MetricsError",
    "QueryFailed",
    "RecordWriteError",
    "ShippingError",
    "StagesMismatch",
    "StreamingError",
]


class StreamingError(PubSubError):
    """Base class for errors of the Kafka/Spark infrastructure."""


class ShippingError(StreamingError):
    """The venv cannot be packed for the executors (``streaming.shipping``); names the venv and why."""

    def __init__(self, venv: Path, reason: str) -> None:
        super().__init__(f"cannot pack {venv} for the executors: {reason}")
        self.venv = venv
        self.reason = reason


class ClassArchiveNotWritten(StreamingError):
    """Spark's JVM exited without writing the class archive it was asked for (its reason is in Spark's log)."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"Spark's JVM exited without writing its class archive {path} (see logs/spark.log in the "
                         "runtime folder)")
        self.path = path


class KafkaUnavailable(StreamingError):
    """The job has no Kafka cluster to read: none configured, or the configured one does not answer."""

    def __init__(self, bootstrap: str | None, reason: str) -> None:
        super().__init__(reason)
        self.bootstrap = bootstrap
        self.reason = reason


class CheckpointDiskFull(StreamingError):
    """The disk holding the checkpoint is full: the micro-batch being written is not committed, so a restart
    after freeing space re-runs it from the last committed batch."""

    def __init__(self, checkpoint: CheckpointLocation, free_bytes: int | None) -> None:
        free = "unknown" if free_bytes is None else f"{free_bytes:,} bytes"
        super().__init__(
            f"the disk holding the checkpoint {checkpoint} is full (No space left on device; free: {free}). The "
            "batch being written was not committed: free space (or move the checkpoint) and restart the job, it "
            "resumes from the last committed batch.")
        self.checkpoint = checkpoint
        self.free_bytes = free_bytes


class BatchStuck(StreamingError):
    """A micro-batch has run for a long time while Spark's JVM and its Python workers did next to nothing: a task
    waits on something that will not come (``streaming.stuck``). Nothing of the batch was committed."""

    def __init__(self, query: str, batch: int | None, seconds: float, cpu_share: float) -> None:
        which = "running batch" if batch is None else f"batch {batch}"
        super().__init__(
            f"the {query} query's {which} has run for {seconds:.0f}s while Spark's JVM and its Python workers "
            f"used {cpu_share:.1%} of a core: a task waits on something that will not come. Nothing of the batch "
            "was committed: restart the job on the same checkpoint, it runs the batch again (the driver's log "
            "under the runtime folder's logs/ names the task)")
        self.query = query
        self.batch = batch
        self.seconds = seconds
        self.cpu_share = cpu_share


class CheckpointInUse(StreamingError):
    """Another job on this host runs on the checkpoint (it holds the checkpoint's lock, ``streaming.checkpoint_lock``);
    names the checkpoint, that job's pid (None: unknown) and the lock file."""

    def __init__(self, checkpoint: CheckpointLocation, pid: int | None, lock: Path) -> None:
        who = "another job" if pid is None else f"another job (pid {pid})"
        super().__init__(f"the checkpoint {checkpoint} is in use by {who} on this host: stop it first, or run this "
                         f"one with --standby to take over when it ends (lock {lock})")
        self.checkpoint = checkpoint
        self.pid = pid
        self.lock = lock


class CheckpointUnreadable(StreamingError):
    """A checkpoint file the job reads before Spark does could not be parsed; names the file and why."""

    def __init__(self, path: CheckpointLocation, reason: str) -> None:
        super().__init__(f"cannot read the checkpoint file {path}: {reason}")
        self.path = path
        self.reason = reason


class CheckpointUnreachable(StreamingError):
    """The file system of a checkpoint URI did not answer the job's start-up check (a NameNode down or unreachable,
    a scheme without a file system class); names the URI, what failed (the server that did not answer) and Hadoop's
    root cause."""

    def __init__(self, checkpoint: CheckpointLocation, what: str, reason: str) -> None:
        super().__init__(f"cannot reach the checkpoint {checkpoint}: {what} ({reason}). Check the URI, that its server "
                         "runs and that this host reaches it (docs/operations.md, \"Deploying on a cluster\")")
        self.checkpoint = checkpoint
        self.what = what
        self.reason = reason


class StagesMismatch(StreamingError):
    """The job was asked to run its stages one way (``stages``: fused or split) on a checkpoint made the other way;
    a checkpoint keeps the layout it was made with. Names the checkpoint, its layout and the one asked for."""

    def __init__(self, checkpoint: CheckpointLocation, found: str, asked: str) -> None:
        super().__init__(f"the checkpoint {checkpoint} holds a {found} job's state and cannot run {asked}: run with "
                         f"--stages {found} (or auto), or start a new checkpoint (docs/pipeline.md, \"Fused or split\")")
        self.checkpoint = checkpoint
        self.found = found
        self.asked = asked


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


class QueryFailed(StreamingError):
    """A streaming query stopped on an error Spark raised: its message and the root of its Java cause chain. The
    failed batch was not committed, so a restart on the same checkpoint runs it again."""

    def __init__(self, message: str, root_cause: str | None) -> None:
        cause = f"; caused by {root_cause}" if root_cause and root_cause not in message else ""
        super().__init__(f"a streaming query failed: {message}{cause}. Nothing of the failed batch was committed: "
                         "restart the job on the same checkpoint once the cause is fixed (--debug shows Spark's "
                         "trace; the driver's log is under the runtime folder's logs/)")
        self.message = message
        self.root_cause = root_cause
