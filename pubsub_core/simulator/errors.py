"""The simulator's errors: a line or record that cannot enter the simulation, and internal invariant failures."""

from __future__ import annotations

from pubsub_core.errors import PubSubError

__all__ = ["IngestError", "SimulatorError", "SubscriberCallError"]


class SimulatorError(PubSubError):
    """Base class of the simulator's errors."""


class IngestError(SimulatorError):
    """An event-log line that cannot become an input record; ``reason`` is the rejection's typed reason."""

    def __init__(self, reason: str, detail: str, text: str = "") -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.text = text[:200]


class SubscriberCallError(SimulatorError):
    """A subscriber-side call (pallet 2) that does not decode or comes from an origin that may not make it."""

    def __init__(self, reason: str, detail: str, data: bytes) -> None:
        super().__init__(f"subscriber call refused ({reason}): {detail}")
        self.reason = reason
        self.detail = detail
        self.data = data
