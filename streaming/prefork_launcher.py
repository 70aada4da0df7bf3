"""The Python executable Spark starts workers with when the pre-init fork server runs (``streaming.prefork``).

Spark runs ``<python> -m <module>``. For a module the server preloads (``MODULES_ENV``), this hands the request to
the server, which forks a child with the module's imports already done: the child takes this process's standard
streams, environment, working folder and arguments, and this process waits for it, passes SIGTERM on to it (Spark
stops a worker by destroying its process) and exits with its status. Anything else, or a server that does not
answer, runs in a fresh interpreter as before (``os.execv``), so the wrapper never changes what runs.

Only the standard library, and this file is copied whole after a ``#!<python> -SI`` line
(``streaming.prefork.write_launcher``): it starts in about 10 ms where ``import pyspark`` takes 0.2-0.3 s.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

SOCKET_ENV = "PUBSUB_PREFORK_SOCKET"
"""The fork server's Unix socket (set by the driver, inherited by Spark's JVM and the processes it starts)."""
MODULES_ENV = "PUBSUB_PREFORK_MODULES"
"""Comma-separated modules the server preloads: only ``-m`` of one of these is handed over."""
STREAM_FDS = (0, 1, 2)


def _read_line(conn: socket.socket) -> bytes:
    """One newline-terminated reply (b"" if the server closed the connection first)."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(4096)
        if not chunk:
            return b""
        data += chunk
    return data


_STOPS = {signal.SIGTERM, signal.SIGINT}


def handed_over(path: str, module: str, args: list[str]) -> int | None:
    """Run ``-m module args`` as a child of the server at ``path``: its exit status, or None if the server did not
    take the request (then nothing ran)."""
    # A stop (Spark destroys a worker it no longer needs) that comes before the child's pid is known waits, blocked,
    # and then reaches the child: unblocked earlier it killed the launcher alone and left the child running.
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    try:
        try:
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.connect(path)
            request = {"module": module, "args": args, "env": dict(os.environ), "cwd": os.getcwd()}
            socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], list(STREAM_FDS))
            started = json.loads(_read_line(conn) or b"{}")
        except (OSError, ValueError):
            return None
        child = started.get("pid")
        if not isinstance(child, int):
            return None

        def forward(signum: int, _frame: object) -> None:
            try:
                os.kill(child, signum)
            except ProcessLookupError:
                pass

        for stop in _STOPS:
            signal.signal(stop, forward)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)
    try:
        finished = json.loads(_read_line(conn) or b"{}")
    except (OSError, ValueError):
        finished = {}
    status = finished.get("status")
    return status if isinstance(status, int) else 1


def main() -> None:
    args = sys.argv[1:]
    path = os.environ.get(SOCKET_ENV, "")
    modules = set(filter(None, os.environ.get(MODULES_ENV, "").split(",")))
    if path and len(args) >= 2 and args[0] == "-m" and args[1] in modules:
        status = handed_over(path, args[1], args[2:])
        if status is not None:
            sys.stdout.flush()
            os._exit(status)
    os.execv(sys.executable, [sys.executable, *args])


if __name__ == "__main__":
    main()
