"""RFC-0160 publish-subscribe protocol: pure, deterministic, no I/O (no Kafka, no Spark, no clock)."""

from pubsub_core.errors import PubSubError

__all__ = ["PubSubError"]
