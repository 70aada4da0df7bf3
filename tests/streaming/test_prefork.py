"""The pre-init fork server and its launcher (streaming/prefork.py, streaming/prefork_launcher.py), as real
processes: what a forked module sees, what runs fresh instead, a stop passed on, and the server's exit."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from streaming import prefork
from streaming.prefork_launcher import MODULES_ENV, SOCKET_ENV

PROBE = "tests.streaming.prefork_probe"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def server() -> Iterator[prefork.PreforkServer]:
    started = prefork.spawn((PROBE,))
    assert started is not None
    yield started
    started.stop()


def _env(server: prefork.PreforkServer, modules: str = PROBE) -> dict[str, str]:
    return {**os.environ, SOCKET_ENV: str(server.socket_path), MODULES_ENV: modules, "PROBE": "yes",
            "PYTHONPATH": str(REPO)}


def _probe(launcher: Path, args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, dict[str, object]]:
    done = subprocess.run([str(launcher), "-m", PROBE, *args], env=env, cwd=cwd, capture_output=True, timeout=60)
    return done.returncode, json.loads(done.stdout.decode().splitlines()[-1])


def test_a_preloaded_module_runs_in_a_child_of_the_server_with_the_launcher_s_streams_env_folder_and_status(
        server: prefork.PreforkServer, tmp_path: Path) -> None:
    status, seen = _probe(server.launcher, ["7"], _env(server), tmp_path)
    assert status == 7
    assert seen["argv"] == ["7"] and seen["probe"] == "yes" and seen["cwd"] == str(tmp_path)
    assert seen["ppid"] == server.process.pid  # forked by the server ...
    assert seen["preloaded_in"] == server.process.pid  # ... which had imported the module already


def test_anything_else_runs_in_a_fresh_interpreter(server: prefork.PreforkServer, tmp_path: Path) -> None:
    """Not a listed module, a listed module the server did not preload (it refuses), no server: exec as before."""
    other = subprocess.run([str(server.launcher), "-c", "import os, sys; print(os.getpid()); sys.exit(3)"],
                           env=_env(server), capture_output=True, timeout=60)
    assert other.returncode == 3 and other.stdout.strip()
    for env in ({**_env(server), SOCKET_ENV: str(tmp_path / "none")}, {**_env(server), MODULES_ENV: ""}):
        status, seen = _probe(server.launcher, ["5"], env, tmp_path)
        assert status == 5
        assert seen["preloaded_in"] is None and seen["ppid"] != server.process.pid
    env = _env(server, f"{PROBE},json.tool")  # the launcher asks, the server (which preloaded only the probe) refuses
    refused = subprocess.run([str(server.launcher), "-m", "json.tool"], input=b'{"a": 1}', env=env,
                             capture_output=True, timeout=60)
    assert refused.returncode == 0 and json.loads(refused.stdout) == {"a": 1}


def test_a_stop_sent_to_the_launcher_reaches_the_child(server: prefork.PreforkServer, tmp_path: Path) -> None:
    """Spark stops a worker by destroying its process (SIGTERM): the forked child stops too."""
    launcher = subprocess.Popen([str(server.launcher), "-m", PROBE, "sleep"], env=_env(server), cwd=tmp_path,
                                stdout=subprocess.PIPE)
    assert launcher.stdout is not None
    child = json.loads(launcher.stdout.readline())["pid"]
    assert isinstance(child, int) and child != launcher.pid
    launcher.send_signal(signal.SIGTERM)
    assert launcher.wait(timeout=30) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the forked child {child} outlived its launcher")


def test_the_server_exits_and_removes_its_folder_when_its_lifeline_closes() -> None:
    server = prefork.spawn((PROBE,))
    assert server is not None and server.socket_path.exists()
    server.stop()
    assert server.process.returncode == 0
    assert not server.folder.exists()


def test_a_sigterm_to_the_server_also_removes_its_folder() -> None:
    """``pubsub live`` stops a part with SIGTERM to its whole process group, the server included."""
    server = prefork.spawn((PROBE,))
    assert server is not None
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=30) == 0
    assert not server.folder.exists()
    server.stop()


def test_a_folder_left_by_a_killed_server_is_removed_and_a_live_one_kept() -> None:
    """A job's process group SIGKILLed leaves its server's folder; the next start removes it, not a live one's,
    nor one too young to have its socket yet."""
    parent = Path(tempfile.mkdtemp(prefix="pf-"))  # short: a Unix socket's path has at most 107 bytes
    live = prefork.spawn((PROBE,), parent=parent)
    killed = prefork.spawn((PROBE,), parent=parent)
    assert live is not None and killed is not None
    try:
        killed.process.kill()
        killed.process.wait(timeout=30)
        young = parent / f"{prefork.FOLDER_PREFIX}young"
        young.mkdir()
        assert prefork.remove_stale_folders(parent) == []  # nothing old enough yet
        later = time.time() + prefork.STALE_SECONDS + 1
        removed = prefork.remove_stale_folders(parent, now=later)
        assert killed.folder in removed and not killed.folder.exists()
        assert live.folder.exists() and live.folder not in removed
        assert young in removed  # an old folder without a socket: its server never came up
    finally:
        live.stop()
        killed.stop()
        shutil.rmtree(parent, ignore_errors=True)


def test_no_server_on_a_file_system_mounted_noexec(monkeypatch: pytest.MonkeyPatch) -> None:
    """A launcher there could not run (Spark would start no Python at all): workers start as before."""
    from types import SimpleNamespace

    parent = Path(tempfile.mkdtemp(prefix="pf-"))
    monkeypatch.setattr(prefork.os, "statvfs", lambda _path: SimpleNamespace(f_flag=os.ST_NOEXEC))
    try:
        assert prefork.spawn((PROBE,), parent=parent) is None
        assert list(parent.iterdir()) == []
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def test_a_malformed_request_is_refused_and_the_server_serves_on(server: prefork.PreforkServer, tmp_path: Path) -> None:
    import socket

    for garbage in (b"not json\n", b"[1, 2]\n", b'{"module": 7}\n', b""):
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(str(server.socket_path))
        socket.send_fds(conn, [garbage or b"\n"], [0, 1, 2])
        conn.shutdown(socket.SHUT_WR)
        assert json.loads(conn.makefile("rb").readline()) == {"refused": True}
        conn.close()
    status, seen = _probe(server.launcher, ["4"], _env(server), tmp_path)
    assert status == 4 and seen["ppid"] == server.process.pid
