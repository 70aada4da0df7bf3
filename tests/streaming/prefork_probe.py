"""A module for tests/streaming/test_prefork.py: says where it was imported and where it runs, then exits.

``python -m tests.streaming.prefork_probe STATUS`` prints one JSON line and exits with STATUS; with ``sleep`` it
prints its line and waits to be stopped.
"""

from __future__ import annotations

import json
import os
import sys
import time

IMPORTED_IN = os.getpid()
"""The process that imported this module (run as ``__main__``, it is executed again in the running process)."""

if __name__ == "__main__":
    preloaded = sys.modules.get("tests.streaming.prefork_probe")  # imported before ``-m`` ran it: the server's
    print(json.dumps({"argv": sys.argv[1:], "pid": os.getpid(), "ppid": os.getppid(),
                      "preloaded_in": getattr(preloaded, "IMPORTED_IN", None),
                      "cwd": os.getcwd(), "probe": os.environ.get("PROBE")}), flush=True)
    if sys.argv[1:] == ["sleep"]:
        time.sleep(60)
    sys.exit(int(sys.argv[1]))
