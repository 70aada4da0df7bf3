"""The seam between the relay block machine and message routing (UMP, HRMP, DMP: seed 003).

The block machine hands each para's admitted upward messages to ``receive_upward`` (acceptance checks,
then enactment), later asks ``dispatch_upward`` to hand dispatchable messages, one by one, to the
``UpwardDispatch`` callback (the XCM executor with the para as origin), passes horizontal records and
router calls through, and reports session changes. ``DirectRouter`` is the minimal, queue-less
implementation used until the real router (pubsub_core.router) is plugged in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from state import StateTransaction

from pubsub_core.envelope.keys import Origin
from pubsub_core.errors import PubSubError

__all__ = ["DirectRouter", "DispatchReport", "MessageRouter", "RouterUnavailable", "SessionChange", "UpwardDispatch"]


@dataclass(frozen=True)
class DispatchReport:
    """What dispatching one upward message did: the weight it used and whether it completed."""

    weight_used: int
    success: bool
    error: str | None = None


UpwardDispatch = Callable[[StateTransaction, int, bytes], DispatchReport]
"""Execute one upward message of a para (txn, para id, VersionedXcm bytes); never raises for bad messages."""


@dataclass(frozen=True)
class SessionChange:
    """A session change's result: the paras offboarded now (their broadcaster data is wiped) and router events."""

    outgoing: tuple[int, ...] = ()
    events: tuple[object, ...] = ()


class MessageRouter(Protocol):
    """What the block machine needs from message routing. Methods that fail raise a typed ``PubSubError``
    (its ``reason_code``/``code``/class name becomes the rejection reason) and write nothing."""

    def receive_upward(self, txn: StateTransaction, para: int, messages: Sequence[bytes], now: int) -> Sequence[object]:
        """Acceptance checks, then enactment, of this block's upward messages from ``para``, in order."""
        ...

    def dispatch_upward(self, txn: StateTransaction, now: int, dispatch: UpwardDispatch) -> Sequence[object]:
        """Hand the upward messages that are due to ``dispatch``, in the router's order; return router events."""
        ...

    def receive_horizontal(self, txn: StateTransaction, sender: int, payload: bytes, now: int) -> Sequence[object]:
        """One ``horizontal`` record of ``sender``: outbound HRMP messages to check and queue."""
        ...

    def handle_call(self, txn: StateTransaction, origin: Origin, call: bytes, now: int) -> Sequence[object]:
        """A router call from ``extrinsics`` (pallet index 1): HRMP channel management or a downward message."""
        ...

    def on_session_change(self, txn: StateTransaction, session_index: int, now: int) -> SessionChange:
        """The block starts session ``session_index``."""
        ...


class RouterUnavailable(PubSubError):
    """The direct router has no HRMP or DMP: such records are rejected with this reason."""

    code = "RouterUnavailable"

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} needs the message router; the direct router has none")
        self.what = what


@dataclass
class DirectRouter:
    """No queues: upward messages are accepted as they come and dispatched in the same block, in inclusion order
    (paras ascending, each para's messages by position). No acceptance limits, no HRMP, no DMP, no offboarding."""

    _pending: list[tuple[int, bytes]] = field(default_factory=list)

    def receive_upward(self, txn: StateTransaction, para: int, messages: Sequence[bytes], now: int) -> Sequence[object]:
        self._pending.extend((para, message) for message in messages)
        return ()

    def dispatch_upward(self, txn: StateTransaction, now: int, dispatch: UpwardDispatch) -> Sequence[object]:
        pending, self._pending = self._pending, []
        for para, message in pending:
            dispatch(txn, para, message)
        return ()

    def receive_horizontal(self, txn: StateTransaction, sender: int, payload: bytes, now: int) -> Sequence[object]:
        raise RouterUnavailable("an HRMP message")

    def handle_call(self, txn: StateTransaction, origin: Origin, call: bytes, now: int) -> Sequence[object]:
        raise RouterUnavailable("a router call")

    def on_session_change(self, txn: StateTransaction, session_index: int, now: int) -> SessionChange:
        return SessionChange()
