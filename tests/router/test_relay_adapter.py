"""RelayRouter behind the relay block machine: HRMP calls, horizontal records, DMP, UMP dispatch, offboarding."""

from __future__ import annotations

import json
from pubsub_core.broadcaster import Balances
from pubsub_core.relay import BlockResult, Genesis, RelayMachine
from pubsub_core.router import HrmpChannelId, OutboundHrmpMessage, RouterConfig, RouterStorage, check_invariants, pending_inbound
from pubsub_core.router.adapter import HRMP_DEPOSIT
from pubsub_core.router.calls import (
    AcceptOpenChannel,
    CloseChannel,
    HorizontalRecord,
    InitOpenChannel,
    MalformedRouterInput,
    RouterCall,
    ScheduleParaCleanup,
    SendDownward,
    decode_router_call,
)
from pubsub_core.router.relay_adapter import RelayRouter
from pubsub_core.xcm import Publish, Xcm
from pubsub_core.xcm.executor import sovereign_account
from state import MemoryBackend, StateTransaction
from tests.relay.chain import COLLATORS, MANAGER, ROOT, Chain, genesis

CONFIG = RouterConfig(hrmp_sender_deposit=100, hrmp_recipient_deposit=70)


def para_call(chain: Chain, para: int, data: bytes) -> str:
    return chain.signed(COLLATORS[para], "extrinsics", f"para:{para}", data).record_id


def statuses(result: BlockResult) -> dict[str, tuple[str, str | None]]:
    return {o.record_id: (o.status.value, o.reason) for o in result.outcomes}


def events(result: BlockResult) -> list[str]:
    return [json.loads(e.body)["event"] for e in result.events]


def machine() -> tuple[RelayMachine, MemoryBackend]:
    relay = RelayMachine(Chain().config, router_factory=lambda: RelayRouter(CONFIG))
    backend = MemoryBackend()
    base = genesis()
    endowments = base.endowments + tuple((sovereign_account(p), 1000) for p in (2000, 2001))
    relay.initialize(backend, Genesis(endowments, base.para_managers))
    return relay, backend


def test_relay_router_runs_hrmp_dmp_ump_and_offboarding_through_the_block_machine() -> None:
    relay, backend = machine()
    chain = Chain()
    init = para_call(chain, 2000, InitOpenChannel(2001, 4, 64).encode())
    accept = para_call(chain, 2001, AcceptOpenChannel(2000).encode())
    bad = chain.call(MANAGER, InitOpenChannel(2001, 4, 64).encode()).record_id
    first = relay.apply_block(backend, chain.produce())
    assert statuses(first)[init] == statuses(first)[accept] == ("applied", None)
    assert statuses(first)[bad] == ("rejected", "RouterBadOrigin")
    assert events(first) == ["HrmpOpenChannelRequested", "HrmpOpenChannelAccepted"]

    chain.session = 1
    opened = relay.apply_block(backend, chain.produce())
    assert events(opened) == ["HrmpChannelOpened"]

    hrmp = chain.signed(
        COLLATORS[2000], "horizontal", "2000",
        HorizontalRecord((OutboundHrmpMessage(2001, b"hi"),), hrmp_watermark=2).encode(),
    ).record_id
    dmp = chain.call(ROOT, SendDownward(2001, b"down").encode(), root=True).record_id
    publish = chain.upward(1000, Xcm((Publish(bytes(32), b"v", 0),)))
    third = relay.apply_block(backend, chain.produce())
    assert statuses(third) == {hrmp: ("applied", None), dmp: ("applied", None), publish.record_id: ("applied", None)}
    assert "DataPublished" in events(third) and "MessageExecuted" in events(third)
    txn = StateTransaction(backend)
    pending = pending_inbound(txn, 2001, 3)
    assert [m.msg for m in pending.downward] == [b"down"] and [m.data for m in pending.horizontal] == [b"hi"]
    assert check_invariants(txn, CONFIG) == []

    cleanup = chain.call(ROOT, ScheduleParaCleanup(2000).encode(), root=True).record_id
    assert statuses(relay.apply_block(backend, chain.produce()))[cleanup] == ("applied", None)
    chain.session = 2
    offboarded = relay.apply_block(backend, chain.produce())
    assert "HrmpChannelClosed" in events(offboarded)
    txn = StateTransaction(backend)
    storage = RouterStorage(txn)
    assert storage.channel(HrmpChannelId(2000, 2001)) is None and storage.ingress_index(2001) == []
    assert Balances.held(txn, sovereign_account(2000), HRMP_DEPOSIT) == 0
    assert Balances.held(txn, sovereign_account(2001), HRMP_DEPOSIT) == 0
    assert check_invariants(txn, CONFIG) == []

    late = chain.signed(COLLATORS[2000], "horizontal", "2000", HorizontalRecord().encode()).record_id
    late_call = para_call(chain, 2000, InitOpenChannel(2001, 1, 1).encode())
    rejected = relay.apply_block(backend, chain.produce())
    assert statuses(rejected)[late] == statuses(rejected)[late_call] == ("rejected", "OffboardedPara")


def test_relay_router_rejects_bad_horizontal_records_and_calls_by_type() -> None:
    relay, backend = machine()
    chain = Chain()
    garbage = chain.signed(COLLATORS[2000], "horizontal", "2000", b"\x04\x01").record_id
    no_channel = chain.signed(
        COLLATORS[2000], "horizontal", "2000", HorizontalRecord((OutboundHrmpMessage(2001, b"x"),)).encode()
    ).record_id
    close = para_call(chain, 2000, CloseChannel(HrmpChannelId(2000, 2001)).encode())
    result = relay.apply_block(backend, chain.produce())
    assert statuses(result) == {
        garbage: ("rejected", "MalformedRouterInput"),
        no_channel: ("rejected", "HrmpChannelNotFound"),
        close: ("rejected", "HrmpCloseChannelNotFound"),
    }


def test_router_calls_round_trip_and_reject_garbage() -> None:
    calls: list[RouterCall] = [
        InitOpenChannel(2001, 4, 64),
        AcceptOpenChannel(2000),
        CloseChannel(HrmpChannelId(2000, 2001)),
        SendDownward(2001, b"m"),
        ScheduleParaCleanup(2000),
    ]
    for call in calls:
        assert decode_router_call(call.encode()) == call
    for data in (b"", b"\x01", b"\x01\x09", b"\x00\x00", InitOpenChannel(1, 1, 1).encode() + b"\x00"):
        try:
            decode_router_call(data)
        except MalformedRouterInput as exc:
            assert exc.data == data
        else:
            raise AssertionError(f"{data.hex()} decoded")
    record = HorizontalRecord((OutboundHrmpMessage(7, b"ab"),), 2, 9)
    assert HorizontalRecord.decode(record.encode()) == record
