"""The protocol's configuration: the relay, router and subscriber settings every realm runs with, in the simulator
and in the Spark job alike."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from enum import Enum
from typing import Any

from pubsub_core.broadcaster import BroadcasterConfig
from pubsub_core.envelope import AdmissionConfig, KeyRegistry
from pubsub_core.envelope.keys import hex32
from pubsub_core.errors import PubSubError
from pubsub_core.relay import RelayConfig
from pubsub_core.router import RouterConfig
from pubsub_core.stages.errors import StageError
from pubsub_core.subscriber import SubscriberConfig

__all__ = ["ConfigError", "Seam", "ProtocolConfig"]


class ConfigError(StageError):
    """A configuration file section or field we do not know, or a value its config object refuses."""

    def __init__(self, section: str, detail: str) -> None:
        super().__init__(f"config section {section!r}: {detail}")
        self.section = section
        self.detail = detail


def _build(section: str, cls: type[Any], values: object) -> Any:
    if not isinstance(values, Mapping):
        raise ConfigError(section, "expected a JSON object")
    defaults = cls()
    settable = (int, type(None), Enum)
    known = sorted(f.name for f in fields(cls) if isinstance(getattr(defaults, f.name), settable))
    built: dict[str, Any] = {}
    for name, value in values.items():
        if name not in known:
            raise ConfigError(section, f"no settable field {name!r} (settable: {', '.join(known)})")
        default = getattr(defaults, name)
        if isinstance(default, Enum):
            choices = [member.value for member in type(default)]
            if value not in choices:
                raise ConfigError(section, f"field {name!r} takes one of {choices}, got {value!r}")
            built[name] = type(default)(value)
        elif value is not None and not isinstance(value, int):
            raise ConfigError(section, f"field {name!r} takes an integer, a boolean or null, got {value!r}")
        else:
            built[name] = value
    try:
        return cls(**built)
    except (TypeError, ValueError, PubSubError) as exc:
        raise ConfigError(section, str(exc)) from exc


class Seam(Enum):
    """What Stage R sends Stage S each block: ``DELTA`` the nodes of the proof P_n that were not in the
    subscriber's previous view (Stage S mirrors the rest); ``FULL`` all of P_n every block, the checking mode
    (Stage S then also checks each proof with the two-pass Prune + Verify)."""

    DELTA = "delta"
    FULL = "full"


_INTEGERS = ("max_publish_instructions", "idle_weight", "max_held_before_genesis", "stall_after_blocks",
             "max_held_records", "max_held_bytes")
"""The top-level settings that take an integer."""


@dataclass(frozen=True)
class ProtocolConfig:
    """Settings shared by every realm of a run; a realm's key registry comes from its ``genesis`` record.

    ``default_realm`` names the realm whose ``rejected`` topic receives lines that name no realm.
    ``trusted_genesis`` pins a realm's genesis record (realm -> Blake2-256 of its canonical JSON,
    ``GenesisRecord.digest``): any other genesis is refused (``UntrustedGenesis``) instead of the first one on
    the topic being trusted. ``max_held_before_genesis`` caps the records a realm holds while it waits for its
    genesis (``GenesisBacklogFull`` beyond it). See docs/threat-model.md. ``seam`` is Stage R's relay-view
    format (``Seam``); the outputs are the same either way.

    A realm is stalled once its first waiting block still misses records when ``stall_after_blocks`` later blocks
    are queued behind it (a ``Stalled`` record on ``<realm>.health``); while it is, Stage R holds at most
    ``max_held_records`` records and blocks and ``max_held_bytes`` of their envelopes, refusing what comes past
    that (``StalledBufferFull``). See docs/operations.md, "A stalled realm".
    """

    default_realm: str = "polkadot"
    broadcaster: BroadcasterConfig = field(default_factory=BroadcasterConfig)
    admission: AdmissionConfig = field(default_factory=AdmissionConfig)
    router: RouterConfig = field(default_factory=RouterConfig)
    subscriber: SubscriberConfig = field(default_factory=SubscriberConfig)
    max_publish_instructions: int = 16
    idle_weight: int = 250_000_000_000
    trusted_genesis: dict[str, bytes] = field(default_factory=dict)
    max_held_before_genesis: int = 10_000
    seam: Seam = Seam.DELTA
    stall_after_blocks: int = 3
    max_held_records: int = 100_000
    max_held_bytes: int = 256 << 20

    def __post_init__(self) -> None:
        for name in ("max_held_before_genesis", "max_held_records", "max_held_bytes"):
            if getattr(self, name) < 0:
                raise ConfigError(name, "cannot be negative")
        if self.stall_after_blocks < 1:
            raise ConfigError("stall_after_blocks", "is at least 1")

    def relay_config(self, realm: str, registry: KeyRegistry) -> RelayConfig:
        """The block machine's config for ``realm``: envelopes must be signed for that realm."""
        return RelayConfig(
            registry=registry,
            admission=replace(self.admission, realm=realm),
            broadcaster=self.broadcaster,
            max_publish_instructions=self.max_publish_instructions,
            idle_weight=self.idle_weight,
        )

    @classmethod
    def from_json(cls, body: object) -> ProtocolConfig:
        """From ``{"default_realm": ..., "broadcaster": {...}, "admission": {...}, "router": {...},
        "subscriber": {...}, "max_publish_instructions": n, "idle_weight": n, "trusted_genesis": {"<realm>":
        "0x<digest>"}, "max_held_before_genesis": n, "seam": "delta" | "full", "stall_after_blocks": n,
        "max_held_records": n, "max_held_bytes": n}``; every key optional."""
        if not isinstance(body, Mapping):
            raise ConfigError("", "the configuration is a JSON object")
        sections = {"broadcaster": BroadcasterConfig, "admission": AdmissionConfig, "router": RouterConfig,
                    "subscriber": SubscriberConfig}
        values: dict[str, Any] = {}
        for name, value in body.items():
            if name in sections:
                values[name] = _build(name, sections[name], value)
            elif name == "default_realm" and isinstance(value, str):
                values[name] = value
            elif name in _INTEGERS and isinstance(value, int):
                values[name] = value
            elif name == "seam":
                choices = [member.value for member in Seam]
                if value not in choices:
                    raise ConfigError(name, f"takes one of {choices}, got {value!r}")
                values[name] = Seam(value)
            elif name == "trusted_genesis" and isinstance(value, Mapping):
                try:
                    values[name] = {str(realm): hex32(digest) for realm, digest in value.items()}
                except ValueError as exc:
                    raise ConfigError(name, f"realm -> 0x and 64 hex digits: {exc}") from exc
            else:
                raise ConfigError(name, f"unknown key or bad value {value!r}")
        return cls(**values)
