"""The port between the relay block machine and message routing (UMP, HRMP, DMP: the Router Module).

The block machine hands each para's admitted upward messages to ``receive_upward`` (acceptance checks,
then enactment), later asks ``dispatch_upward`` to hand dispatchable messages, one by one, to the
``UpwardDispatch`` callback (the XCM executor with the para as origin), passes horizontal records and
router calls through, and reports session changes. The Router Module's router implements it
(``pubsub_core.router.relay_adapter.RelayRouter``, the machine's default).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from state import StateTransaction

from pubsub_core.envelope.keys import Origin

__all__ = ["DispatchReport", "RoutingPort", "SessionChange", "UpwardDispatch"]


@dataclass(frozen=True)
class DispatchReport:
    """What dispatching one upward message did: the weight it used and whether it completed."""

    weight_used: int
    success: bool
    error: str | None = None

    # Explicit, not generated: compiled (setup.py), it is native code; the dataclass's own stays interpreted.
    def __init__(self, weight_used: int, success: bool, error: str | None = None) -> None:
        object.__setattr__(self, "weight_used", weight_used)
        object.__setattr__(self, "success", success)
        object.__setattr__(self, "error", error)


UpwardDispatch = Callable[[StateTransaction, int, bytes], DispatchReport]
"""Execute one upward message of a para (txn, para id, VersionedXcm bytes); never raises for bad messages."""


@dataclass(frozen=True)
class SessionChange:
    """A session change's result: the paras offboarded now (their broadcaster data is wiped) and router events."""

    outgoing: tuple[int, ...] = ()
    events: tuple[object, ...] = ()


class RoutingPort(Protocol):
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
