"""Ctrl-C that is never lost in a long loop.

Python raises ``KeyboardInterrupt`` wherever the main thread happens to be, and an exception raised inside a
``__del__`` method or a C library's callback is printed ("Exception ignored in ...") and dropped: a Ctrl-C that
lands while a crypto object is freed would let a command run on to its end. The handler here also records the
interrupt, and the loop calls ``check`` at each step, so a dropped one is raised there.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["CtrlC", "ctrl_c"]


class CtrlC:
    """Whether Ctrl-C was pressed while the block ran; ``check`` raises ``KeyboardInterrupt`` if it was."""

    def __init__(self) -> None:
        self.pressed = False

    def handler(self, _signum: int, _frame: FrameType | None) -> None:
        self.pressed = True
        raise KeyboardInterrupt

    def check(self) -> None:
        if self.pressed:
            raise KeyboardInterrupt


@contextmanager
def ctrl_c() -> Iterator[CtrlC]:
    """Record Ctrl-C (SIGINT) while the block runs; Python's own handling stays where another handler is set or
    off the main thread (``check`` then never raises)."""
    watch = CtrlC()
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield watch
        return
    signal.signal(signal.SIGINT, watch.handler)
    try:
        yield watch
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
