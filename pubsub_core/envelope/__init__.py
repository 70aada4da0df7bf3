"""Signed envelopes for everything entering from Kafka, and their admission (the DeP2P pub-sub spec, mapped to our
edge)."""

from pubsub_core.envelope.admission import (
    Admission,
    AdmissionConfig,
    AdmissionResult,
    Authenticated,
    RateCounter,
    Reason,
    Unauthenticated,
    Validator,
    Verdict,
    authenticate,
    error_reason,
    penalty,
)
from pubsub_core.envelope.envelope import SIGNING_DOMAIN, Envelope, SignatureCheck, Signer, Topic, verify_signature
from pubsub_core.envelope.errors import EnvelopeDecodeError, EnvelopeError, InvalidOrigin
from pubsub_core.envelope.keys import KeyRegistry, Origin, OriginKind

__all__ = [
    "Admission",
    "AdmissionConfig",
    "AdmissionResult",
    "Authenticated",
    "Envelope",
    "EnvelopeDecodeError",
    "EnvelopeError",
    "InvalidOrigin",
    "KeyRegistry",
    "Origin",
    "OriginKind",
    "RateCounter",
    "Reason",
    "SIGNING_DOMAIN",
    "SignatureCheck",
    "Signer",
    "Topic",
    "Unauthenticated",
    "Validator",
    "Verdict",
    "authenticate",
    "error_reason",
    "penalty",
    "verify_signature",
]
