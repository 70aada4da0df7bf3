"""A fork server for the Python process Spark starts on the driver at every transformWithState query start.

Before a query's first batch, Spark 4.2 runs ``python -m pyspark.sql.streaming.transform_with_state_driver_worker``
(the pre-init worker) in a fresh interpreter to learn the processor's state variables: twice per available-now run
of the job, 0.36 s each on a warm JVM here, most of it ``import pyspark`` (0.2-0.3 s). Spark already forks its
executors' Python workers from a daemon that has pyspark imported; this does the same for the pre-init worker.
The driver starts the server (``start``) before Spark's JVM, and workers are started through a launcher
(``streaming/prefork_launcher.py``) that hands ``-m`` of a preloaded module to the server and runs anything else
in a fresh interpreter, as before. The pre-init then takes 0.06-0.07 s (docs/benchmarks.md, "Session 15").

Local masters only: on a cluster the executors would need the launcher's path too. ``PUBSUB_PREFORK=0`` turns it
off. The server exits when the driver does (its lifeline pipe closes) and takes its folder with it.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import runpy
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

from streaming.paths import repo_python_path
from streaming.prefork_launcher import MODULES_ENV, SOCKET_ENV, STREAM_FDS

__all__ = ["PREINIT_IMPORTS", "PREINIT_MODULE", "PreforkServer", "remove_stale_folders", "running", "spawn", "start",
           "write_launcher"]

PREINIT_MODULE = "pyspark.sql.streaming.transform_with_state_driver_worker"
PREINIT_IMPORTS = ("pyspark.sql.streaming.proto.StateMessage_pb2", "streaming.processors", "encodings.idna")
"""What the pre-init worker imports beyond its module (its state protocol, our processors to unpickle, the host
name codec): the pre-init took 0.17-0.20 s forked with its module alone, 0.06-0.07 s with these too."""
ENABLE_ENV = "PUBSUB_PREFORK"
LAUNCHER_SOURCE = Path(__file__).with_name("prefork_launcher.py")
READY_TIMEOUT_SECONDS = 30.0
FOLDER_PREFIX = "pubsub-prefork-"
STALE_SECONDS = 60.0
"""A server's folder this old whose socket no one answers is left by a server killed with SIGKILL (a job's whole
process group, as the restart tests and ``pubsub chaos`` do): ``start`` removes it."""


@dataclass
class PreforkServer:
    """A running server: its process, socket, launcher (the Python executable to give Spark) and folder."""

    process: subprocess.Popen[bytes]
    socket_path: Path
    launcher: Path
    folder: Path
    lifeline: int
    stopped: bool = False

    def stop(self) -> None:
        """Close the lifeline (the server exits and removes its folder) and wait for it; once."""
        if self.stopped:
            return
        self.stopped = True
        os.close(self.lifeline)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


_RUNNING: list[PreforkServer] = []


def running() -> PreforkServer | None:
    """This process's server, if ``start`` started one."""
    return _RUNNING[0] if _RUNNING else None


def write_launcher(folder: Path, python: str = sys.executable) -> Path:
    """The launcher as an executable script run by ``python`` without site and environment (-SI)."""
    launcher = folder / "python"
    launcher.write_text(f"#!{python} -SI\n{LAUNCHER_SOURCE.read_text()}")
    launcher.chmod(0o700)
    return launcher


def spawn(modules: tuple[str, ...], imports: tuple[str, ...] = (), wait: bool = True,
          parent: Path | None = None) -> PreforkServer | None:
    """A new server that runs ``modules`` (``-m``) with them and ``imports`` preloaded, in its own private folder
    (in ``parent``, by default the temporary folder); with ``wait``, once it listens (None if it did not come up),
    else at once (until it listens, launchers start fresh interpreters); None on a file system mounted ``noexec``,
    where the launcher could not run."""
    folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX, dir=parent))  # 0700: only this user reaches the socket
    if os.statvfs(folder).f_flag & os.ST_NOEXEC:
        shutil.rmtree(folder, ignore_errors=True)
        return None
    path = folder / "socket"
    launcher = write_launcher(folder)
    lifeline_r, lifeline_w = os.pipe()
    ready_r, ready_w = os.pipe()
    env = {**os.environ, "PYTHONPATH": repo_python_path()}
    process = subprocess.Popen(
        [sys.executable, "-m", "streaming.prefork", str(path), str(lifeline_r), str(ready_w), ",".join(modules),
         ",".join(imports)],
        pass_fds=(lifeline_r, ready_w), stdin=subprocess.DEVNULL, env=env)
    os.close(lifeline_r)
    os.close(ready_w)
    server = PreforkServer(process, path, launcher, folder, lifeline_w)
    if not wait:
        os.close(ready_r)
        return server
    ready, _, _ = select.select([ready_r], [], [], READY_TIMEOUT_SECONDS)
    came_up = bool(ready) and os.read(ready_r, 1) == b"1"
    os.close(ready_r)
    if not came_up:
        server.stop()
        return None
    return server


def start(modules: tuple[str, ...] = (PREINIT_MODULE,), imports: tuple[str, ...] = PREINIT_IMPORTS
          ) -> PreforkServer | None:
    """This process's server (started once, not waited for: it imports while Spark's JVM starts) with the
    launcher's environment pointed at it; None when turned off (``PUBSUB_PREFORK=0``)."""
    if _RUNNING:
        return _RUNNING[0]
    if os.environ.get(ENABLE_ENV, "1") == "0":
        return None
    remove_stale_folders(Path(tempfile.gettempdir()))
    server = spawn(modules, imports, wait=False)
    if server is None:
        return None
    os.environ[SOCKET_ENV] = str(server.socket_path)
    os.environ[MODULES_ENV] = ",".join(modules)
    _RUNNING.append(server)
    atexit.register(server.stop)
    return server


def remove_stale_folders(parent: Path, now: float | None = None) -> list[Path]:
    """Remove this user's server folders in ``parent`` older than ``STALE_SECONDS`` whose socket refuses a
    connection (their server is gone); the folders removed."""
    now = time.time() if now is None else now
    removed = []
    for folder in parent.glob(f"{FOLDER_PREFIX}*"):
        try:
            info = folder.stat()
        except OSError:
            continue
        if info.st_uid != os.getuid() or now - info.st_mtime < STALE_SECONDS:
            continue
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(folder / "socket"))
            continue  # a live server
        except OSError:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
        finally:
            probe.close()
    return removed


# ------------------------------------------------------------------------------------------------- the server
@dataclass(frozen=True)
class Request:
    """What a launcher asks for: run ``module`` with ``args`` in ``cwd`` with ``env``."""

    module: str
    args: tuple[str, ...]
    env: dict[str, str]
    cwd: str

    @classmethod
    def from_json(cls, data: bytes) -> Request:
        """Parse a launcher's request line; ``ValueError`` if it is not one."""
        body = json.loads(data)
        if not isinstance(body, dict):
            raise ValueError("a request is a JSON object")
        module, args, env, cwd = body.get("module"), body.get("args"), body.get("env"), body.get("cwd")
        if not (isinstance(module, str) and isinstance(args, list) and all(isinstance(a, str) for a in args)
                and isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
                and isinstance(cwd, str)):
            raise ValueError("a request has a module, string arguments, a string environment and a folder")
        return cls(module, tuple(args), env, cwd)


def _run_child(conn: socket.socket, fds: list[int], request: Request) -> None:
    """In the forked child: take the launcher's streams, environment, folder and arguments, run the module as
    ``__main__``, exit with its status (never returns)."""
    status = 1
    try:
        conn.close()
        for target, fd in zip(STREAM_FDS, fds, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(request.env)
        for entry in reversed(os.environ.get("PYTHONPATH", "").split(os.pathsep)):
            if entry and entry not in sys.path:
                sys.path.insert(0, entry)
        os.chdir(request.cwd)
        sys.argv = [request.module, *request.args]
        # runpy warns that the module is already in sys.modules: it is, preloaded, and runs again as __main__
        warnings.filterwarnings("ignore", category=RuntimeWarning, module="runpy")
        try:
            runpy.run_module(request.module, run_name="__main__", alter_sys=True)
            status = 0
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # whatever the module raised: reported on its stderr, the child exits 1
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(status)


def _exit_status(wait_status: int) -> int:
    """A shell's exit status: the code, or 128 + the signal that ended the process."""
    return os.waitstatus_to_exitcode(wait_status) if os.WIFEXITED(wait_status) else 128 + os.WTERMSIG(wait_status)


def serve(path: str, lifeline: int, ready: int, modules: list[str], imports: list[str]) -> None:
    """Import ``modules`` and ``imports``, then fork a child per request to run one of ``modules`` until the
    lifeline closes; each requester is told its child's pid, then its exit status."""
    for module in [*modules, *imports]:
        importlib.import_module(module)
    allowed = set(modules)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    waiting: dict[int, socket.socket] = {}
    try:
        _SERVER_PID[:] = [os.getpid()]
        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C reaches the driver's whole group: the driver decides
        listener.bind(path)
        os.chmod(path, 0o600)
        listener.listen(64)
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
        try:
            os.write(ready, b"1")
        except BrokenPipeError:
            pass  # nobody waits (``start``)
        os.close(ready)
        while True:
            readable, _, _ = select.select([listener.fileno(), lifeline, wake_r], [], [])
            if lifeline in readable and not os.read(lifeline, 1):
                break
            if wake_r in readable:
                os.read(wake_r, 4096)
            if listener.fileno() in readable:
                conn, _ = listener.accept()
                _accept(conn, allowed, listener, waiting)
            _report_exits(waiting)
    finally:
        listener.close()
        shutil.rmtree(Path(path).parent, ignore_errors=True)


_SERVER_PID: list[int] = []


def _stop(_signum: int, _frame: object) -> None:
    """SIGTERM (``pubsub live`` stops a part through its process group): the server cleans up and exits; a child
    caught between its fork and its own handlers just exits."""
    if _SERVER_PID != [os.getpid()]:
        os._exit(128 + signal.SIGTERM)
    raise SystemExit(0)


def _report_exits(waiting: dict[int, socket.socket]) -> None:
    """Reap the children that ended and tell each one's launcher its exit status."""
    while waiting:
        try:
            pid, wait_status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        done = waiting.pop(pid, None)
        if done is not None:
            _reply(done, {"status": _exit_status(wait_status)})
            done.close()


def _reply(conn: socket.socket, message: dict[str, object]) -> None:
    try:
        conn.sendall(json.dumps(message).encode() + b"\n")
    except OSError:
        pass  # the launcher is gone (Spark destroyed it): nothing to tell


def _accept(conn: socket.socket, allowed: set[str], listener: socket.socket,
            waiting: dict[int, socket.socket]) -> None:
    """Read one request; fork its child, or refuse it (the launcher then starts a fresh interpreter)."""
    fds: list[int] = []
    try:
        conn.settimeout(5)
        data, fds, _, _ = socket.recv_fds(conn, 1 << 22, len(STREAM_FDS))
        while not data.endswith(b"\n"):
            more = conn.recv(1 << 22)
            if not more:
                raise ValueError("request cut short")
            data += more
        request = Request.from_json(data)
        if request.module not in allowed or len(fds) != len(STREAM_FDS):
            raise ValueError("not a preloaded module")
    except (OSError, ValueError):
        for fd in fds:
            os.close(fd)
        _reply(conn, {"refused": True})
        conn.close()
        return
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        listener.close()
        for other in waiting.values():
            other.close()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _run_child(conn, fds, request)
    for fd in fds:
        os.close(fd)
    waiting[pid] = conn
    _reply(conn, {"pid": pid})


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *(list(filter(None, arg.split(","))) for arg in sys.argv[4:6]))
