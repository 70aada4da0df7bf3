"""schedule_para_cleanup and on_session_change: outgoing paras, request aging, new channels, closing."""

from __future__ import annotations

from dataclasses import replace

from pubsub_core.router import HrmpChannelId, OutboundHrmpMessage, RouterStorage, check_invariants
from pubsub_core.router.events import (
    HrmpChannelClosed,
    HrmpChannelOpened,
    HrmpOpenChannelDropped,
    HrmpOpenRequestExpired,
)
from pubsub_core.router.hrmp import queue_outbound_hrmp
from pubsub_core.router.session import schedule_para_cleanup
from pubsub_core.router.ump import enact_upward_messages, process_pending_upward_messages
from tests.router.helpers import SMALL, Recorder, fund, make_router, new_txn, open_channel

A, B, C, D = 1000, 1001, 1002, 1003


def test_schedule_para_cleanup_keeps_outgoing_paras_sorted_without_repeats() -> None:
    txn = new_txn()
    for para in (C, A, C, B):
        schedule_para_cleanup(txn, para)
    assert RouterStorage(txn).outgoing_paras() == [A, B, C]


def test_on_session_change_ages_an_unconfirmed_request_and_refunds_it_at_the_ttl() -> None:
    router, _, ledger, _ = make_router()
    txn = new_txn()
    fund(txn, ledger, A, B)
    router.hrmp_init_open_channel(txn, A, B, 1, 1)
    assert router.on_session_change(txn) == []
    request = RouterStorage(txn).open_request(HrmpChannelId(A, B))
    assert request is not None and request.age == 1
    assert router.on_session_change(txn) == [HrmpOpenRequestExpired(HrmpChannelId(A, B))]
    storage = RouterStorage(txn)
    assert storage.open_request(HrmpChannelId(A, B)) is None
    assert storage.open_requests_list() == []
    assert storage.open_request_count(A) == 0
    assert ledger.read(txn, A) == (1000, 0)
    assert check_invariants(txn, SMALL) == []


def test_on_session_change_turns_a_confirmed_request_into_a_channel() -> None:
    router, _, ledger, _ = make_router()
    txn = new_txn()
    fund(txn, ledger, A, B)
    router.hrmp_init_open_channel(txn, A, B, 2, 5)
    router.hrmp_accept_open_channel(txn, B, A)
    assert router.on_session_change(txn) == [HrmpChannelOpened(HrmpChannelId(A, B))]
    storage = RouterStorage(txn)
    channel = storage.channel(HrmpChannelId(A, B))
    assert channel is not None
    assert (channel.sender_deposit, channel.recipient_deposit) == (100, 70)
    assert (channel.limit_used_places, channel.limit_used_bytes, channel.limit_message_size) == (2, 12, 5)
    assert (channel.used_places, channel.used_bytes, channel.mqc_head) == (0, 0, bytes(32))
    assert storage.egress_index(A) == [B] and storage.ingress_index(B) == [A]
    assert storage.open_request_count(A) == 0 and storage.accepted_request_count(B) == 0
    assert ledger.read(txn, A) == (900, 100) and ledger.read(txn, B) == (930, 70)
    assert check_invariants(txn, SMALL) == []


def test_on_session_change_drops_a_confirmed_request_to_an_invalid_para_with_refunds() -> None:
    router, registry, ledger, _ = make_router()
    txn = new_txn()
    fund(txn, ledger, A, B)
    router.hrmp_init_open_channel(txn, A, B, 1, 1)
    router.hrmp_accept_open_channel(txn, B, A)
    registry.valid.discard(B)
    assert router.on_session_change(txn) == [HrmpOpenChannelDropped(HrmpChannelId(A, B))]
    assert RouterStorage(txn).channel(HrmpChannelId(A, B)) is None
    assert ledger.read(txn, A) == (1000, 0) and ledger.read(txn, B) == (1000, 0)
    assert check_invariants(txn, SMALL) == []


def test_on_session_change_closes_requested_channels_and_returns_deposits() -> None:
    router, _, ledger, _ = make_router()
    txn = new_txn()
    fund(txn, ledger, A, B)
    ab = open_channel(router, txn, A, B)
    queue_outbound_hrmp(txn, A, (OutboundHrmpMessage(B, b"x"),), 3)
    router.hrmp_close_channel(txn, A, ab)
    assert router.on_session_change(txn) == [HrmpChannelClosed(ab)]
    storage = RouterStorage(txn)
    assert storage.channel(ab) is None and storage.channel_contents(ab) == []
    assert storage.egress_index(A) == [] and storage.ingress_index(B) == []
    assert storage.close_requests_list() == [] and not storage.has_close_request(ab)
    assert ledger.read(txn, A) == (1000, 0) and ledger.read(txn, B) == (1000, 0)


def test_on_session_change_cleans_an_outgoing_para_everywhere() -> None:
    router, _, ledger, _ = make_router()
    txn = new_txn()
    fund(txn, ledger, A, B, C, D)
    open_channel(router, txn, A, B)
    open_channel(router, txn, B, C)
    open_channel(router, txn, C, D)
    router.hrmp_init_open_channel(txn, D, B, 1, 1)
    router.hrmp_accept_open_channel(txn, B, D)
    router.hrmp_init_open_channel(txn, B, D, 1, 1)
    router.hrmp_close_channel(txn, A, HrmpChannelId(A, B))
    queue_outbound_hrmp(txn, A, (OutboundHrmpMessage(B, b"x"),), 5)
    router.queue_downward_message(txn, B, b"d", 5)
    enact_upward_messages(txn, A, (b"u",))
    enact_upward_messages(txn, B, (b"u", b"v"))
    process_pending_upward_messages(txn, replace(SMALL, preferred_dispatchable_upward_messages_step_weight=0), Recorder())
    assert RouterStorage(txn).next_dispatch_round_start_with() == B
    router.schedule_para_cleanup(txn, B)
    events = router.on_session_change(txn)
    assert HrmpChannelClosed(HrmpChannelId(A, B)) in events
    assert HrmpChannelClosed(HrmpChannelId(B, C)) in events
    assert HrmpOpenChannelDropped(HrmpChannelId(D, B)) in events
    assert HrmpOpenChannelDropped(HrmpChannelId(B, D)) in events
    storage = RouterStorage(txn)
    assert storage.outgoing_paras() == []
    assert storage.downward_message_queue(B) == [] and storage.downward_message_queue_head(B) is None
    assert storage.relay_dispatch_queue(B) == [] and storage.relay_dispatch_queue_size(B) == (0, 0)
    assert storage.needs_dispatch() == [] and storage.next_dispatch_round_start_with() is None
    assert storage.open_request_count(B) == storage.accepted_request_count(B) == 0
    assert storage.open_request_count(D) == 0
    assert storage.channel(HrmpChannelId(C, D)) is not None
    assert storage.channel_digests(B) == [] and storage.watermark(B) is None
    assert [ledger.read(txn, para) for para in (A, B, C, D)] == [(1000, 0), (1000, 0), (900, 100), (930, 70)]
    assert check_invariants(txn, SMALL) == []


def test_on_session_change_applies_fully_or_not_at_all() -> None:
    router, _, ledger, _ = make_router()
    txn = new_txn()
    fund(txn, ledger, A, B)
    ab = open_channel(router, txn, A, B)
    router.hrmp_close_channel(txn, A, ab)
    ledger.set(txn, B, 1000, 0)  # corrupt the ledger: the refund to B must fail
    before = txn.pending_changes()
    try:
        router.on_session_change(txn)
    except AssertionError:
        pass
    else:
        raise AssertionError("the refund should have failed")
    assert txn.pending_changes() == before
