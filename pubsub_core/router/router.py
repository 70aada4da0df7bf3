"""The Router as one object: config and collaborators bound once, one method per thing a relay block does.

The relay block machine calls, per block: ``accept_candidate`` for each included candidate (all acceptance
checks, then enactment, all or nothing), ``process_pending_upward_messages`` (dispatch to the XCM
executor), ``queue_downward_message`` for DMP, the three HRMP entry points for signed calls, and
``on_session_change`` at a session boundary. A new config takes effect through ``with_config``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from pubsub_core.router import dmp, hrmp, session, ump
from pubsub_core.router.budget import PendingInbound, pending_inbound
from pubsub_core.router.config import RouterConfig
from pubsub_core.router.events import (
    DownwardMessageQueued,
    HrmpCloseChannelRequested,
    HrmpOpenChannelAccepted,
    HrmpOpenChannelRequested,
    RouterEvent,
    UpwardMessageDispatched,
)
from pubsub_core.router.interfaces import DepositLedger, Dispatcher, ParaRegistry
from pubsub_core.router.records import CandidateCommitments, HrmpChannelId
from pubsub_core.router.storage import RouterStorage
from state import StateTransaction

__all__ = ["Router", "check_candidate", "enact_candidate"]


def check_candidate(
    txn: StateTransaction, config: RouterConfig, para: int, commitments: CandidateCommitments, relay_parent: int
) -> None:
    """Every acceptance check of the Router Module for one candidate of ``para`` built on block ``relay_parent``."""
    ump.check_upward_messages(txn, config, para, commitments.upward_messages)
    dmp.check_processed_downward_messages(txn, para, commitments.processed_downward_messages)
    hrmp.check_hrmp_watermark(txn, para, commitments.hrmp_watermark, relay_parent)
    hrmp.verify_outbound_hrmp(txn, config, para, commitments.horizontal_messages)


def enact_candidate(txn: StateTransaction, para: int, commitments: CandidateCommitments, now: int) -> None:
    """Enact an accepted candidate at relay block ``now``, in Polkadot's inclusion order: prune the downward
    queue, enqueue upward messages, prune inbound HRMP to the watermark, then send outbound HRMP."""
    dmp.prune_dmq(txn, para, commitments.processed_downward_messages)
    ump.enact_upward_messages(txn, para, commitments.upward_messages)
    hrmp.prune_hrmp(txn, para, commitments.hrmp_watermark)
    hrmp.queue_outbound_hrmp(txn, para, commitments.horizontal_messages, now)


@dataclass(frozen=True, slots=True)
class Router:
    """The Router Module bound to a config, the para registry, the deposit ledger and the dispatcher."""

    config: RouterConfig
    paras: ParaRegistry
    balances: DepositLedger
    dispatch: Dispatcher

    def with_config(self, config: RouterConfig) -> Router:
        """The same Router under a new config (for example the one of a new session)."""
        return replace(self, config=config)

    def prefetch(self, txn: StateTransaction, paras: Iterable[int]) -> None:
        """Load what a block touches for ``paras`` (their items, then their channels) in a few backend calls."""
        storage = RouterStorage(txn)
        storage.prefetch_paras(paras)
        channels = [
            channel
            for para in sorted(set(paras))
            for channel in (
                *(HrmpChannelId(para, recipient) for recipient in storage.egress_index(para)),
                *(HrmpChannelId(sender, para) for sender in storage.ingress_index(para)),
            )
        ]
        storage.prefetch_channels(channels)

    # -- candidates ---------------------------------------------------------------------------------
    def accept_candidate(
        self, txn: StateTransaction, para: int, commitments: CandidateCommitments, *, relay_parent: int, now: int
    ) -> None:
        """Check, then enact, one candidate's messages; raises an AcceptanceError and writes nothing if any
        check fails. ``relay_parent`` is the candidate's context block, ``now`` the including block."""
        with txn.atomic():
            check_candidate(txn, self.config, para, commitments, relay_parent)
            enact_candidate(txn, para, commitments, now)

    def accept_upward(self, txn: StateTransaction, para: int, messages: tuple[bytes, ...]) -> None:
        """Check, then enqueue, upward messages that arrive without the rest of a candidate (all or nothing)."""
        with txn.atomic():
            ump.check_upward_messages(txn, self.config, para, messages)
            ump.enact_upward_messages(txn, para, messages)

    def process_pending_upward_messages(self, txn: StateTransaction) -> list[UpwardMessageDispatched]:
        """Dispatch queued upward messages round-robin until the step weight; never fails."""
        with txn.atomic():
            return ump.process_pending_upward_messages(txn, self.config, self.dispatch)

    def queue_downward_message(
        self, txn: StateTransaction, para: int, message: bytes, now: int
    ) -> DownwardMessageQueued:
        """Queue a downward message for ``para`` at block ``now`` (size and routability checked)."""
        return dmp.queue_downward_message(txn, self.config, self.paras, para, message, now)

    # -- signed HRMP calls ------------------------------------------------------------------------------
    def hrmp_init_open_channel(
        self, txn: StateTransaction, origin: int, recipient: int, max_places: int, max_message_size: int
    ) -> HrmpOpenChannelRequested:
        """Signed call: request a channel origin->recipient."""
        return hrmp.hrmp_init_open_channel(
            txn, self.config, self.paras, self.balances, origin, recipient, max_places, max_message_size
        )

    def hrmp_accept_open_channel(self, txn: StateTransaction, origin: int, sender: int) -> HrmpOpenChannelAccepted:
        """Signed call: accept the pending request sender->origin."""
        return hrmp.hrmp_accept_open_channel(txn, self.config, self.paras, self.balances, origin, sender)

    def hrmp_close_channel(
        self, txn: StateTransaction, origin: int, channel: HrmpChannelId
    ) -> HrmpCloseChannelRequested:
        """Signed call: close ``channel`` at the next session change."""
        return hrmp.hrmp_close_channel(txn, origin, channel)

    # -- paras and sessions -----------------------------------------------------------------------------
    def schedule_para_cleanup(self, txn: StateTransaction, para: int) -> None:
        """Mark ``para`` for cleanup at the next session change (with Paras::schedule_para_cleanup)."""
        session.schedule_para_cleanup(txn, para)

    def on_session_change(self, txn: StateTransaction) -> list[RouterEvent]:
        """Offboard outgoing paras, age and enact open requests, and close channels; under this config."""
        return session.on_session_change(txn, self.config, self.paras, self.balances)

    # -- PoV budget -------------------------------------------------------------------------------------
    def pending_inbound(self, txn: StateTransaction, para: int, block: int) -> PendingInbound:
        """``para``'s pending downward and horizontal messages at ``block``, in into_abridged order."""
        return pending_inbound(txn, para, block)
