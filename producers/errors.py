"""The producers package's error root: every error a producer, reader or the client API raises derives from it."""

from __future__ import annotations

from pubsub_core.errors import PubSubError

__all__ = ["ProducerError"]


class ProducerError(PubSubError):
    """Base class of the errors of ``producers`` (Kafka I/O, topics, the block author, schemas, the client API)."""
