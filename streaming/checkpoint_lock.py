"""One running job per checkpoint on a host, and a standby that takes the checkpoint over when that job ends.

Two drivers writing one checkpoint would race for each batch's offset and commit files; Spark notices only within
one session. Every job therefore holds an exclusive ``flock`` on a file named after its checkpoint in the runtime
folder's ``locks/`` while it runs; the kernel releases it when the process ends, however it ends (a SIGKILL
included), and the JVM does not inherit it (Python opens files non-inheritable). A job started while the lock is
held refuses in one line; a standby (``standby``) starts its JVM and session first, then waits for the lock, so a
crashed job's successor skips the JVM and session start (docs/operations.md, "A warm standby").
The lock covers this host only: a standby on another host cannot see it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
from collections.abc import Callable
from pathlib import Path

from settings.checkpoint_location import CheckpointLocation
from streaming.errors import CheckpointInUse

__all__ = ["CheckpointLock", "lock_path"]

POLL_SECONDS = 0.05
"""How often a standby tries the lock: the most it adds to a take-over."""


def lock_path(folder: Path, checkpoint: CheckpointLocation) -> Path:
    """The lock file of ``checkpoint`` in ``folder``: one per checkpoint (a local path resolved first, so two
    spellings of one folder share it)."""
    name = str(checkpoint.resolve()) if isinstance(checkpoint, Path) else str(checkpoint)
    return folder / f"checkpoint-{hashlib.sha256(name.encode()).hexdigest()[:16]}.lock"


class CheckpointLock:
    """The exclusive lock of one checkpoint; the holder writes its pid into the file for the others' messages."""

    def __init__(self, folder: Path, checkpoint: CheckpointLocation) -> None:
        self.checkpoint = checkpoint
        self.path = lock_path(folder, checkpoint)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_acquire(self) -> bool:
        """Take the lock if it is free; True when this process holds it."""
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n{self.checkpoint}\n".encode())
        self._fd = fd
        return True

    def acquire(self) -> None:
        """Take the lock now, or ``CheckpointInUse`` naming the holder."""
        if not self.try_acquire():
            raise CheckpointInUse(self.checkpoint, self.holder(), self.path)

    def wait(self, stopped: Callable[[], bool], poll: float = POLL_SECONDS) -> bool:
        """Wait until the lock is ours (True) or ``stopped()`` (False)."""
        while not self.try_acquire():
            if stopped():
                return False
            time.sleep(poll)
        return True

    def holder(self) -> int | None:
        """The pid the holder wrote (None: unreadable, or written by no one yet)."""
        try:
            first = self.path.read_text().split("\n", 1)[0]
        except OSError:
            return None
        return int(first) if first.isdigit() else None

    def release(self) -> None:
        """Let the lock go (closing the file releases it); the file stays for the next holder."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
