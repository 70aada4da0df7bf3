"""HRMP: check_hrmp_watermark, verify_outbound_hrmp, queue_outbound_hrmp, prune_hrmp and the entry points."""

from __future__ import annotations

import pytest

from pubsub_core.router import (
    Router,
    HrmpChannelId,
    InboundHrmpMessage,
    OutboundHrmpMessage,
    RouterStorage,
    check_invariants,
    mqc_extend,
)
from pubsub_core.router.errors import (
    HrmpAcceptInboundLimitReached,
    HrmpAcceptInsufficientBalance,
    HrmpChannelAlreadyExists,
    HrmpChannelBytesExceeded,
    HrmpChannelNotFound,
    HrmpChannelPlacesExceeded,
    HrmpCloseAlreadyRequested,
    HrmpCloseChannelNotFound,
    HrmpCloseNotParticipant,
    HrmpMessageSizeOutOfRange,
    HrmpMessageTooLarge,
    HrmpOpenInsufficientBalance,
    HrmpOpenInvalidRecipient,
    HrmpOpenOutboundLimitReached,
    HrmpOpenPlacesOutOfRange,
    HrmpOpenRequestAlreadyConfirmed,
    HrmpOpenRequestAlreadyExists,
    HrmpOpenRequestNotFound,
    HrmpOpenToSelf,
    HrmpWatermarkAheadOfContext,
    HrmpWatermarkNotAdvanced,
    HrmpWatermarkWithoutDigest,
    TooManyHorizontalMessages,
)
from pubsub_core.router.hrmp import check_hrmp_watermark, prune_hrmp, queue_outbound_hrmp, verify_outbound_hrmp
from pubsub_core.router.records import ZERO_HASH
from state import StateTransaction
from tests.router.helpers import SMALL, Ledger, Registry, fund, make_router, new_txn, open_channel

A, B, C, D = 1000, 1001, 1002, 1003


def _with_channels(*pairs: tuple[int, int]) -> tuple[Router, Registry, Ledger, StateTransaction]:
    """A router with funded paras A..D and the given channels open."""
    router, registry, ledger, recorder = make_router()
    txn = new_txn()
    fund(txn, ledger, A, B, C, D)
    for sender, recipient in pairs:
        open_channel(router, txn, sender, recipient)
    return router, registry, ledger, txn


def _msg(recipient: int, size: int = 1) -> OutboundHrmpMessage:
    return OutboundHrmpMessage(recipient, b"m" * size)


# -- check_hrmp_watermark -------------------------------------------------------------------------
def test_check_hrmp_watermark_rejects_a_watermark_that_does_not_advance() -> None:
    _, _, _, txn = _with_channels((A, B))
    queue_outbound_hrmp(txn, A, (_msg(B),), 4)
    prune_hrmp(txn, B, 5)
    for watermark in (4, 5):
        with pytest.raises(HrmpWatermarkNotAdvanced) as info:
            check_hrmp_watermark(txn, B, watermark, 9)
        assert (info.value.new_watermark, info.value.current_watermark) == (watermark, 5)


def test_check_hrmp_watermark_accepts_the_context_block_again() -> None:
    txn = new_txn()
    prune_hrmp(txn, B, 9)
    check_hrmp_watermark(txn, B, 9, 9)


def test_check_hrmp_watermark_rejects_a_watermark_ahead_of_the_context() -> None:
    with pytest.raises(HrmpWatermarkAheadOfContext) as info:
        check_hrmp_watermark(new_txn(), B, 10, 9)
    assert (info.value.new_watermark, info.value.context_block) == (10, 9)


def test_check_hrmp_watermark_rejects_a_block_without_a_digest() -> None:
    with pytest.raises(HrmpWatermarkWithoutDigest):
        check_hrmp_watermark(new_txn(), B, 4, 9)


def test_check_hrmp_watermark_accepts_the_context_block() -> None:
    check_hrmp_watermark(new_txn(), B, 9, 9)


def test_check_hrmp_watermark_accepts_a_block_with_a_digest() -> None:
    _, _, _, txn = _with_channels((A, B))
    queue_outbound_hrmp(txn, A, (_msg(B),), 4)
    check_hrmp_watermark(txn, B, 4, 9)


# -- verify_outbound_hrmp -------------------------------------------------------------------------
def test_verify_outbound_hrmp_rejects_too_many_messages() -> None:
    _, _, _, txn = _with_channels((A, B))
    with pytest.raises(TooManyHorizontalMessages) as info:
        verify_outbound_hrmp(txn, SMALL, A, (_msg(B),) * 4)
    assert (info.value.count, info.value.limit) == (4, 3)


def test_verify_outbound_hrmp_rejects_a_message_without_a_channel() -> None:
    _, _, _, txn = _with_channels((A, B))
    with pytest.raises(HrmpChannelNotFound) as info:
        verify_outbound_hrmp(txn, SMALL, A, (_msg(B), _msg(C)))
    assert (info.value.index, info.value.recipient) == (1, C)


def test_verify_outbound_hrmp_rejects_a_message_above_the_channel_message_size() -> None:
    router, _, _, txn = _with_channels()
    open_channel(router, txn, A, B, places=3, size=4)
    with pytest.raises(HrmpMessageTooLarge) as info:
        verify_outbound_hrmp(txn, SMALL, A, (_msg(B, 5),))
    assert (info.value.size, info.value.limit) == (5, 4)


def test_verify_outbound_hrmp_rejects_a_message_that_overfills_the_channel_bytes() -> None:
    _, _, _, txn = _with_channels((A, B))  # limit_used_bytes = 12
    queue_outbound_hrmp(txn, A, (_msg(B, 8),), 1)
    verify_outbound_hrmp(txn, SMALL, A, (_msg(B, 4),))
    with pytest.raises(HrmpChannelBytesExceeded) as info:
        verify_outbound_hrmp(txn, SMALL, A, (_msg(B, 5),))
    assert (info.value.used_bytes, info.value.size, info.value.limit) == (8, 5, 12)


def test_verify_outbound_hrmp_rejects_a_message_that_overfills_the_channel_places() -> None:
    router, _, _, txn = _with_channels()
    open_channel(router, txn, A, B, places=2, size=4)
    queue_outbound_hrmp(txn, A, (_msg(B), _msg(B)), 1)
    with pytest.raises(HrmpChannelPlacesExceeded) as info:
        verify_outbound_hrmp(txn, SMALL, A, (_msg(B),))
    assert (info.value.used_places, info.value.limit) == (2, 2)


def test_verify_outbound_hrmp_counts_messages_to_the_same_channel_together() -> None:
    router, _, _, txn = _with_channels()
    open_channel(router, txn, A, B, places=2, size=8)
    verify_outbound_hrmp(txn, SMALL, A, (_msg(B), _msg(B)))
    with pytest.raises(HrmpChannelPlacesExceeded) as info:
        verify_outbound_hrmp(txn, SMALL, A, (_msg(B), _msg(B), _msg(B)))
    assert info.value.index == 2
    with pytest.raises(HrmpChannelBytesExceeded):
        verify_outbound_hrmp(txn, SMALL, A, (_msg(B, 8), _msg(B, 8)))


# -- queue_outbound_hrmp and prune_hrmp --------------------------------------------------------------
def test_queue_outbound_hrmp_appends_contents_digests_use_and_mqc_head() -> None:
    _, _, _, txn = _with_channels((A, C), (B, C))
    queue_outbound_hrmp(txn, A, (_msg(C, 2), _msg(C, 3)), 7)
    queue_outbound_hrmp(txn, B, (_msg(C, 1),), 7)
    queue_outbound_hrmp(txn, A, (_msg(C, 1),), 8)
    storage = RouterStorage(txn)
    ac = HrmpChannelId(A, C)
    assert storage.channel_contents(ac) == [
        InboundHrmpMessage(7, b"mm"),
        InboundHrmpMessage(7, b"mmm"),
        InboundHrmpMessage(8, b"m"),
    ]
    assert storage.channel_digests(C) == [(7, [A, B]), (8, [A])]
    channel = storage.channel(ac)
    assert channel is not None
    assert (channel.used_places, channel.used_bytes) == (3, 6)
    head = ZERO_HASH
    for message in storage.channel_contents(ac):
        head = mqc_extend(head, message.sent_at, message.data)
    assert channel.mqc_head == head
    assert check_invariants(txn, SMALL) == []


def test_prune_hrmp_drops_messages_and_digests_up_to_the_watermark() -> None:
    _, _, _, txn = _with_channels((A, C), (B, C))
    queue_outbound_hrmp(txn, A, (_msg(C, 2),), 7)
    queue_outbound_hrmp(txn, B, (_msg(C, 1),), 8)
    queue_outbound_hrmp(txn, A, (_msg(C, 3),), 9)
    prune_hrmp(txn, C, 8)
    storage = RouterStorage(txn)
    assert storage.channel_digests(C) == [(9, [A])]
    assert storage.channel_contents(HrmpChannelId(A, C)) == [InboundHrmpMessage(9, b"mmm")]
    assert storage.channel_contents(HrmpChannelId(B, C)) == []
    ac, bc = storage.channel(HrmpChannelId(A, C)), storage.channel(HrmpChannelId(B, C))
    assert ac is not None and bc is not None
    assert (ac.used_places, ac.used_bytes, bc.used_places, bc.used_bytes) == (1, 3, 0, 0)
    assert storage.watermark(C) == 8
    assert check_invariants(txn, SMALL) == []


# -- hrmp_init_open_channel ---------------------------------------------------------------------------
def test_hrmp_init_open_channel_rejects_a_channel_to_itself() -> None:
    router, _, _, txn = _with_channels()
    with pytest.raises(HrmpOpenToSelf):
        router.hrmp_init_open_channel(txn, A, A, 1, 1)


@pytest.mark.parametrize("places", [0, 4])
def test_hrmp_init_open_channel_rejects_places_out_of_range(places: int) -> None:
    router, _, _, txn = _with_channels()
    with pytest.raises(HrmpOpenPlacesOutOfRange) as info:
        router.hrmp_init_open_channel(txn, A, B, places, 1)
    assert (info.value.max_places, info.value.limit) == (places, 3)


@pytest.mark.parametrize("size", [0, 9])
def test_hrmp_init_open_channel_rejects_a_message_size_out_of_range(size: int) -> None:
    router, _, _, txn = _with_channels()
    with pytest.raises(HrmpMessageSizeOutOfRange):
        router.hrmp_init_open_channel(txn, A, B, 1, size)


def test_hrmp_init_open_channel_rejects_an_invalid_recipient() -> None:
    router, _, _, txn = _with_channels()
    with pytest.raises(HrmpOpenInvalidRecipient) as info:
        router.hrmp_init_open_channel(txn, A, 42, 1, 1)
    assert info.value.recipient == 42


def test_hrmp_init_open_channel_rejects_an_existing_channel() -> None:
    router, _, _, txn = _with_channels((A, B))
    with pytest.raises(HrmpChannelAlreadyExists):
        router.hrmp_init_open_channel(txn, A, B, 1, 1)


def test_hrmp_init_open_channel_rejects_a_pending_request() -> None:
    router, _, _, txn = _with_channels()
    router.hrmp_init_open_channel(txn, A, B, 1, 1)
    with pytest.raises(HrmpOpenRequestAlreadyExists):
        router.hrmp_init_open_channel(txn, A, B, 1, 1)


def test_hrmp_init_open_channel_rejects_past_the_parachain_outbound_limit() -> None:
    router, _, _, txn = _with_channels((A, B))
    router.hrmp_init_open_channel(txn, A, C, 1, 1)
    with pytest.raises(HrmpOpenOutboundLimitReached) as info:
        router.hrmp_init_open_channel(txn, A, D, 1, 1)
    assert (info.value.channels, info.value.requests, info.value.limit) == (1, 1, 2)


def test_hrmp_init_open_channel_rejects_past_the_parathread_outbound_limit() -> None:
    router, registry, _, txn = _with_channels()
    registry.parathreads.add(A)
    router.hrmp_init_open_channel(txn, A, B, 1, 1)
    with pytest.raises(HrmpOpenOutboundLimitReached) as info:
        router.hrmp_init_open_channel(txn, A, C, 1, 1)
    assert info.value.limit == 1


def test_hrmp_init_open_channel_rejects_an_insufficient_balance() -> None:
    router, _, ledger, txn = _with_channels()
    ledger.set(txn, A, 99, 0)
    with pytest.raises(HrmpOpenInsufficientBalance) as info:
        router.hrmp_init_open_channel(txn, A, B, 1, 1)
    assert (info.value.balance, info.value.deposit) == (99, 100)
    assert RouterStorage(txn).open_requests_list() == []


def test_hrmp_init_open_channel_reserves_the_deposit_and_records_the_request() -> None:
    router, _, ledger, txn = _with_channels()
    event = router.hrmp_init_open_channel(txn, A, B, 2, 5)
    storage = RouterStorage(txn)
    request = storage.open_request(HrmpChannelId(A, B))
    assert request is not None
    assert (request.confirmed, request.age, request.sender_deposit) == (False, 0, 100)
    assert (request.limit_used_places, request.limit_message_size, request.limit_used_bytes) == (2, 5, 12)
    assert storage.open_requests_list() == [HrmpChannelId(A, B)]
    assert storage.open_request_count(A) == 1
    assert ledger.read(txn, A) == (900, 100)
    assert event.channel == HrmpChannelId(A, B)
    assert check_invariants(txn, SMALL) == []


# -- hrmp_accept_open_channel ---------------------------------------------------------------------------
def test_hrmp_accept_open_channel_rejects_a_missing_request() -> None:
    router, _, _, txn = _with_channels()
    with pytest.raises(HrmpOpenRequestNotFound) as info:
        router.hrmp_accept_open_channel(txn, B, A)
    assert info.value.sender == A


def test_hrmp_accept_open_channel_rejects_a_confirmed_request() -> None:
    router, _, _, txn = _with_channels()
    router.hrmp_init_open_channel(txn, A, B, 1, 1)
    router.hrmp_accept_open_channel(txn, B, A)
    with pytest.raises(HrmpOpenRequestAlreadyConfirmed):
        router.hrmp_accept_open_channel(txn, B, A)


def test_hrmp_accept_open_channel_rejects_past_the_inbound_limit() -> None:
    router, _, _, txn = _with_channels((A, D))
    router.hrmp_init_open_channel(txn, B, D, 1, 1)
    router.hrmp_init_open_channel(txn, C, D, 1, 1)
    router.hrmp_accept_open_channel(txn, D, B)
    with pytest.raises(HrmpAcceptInboundLimitReached) as info:
        router.hrmp_accept_open_channel(txn, D, C)
    assert (info.value.channels, info.value.accepted, info.value.limit) == (1, 1, 2)


def test_hrmp_accept_open_channel_rejects_an_insufficient_balance() -> None:
    router, _, ledger, txn = _with_channels()
    router.hrmp_init_open_channel(txn, A, B, 1, 1)
    ledger.set(txn, B, 69, 0)
    with pytest.raises(HrmpAcceptInsufficientBalance) as info:
        router.hrmp_accept_open_channel(txn, B, A)
    assert (info.value.balance, info.value.deposit) == (69, 70)
    request = RouterStorage(txn).open_request(HrmpChannelId(A, B))
    assert request is not None and not request.confirmed


def test_hrmp_accept_open_channel_confirms_reserves_and_counts() -> None:
    router, _, ledger, txn = _with_channels()
    router.hrmp_init_open_channel(txn, A, B, 1, 1)
    router.hrmp_accept_open_channel(txn, B, A)
    storage = RouterStorage(txn)
    request = storage.open_request(HrmpChannelId(A, B))
    assert request is not None and request.confirmed and request.recipient_deposit == 70
    assert storage.accepted_request_count(B) == 1
    assert ledger.read(txn, B) == (930, 70)
    assert check_invariants(txn, SMALL) == []


# -- hrmp_close_channel ------------------------------------------------------------------------------
def test_hrmp_close_channel_rejects_a_non_participant() -> None:
    router, _, _, txn = _with_channels((A, B))
    with pytest.raises(HrmpCloseNotParticipant):
        router.hrmp_close_channel(txn, C, HrmpChannelId(A, B))


def test_hrmp_close_channel_rejects_a_missing_channel() -> None:
    router, _, _, txn = _with_channels()
    with pytest.raises(HrmpCloseChannelNotFound):
        router.hrmp_close_channel(txn, A, HrmpChannelId(A, B))


def test_hrmp_close_channel_rejects_a_repeated_request() -> None:
    router, _, _, txn = _with_channels((A, B))
    router.hrmp_close_channel(txn, B, HrmpChannelId(A, B))
    with pytest.raises(HrmpCloseAlreadyRequested):
        router.hrmp_close_channel(txn, A, HrmpChannelId(A, B))


def test_hrmp_close_channel_registers_the_request_from_either_side() -> None:
    router, _, _, txn = _with_channels((A, B), (C, A))
    router.hrmp_close_channel(txn, B, HrmpChannelId(A, B))
    router.hrmp_close_channel(txn, C, HrmpChannelId(C, A))
    storage = RouterStorage(txn)
    assert storage.close_requests_list() == [HrmpChannelId(A, B), HrmpChannelId(C, A)]
    assert storage.has_close_request(HrmpChannelId(C, A))
    assert check_invariants(txn, SMALL) == []
