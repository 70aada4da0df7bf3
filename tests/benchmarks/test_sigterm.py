"""A harness killed with SIGTERM (``kill``, a timeout) still runs its ``finally`` blocks, which stop the broker and
the parts it started (``benchmarks.common.stop_cleanly_on_sigterm``)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_HARNESS = """
import time
from benchmarks.common import stop_cleanly_on_sigterm
{install}
try:
    print("running", flush=True)
    time.sleep(60)
finally:
    print("stopped the broker", flush=True)
"""


def _terminated(install: str) -> tuple[int, str]:
    process = subprocess.Popen([sys.executable, "-c", _HARNESS.format(install=install)], cwd=ROOT,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    assert process.stdout.readline() == "running\n"
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=30)
    return process.returncode, out


def test_without_the_handler_sigterm_skips_the_finally_block() -> None:
    assert _terminated("") == (-signal.SIGTERM, "")


def test_with_it_the_finally_block_runs_and_the_status_says_sigterm() -> None:
    assert _terminated("stop_cleanly_on_sigterm()") == (128 + signal.SIGTERM, "stopped the broker\n")
