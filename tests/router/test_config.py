"""RouterConfig validation."""

from __future__ import annotations

import pytest

from pubsub_core.router import RouterConfig
from pubsub_core.router.errors import RouterConfigError


def test_router_config_defaults_are_polkadot_like() -> None:
    config = RouterConfig()
    assert config.max_upward_message_num_per_candidate == 16
    assert config.hrmp_channel_max_places == 8


def test_router_config_rejects_a_negative_limit() -> None:
    with pytest.raises(RouterConfigError) as info:
        RouterConfig(hrmp_channel_max_places=-1)
    assert (info.value.field, info.value.value) == ("hrmp_channel_max_places", -1)


def test_router_config_rejects_a_u32_overflow() -> None:
    with pytest.raises(RouterConfigError):
        RouterConfig(max_upward_queue_count=1 << 32)


def test_router_config_rejects_a_zero_ttl() -> None:
    with pytest.raises(RouterConfigError):
        RouterConfig(hrmp_open_request_ttl=0)


def test_router_config_rejects_a_message_larger_than_the_queue() -> None:
    with pytest.raises(RouterConfigError):
        RouterConfig(max_upward_message_size=11, max_upward_queue_size=10)
