"""The Prometheus alert rules shipped with the job (``pubsub.rules.yml``, package data): the rules an operator
loads beside the job's metrics endpoint; docs/operations.md, "Alerts", says what each one means and what to do."""

from __future__ import annotations

from importlib import resources

__all__ = ["RULES_FILE", "rules_text"]

RULES_FILE = "pubsub.rules.yml"


def rules_text() -> str:
    """The rule file's text, as installed."""
    return resources.files(__name__).joinpath(RULES_FILE).read_text()
