"""pending_inbound, into_abridged and abridge_inbound: the messages' share of the PoV before pub-sub."""

from __future__ import annotations

from pubsub_core.router import OutboundHrmpMessage, abridge_inbound, into_abridged, pending_inbound
from pubsub_core.router.budget import PendingHorizontalMessage
from pubsub_core.router.hrmp import queue_outbound_hrmp
from tests.router.helpers import fund, make_router, new_txn, open_channel

A, B, C, D = 1000, 1001, 1002, 1003


def test_into_abridged_matches_cumulus_vectors() -> None:
    sizes = [100, 100, 150, 50]
    assert into_abridged([], 0).full_count == 0
    split = into_abridged(sizes, 150)
    assert (split.full_count, split.hashed_count, split.remaining_limit) == (1, 3, 50)
    split = into_abridged(sizes, 200)
    assert (split.full_count, split.remaining_limit, split.full_bytes) == (2, 0, 200)
    split = into_abridged(sizes, 399)
    assert (split.full_count, split.remaining_limit) == (3, 49)
    split = into_abridged(sizes, 400)
    assert (split.full_count, split.hashed_count, split.remaining_limit) == (4, 0, 0)


def test_into_abridged_stops_at_the_first_message_that_does_not_fit() -> None:
    split = into_abridged([10, 50, 5], 40)
    assert (split.full_count, split.remaining_limit) == (1, 30)


def test_pending_inbound_orders_downward_by_queue_and_horizontal_by_sent_at_then_sender() -> None:
    router, _, ledger, _ = make_router()
    txn = new_txn()
    fund(txn, ledger, A, B, C, D)
    open_channel(router, txn, C, A)
    open_channel(router, txn, B, A)
    router.queue_downward_message(txn, A, b"d1", 3)
    router.queue_downward_message(txn, A, b"d2", 4)
    router.queue_downward_message(txn, A, b"late", 9)
    queue_outbound_hrmp(txn, C, (OutboundHrmpMessage(A, b"c4"),), 4)
    queue_outbound_hrmp(txn, B, (OutboundHrmpMessage(A, b"b5"),), 5)
    queue_outbound_hrmp(txn, C, (OutboundHrmpMessage(A, b"c5a"), OutboundHrmpMessage(A, b"c5b")), 5)
    queue_outbound_hrmp(txn, B, (OutboundHrmpMessage(A, b"b9"),), 9)
    pending = pending_inbound(txn, A, 8)
    assert [m.msg for m in pending.downward] == [b"d1", b"d2"]
    assert pending.horizontal == (
        PendingHorizontalMessage(C, 4, b"c4"),
        PendingHorizontalMessage(B, 5, b"b5"),
        PendingHorizontalMessage(C, 5, b"c5a"),
        PendingHorizontalMessage(C, 5, b"c5b"),
    )
    assert pending.downward_sizes() == [2, 2] and pending.horizontal_sizes() == [2, 2, 3, 3]
    assert router.pending_inbound(txn, A, 8) == pending


def test_abridge_inbound_applies_the_collection_limit_twice() -> None:
    router, _, ledger, _ = make_router()
    txn = new_txn()
    fund(txn, ledger, A, B)
    open_channel(router, txn, B, A)
    for block, size in ((1, 6), (2, 6)):
        router.queue_downward_message(txn, A, b"d" * size, block)
    queue_outbound_hrmp(txn, B, (OutboundHrmpMessage(A, b"h" * 8),), 2)
    budget = abridge_inbound(pending_inbound(txn, A, 2), 10)
    assert (budget.downward.full_count, budget.downward.remaining_limit) == (1, 4)
    assert (budget.horizontal.full_count, budget.horizontal.remaining_limit) == (1, 6)
    assert budget.message_bytes == 14 and budget.remaining_limit == 6
