"""The descriptor watch, on a real process with a low limit that opens and closes files on command."""

from __future__ import annotations

import resource
import subprocess
import sys
from collections.abc import Iterator

import pytest

from streaming.descriptors import DescriptorUse, DescriptorWatch, descriptor_use

LIMIT = 64

# Opens N handles of /dev/null when told "open N", closes them all on "close"; answers "ok" each time.
CHILD = """
import sys
held = []
for line in sys.stdin:
    word, *rest = line.split()
    if word == "open":
        held += [open("/dev/null") for _ in range(int(rest[0]))]
    else:
        for handle in held:
            handle.close()
        held = []
    print("ok", flush=True)
"""


@pytest.fixture
def child() -> Iterator[subprocess.Popen[str]]:
    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))

    process = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, preexec_fn=low_limit)
    yield process
    process.kill()
    process.wait()


def _tell(process: subprocess.Popen[str], command: str) -> None:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(command + "\n")
    process.stdin.flush()
    assert process.stdout.readline().strip() == "ok"


def test_use_counts_the_descriptors_a_process_opens_and_reads_its_limit(child: subprocess.Popen[str]) -> None:
    before = descriptor_use(child.pid)
    assert before is not None and before.limit == LIMIT and before.pid == child.pid
    _tell(child, "open 20")
    after = descriptor_use(child.pid)
    assert after is not None and after.open == before.open + 20


def test_a_gone_process_reads_as_none() -> None:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    assert descriptor_use(process.pid) is None


def test_the_watch_warns_once_per_crossing_of_the_threshold(child: subprocess.Popen[str]) -> None:
    warned: list[DescriptorUse] = []
    watch = DescriptorWatch(child.pid, warned.append, threshold=0.75, every_seconds=0.0)
    baseline = watch.check()
    assert baseline is not None and not warned
    wanted = int(0.75 * LIMIT) - baseline.open  # exactly at the threshold
    _tell(child, f"open {wanted - 1}")
    watch.check()
    assert not warned  # one short of it
    _tell(child, "open 1")
    watch.check()
    watch.check()
    assert [(w.open, w.limit) for w in warned] == [(int(0.75 * LIMIT), LIMIT)]  # once, however often it looks
    _tell(child, "close")
    watch.check()
    _tell(child, f"open {wanted + 2}")
    watch.check()
    assert len(warned) == 2 and warned[1].open == int(0.75 * LIMIT) + 2  # fell back, then crossed again


def test_the_watch_reads_no_more_often_than_asked(child: subprocess.Popen[str]) -> None:
    watch = DescriptorWatch(child.pid, lambda use: None, every_seconds=3600.0)
    assert watch.check() is not None
    assert watch.check() is None  # not due for an hour
