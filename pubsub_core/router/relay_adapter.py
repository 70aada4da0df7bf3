"""The Router behind the relay block machine's ``RoutingPort`` (``pubsub_core.router.relay_port``).

``RelayRouter`` maps the block machine's inputs onto the Router Module's routines: an ``upward`` batch is checked and
enqueued, a ``horizontal`` record is a candidate's remaining commitments (built on the previous block),
router calls are HRMP entry points, downward messages and offboarding, and dispatch hands queued upward
messages to the machine's executor callback in weighted round-robin order. Every para id counts as a
valid parachain until it is offboarded; offboarded paras are remembered in ``router.Offboarded``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import assert_never

from pubsub_core.codec.scale import encode_u32
from pubsub_core.envelope.keys import Origin, OriginKind
from pubsub_core.router.adapter import HeldDeposits
from pubsub_core.router.calls import (
    AcceptOpenChannel,
    CloseChannel,
    HorizontalRecord,
    InitOpenChannel,
    ScheduleParaCleanup,
    SendDownward,
    decode_router_call,
)
from pubsub_core.router.config import RouterConfig
from pubsub_core.router.errors import RouterError
from pubsub_core.router.interfaces import DepositLedger, DispatchResult
from pubsub_core.router.records import CandidateCommitments
from pubsub_core.router.relay_port import SessionChange, UpwardDispatch
from pubsub_core.router.router import Router
from pubsub_core.router.storage import RouterStorage
from state import StateTransaction

__all__ = ["OFFBOARDED_NAMESPACE", "OffboardedPara", "OffboardingRegistry", "RelayRouter", "RouterBadOrigin"]

OFFBOARDED_NAMESPACE = "router.Offboarded"


class RouterBadOrigin(RouterError):
    """A router call signed by an origin that may not make it."""

    def __init__(self, call: str, origin: Origin, wanted: str) -> None:
        super().__init__(f"The router call {call} needs {wanted} origin, not {origin.kind.value}.")
        self.call = call
        self.origin = origin
        self.wanted = wanted


class OffboardedPara(RouterError):
    """Messages from a para that was offboarded."""

    def __init__(self, para: int) -> None:
        super().__init__(f"Para {para} was offboarded; its messages are not accepted.")
        self.para = para


class OffboardingRegistry:
    """A ParaRegistry for the block machine: every para is a valid parachain until offboarded."""

    def is_valid_para(self, txn: StateTransaction, para: int) -> bool:
        return not txn.contains(OFFBOARDED_NAMESPACE, encode_u32(para))

    def is_parachain(self, txn: StateTransaction, para: int) -> bool:
        return True

    def offboard(self, txn: StateTransaction, paras: Sequence[int]) -> None:
        """Record ``paras`` as offboarded from now on."""
        for para in paras:
            txn.put(OFFBOARDED_NAMESPACE, encode_u32(para), b"")


def _unused_dispatch(para: int, message: bytes) -> DispatchResult:
    raise RuntimeError("upward messages are dispatched only through RelayRouter.dispatch_upward")


@dataclass(frozen=True)
class RelayRouter:
    """The Router Module's Router as the block machine's RoutingPort (use as ``router_factory``)."""

    config: RouterConfig = field(default_factory=RouterConfig)
    paras: OffboardingRegistry = field(default_factory=OffboardingRegistry)
    balances: DepositLedger = field(default_factory=HeldDeposits)

    def _router(self) -> Router:
        return Router(self.config, self.paras, self.balances, _unused_dispatch)

    def _check_valid(self, txn: StateTransaction, para: int) -> None:
        if not self.paras.is_valid_para(txn, para):
            raise OffboardedPara(para)

    def receive_upward(self, txn: StateTransaction, para: int, messages: Sequence[bytes], now: int) -> Sequence[object]:
        """check_upward_messages then enact_upward_messages for this block's batch of ``para``."""
        self._check_valid(txn, para)
        self._router().accept_upward(txn, para, tuple(messages))
        return ()

    def dispatch_upward(self, txn: StateTransaction, now: int, dispatch: UpwardDispatch) -> Sequence[object]:
        """process_pending_upward_messages with the machine's executor; the machine records each execution."""

        def run(para: int, message: bytes) -> DispatchResult:
            report = dispatch(txn, para, message)
            return DispatchResult(report.weight_used, report.success, report.error)

        Router(self.config, self.paras, self.balances, run).process_pending_upward_messages(txn)
        return ()

    def receive_horizontal(self, txn: StateTransaction, sender: int, payload: bytes, now: int) -> Sequence[object]:
        """A HorizontalRecord, accepted as a candidate of ``sender`` built on the previous block."""
        self._check_valid(txn, sender)
        record = HorizontalRecord.decode(payload)
        commitments = CandidateCommitments(
            horizontal_messages=record.horizontal_messages,
            processed_downward_messages=record.processed_downward_messages,
            hrmp_watermark=record.hrmp_watermark,
        )
        self._router().accept_candidate(txn, sender, commitments, relay_parent=max(now - 1, 0), now=now)
        return ()

    def handle_call(self, txn: StateTransaction, origin: Origin, call: bytes, now: int) -> Sequence[object]:
        """A router call: HRMP entry points (para origin), send_downward (root or account), offboarding (root)."""
        router = self._router()
        match decode_router_call(call):
            case SendDownward(para=para, message=message):
                if origin.kind is OriginKind.PARA:
                    raise RouterBadOrigin("send_downward", origin, "a root or account")
                return (router.queue_downward_message(txn, para, message, now),)
            case ScheduleParaCleanup(para=para):
                if origin.kind is not OriginKind.ROOT:
                    raise RouterBadOrigin("schedule_para_cleanup", origin, "the root")
                router.schedule_para_cleanup(txn, para)
                return ()
            case InitOpenChannel(recipient=recipient, max_places=places, max_message_size=size):
                return (router.hrmp_init_open_channel(txn, self._para(txn, origin, "hrmp_init_open_channel"), recipient, places, size),)
            case AcceptOpenChannel(sender=sender):
                return (router.hrmp_accept_open_channel(txn, self._para(txn, origin, "hrmp_accept_open_channel"), sender),)
            case CloseChannel(channel=channel):
                return (router.hrmp_close_channel(txn, self._para(txn, origin, "hrmp_close_channel"), channel),)
            case unknown:
                assert_never(unknown)

    def _para(self, txn: StateTransaction, origin: Origin, call: str) -> int:
        """The para an HRMP call is signed by; it must not be offboarded."""
        if origin.kind is not OriginKind.PARA:
            raise RouterBadOrigin(call, origin, "a para")
        self._check_valid(txn, origin.para_id)
        return origin.para_id

    def on_session_change(self, txn: StateTransaction, session_index: int, now: int) -> SessionChange:
        """Offboard the scheduled paras (they become invalid first, so requests to them are dropped), then run
        the Router's session change."""
        with txn.atomic():
            outgoing = tuple(RouterStorage(txn).outgoing_paras())
            self.paras.offboard(txn, outgoing)
            events = self._router().on_session_change(txn)
        return SessionChange(outgoing, tuple(events))
