"""Every limit of the Router in one frozen, validated object (the messaging part of the host configuration).

Defaults follow Polkadot's relay chain configuration. The config is passed to each routine rather than
read from storage, so a new config can take effect at any block (normally at a session change).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from pubsub_core.router.errors import RouterConfigError

__all__ = ["DOT", "RouterConfig"]

DOT = 10**10
"""One DOT in planck: the unit of the HRMP deposits."""

_U32_MAX = (1 << 32) - 1
_U128_MAX = (1 << 128) - 1
_BALANCE_FIELDS = frozenset({"hrmp_sender_deposit", "hrmp_recipient_deposit"})
_WEIGHT_FIELDS = frozenset({"preferred_dispatchable_upward_messages_step_weight"})


@dataclass(frozen=True, slots=True)
class RouterConfig:
    """The messaging limits of the Router Module (UMP, DMP, HRMP), with Polkadot-like defaults."""

    # UMP
    max_upward_message_num_per_candidate: int = 16
    max_upward_message_size: int = 65_531
    max_upward_queue_count: int = 174_762
    max_upward_queue_size: int = 1_048_576
    preferred_dispatchable_upward_messages_step_weight: int = 20_000_000_000
    # DMP
    max_downward_message_size: int = 51_200
    # HRMP
    hrmp_max_message_num_per_candidate: int = 10
    hrmp_open_request_ttl: int = 2
    hrmp_sender_deposit: int = 100 * DOT
    hrmp_recipient_deposit: int = 100 * DOT
    hrmp_channel_max_places: int = 8
    hrmp_channel_max_size: int = 102_400
    hrmp_channel_max_message_size: int = 102_400
    hrmp_max_parachain_outbound_channels: int = 30
    hrmp_max_parachain_inbound_channels: int = 30
    hrmp_max_parathread_outbound_channels: int = 10
    hrmp_max_parathread_inbound_channels: int = 10

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise RouterConfigError(field.name, -1, f"must be an int, got {type(value).__name__}")
            bound = _U128_MAX if field.name in _BALANCE_FIELDS else (1 << 64) - 1 if field.name in _WEIGHT_FIELDS else _U32_MAX
            if not 0 <= value <= bound:
                raise RouterConfigError(field.name, value, f"must lie between 0 and {bound}")
        if self.hrmp_open_request_ttl < 1:
            raise RouterConfigError(
                "hrmp_open_request_ttl", self.hrmp_open_request_ttl, "a request must survive at least one session"
            )
        if self.max_upward_message_size > self.max_upward_queue_size:
            raise RouterConfigError(
                "max_upward_message_size",
                self.max_upward_message_size,
                f"a message must fit in the upward queue of {self.max_upward_queue_size} bytes",
            )
