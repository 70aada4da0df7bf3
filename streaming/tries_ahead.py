"""Stage R's trie steps made on another core, a block behind it (issue 11, target 2).

Stage R is sequential per realm, and on a large batch about two fifths of its work is the tries: each block's
child-trie changes applied, the relay root, and every subscriber's proof for its view (``perf`` of the simulator on
the issue-11 log: 26% and 16% of ``RelayStage.feed``). That work needs nothing from the rest of the block but its
child-trie changes and a few facts per subscriber (``pubsub_core.stages.TrieWork``), and it reads and writes
only namespaces nothing else touches (``trie_step_namespace``). So, for a large batch, the worker loads those
namespaces' pages, forks a helper that holds them, and runs Stage R with ``defer_tries``: each block's trie step is
sent to the helper while Stage R goes on with the next block, and the block's seal and views are emitted, in
order, when the helper's answer comes back. At the end the helper sends the pages it changed, which join the
batch's state. The outputs are the same as in place (``trie_step`` is the same function); if the helper fails,
Stage R runs every trie step of the batch itself, from the state the batch started with.

A fork rather than a pool, as ``streaming.signatures_ahead``: the helper sees Stage R's state without a copy and
lives for one batch. It runs without the garbage collector and leaves by ``os._exit``.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import pickle
import select
import signal
import struct
from collections.abc import Collection, Iterator, Mapping
from typing import Any

from pubsub_core.stages import TrieDone, TrieWork, trie_step, trie_step_namespace
from pubsub_core.stages.config import Seam

from state import StateBackend
from state.interface import BackendStats, Changes
from state.spark import SparkStateBackend
from streaming.signatures_ahead import enabled as two_cores

__all__ = ["ENV", "MIN_ROWS", "WINDOW", "TrieSteps", "TriesAhead", "TriesAheadError", "enabled", "trie_steps"]

ENV = "PUBSUB_TRIES_AHEAD"
"""``0`` turns the helper off (Stage R then runs every trie step itself)."""

MIN_ROWS = 256
"""Batches with fewer input rows keep their trie steps in place: a live job's batch of a block or two would pay the
fork and the page loads for one or two steps."""

WINDOW = 2
"""Trie steps sent and not answered before Stage R waits for the oldest: the helper is one or two blocks behind."""

_FRAME = struct.Struct(">I")
_LOG = logging.getLogger(__name__)


class TriesAheadError(RuntimeError):
    """The helper stopped answering (it died or sent something unreadable)."""


def enabled() -> bool:
    """Whether trie steps may be made ahead: not turned off, and two cores (as for the signature checks)."""
    return os.environ.get(ENV, "1") != "0" and two_cores()


class _Recording:
    """A backend that passes everything to ``inner`` and keeps every change written (the helper's pages)."""

    def __init__(self, inner: StateBackend) -> None:
        self.inner = inner
        self.stats = BackendStats()
        self.changes: dict[str, dict[bytes, bytes | None]] = {}

    def read_many(self, namespace: str, keys: Collection[bytes]) -> dict[bytes, bytes]:
        return self.inner.read_many(namespace, keys)

    def scan(self, namespace: str) -> dict[bytes, bytes]:
        return self.inner.scan(namespace)

    def write_many(self, changes: Changes) -> None:
        self.inner.write_many(changes)
        for namespace, entries in changes.items():
            self.changes.setdefault(namespace, {}).update(entries)


class TriesAhead:
    """The helper process, and Stage R's side of it: ``submit`` a block's trie step (None: the end), ``take`` the
    answers in order (after the end, the pages the helper changed)."""

    def __init__(self, pid: int, to_helper: int, from_helper: int) -> None:
        self.pid = pid
        self.to_helper = to_helper
        self.from_helper = from_helper
        self._out = bytearray()
        self._in = bytearray()
        os.set_blocking(to_helper, False)

    @classmethod
    def start(cls, backend: SparkStateBackend, realm: str, seam: Seam) -> TriesAhead | None:
        """Load the trie steps' pages, then fork the helper over them; None if the fork fails."""
        backend.load_all(trie_step_namespace)
        work_read, work_write = os.pipe()
        done_read, done_write = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            for fd in (work_read, work_write, done_read, done_write):
                os.close(fd)
            return None
        if pid == 0:  # the helper
            os.close(work_write)
            os.close(done_read)
            _serve(backend, realm, seam, work_read, done_write)
        os.close(work_read)
        os.close(done_write)
        return cls(pid, work_write, done_read)

    def submit(self, work: TrieWork | None) -> None:
        """Send a block's trie step (None: the batch's end), without waiting for the helper to read it."""
        data = pickle.dumps(work, protocol=pickle.HIGHEST_PROTOCOL)
        self._out += _FRAME.pack(len(data)) + data
        self._send()

    def take(self) -> Any:
        """The next answer in order (a ``TrieDone``, then the changed pages after the end), waiting for it while
        sending what is still queued."""
        while True:
            message = self._message()
            if message is not None:
                return message
            writing = [self.to_helper] if self._out else []
            readable, writable, _ = select.select([self.from_helper], writing, [])
            if writable:
                self._send()
            if readable:
                chunk = os.read(self.from_helper, 1 << 20)
                if not chunk:
                    raise TriesAheadError("the helper ended before its answer")
                self._in += chunk

    def _message(self) -> Any:
        if len(self._in) < _FRAME.size:
            return None
        (size,) = _FRAME.unpack_from(self._in)
        if len(self._in) < _FRAME.size + size:
            return None
        data = bytes(self._in[_FRAME.size:_FRAME.size + size])
        del self._in[:_FRAME.size + size]
        try:
            return pickle.loads(data)  # noqa: S301 (our own forked child, over a pipe only it holds)
        except Exception as exc:
            raise TriesAheadError(f"an unreadable answer: {type(exc).__name__}: {exc}") from exc

    def _send(self) -> None:
        try:
            while self._out:
                written = os.write(self.to_helper, self._out)
                del self._out[:written]
        except BlockingIOError:
            return
        except BrokenPipeError as exc:
            raise TriesAheadError("the helper closed its end") from exc

    def close(self) -> None:
        """Stop the helper if it still runs, and reap it."""
        for fd in (self.to_helper, self.from_helper):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def _serve(backend: StateBackend, realm: str, seam: Seam, work_fd: int, done_fd: int) -> None:
    """The helper's whole life: run each trie step sent, answer it, and after the end send the changed pages."""
    gc.disable()
    recording = _Recording(backend)
    try:
        with os.fdopen(work_fd, "rb") as works, os.fdopen(done_fd, "wb") as answers:
            while True:
                header = works.read(_FRAME.size)
                if len(header) < _FRAME.size:
                    break
                work = pickle.loads(works.read(_FRAME.unpack(header)[0]))  # noqa: S301 (from our own parent)
                answer: Any = recording.changes if work is None else trie_step(recording, realm, seam, work)
                data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
                answers.write(_FRAME.pack(len(data)) + data)
                answers.flush()
                if work is None:
                    break
    except BaseException:  # noqa: BLE001 (Stage R runs the steps itself when the helper stops answering)
        pass
    finally:
        os._exit(0)


class TrieSteps:
    """A batch's trie steps, answered in the order sent: by the helper while it answers, else in place. If the
    helper fails, the steps it answered are run again in place first (Stage R's copy of their namespaces is still
    the batch's start), so what comes out does not depend on when it failed."""

    def __init__(self, backend: StateBackend, realm: str, seam: Seam, helper: TriesAhead | None) -> None:
        self.backend = backend
        self.realm = realm
        self.seam = seam
        self.helper = helper
        self.works: list[TrieWork] = []
        self.answered = 0
        self.failure: TriesAheadError | None = None

    def submit(self, work: TrieWork) -> None:
        self.works.append(work)
        if self.helper is not None:
            try:
                self.helper.submit(work)
            except TriesAheadError as exc:
                self._fall_back(exc)

    def next(self) -> TrieDone:
        """The answer to the oldest step not answered yet."""
        work = self.works[self.answered]
        done: TrieDone | None = None
        if self.helper is not None:
            try:
                done = self.helper.take()
            except TriesAheadError as exc:
                self._fall_back(TriesAheadError(f"{exc} to trie step {self.answered + 1} of {len(self.works)}"))
        if done is None:
            done = trie_step(self.backend, self.realm, self.seam, work)
        self.answered += 1
        return done

    def finish(self) -> None:
        """After the last answer: the helper's changed pages into Stage R's state (nothing to do in place)."""
        if self.helper is None:
            return
        try:
            self.helper.submit(None)
            changes: Mapping[str, Mapping[bytes, bytes | None]] = self.helper.take()
        except TriesAheadError as exc:
            self._fall_back(exc)
            return
        self.backend.write_many(changes)
        self.close()

    def close(self) -> None:
        if self.helper is not None:
            self.helper.close()
            self.helper = None

    def _fall_back(self, exc: TriesAheadError) -> None:
        """Run the answered steps again in place, and every later one too."""
        _LOG.warning("%s: Stage R runs this batch's trie steps itself", exc)
        self.failure = exc
        self.close()
        for work in self.works[:self.answered]:
            trie_step(self.backend, self.realm, self.seam, work)


@contextlib.contextmanager
def trie_steps(backend: SparkStateBackend, realm: str, seam: Seam, rows: int) -> Iterator[TrieSteps | None]:
    """A large batch's trie steps made ahead by a helper (``enabled``, at least ``MIN_ROWS`` rows), else None:
    Stage R then runs them in place."""
    helper = TriesAhead.start(backend, realm, seam) if rows >= MIN_ROWS and enabled() else None
    if helper is None:
        yield None
        return
    steps = TrieSteps(backend, realm, seam, helper)
    try:
        yield steps
    finally:
        steps.close()
