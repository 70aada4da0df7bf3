"""The checkpoint lock: held by one process at a time on a host, released by the kernel when its holder dies (a
SIGKILL included), shared by two spellings of one folder, and waited for by a standby that can be stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from settings.checkpoint_location import checkpoint_location
from streaming.checkpoint_lock import CheckpointLock, lock_path
from streaming.errors import CheckpointInUse
from tests.support.paths import REPO_ROOT

HOLD = """
import sys, time
from pathlib import Path
from streaming.checkpoint_lock import CheckpointLock
lock = CheckpointLock(Path(sys.argv[1]), Path(sys.argv[2]))
lock.acquire()
print("held", flush=True)
time.sleep(600)
"""


def _holder(folder: Path, checkpoint: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(folder), str(checkpoint)], cwd=REPO_ROOT,
                               stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert process.stdout is not None and process.stdout.readline() == "held\n"
    return process


def test_a_held_lock_is_refused_with_the_holder_and_freed_when_the_holder_is_killed(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint"
    holder = _holder(tmp_path / "locks", checkpoint)
    lock = CheckpointLock(tmp_path / "locks", checkpoint)
    try:
        assert not lock.try_acquire()
        with pytest.raises(CheckpointInUse) as refused:
            lock.acquire()
        assert refused.value.pid == holder.pid
        assert str(refused.value).startswith(f"the checkpoint {checkpoint} is in use by another job (pid "
                                             f"{holder.pid}) on this host")
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
    assert lock.try_acquire() and lock.held
    assert lock.holder() == os.getpid()
    lock.release()
    assert not lock.held


def test_two_spellings_of_one_folder_share_a_lock_and_other_checkpoints_do_not(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    folder = tmp_path / "locks"
    assert lock_path(folder, tmp_path / "a" / ".." / "checkpoint") == lock_path(folder, tmp_path / "checkpoint")
    assert lock_path(folder, tmp_path / "checkpoint") != lock_path(folder, tmp_path / "other")
    uri = checkpoint_location("hdfs://namenode:8020/pubsub/checkpoint")
    assert lock_path(folder, uri) != lock_path(folder, checkpoint_location("hdfs://namenode:8020/pubsub/other"))


def test_a_standby_waits_until_the_lock_is_free_or_it_is_stopped(tmp_path: Path) -> None:
    first = CheckpointLock(tmp_path, tmp_path / "checkpoint")
    first.acquire()
    stop = threading.Event()
    standby = CheckpointLock(tmp_path, tmp_path / "checkpoint")
    timer = threading.Timer(0.3, stop.set)
    timer.start()
    assert standby.wait(stop.is_set) is False  # stopped while the lock was held
    timer = threading.Timer(0.3, first.release)
    timer.start()
    assert standby.wait(lambda: False) is True
    assert standby.held and standby.holder() == os.getpid()
    standby.release()
