"""A folder of the driver's own for Spark's local files, swept of those a killed driver left behind.

Spark keeps its local files (``spark.local.dir``: the RocksDB state stores' working copies, the Python workers'
folders, the block manager's) and the driver JVM its temporary files (``java.io.tmpdir``: native libraries it
unpacks) under /tmp by default, and deletes them in a shutdown hook, which a SIGKILL never runs. A job restarted
after every crash then left a copy of its state in /tmp each time. Each process that starts a Spark session instead
claims ``scratch/<id>/`` in the runtime folder and holds an exclusive ``flock`` on ``scratch/<id>.lock`` for its
life (the kernel releases it however the process ends; the JVM does not inherit it); a claim first removes every
folder whose lock is free, whose process has ended.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import uuid
from pathlib import Path

__all__ = ["process_folder", "sweep"]

LOCK_SUFFIX = ".lock"

_claimed: dict[Path, Path] = {}
"""This process's folder per root. Their locks' descriptors are never closed: the kernel frees them at exit."""


def sweep(root: Path) -> list[Path]:
    """Remove the folders under ``root`` whose process has ended (their lock is free), with their lock files; the
    folders removed. A lock file is taken before its folder is made, so a folder being claimed is never seen free."""
    removed = []
    for lock in sorted(root.glob(f"*{LOCK_SUFFIX}")):
        try:
            fd = os.open(lock, os.O_RDWR)
        except FileNotFoundError:
            continue  # another sweep removed it first
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue  # its process is alive
        folder = lock.with_name(lock.name.removesuffix(LOCK_SUFFIX))
        shutil.rmtree(folder, ignore_errors=True)
        lock.unlink(missing_ok=True)
        os.close(fd)
        removed.append(folder)
    return removed


def process_folder(root: Path) -> Path:
    """This process's folder under ``root``: claimed at the first call (after a sweep of ``root``), locked until the
    process ends; the same folder at later calls."""
    if root in _claimed:
        return _claimed[root]
    root.mkdir(parents=True, exist_ok=True)
    sweep(root)
    name = uuid.uuid4().hex
    fd = os.open(root / f"{name}{LOCK_SUFFIX}", os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a new file: no one else holds it
    folder = root / name
    folder.mkdir(mode=0o700)
    _claimed[root] = folder
    return folder
