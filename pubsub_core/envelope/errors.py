"""Errors of the envelope package."""

from __future__ import annotations

from pubsub_core.errors import PubSubError

__all__ = ["EnvelopeDecodeError", "EnvelopeError", "InvalidOrigin"]


class EnvelopeError(PubSubError):
    """Base class for envelope errors."""


class EnvelopeDecodeError(EnvelopeError):
    """Bytes (or JSON) that are not an envelope; carries the input and the offset where parsing stopped."""

    def __init__(self, reason: str, data: bytes, offset: int) -> None:
        super().__init__(f"not an envelope: {reason} (at offset {offset} of {len(data)} bytes)")
        self.reason = reason
        self.data = data
        self.offset = offset

    @property
    def reason_code(self) -> str:
        return "Malformed"


class InvalidOrigin(EnvelopeError):
    """An origin string (a Kafka key) that names no origin of its stream."""

    def __init__(self, stream: str, origin: str) -> None:
        super().__init__(f"{origin!r} is not a valid origin on stream {stream!r}")
        self.stream = stream
        self.origin = origin
