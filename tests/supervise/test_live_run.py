"""The live run's supervisor (supervise/live_run.py) with real subprocesses: every part it started, and their own
children, are gone after a normal exit, an interrupt (Ctrl-C) or the failure of one part."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from producers.workload import WorkloadSpec
from supervise.live_run import LivePlan, PartFailed, Supervisor

# A part that starts a child of its own (as `pubsub job` starts Spark's JVM), records both pids, and runs on.
_PART = """
import subprocess, sys, time, signal
if sys.argv[2] == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
open(sys.argv[1], "w").write(f"{child.pid}")
if sys.argv[2] == "fail":
    time.sleep(0.5)
    sys.exit(3)
time.sleep(300)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _start(supervisor: Supervisor, tmp_path: Path, name: str, mode: str = "run") -> tuple[int, int]:
    pid_file = tmp_path / f"{name}.child"
    process = supervisor.start(name, [sys.executable, "-c", _PART, str(pid_file), mode])
    deadline = time.monotonic() + 20
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline, f"{name} did not start"
        time.sleep(0.05)
    return process.pid, int(pid_file.read_text())


def _gone(pids: list[int]) -> bool:
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_parts_run_in_their_own_process_groups_and_all_stop_on_exit(tmp_path: Path) -> None:
    with Supervisor(tmp_path / "logs", grace=5) as supervisor:
        pids = [*_start(supervisor, tmp_path, "a"), *_start(supervisor, tmp_path, "b")]
        assert os.getpgid(pids[0]) == pids[0] != os.getpgid(0)
        assert os.getpgid(pids[1]) == pids[0]  # the child shares its part's group
        supervisor.check()
        assert all(_alive(pid) for pid in pids)
    assert _gone(pids)


def test_an_interrupt_stops_every_part(tmp_path: Path) -> None:
    pids: list[int] = []
    with pytest.raises(KeyboardInterrupt):
        with Supervisor(tmp_path / "logs", grace=5) as supervisor:
            pids += [*_start(supervisor, tmp_path, "a"), *_start(supervisor, tmp_path, "b")]
            raise KeyboardInterrupt  # what Ctrl-C (or the demo's SIGTERM handler) raises
    assert pids and _gone(pids)


def test_the_failure_of_one_part_is_reported_and_stops_the_others(tmp_path: Path) -> None:
    pids: list[int] = []
    with pytest.raises(PartFailed) as failed:
        with Supervisor(tmp_path / "logs", grace=5) as supervisor:
            pids += _start(supervisor, tmp_path, "steady")
            pids += _start(supervisor, tmp_path, "broken", "fail")
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                supervisor.check()
                time.sleep(0.1)
    assert failed.value.name == "broken" and failed.value.code == 3
    assert pids and _gone(pids)  # the failed part's orphaned child too


def test_a_part_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    with Supervisor(tmp_path / "logs", grace=1) as supervisor:
        pids = _start(supervisor, tmp_path, "stubborn", "stubborn")
        started = time.monotonic()
        assert supervisor.stop("stubborn") == -signal.SIGKILL
        assert 0.9 <= time.monotonic() - started < 5
        supervisor.check()  # asked to stop: no failure
    assert _gone(list(pids))


def test_a_one_off_part_may_finish_but_not_fail(tmp_path: Path) -> None:
    with Supervisor(tmp_path / "logs") as supervisor:
        supervisor.start("done", [sys.executable, "-c", "pass"], may_finish=True).wait(20)
        supervisor.check()
        supervisor.start("bad", [sys.executable, "-c", "import sys; print('boom', file=sys.stderr); sys.exit(2)"],
                         may_finish=True).wait(20)
        with pytest.raises(PartFailed, match="bad exited with code 2") as failed:
            supervisor.check()
        assert "boom" in str(failed.value)


def test_the_plan_runs_the_cli_commands_it_documents(tmp_path: Path) -> None:
    from cli.main import build_parser

    plan = LivePlan("r1", WorkloadSpec(seed=3, publishers=4, realm="r1"), 50.0, 1.0, tmp_path / "cp", tmp_path / "logs")
    parser = build_parser()
    for argv in (plan.producer("h:1"), plan.producer("h:1", seconds=0.001), plan.author("h:1"), plan.job("h:1"),
                 plan.follower("h:1")):
        assert argv[:3] == [sys.executable, "-m", "cli.main"]
        args = parser.parse_args(argv[3:])
        assert args.bootstrap == "h:1"
    assert parser.parse_args(plan.producer("h:1")[3:]).publishers == 4
