"""Admission of one input record, in the DeP2P pub-sub spec's order: signature, membership, duplicate, size, rate,
custom.

Outcomes: ACCEPT, IGNORE (a duplicate: seen before, no penalty) or REJECT with a typed reason. The
duplicate check keeps, per (stream, origin, sender), the highest seqno admitted so far: a seqno is
single-use once an authentic, authorised envelope carried it, whatever the later checks decide, so a
replay always ends as IGNORE/Duplicate. Rate limits count per relay block (pubsub_core has no clock).

That spec's scoring (P4, the invalid-message penalty: REJECT penalises, IGNORE does not) and backpressure become a
per-(stream, origin) penalty in the same transaction: every REJECT of an authenticated envelope at steps 4 to 6
adds points, which decay per relay block; an origin at or above the threshold is throttled to a smaller quota
per block (docs/envelope.md, "Penalties and backpressure"). Forgeries and strangers fail at steps 1-2 and replays
are IGNOREd, so neither can cost the genuine origin anything.

The stateless steps (decoding, signature, signed topic, membership) are one function, ``authenticate``: the
relay stage runs it on every record when it arrives (docs/threat-model.md), and ``Admission.admit`` runs it
again when a block includes the record, so both apply the same checks in the same order with the same reasons.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from enum import Enum

from state import StateTransaction

from pubsub_core.codec.scale import encode_bytes, encode_u64
from pubsub_core.envelope.envelope import Envelope, SignatureCheck, verify_signature
from pubsub_core.envelope.errors import EnvelopeDecodeError, EnvelopeError, InvalidOrigin
from pubsub_core.envelope.keys import KeyRegistry, Origin
from pubsub_core.errors import PubSubError
from pubsub_core.hashing import blake2_256

__all__ = [
    "Admission",
    "AdmissionConfig",
    "AdmissionResult",
    "Authenticated",
    "Reason",
    "RateCounter",
    "Validator",
    "Unauthenticated",
    "Verdict",
    "authenticate",
    "error_reason",
    "penalty",
]

SEEN_NAMESPACE = "envelope.SeenSeqno"
PENALTY_NAMESPACE = "envelope.Penalty"
"""encode_bytes(stream) ‖ encode_bytes(origin) -> u32 LE points ‖ u32 LE block they were last updated at."""


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
    THROTTLED = "Throttled"


@dataclass(frozen=True)
class AdmissionConfig:
    """Limits from the DeP2P pub-sub spec: 1 MiB messages, 100 publishes per second (600 per 6-second relay block).

    Penalties (that spec's P4 and backpressure, in relay blocks): each REJECT of an authenticated envelope at
    steps 4 to 6 adds ``penalty_per_rejection`` points to its (stream, origin), up to ``max_penalty``; points
    decay by ``penalty_decay_per_block`` per relay block; at or above ``penalty_threshold`` the origin is
    throttled to ``throttled_messages_per_block`` (when below ``max_messages_per_block``; beyond it: REJECT
    ``Throttled``, itself penalised). The
    defaults throttle an origin after 10 rejections within about 10 blocks and release it at most
    ``(max_penalty - penalty_threshold) / penalty_decay_per_block`` = 100 blocks (10 minutes) after it stops.
    """

    realm: str = "polkadot"
    max_message_size: int = 1 << 20
    max_messages_per_block: int = 600
    penalty_per_rejection: int = 10
    penalty_decay_per_block: int = 1
    penalty_threshold: int = 100
    max_penalty: int = 200
    throttled_messages_per_block: int = 60

    def __post_init__(self) -> None:
        if self.max_message_size < 1 or self.max_messages_per_block < 1:
            raise ValueError("AdmissionConfig limits must be at least 1")
        if self.penalty_per_rejection < 0 or self.penalty_decay_per_block < 1:
            raise ValueError("penalty_per_rejection must be non-negative and penalty_decay_per_block at least 1")
        if not 1 <= self.penalty_threshold <= self.max_penalty < 1 << 32:
            raise ValueError("penalty_threshold must be in 1..=max_penalty, and max_penalty a u32")
        if self.throttled_messages_per_block < 0:
            raise ValueError("throttled_messages_per_block cannot be negative")

    def __reduce__(self) -> tuple[type[AdmissionConfig], tuple[object, ...]]:
        # The job's operators carry this config pickled to Spark's workers; compiled (setup.py), a frozen
        # dataclass unpickles only through its constructor.
        return (AdmissionConfig, tuple(getattr(self, f.name) for f in fields(self)))


@dataclass(frozen=True)
class AdmissionResult:
    """The verdict for one record, its reason (None when accepted), and what was parsed on the way."""

    verdict: Verdict
    reason: str | None = None
    detail: str = ""
    envelope: Envelope | None = None
    origin: Origin | None = None

    # Explicit, not generated: compiled (setup.py), it is native code; the dataclass's own stays interpreted.
    def __init__(
        self, verdict: Verdict, reason: str | None = None, detail: str = "", envelope: Envelope | None = None,
        origin: Origin | None = None,
    ) -> None:
        object.__setattr__(self, "verdict", verdict)
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "detail", detail)
        object.__setattr__(self, "envelope", envelope)
        object.__setattr__(self, "origin", origin)


Validator = Callable[[Envelope, Origin], None]
"""Custom validation (step 6): raises a PubSubError whose ``reason``/``code``/class name becomes the reason."""


@dataclass(frozen=True, slots=True)
class Authenticated:
    """An envelope that passed the stateless checks: it decodes, its signature is valid, it was signed for
    this realm, stream and origin, and its sender may sign for that origin."""

    envelope: Envelope
    origin: Origin

    # Explicit, not generated: compiled (setup.py), it is native code; the dataclass's own stays interpreted.
    def __init__(self, envelope: Envelope, origin: Origin) -> None:
        object.__setattr__(self, "envelope", envelope)
        object.__setattr__(self, "origin", origin)


class Unauthenticated(EnvelopeError):
    """Raw bytes that fail a stateless check: ``reason`` is ``Malformed``, ``BadSignature`` or ``NotMember``;
    ``envelope`` and ``origin`` are what was parsed before the failing check (None when not reached)."""

    def __init__(self, reason: Reason, detail: str, envelope: Envelope | None = None,
                 origin: Origin | None = None) -> None:
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason
        self.detail = detail
        self.envelope = envelope
        self.origin = origin

    @property
    def reason_code(self) -> str:
        return self.reason.value


def authenticate(registry: KeyRegistry, realm: str, stream: str, origin_key: str, raw: bytes,
                 check_signature: SignatureCheck = verify_signature) -> Authenticated:
    """Admission's stateless steps, in order: decode (``Malformed``), signature (``BadSignature``, by
    ``check_signature``), the signed topic is (realm, stream, origin) and the sender may sign for the origin
    (``NotMember``). Raises ``Unauthenticated``; never anything else, whatever the bytes."""
    try:
        envelope = Envelope.decode(raw)
        origin = Origin.parse(stream, origin_key)
    except (EnvelopeDecodeError, InvalidOrigin) as exc:
        raise Unauthenticated(Reason.MALFORMED, str(exc)) from exc
    if not check_signature(envelope):
        raise Unauthenticated(Reason.BAD_SIGNATURE, "ed25519 verification failed", envelope)
    topic = envelope.topic
    if (topic.realm, topic.stream, topic.origin) != (realm, stream, origin_key):
        detail = f"signed for {topic.realm}/{topic.stream}/{topic.origin}, arrived on {realm}/{stream}/{origin_key}"
        raise Unauthenticated(Reason.NOT_MEMBER, detail, envelope, origin)
    if not registry.is_member(origin, envelope.sender):
        detail = f"0x{envelope.sender.hex()} may not sign for {origin_key}"
        raise Unauthenticated(Reason.NOT_MEMBER, detail, envelope, origin)
    return Authenticated(envelope, origin)


_MEMO_LIMIT = 8192
"""How many authenticated records an ``Admission`` remembers, so that a record authenticated when it arrived
is not verified again when a block includes it (a cache: forgetting an entry only costs a verification)."""


@dataclass
class RateCounter:
    """One relay block's admission context: messages admitted so far per (stream, origin), and the block's
    number, the time unit penalties decay in (None: no penalty bookkeeping, e.g. for block headers)."""

    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    block: int | None = None


def _penalty_key(stream: str, origin_key: str) -> bytes:
    return encode_bytes(stream.encode()) + encode_bytes(origin_key.encode())


def penalty(txn: StateTransaction, config: AdmissionConfig, stream: str, origin_key: str, block: int) -> int:
    """The (stream, origin)'s penalty points at relay block ``block``, decayed since they were last updated."""
    raw = txn.get(PENALTY_NAMESPACE, _penalty_key(stream, origin_key))
    if raw is None:
        return 0
    points, since = int.from_bytes(raw[:4], "little"), int.from_bytes(raw[4:8], "little")
    return max(0, points - config.penalty_decay_per_block * max(0, block - since))


def error_reason(error: PubSubError) -> str:
    """The reason code of a typed error: its ``reason_code``, else its ``code`` string, else its class name."""
    for attribute in ("reason_code", "code"):
        code = getattr(error, attribute, None)
        if isinstance(code, str):
            return code
    return type(error).__name__


class Admission:
    """Admits records of one realm against a key registry; ``check_signature`` answers as ``verify_signature``
    does (the default)."""

    def __init__(self, registry: KeyRegistry, config: AdmissionConfig | None = None,
                 check_signature: SignatureCheck = verify_signature) -> None:
        self.registry = registry
        self.config = config or AdmissionConfig()
        self.check_signature = check_signature
        self._authenticated: dict[tuple[str, str, bytes], Authenticated] = {}

    def authenticate(self, stream: str, origin_key: str, raw: bytes) -> Authenticated:
        """``authenticate`` against this realm and registry, remembering the success for the ``admit`` call
        that will see the same bytes when a block includes them. Raises ``Unauthenticated``."""
        authenticated = authenticate(self.registry, self.config.realm, stream, origin_key, raw, self.check_signature)
        if len(self._authenticated) >= _MEMO_LIMIT:
            del self._authenticated[next(iter(self._authenticated))]
        self._authenticated[(stream, origin_key, blake2_256(raw))] = authenticated
        return authenticated

    def admit(
        self, txn: StateTransaction, stream: str, origin_key: str, raw: bytes, rate: RateCounter, validate: Validator
    ) -> AdmissionResult:
        """Run every check in order; write only the seqno watermark (past the duplicate check) and, for a
        REJECT at steps 4 to 6 with ``rate.block`` set, the origin's penalty."""
        remembered = self._authenticated.pop((stream, origin_key, blake2_256(raw)), None)
        try:
            passed = remembered or authenticate(self.registry, self.config.realm, stream, origin_key, raw,
                                                self.check_signature)
        except Unauthenticated as exc:
            return AdmissionResult(Verdict.REJECT, exc.reason.value, exc.detail, exc.envelope, exc.origin)
        envelope, origin = passed.envelope, passed.origin
        seen_key = encode_bytes(stream.encode()) + encode_bytes(origin_key.encode()) + envelope.sender
        seen = txn.get(SEEN_NAMESPACE, seen_key)
        if seen is not None and envelope.seqno <= int.from_bytes(seen, "little"):
            detail = f"seqno {envelope.seqno} is not above {int.from_bytes(seen, 'little')}"
            return AdmissionResult(Verdict.IGNORE, Reason.DUPLICATE.value, detail, envelope, origin)
        txn.put(SEEN_NAMESPACE, seen_key, encode_u64(envelope.seqno))
        refusal = self._refusal(txn, stream, origin_key, raw, rate, validate, passed)
        if refusal is None:
            return AdmissionResult(Verdict.ACCEPT, None, "", envelope, origin)
        reason, detail = refusal
        if rate.block is not None:
            self._penalise(txn, stream, origin_key, rate.block)
        return AdmissionResult(Verdict.REJECT, reason, detail, envelope, origin)

    def _refusal(self, txn: StateTransaction, stream: str, origin_key: str, raw: bytes, rate: RateCounter,
                 validate: Validator, passed: Authenticated) -> tuple[str, str] | None:
        """Steps 4 to 6 for an authenticated envelope with a new seqno: (reason, detail) of the first failing
        check, or None. An origin whose penalty reached the threshold has the throttled quota."""
        config = self.config
        if len(raw) > config.max_message_size:
            return Reason.MESSAGE_TOO_LARGE.value, f"{len(raw)} bytes exceed {config.max_message_size}"
        points = 0 if rate.block is None else penalty(txn, config, stream, origin_key, rate.block)
        count = rate.counts.get((stream, origin_key), 0)
        if points >= config.penalty_threshold and count >= config.throttled_messages_per_block:
            return Reason.THROTTLED.value, (f"{origin_key} on {stream} has {points} penalty points (threshold "
                                            f"{config.penalty_threshold}): {count} messages this block already")
        if count >= config.max_messages_per_block:
            return Reason.RATE_LIMITED.value, f"{count} messages from {origin_key} on {stream} this block already"
        rate.counts[(stream, origin_key)] = count + 1
        try:
            validate(passed.envelope, passed.origin)
        except PubSubError as exc:
            return error_reason(exc), str(exc)
        return None

    def _penalise(self, txn: StateTransaction, stream: str, origin_key: str, block: int) -> None:
        """Add one rejection's points to the (stream, origin), after decaying what it had, up to the cap."""
        config = self.config
        points = min(config.max_penalty, penalty(txn, config, stream, origin_key, block) + config.penalty_per_rejection)
        txn.put(PENALTY_NAMESPACE, _penalty_key(stream, origin_key),
                points.to_bytes(4, "little") + block.to_bytes(4, "little"))
