"""Ctrl-C is never lost (``producers.interrupts``, used by workload, simulate and produce): one that lands in a
``__del__`` (where Python drops the exception) is raised at ``check``, or when the next client call returns, and
Python's "Exception ignored" traceback for it is not printed."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator

import pytest

from producers.interrupts import ctrl_c


@pytest.fixture(autouse=True)
def _pythons_own_sigint_handler() -> Iterator[None]:
    """Python's handler, as a command starts with: the suite's process may hold another one by now (pyspark's
    SparkContext installs its own) or ignore SIGINT (a suite started in the background)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


class _FreedDuringCtrlC:
    """An object whose finalizer is running when Ctrl-C arrives (as a crypto library's buffer may be)."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        sum(range(1000))  # the handler runs here, inside __del__, and its exception is dropped


def _dropped(monkeypatch: pytest.MonkeyPatch) -> list[type[BaseException] | None]:
    """The exceptions Python drops as unraisable ("Exception ignored in ...") from here on."""
    dropped: list[type[BaseException] | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: dropped.append(info.exc_type))
    return dropped


def test_a_ctrl_c_dropped_in_a_finalizer_is_lost_with_pythons_own_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    dropped = _dropped(monkeypatch)
    _FreedDuringCtrlC()  # freed at once: the KeyboardInterrupt is dropped, and the caller runs on
    assert dropped == [KeyboardInterrupt]


def test_the_same_ctrl_c_is_raised_at_the_next_check_and_nothing_is_printed_for_it(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "unraisablehook", sys.__unraisablehook__)  # Python's own, which prints (not pytest's)
    hook = sys.unraisablehook
    with ctrl_c() as interrupt:
        _FreedDuringCtrlC()
        assert interrupt.pressed
        with pytest.raises(KeyboardInterrupt):
            interrupt.check()
    assert capsys.readouterr().err == ""  # no "Exception ignored in ... Traceback" for a press that is not lost
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # Python's handler is back
    assert sys.unraisablehook is hook


def test_other_dropped_exceptions_are_still_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    dropped = _dropped(monkeypatch)

    class _FailsWhenFreed:
        def __del__(self) -> None:
            raise ValueError("a real fault in a finalizer")

    with ctrl_c():
        _FailsWhenFreed()
    assert dropped == [ValueError]


def test_check_is_quiet_without_ctrl_c() -> None:
    with ctrl_c() as interrupt:
        interrupt.check()
        assert not interrupt.pressed


def test_send_raises_a_ctrl_c_dropped_between_client_calls_when_the_next_call_returns(
        monkeypatch: pytest.MonkeyPatch) -> None:
    dropped = _dropped(monkeypatch)
    with ctrl_c() as guard:
        _FreedDuringCtrlC()  # while `send` is between two client calls (routing, signing, reading its input)
        assert guard.pressed and dropped == []  # recorded, not printed
        with pytest.raises(KeyboardInterrupt):
            with guard.deferring():
                pass
