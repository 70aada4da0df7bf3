"""Where the job's checkpoints live: a local folder (a plain path or a ``file:`` URI) or a folder on a Hadoop file
system the JVM reaches by URI (``hdfs://namenode:8020/pubsub``, ``s3a://bucket/pubsub``), docs/operations.md,
"Checkpoints on HDFS or S3"."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

__all__ = ["CheckpointLocation", "FUSED_FOLDER", "HadoopPath", "SPLIT_FOLDERS", "checkpoint_location"]

FUSED_FOLDER = "fused"
"""The fused job's query checkpoint inside the checkpoint folder (``streaming.stage_layout``)."""
SPLIT_FOLDERS = ("relay", "subscribers")
"""The split job's two query checkpoints inside the checkpoint folder."""

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/")
"""A URI: a scheme of two characters or more (not a Windows drive letter) then ``:/``, so a local folder whose
name holds a colon (``runs:2024``) stays a path."""


@dataclass(frozen=True)
class HadoopPath:
    """A folder on a Hadoop file system, as a URI; joined like a ``Path`` (``location / "relay"``)."""

    uri: str

    def __truediv__(self, name: str) -> HadoopPath:
        return HadoopPath(f"{self.uri.rstrip('/')}/{name}")

    @property
    def scheme(self) -> str:
        return urlsplit(self.uri).scheme

    def __str__(self) -> str:
        return self.uri


CheckpointLocation = Path | HadoopPath
"""A local folder (every piece of the project reads it) or a Hadoop URI (the Spark job reads and writes it through
Hadoop's FileSystem)."""


def checkpoint_location(raw: str | Path) -> CheckpointLocation:
    """A plain path or ``file:`` URI -> ``Path``; any other URI (``hdfs://``, ``s3a://``...) -> ``HadoopPath``.
    Raises ``ValueError`` for a URI without a path."""
    if isinstance(raw, Path):
        return raw
    text = str(raw)
    if not _SCHEME.match(text):
        return Path(text)
    parts = urlsplit(text)
    if parts.scheme.lower() == "file":
        if parts.netloc not in ("", "localhost"):
            raise ValueError(f"a file: URI names this machine's files, not host {parts.netloc!r}")
        return Path(unquote(parts.path))
    if not parts.path.strip("/"):
        raise ValueError("a checkpoint URI names a folder below the root: scheme://authority/path")
    return HadoopPath(text)
