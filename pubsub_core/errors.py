"""The root of every error the protocol raises; each package derives its own branch from it."""


class PubSubError(Exception):
    """Base class for all errors raised by pubsub_core."""
