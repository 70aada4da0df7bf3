"""check_invariants reports each kind of inconsistent state (so the property tests can fail)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from pubsub_core.router import HrmpChannelId, OutboundHrmpMessage, RouterStorage, check_invariants
from pubsub_core.router.hrmp import queue_outbound_hrmp
from pubsub_core.router.ump import enact_upward_messages
from state import StateTransaction
from tests.router.helpers import SMALL, fund, make_router, new_txn, open_channel

A, B, C = 1000, 1001, 1002
AB = HrmpChannelId(A, B)


def _consistent() -> StateTransaction:
    router, _, ledger, _ = make_router()
    txn = new_txn()
    fund(txn, ledger, A, B, C)
    open_channel(router, txn, A, B)
    queue_outbound_hrmp(txn, A, (OutboundHrmpMessage(B, b"xy"),), 3)
    router.hrmp_init_open_channel(txn, A, C, 1, 1)
    router.hrmp_accept_open_channel(txn, C, A)
    router.hrmp_close_channel(txn, A, AB)
    router.queue_downward_message(txn, B, b"d", 3)
    enact_upward_messages(txn, A, (b"u", b"v"))
    return txn


def _channel_overcounted(s: RouterStorage) -> None:
    channel = s.channel(AB)
    assert channel is not None
    s.set_channel(AB, replace(channel, used_places=channel.used_places + 1))


def _request_unconfirmed(s: RouterStorage) -> None:
    request = s.open_request(HrmpChannelId(A, C))
    assert request is not None
    s.set_open_request(HrmpChannelId(A, C), replace(request, confirmed=False))


CORRUPTIONS: dict[str, Callable[[RouterStorage], None]] = {
    "needs dispatch without queue": lambda s: s.set_needs_dispatch([A, B]),
    "queue size mismatch": lambda s: s.set_relay_dispatch_queue_size(A, 2, 99),
    "next dispatch outside needs": lambda s: s.set_next_dispatch_round_start_with(C),
    "unsorted outgoing paras": lambda s: s.set_outgoing_paras([C, A]),
    "queue without head": lambda s: s.set_downward_message_queue_head(B, None),
    "request list without request": lambda s: s.set_open_requests_list([]),
    "request count off": lambda s: s.set_open_request_count(A, 2),
    "accepted count off": _request_unconfirmed,
    "close list without close request": lambda s: s.set_close_request(AB, False),
    "dangling ingress index": lambda s: s.set_ingress_index(C, [A]),
    "missing egress index": lambda s: s.set_egress_index(A, []),
    "channel use miscounted": _channel_overcounted,
    "contents without channel": lambda s: s.set_channel_contents(HrmpChannelId(B, A), s.channel_contents(AB)),
    "message without digest": lambda s: s.set_channel_digests(B, [(4, [A])]),
    "digest at watermark": lambda s: s.set_watermark(B, 3),
    "repeated digest sender": lambda s: s.set_channel_digests(B, [(3, [A, A])]),
}


def test_check_invariants_accepts_a_consistent_state() -> None:
    assert check_invariants(_consistent(), SMALL) == []


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_check_invariants_reports_a_corrupted_state(name: str) -> None:
    txn = _consistent()
    CORRUPTIONS[name](RouterStorage(txn))
    assert check_invariants(txn, SMALL) != []


def test_check_invariants_with_config_reports_an_overfull_upward_queue() -> None:
    txn = _consistent()
    enact_upward_messages(txn, A, (b"w",) * 4)
    assert check_invariants(txn) == []
    assert any("beyond its capacity" in v for v in check_invariants(txn, SMALL))
