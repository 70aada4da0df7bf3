"""The stages' errors: a line or record that cannot enter a stage, and internal invariant failures."""

from __future__ import annotations

from pubsub_core.errors import PubSubError

__all__ = ["IngestError", "SeamRecordError", "StageError"]


class StageError(PubSubError):
    """Base class of the stages' errors (Stage R, Stage S, the event-log ingest)."""


class IngestError(StageError):
    """An event-log line that cannot become an input record; ``reason`` is the rejection's typed reason."""

    def __init__(self, reason: str, detail: str, text: str = "") -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.text = text[:200]


class SeamRecordError(StageError):
    """A seam record Stage S refuses: ``reason`` is ``ForgedView`` (the MAC does not match: anyone without the key
    wrote it) or ``MalformedView`` (authentic but not a view: never written by Stage R)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
