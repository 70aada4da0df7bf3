"""The adapters: HRMP deposits as balance holds, and upward dispatch through the XCM executor."""

from __future__ import annotations

from pubsub_core.broadcaster import Balances
from pubsub_core.broadcaster.pallet import Broadcaster
from pubsub_core.router import CandidateCommitments, Router, RouterConfig, RouterStorage
from pubsub_core.router.adapter import HRMP_DEPOSIT, HeldDeposits, XcmDispatcher
from pubsub_core.xcm import AllowPublishFrom, BarrierChain, Everything, Publish, Xcm, XcmExecutor, encode_versioned_xcm
from pubsub_core.xcm.executor import sovereign_account
from state import MemoryBackend, StateTransaction
from tests.router.helpers import SMALL, Recorder, Registry

SYSTEM_PARA = 1000


def test_held_deposits_hold_and_release_on_the_sovereign_account() -> None:
    txn = StateTransaction(MemoryBackend())
    account = sovereign_account(1000)
    Balances.mint(txn, account, 500)
    ledger = HeldDeposits()
    router = Router(SMALL, Registry(), ledger, Recorder())
    Balances.mint(txn, sovereign_account(1001), 500)
    router.hrmp_init_open_channel(txn, 1000, 1001, 1, 1)
    assert ledger.free_balance(txn, 1000) == 400
    assert Balances.held(txn, account, HRMP_DEPOSIT) == 100
    router.on_session_change(txn)
    router.on_session_change(txn)  # the unconfirmed request expires at the TTL of 2
    assert Balances.held(txn, account, HRMP_DEPOSIT) == 0
    assert ledger.free_balance(txn, 1000) == 500


def test_xcm_dispatcher_executes_publish_with_the_para_as_origin() -> None:
    txn = StateTransaction(MemoryBackend())
    broadcaster = Broadcaster()
    executor = XcmExecutor(BarrierChain([AllowPublishFrom(Everything(), 16)]), broadcaster)
    dispatcher = XcmDispatcher(txn, executor, now=1)
    router = Router(RouterConfig(), Registry(), HeldDeposits(), dispatcher)
    message = encode_versioned_xcm(Xcm((Publish(bytes(32), b"v", 0),)))
    router.accept_candidate(txn, SYSTEM_PARA, _upward(message), relay_parent=0, now=1)
    router.accept_candidate(txn, 1001, _upward(b"\xff"), relay_parent=0, now=1)
    events = router.process_pending_upward_messages(txn)
    assert [(e.para, e.success) for e in events] == [(SYSTEM_PARA, True), (1001, False)]
    assert events[1].error is not None and events[1].error.startswith("XcmDecodeError")
    assert [para for para, _ in dispatcher.outcomes] == [SYSTEM_PARA]
    assert events[0].weight_used == dispatcher.outcomes[0][1].used_weight.ref_time > 0
    assert broadcaster.published_keys(txn, SYSTEM_PARA) == [bytes(32)]
    assert RouterStorage(txn).needs_dispatch() == []


def _upward(message: bytes) -> CandidateCommitments:
    return CandidateCommitments(upward_messages=(message,))
