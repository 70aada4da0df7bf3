"""Topic names of the pipeline, in one place: a realm's input streams, its output kinds, and the seam.

Every topic is ``<realm>.<name>``. Inputs: ``genesis``, ``upward``, ``horizontal``, ``extrinsics``,
``blocks``; outputs: ``updates``, ``events``, ``rejected``, ``pov``, ``seals``, ``health``; the Stage R ->
Stage S seam: ``relay-views`` (key: subscriber). docs/pipeline.md documents the records each one carries.
"""

from __future__ import annotations

import re

__all__ = [
    "INPUT_TOPIC_PATTERN",
    "INPUTS",
    "OUTPUTS",
    "REALM_SQL",
    "VIEWS",
    "VIEWS_TOPIC_PATTERN",
    "input_topics",
    "kind_of",
    "output_topics",
    "realm_of",
    "realm_pattern",
    "topic",
]

INPUTS = ("genesis", "upward", "horizontal", "extrinsics", "blocks")
OUTPUTS = ("updates", "events", "rejected", "pov", "seals", "health")
VIEWS = "relay-views"

_REALM = r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*"
INPUT_TOPIC_PATTERN = rf"^{_REALM}\.(?:{'|'.join(INPUTS)})$"
"""Java regex (for the Kafka source's ``subscribePattern``) matching every realm's input topics."""
VIEWS_TOPIC_PATTERN = rf"^{_REALM}\.{re.escape(VIEWS)}$"


def topic(realm: str, name: str) -> str:
    return f"{realm}.{name}"


def realm_of(name: str) -> str:
    """The realm of a topic ``<realm>.<kind>``: all before the last dot (a realm may hold dots); "" for a name with
    none. The one place a realm is cut from a topic name (``REALM_SQL`` is the same rule in Spark SQL)."""
    return name.rpartition(".")[0]


def kind_of(name: str) -> str:
    """The stream or kind of a topic ``<realm>.<kind>``: all after the last dot."""
    return name.rpartition(".")[2]


REALM_SQL = "regexp_extract(topic, '^(.*)[.][^.]+$', 1)"
"""``realm_of`` in Spark SQL, over a Kafka source's ``topic`` column: how the job groups its rows by realm."""


def input_topics(realm: str) -> list[str]:
    return [topic(realm, name) for name in INPUTS]


def output_topics(realm: str) -> list[str]:
    """A realm's output topics, the seam included."""
    return [topic(realm, name) for name in (*OUTPUTS, VIEWS)]


def realm_pattern(realms: list[str], names: tuple[str, ...]) -> str:
    """A ``subscribePattern`` for ``names`` of the given realms only (``--realm``)."""
    alternatives = "|".join(re.escape(r) for r in realms)
    return rf"^(?:{alternatives})\.(?:{'|'.join(re.escape(n) for n in names)})$"
