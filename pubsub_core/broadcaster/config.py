"""The broadcaster's constants: one frozen, validated object with the reference defaults (the reference
code's mock values; docs/design.md, "Sources")."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BroadcasterConfig"]


@dataclass(frozen=True)
class BroadcasterConfig:
    """Limits and policies of the broadcaster pallet.

    ``max_value_length``: MaxValueLength, 992 by default: below XCM's MaxPublishValueLength (1024), so a value
    in between is refused by the pallet (``ValueTooLarge``) and only a longer one by the XCM decoder
    (``Malformed``); 32 + 992 = 1024, so two largest entries fill ``max_total_storage_size`` exactly.
    ``system_para_threshold``: paras with a lower id publish without registration (default 2000).
    ``force_deregister_slashes``: whether governance's force deregistration burns the deposit (True) or
    returns it to the manager (False, the reference code's behaviour and our default).
    ``db_read_weight``/``db_write_weight``: ref-time weight of one storage read/write, which bounds on_idle
    (Polkadot's RocksDbWeight: 25 us and 100 us).
    """

    max_value_length: int = 992
    max_stored_keys: int = 50
    max_total_storage_size: int = 2048
    max_publishers: int = 1000
    publisher_deposit: int = 100
    max_ttl_scans_per_idle: int = 500
    system_para_threshold: int = 2000
    force_deregister_slashes: bool = False
    db_read_weight: int = 25_000_000
    db_write_weight: int = 100_000_000

    def __post_init__(self) -> None:
        for name in ("max_value_length", "max_stored_keys", "max_total_storage_size", "max_publishers"):
            if getattr(self, name) < 1:
                raise ValueError(f"BroadcasterConfig.{name} must be at least 1")
        for name in ("publisher_deposit", "max_ttl_scans_per_idle", "system_para_threshold"):
            if getattr(self, name) < 0:
                raise ValueError(f"BroadcasterConfig.{name} must be non-negative")
        if self.db_read_weight < 0 or self.db_write_weight < 0:
            raise ValueError("BroadcasterConfig weights must be non-negative")

    def is_system_para(self, para_id: int) -> bool:
        return para_id < self.system_para_threshold

    @property
    def idle_base_weight(self) -> int:
        """``reads(1)``: what on_idle needs before it scans anything."""
        return self.db_read_weight

    @property
    def idle_per_key_weight(self) -> int:
        """``reads_writes(2, 4)``: charged for every scanned TtlData entry, expired or not, including the TTL
        index reads that lead to it (docs/decisions.md, "on_idle cost")."""
        return 2 * self.db_read_weight + 4 * self.db_write_weight
