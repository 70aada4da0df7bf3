"""Ctrl-C that is never lost in a long loop.

Python raises ``KeyboardInterrupt`` wherever the main thread happens to be, and an exception raised inside a
``__del__`` method or a C library's callback is printed ("Exception ignored in ...", with a traceback) and dropped:
a Ctrl-C that lands while a crypto object is freed would let a command run on to its end. The handler here also
records the press, and the loop calls ``check`` at each step, so a dropped one is raised there; while the guard is
on, a dropped ``KeyboardInterrupt`` is not printed, since it is not lost. Around a Kafka client call (whose C code
can swallow an exception raised in a delivery callback) or the compiled protocol (whose mypyc runtime aborts the
process on an unexpected failure) the press is only recorded, and raised when the call returns.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["CtrlC", "ctrl_c"]


class CtrlC:
    """Whether Ctrl-C was pressed while the block ran; ``check`` raises ``KeyboardInterrupt`` if it was."""

    def __init__(self) -> None:
        self.pressed = False
        self.deferred = False
        """While set, a press is recorded without raising (inside a client call, or while winding up after one)."""

    def handler(self, _signum: int, _frame: FrameType | None) -> None:
        self.pressed = True
        if not self.deferred:
            raise KeyboardInterrupt

    def check(self) -> None:
        if self.pressed:
            raise KeyboardInterrupt

    @contextmanager
    def deferring(self) -> Iterator[None]:
        """Around a call into C code (a Kafka client, the compiled protocol): a Ctrl-C during it is raised when it
        returns."""
        self.deferred = True
        try:
            yield
        finally:
            self.deferred = False
        self.check()


@contextmanager
def ctrl_c() -> Iterator[CtrlC]:
    """Record Ctrl-C (SIGINT) while the block runs; Python's own handling stays where another handler is set or
    off the main thread (``check`` then never raises)."""
    watch = CtrlC()
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield watch
        return
    previous_hook = sys.unraisablehook

    def quiet_about_a_recorded_press(unraisable: sys.UnraisableHookArgs) -> None:
        if not (watch.pressed and unraisable.exc_type is KeyboardInterrupt):
            previous_hook(unraisable)

    signal.signal(signal.SIGINT, watch.handler)
    sys.unraisablehook = quiet_about_a_recorded_press
    try:
        yield watch
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.unraisablehook = previous_hook
