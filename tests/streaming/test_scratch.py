"""The drivers' scratch folders (``streaming.scratch``): a live process's folder is kept, a killed one's is swept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from streaming.scratch import process_folder, sweep
from tests.support.paths import REPO_ROOT

CLAIM_AND_WAIT = """
import sys, time
from pathlib import Path
from streaming.scratch import process_folder
folder = process_folder(Path(sys.argv[1]))
(folder / "spark-1").mkdir()
(folder / "spark-1" / "state.sst").write_bytes(b"x" * 4096)
print(folder, flush=True)
time.sleep(600)
"""


def _claimer(root: Path) -> tuple[subprocess.Popen[str], Path]:
    """A process that claims a folder under ``root``, writes into it and waits; the folder it claimed."""
    process = subprocess.Popen([sys.executable, "-c", CLAIM_AND_WAIT, str(root)], cwd=REPO_ROOT, text=True,
                               stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert process.stdout is not None
    return process, Path(process.stdout.readline().strip())


def test_a_killed_process_s_folder_is_swept_and_a_live_one_s_kept(tmp_path: Path) -> None:
    root = tmp_path / "scratch"
    live, live_folder = _claimer(root)
    killed, killed_folder = _claimer(root)
    try:
        killed.send_signal(signal.SIGKILL)
        killed.wait(30)
        assert (killed_folder / "spark-1" / "state.sst").is_file()  # nothing ran at the kill

        assert sweep(root) == [killed_folder]
        assert not killed_folder.exists() and not killed_folder.with_name(killed_folder.name + ".lock").exists()
        assert (live_folder / "spark-1" / "state.sst").is_file()
        assert sweep(root) == []
    finally:
        live.kill()
        live.wait(30)
    assert sweep(root) == [live_folder]
    assert list(root.iterdir()) == []


def test_a_process_claims_one_folder_after_sweeping_the_ended_ones(tmp_path: Path) -> None:
    root = tmp_path / "scratch"
    ended, ended_folder = _claimer(root)
    ended.kill()
    ended.wait(30)
    mine = process_folder(root)
    assert process_folder(root) == mine and mine.is_dir() and mine.parent == root
    assert oct(mine.stat().st_mode & 0o777) == oct(0o700)
    assert not ended_folder.exists()
    assert sorted(p.name for p in root.iterdir()) == sorted([mine.name, f"{mine.name}.lock"])
    assert sweep(root) == []  # this process holds its own
