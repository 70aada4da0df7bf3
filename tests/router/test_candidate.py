"""Router.accept_candidate: all acceptance checks, then enactment in Polkadot's order, all or nothing."""

from __future__ import annotations

import pytest

from pubsub_core.router import CandidateCommitments, HrmpChannelId, OutboundHrmpMessage, RouterStorage, check_invariants
from pubsub_core.router.errors import HrmpChannelNotFound, HrmpWatermarkWithoutDigest
from state import MemoryBackend, StateTransaction
from tests.router.helpers import SMALL, fund, make_router, new_txn, open_channel

A, B = 1000, 1001


def test_accept_candidate_enacts_every_commitment() -> None:
    router, _, ledger, _ = make_router()
    txn = new_txn()
    fund(txn, ledger, A, B)
    open_channel(router, txn, A, B)
    router.queue_downward_message(txn, A, b"d", 1)
    commitments = CandidateCommitments(
        upward_messages=(b"publish",),
        horizontal_messages=(OutboundHrmpMessage(B, b"h"),),
        processed_downward_messages=1,
        hrmp_watermark=1,
    )
    router.accept_candidate(txn, A, commitments, relay_parent=1, now=2)
    storage = RouterStorage(txn)
    assert storage.relay_dispatch_queue(A) == [b"publish"]
    assert storage.downward_message_queue(A) == []
    assert storage.watermark(A) == 1
    assert [m.data for m in storage.channel_contents(HrmpChannelId(A, B))] == [b"h"]
    assert check_invariants(txn, SMALL) == []


def test_accept_candidate_writes_nothing_when_a_late_check_fails() -> None:
    router, _, _, _ = make_router()
    txn = new_txn()
    commitments = CandidateCommitments(upward_messages=(b"u",), horizontal_messages=(OutboundHrmpMessage(B, b"h"),), hrmp_watermark=1)
    with pytest.raises(HrmpChannelNotFound):
        router.accept_candidate(txn, A, commitments, relay_parent=1, now=2)
    assert txn.pending_changes() == {}


def test_accept_candidate_checks_the_watermark_against_the_relay_parent() -> None:
    router, _, _, _ = make_router()
    txn = new_txn()
    with pytest.raises(HrmpWatermarkWithoutDigest):
        router.accept_candidate(txn, A, CandidateCommitments(hrmp_watermark=1), relay_parent=2, now=3)


def test_prefetch_loads_a_block_s_paras_and_channels_in_one_call_per_namespace() -> None:
    router, _, ledger, _ = make_router()
    backend = MemoryBackend()
    txn = StateTransaction(backend)
    fund(txn, ledger, A, B)
    open_channel(router, txn, A, B)
    router.queue_downward_message(txn, B, b"d", 1)
    txn.commit()
    txn = StateTransaction(backend)
    router.prefetch(txn, [A, B])
    calls = backend.stats.read_calls
    commitments = CandidateCommitments(
        upward_messages=(b"u",), horizontal_messages=(OutboundHrmpMessage(B, b"h"),), hrmp_watermark=1
    )
    router.accept_candidate(txn, A, commitments, relay_parent=1, now=2)
    router.accept_candidate(txn, B, CandidateCommitments(processed_downward_messages=1, hrmp_watermark=1), relay_parent=1, now=2)
    assert backend.stats.read_calls == calls
    assert check_invariants(txn, SMALL) == []
