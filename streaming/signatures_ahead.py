"""Stage R's signature checks made ahead of it, on another core (issue 11, targets 2 and 4).

Stage R is sequential per realm, and on a large batch about a tenth of its work is ed25519 verification
(libsodium: 0.37 s of the 3.1 s Stage R spends on the issue-11 log here), which needs nothing but the envelope.
So, before Stage R starts on a large batch, the worker forks a helper that reads the batch's rows from the last one
back, verifies each envelope and streams back a digest of every one that verified. From the last one back, since
Stage R authenticates every record as it arrives, before it applies any block, at about the helper's pace: checking
from opposite ends they meet part-way (Stage R verified 40% itself on the issue-11 log). Stage R's admission asks
``SignaturesAhead.check``: a digest received means libsodium accepted exactly this (sender, signing payload,
signature); anything else is verified in place, as without the helper. The answers, and so the outputs, are
``verify_signature``'s whatever the helper does: runs behind, dies, or is never started (a batch under
``MIN_ROWS``, a single core, ``PUBSUB_SIGNATURES_AHEAD=0``).

A fork rather than a pool: the helper sees the batch's rows without a copy, lives for one batch, and needs no
pickling of rows or results. It touches nothing the worker holds (Spark's sockets, the Kafka producer), runs
without the garbage collector (which would write to every page it shares), and leaves by ``os._exit``.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from pubsub_core.envelope import Envelope, SignatureCheck, verify_signature
from pubsub_core.hashing import blake2_256
from pubsub_core.relay import InputRecord
from pubsub_core.stages import LogRecord, ingest_record

if TYPE_CHECKING:
    from streaming.operators import KafkaRow

__all__ = ["ENV", "MIN_ROWS", "SignaturesAhead", "enabled", "envelope_digest", "signatures_ahead", "usable_cores"]

ENV = "PUBSUB_SIGNATURES_AHEAD"
"""``0`` turns the helper off (every signature is then verified in Stage R's own process)."""

MIN_ROWS = 256
"""Batches with fewer rows are verified in place: forking a 140 MB process took 2.6-3.2 ms here, and the checks
of 256 envelopes take 12-30 ms on one core (44-113 us each), of which the helper would spare Stage R about half.
A live job's batches of a block or two stay under it."""

DIGEST_BYTES = 32
_WRITE_EVERY = 64
"""Digests the helper sends at a time: Stage R looks for a digest only when it needs one, so small writes would
only cost system calls."""


def enabled() -> bool:
    """Whether checks may be made ahead: not turned off, the system can fork, and this process may run on two
    cores or more."""
    return os.environ.get(ENV, "1") != "0" and hasattr(os, "fork") and usable_cores() >= 2


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the system has one, as on Linux; else all)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def envelope_digest(envelope: Envelope) -> bytes:
    """What names a verified (sender, signing payload, signature): their BLAKE2b-256. Sender and signature have
    the fixed sizes an ``Envelope`` enforces (32 and 64 bytes), so no other split of the same bytes names the
    same check."""
    return blake2_256(envelope.sender + envelope.signature + envelope.signing_payload())


class SignaturesAhead:
    """A helper process verifying a batch's envelopes ahead of Stage R, and the check that uses its results."""

    def __init__(self, pid: int, fd: int, fallback: SignatureCheck = verify_signature) -> None:
        self.pid = pid
        self.fd = fd
        self.fallback = fallback
        self.verified: set[bytes] = set()
        self.finished = False
        self._partial = b""
        os.set_blocking(fd, False)

    @classmethod
    def start(cls, rows: Sequence[KafkaRow], realm: str,
              fallback: SignatureCheck = verify_signature) -> SignaturesAhead | None:
        """Fork the helper over ``rows`` (in the order Stage R will take them); None if the fork fails."""
        read_fd, write_fd = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read_fd)
            os.close(write_fd)
            return None
        if pid == 0:  # the helper
            os.close(read_fd)
            _verify_ahead(rows, realm, write_fd)
        os.close(write_fd)
        return cls(pid, read_fd, fallback)

    def check(self, envelope: Envelope) -> bool:
        """``verify_signature(envelope)``: from the helper's results when it has verified this envelope, else in
        place."""
        digest = envelope_digest(envelope)
        if digest in self.verified:
            return True
        self._receive()
        return digest in self.verified or self.fallback(envelope)

    def _receive(self) -> None:
        """Take every digest the helper has sent so far, without waiting for more."""
        while not self.finished:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return
            if not chunk:
                self.finished = True
                return
            data = self._partial + chunk
            whole = len(data) - len(data) % DIGEST_BYTES
            self.verified.update(data[i:i + DIGEST_BYTES] for i in range(0, whole, DIGEST_BYTES))
            self._partial = data[whole:]

    def close(self) -> None:
        """Stop the helper if it still runs, and reap it."""
        os.close(self.fd)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


@contextlib.contextmanager
def signatures_ahead(rows: Sequence[KafkaRow], realm: str) -> Iterator[SignatureCheck]:
    """The signature check for Stage R over ``rows`` (in its order): made ahead by a helper when the batch is
    large enough and a second core is there (``enabled``), else ``verify_signature``."""
    helper = SignaturesAhead.start(rows, realm) if len(rows) >= MIN_ROWS and enabled() else None
    if helper is None:
        yield verify_signature
        return
    try:
        yield helper.check
    finally:
        helper.close()


def _verify_ahead(rows: Sequence[KafkaRow], realm: str, fd: int) -> None:
    """The helper's whole life: verify each row's envelope in order, send the digests of those that verified,
    exit. Nothing it meets may escape (a row Stage R will refuse is simply not sent)."""
    gc.disable()
    try:
        pending: list[bytes] = []
        for row in reversed(rows):
            digest = _verified_digest(row, realm)
            if digest is not None:
                pending.append(digest)
            if len(pending) >= _WRITE_EVERY:
                _write_all(fd, b"".join(pending))
                pending.clear()
        _write_all(fd, b"".join(pending))
    except BaseException:  # noqa: BLE001 (Stage R verifies in place whatever the helper did not send)
        pass
    finally:
        os._exit(0)


def _verified_digest(row: KafkaRow, realm: str) -> bytes | None:
    """The digest of the row's envelope if it carries one whose signature verifies, else None."""
    parsed = ingest_record(row.topic, row.key, row.value, row.offset, realm)
    if not isinstance(parsed, LogRecord) or not isinstance(parsed.value, InputRecord):
        return None
    try:
        envelope = Envelope.decode(parsed.value.value)
    except Exception:  # noqa: BLE001 (a malformed envelope is admission's to refuse)
        return None
    return envelope_digest(envelope) if verify_signature(envelope) else None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
