"""Start a command as a terminal would, for the tests that press Ctrl-C on it."""

from __future__ import annotations

import signal


def ctrl_c_reaches_it() -> None:
    """``preexec_fn`` for a child the test will send SIGINT: SIGINT at its default, as under a terminal. A shell runs
    a background job with SIGINT ignored (``cmd &``, nohup, some CI runners), the child inherits that, and Python
    then rightly keeps ignoring it, so without this the test would depend on how the suite was launched."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
