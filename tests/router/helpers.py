"""Test doubles for the Router's collaborators: a para registry, a deposit ledger kept in the transaction,
and a recording dispatcher."""

from __future__ import annotations

from dataclasses import dataclass, field

from pubsub_core.codec.scale import ScaleReader, encode_u128, encode_u32
from pubsub_core.router import DispatchResult, HrmpChannelId, Router, RouterConfig
from state import MemoryBackend, StateTransaction

LEDGER_NS = "test.ledger"


@dataclass
class Registry:
    """Valid paras; those in ``parathreads`` are on-demand parathreads, the rest parachains."""

    valid: set[int] = field(default_factory=lambda: set(range(1000, 1010)))
    parathreads: set[int] = field(default_factory=set)

    def is_valid_para(self, txn: StateTransaction, para: int) -> bool:
        return para in self.valid

    def is_parachain(self, txn: StateTransaction, para: int) -> bool:
        return para not in self.parathreads


class Ledger:
    """(free, reserved) per para, stored in the transaction so atomic sections cover it."""

    def read(self, txn: StateTransaction, para: int) -> tuple[int, int]:
        data = txn.get(LEDGER_NS, encode_u32(para))
        if data is None:
            return 0, 0
        reader = ScaleReader(data)
        return reader.u128(), reader.u128()

    def set(self, txn: StateTransaction, para: int, free: int, reserved: int) -> None:
        txn.put(LEDGER_NS, encode_u32(para), encode_u128(free) + encode_u128(reserved))

    def free_balance(self, txn: StateTransaction, para: int) -> int:
        return self.read(txn, para)[0]

    def reserved(self, txn: StateTransaction, para: int) -> int:
        return self.read(txn, para)[1]

    def reserve(self, txn: StateTransaction, para: int, amount: int) -> None:
        free, reserved = self.read(txn, para)
        if amount > free:
            raise AssertionError(f"reserve {amount} of para {para} with only {free} free")
        self.set(txn, para, free - amount, reserved + amount)

    def unreserve(self, txn: StateTransaction, para: int, amount: int) -> None:
        free, reserved = self.read(txn, para)
        if amount > reserved:
            raise AssertionError(f"unreserve {amount} of para {para} with only {reserved} reserved")
        self.set(txn, para, free + amount, reserved - amount)


@dataclass
class Recorder:
    """A dispatcher that records (para, message) and charges a fixed weight per message."""

    weight: int = 10
    calls: list[tuple[int, bytes]] = field(default_factory=list)

    def __call__(self, para: int, message: bytes) -> DispatchResult:
        self.calls.append((para, message))
        return DispatchResult(self.weight)


SMALL = RouterConfig(
    max_upward_message_num_per_candidate=3,
    max_upward_message_size=8,
    max_upward_queue_count=5,
    max_upward_queue_size=20,
    preferred_dispatchable_upward_messages_step_weight=30,
    max_downward_message_size=8,
    hrmp_max_message_num_per_candidate=3,
    hrmp_open_request_ttl=2,
    hrmp_sender_deposit=100,
    hrmp_recipient_deposit=70,
    hrmp_channel_max_places=3,
    hrmp_channel_max_size=12,
    hrmp_channel_max_message_size=8,
    hrmp_max_parachain_outbound_channels=2,
    hrmp_max_parachain_inbound_channels=2,
    hrmp_max_parathread_outbound_channels=1,
    hrmp_max_parathread_inbound_channels=1,
)
"""A config with tiny limits, so every limit is reachable in a few steps."""


def new_txn() -> StateTransaction:
    return StateTransaction(MemoryBackend())


def make_router(config: RouterConfig = SMALL, weight: int = 10) -> tuple[Router, Registry, Ledger, Recorder]:
    registry, ledger, recorder = Registry(), Ledger(), Recorder(weight)
    return Router(config, registry, ledger, recorder), registry, ledger, recorder


def fund(txn: StateTransaction, ledger: Ledger, *paras: int, amount: int = 1000) -> None:
    for para in paras:
        ledger.set(txn, para, amount, 0)


def open_channel(router: Router, txn: StateTransaction, sender: int, recipient: int, places: int = 3, size: int = 8) -> HrmpChannelId:
    """Request, accept and enact (via a session change) the channel sender->recipient."""
    router.hrmp_init_open_channel(txn, sender, recipient, places, size)
    router.hrmp_accept_open_channel(txn, recipient, sender)
    router.on_session_change(txn)
    return HrmpChannelId(sender, recipient)
