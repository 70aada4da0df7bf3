"""The subscriber's constants (pallet Config and parachain-system parameters) as one frozen, validated object."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from pubsub_core.codec.scale import encode_compact
from pubsub_core.subscriber.errors import SubscriberConfigError
from pubsub_core.subscriber.meter import Weight

__all__ = ["AdminOrigin", "SubscriberConfig"]


class AdminOrigin(Enum):
    """Who may make the administrative calls ``enable_publisher`` and ``clear_publisher_cache`` (the pub-sub
    design's ``ClearCacheOrigin``). Governance (a ``root`` extrinsic carrying subscriber call 3) may under both."""

    GOVERNANCE = "governance"
    GOVERNANCE_OR_SUBSCRIBER = "governance_or_subscriber"


@dataclass(frozen=True, slots=True)
class SubscriberConfig:
    """Every tunable of the subscriber side. Defaults follow the pub-sub design and docs/design.md.

    - ``max_trie_depth``: MaxTrieDepth, nodes on a key's path (root = 1); deeper tries disable the publisher.
    - ``max_cached_node_size``: bound of a CachedTrieNodes entry (750 covers the 599-byte worst-case branch).
    - ``max_value_length``: the relay's MaxValueLength (``BroadcasterConfig.max_value_length``, 992): no stored
      value is longer, so the largest value node (``max_value_node_size``) is derived from it.
    - ``system_para_limit``: paras below it are system paras, processed first.
    - ``db_read``: RuntimeDbWeight read; any read (relay node, cache entry, storage entry) costs ``db_read + (0, len)``.
      Writes are not metered: they add no PoV and happen after the reads that bound the block.
    - ``ref_time_limit``: ref_time available to pub-sub proof processing in one block.
    - ``pov_percent``: share of max_pov_size usable by the inherent (85%, the HRMP limit).
    - ``messages_collection_size_limit``: None = half the allowed PoV, so DMQ + HRMP may use it all.
    - ``min_pubsub_budget``: floor under the pub-sub budget; 0 = no minimum (the pub-sub design, "Decision 4: Budget
      Allocation").
    - ``max_publishers``: MaxPublishers, bound on publishers a subscriber follows.
    - ``deliver_all_on_root_change``: when a publisher's root changes, call ``on_data_updated`` for every
      subscribed key with data (the pub-sub spec, "Root changed") instead of only the keys whose value changed (the
      pub-sub design's dual-trie traversal, the default). True costs PoV: each such key's whole path and its value are
      read again (from the cache or the proof), where the default stops at the first unchanged node.
    - ``admin_origin``: who may call ``enable_publisher`` and ``clear_publisher_cache``: governance only (the
      default, as the pub-sub design and spec say), or governance and the subscriber's own para origin.
    """

    max_trie_depth: int = 16
    max_cached_node_size: int = 750
    max_value_length: int = 992
    system_para_limit: int = 2000
    db_read: Weight = field(default_factory=lambda: Weight(25_000_000, 0))
    ref_time_limit: int = 500_000_000_000
    pov_percent: int = 85
    messages_collection_size_limit: int | None = None
    min_pubsub_budget: int = 0
    max_publishers: int = 100
    deliver_all_on_root_change: bool = False
    admin_origin: AdminOrigin = AdminOrigin.GOVERNANCE

    def __post_init__(self) -> None:
        _at_least("max_trie_depth", self.max_trie_depth, 1)
        _at_least("max_cached_node_size", self.max_cached_node_size, 64)
        _at_least("max_value_length", self.max_value_length, 0)
        _at_least("system_para_limit", self.system_para_limit, 0)
        _at_least("ref_time_limit", self.ref_time_limit, 0)
        _at_least("min_pubsub_budget", self.min_pubsub_budget, 0)
        _at_least("max_publishers", self.max_publishers, 1)
        if not 0 <= self.pov_percent <= 100:
            raise SubscriberConfigError("pov_percent", self.pov_percent, "a percentage in 0..=100")
        if self.messages_collection_size_limit is not None:
            _at_least("messages_collection_size_limit", self.messages_collection_size_limit, 0)

    @property
    def max_value_node_size(self) -> int:
        """The largest relay value node: a SCALE ``PublishedEntry`` with a ``max_value_length``-byte value
        (compact length, value, u32 ttl, u32 when_inserted)."""
        return len(encode_compact(self.max_value_length)) + self.max_value_length + 8

    @property
    def min_step(self) -> Weight:
        """One read of the largest node or value: while it cannot be paid, processing stops (Incomplete)."""
        return self.db_read.saturating_add(Weight(0, max(self.max_cached_node_size, self.max_value_node_size)))

    def budget_weight(self, pubsub_budget: int) -> Weight:
        """The WeightMeter limit for one block: the pub-sub PoV budget and this config's ref_time."""
        return Weight(self.ref_time_limit, pubsub_budget)

    def is_system(self, para_id: int) -> bool:
        return para_id < self.system_para_limit


def _at_least(name: str, value: int, low: int) -> None:
    if value < low:
        raise SubscriberConfigError(name, value, f"must be at least {low}")
