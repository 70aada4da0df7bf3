"""RFC-0160 publish-subscribe protocol: pure, deterministic, no I/O (no Kafka, no Spark, no clock)."""

from state.native import choose_build

choose_build()  # before any compiled module can load

from pubsub_core.errors import PubSubError  # noqa: E402

__all__ = ["PubSubError"]
