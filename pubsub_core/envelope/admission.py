"""Admission of one input record, in seed 004's order: signature, membership, duplicate, size, rate, custom.

Outcomes: ACCEPT, IGNORE (a duplicate: seen before, no penalty) or REJECT with a typed reason. The
duplicate check keeps, per (stream, origin, sender), the highest seqno admitted so far: a seqno is
single-use once an authentic, authorised envelope carried it, whatever the later checks decide, so a
replay always ends as IGNORE/Duplicate. Rate limits count per relay block (pubsub_core has no clock).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from state import StateTransaction

from pubsub_core.codec.scale import encode_bytes, encode_u64
from pubsub_core.envelope.envelope import Envelope, verify_signature
from pubsub_core.envelope.errors import EnvelopeDecodeError, InvalidOrigin
from pubsub_core.envelope.keys import KeyRegistry, Origin
from pubsub_core.errors import PubSubError

__all__ = [
    "Admission",
    "AdmissionConfig",
    "AdmissionResult",
    "Reason",
    "RateCounter",
    "Validator",
    "Verdict",
    "error_reason",
]

SEEN_NAMESPACE = "envelope.SeenSeqno"


class Verdict(Enum):
    ACCEPT = "accept"
    IGNORE = "ignore"
    REJECT = "reject"


class Reason(Enum):
    """Admission's own reasons; custom validation adds the validator's error name (e.g. ``BadFormat``)."""

    MALFORMED = "Malformed"
    BAD_SIGNATURE = "BadSignature"
    NOT_MEMBER = "NotMember"
    DUPLICATE = "Duplicate"
    MESSAGE_TOO_LARGE = "MessageTooLarge"
    RATE_LIMITED = "RateLimited"


@dataclass(frozen=True)
class AdmissionConfig:
    """Limits from seed 004: 1 MiB messages, 100 publishes per second (600 per 6-second relay block)."""

    realm: str = "polkadot"
    max_message_size: int = 1 << 20
    max_messages_per_block: int = 600

    def __post_init__(self) -> None:
        if self.max_message_size < 1 or self.max_messages_per_block < 1:
            raise ValueError("AdmissionConfig limits must be at least 1")


@dataclass(frozen=True)
class AdmissionResult:
    """The verdict for one record, its reason (None when accepted), and what was parsed on the way."""

    verdict: Verdict
    reason: str | None = None
    detail: str = ""
    envelope: Envelope | None = None
    origin: Origin | None = None


Validator = Callable[[Envelope, Origin], None]
"""Custom validation (step 6): raises a PubSubError whose ``reason``/``code``/class name becomes the reason."""


@dataclass
class RateCounter:
    """Messages admitted so far in this block per (stream, origin)."""

    counts: dict[tuple[str, str], int] = field(default_factory=dict)


def error_reason(error: PubSubError) -> str:
    """The reason code of a typed error: its ``reason_code``, else its ``code`` string, else its class name."""
    for attribute in ("reason_code", "code"):
        code = getattr(error, attribute, None)
        if isinstance(code, str):
            return code
    return type(error).__name__


class Admission:
    """Admits records of one realm against a key registry."""

    def __init__(self, registry: KeyRegistry, config: AdmissionConfig | None = None) -> None:
        self.registry = registry
        self.config = config or AdmissionConfig()

    def admit(
        self, txn: StateTransaction, stream: str, origin_key: str, raw: bytes, rate: RateCounter, validate: Validator
    ) -> AdmissionResult:
        """Run every check in order; write only the seqno watermark (and only past the duplicate check)."""
        try:
            envelope = Envelope.decode(raw)
            origin = Origin.parse(stream, origin_key)
        except (EnvelopeDecodeError, InvalidOrigin) as exc:
            return AdmissionResult(Verdict.REJECT, Reason.MALFORMED.value, str(exc))
        if not verify_signature(envelope):
            return AdmissionResult(Verdict.REJECT, Reason.BAD_SIGNATURE.value, "ed25519 verification failed", envelope)
        topic = envelope.topic
        if (topic.realm, topic.stream, topic.origin) != (self.config.realm, stream, origin_key):
            detail = f"signed for {topic.realm}/{topic.stream}/{topic.origin}, arrived on {self.config.realm}/{stream}/{origin_key}"
            return AdmissionResult(Verdict.REJECT, Reason.NOT_MEMBER.value, detail, envelope, origin)
        if not self.registry.is_member(origin, envelope.sender):
            detail = f"0x{envelope.sender.hex()} may not sign for {origin_key}"
            return AdmissionResult(Verdict.REJECT, Reason.NOT_MEMBER.value, detail, envelope, origin)
        seen_key = encode_bytes(stream.encode()) + encode_bytes(origin_key.encode()) + envelope.sender
        seen = txn.get(SEEN_NAMESPACE, seen_key)
        if seen is not None and envelope.seqno <= int.from_bytes(seen, "little"):
            detail = f"seqno {envelope.seqno} is not above {int.from_bytes(seen, 'little')}"
            return AdmissionResult(Verdict.IGNORE, Reason.DUPLICATE.value, detail, envelope, origin)
        txn.put(SEEN_NAMESPACE, seen_key, encode_u64(envelope.seqno))
        if len(raw) > self.config.max_message_size:
            detail = f"{len(raw)} bytes exceed {self.config.max_message_size}"
            return AdmissionResult(Verdict.REJECT, Reason.MESSAGE_TOO_LARGE.value, detail, envelope, origin)
        count = rate.counts.get((stream, origin_key), 0)
        if count >= self.config.max_messages_per_block:
            detail = f"{count} messages from {origin_key} on {stream} this block already"
            return AdmissionResult(Verdict.REJECT, Reason.RATE_LIMITED.value, detail, envelope, origin)
        rate.counts[(stream, origin_key)] = count + 1
        try:
            validate(envelope, origin)
        except PubSubError as exc:
            return AdmissionResult(Verdict.REJECT, error_reason(exc), str(exc), envelope, origin)
        return AdmissionResult(Verdict.ACCEPT, None, "", envelope, origin)
