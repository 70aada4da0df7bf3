"""JSON Schemas (draft 2020-12) of every record the pipeline reads and writes, shipped with the package.

One file per record, ``<name>.v<version>.json``, whose ``$id`` is ``urn:rfc0160-pubsub:schema:<name>:v<version>``
(docs/schemas.md lists them and the version rule). ``validate(name, value)`` checks a record against one;
``schema_for_topic`` names the schema of a topic's values.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator, validators
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from producers.errors import ProducerError
from pubsub_core.stages.topics import kind_of

__all__ = [
    "INPUT_SCHEMAS",
    "OUTPUT_SCHEMAS",
    "SCHEMA_NAMES",
    "SCHEMA_VERSION",
    "RecordSchemaError",
    "UnknownSchemaError",
    "load_schema",
    "schema_errors",
    "schema_for_topic",
    "schema_id",
    "validate",
]

SCHEMA_VERSION = 1
"""The version of every schema shipped here; a record whose JSON changes gets the next one (docs/schemas.md)."""

INPUT_SCHEMAS = {"genesis": "genesis", "upward": "input-record", "horizontal": "input-record",
                 "extrinsics": "input-record", "blocks": "input-record"}
"""Input stream -> the schema of its records' values."""
OUTPUT_SCHEMAS = {"updates": "update", "events": "event", "rejected": "record-outcome", "pov": "pov",
                  "seals": "seal", "health": "health", "relay-proofs": "relay-view"}
"""Output kind -> the schema of its records' values (``relay-proofs``: the simulator's JSON seam records)."""
SCHEMA_NAMES = ("common", "event-log-line", "output-line", "genesis", "input-record", "update", "event",
                "record-outcome", "pov", "seal", "health", "relay-view")


class UnknownSchemaError(ProducerError, KeyError):
    """A schema name, or a topic, that has no schema here."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no record schema for {name!r}; schemas: {', '.join(SCHEMA_NAMES)}")
        self.name = name

    def __str__(self) -> str:
        return str(self.args[0])


class RecordSchemaError(ProducerError, ValueError):
    """A record that does not follow its schema: the schema's ``$id``, where in the record (a JSON path) and why."""

    def __init__(self, schema: str, path: str, reason: str) -> None:
        super().__init__(f"record does not follow {schema} at {path}: {reason}")
        self.schema = schema
        self.path = path
        self.reason = reason


def schema_id(name: str) -> str:
    """The ``$id`` of schema ``name`` in this version."""
    return f"urn:rfc0160-pubsub:schema:{name}:v{SCHEMA_VERSION}"


def load_schema(name: str) -> dict[str, Any]:
    """Schema ``name`` (``SCHEMA_NAMES``) as a JSON object, read from the package."""
    if name not in SCHEMA_NAMES:
        raise UnknownSchemaError(name)
    text = resources.files(__name__).joinpath(f"{name}.v{SCHEMA_VERSION}.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@cache
def _registry() -> Registry[Any]:
    # Each referenced schema without its "$schema": jsonschema would validate it with that dialect's own validator
    # class, not with the strict one below (all of them are draft 2020-12).
    resources_ = [(schema_id(n), DRAFT202012.create_resource({k: v for k, v in load_schema(n).items() if k != "$schema"}))
                  for n in SCHEMA_NAMES]
    return Registry().with_resources(resources_)


_STRICT_TYPES = Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool))
_StrictValidator = validators.extend(  # type: ignore[no-untyped-call]  # jsonschema leaves extend unannotated
    Draft202012Validator, type_checker=_STRICT_TYPES)
"""Draft 2020-12 with one difference: an ``integer`` is a JSON number written without a fraction or exponent.
The standard counts ``0.0`` as an integer; the simulator and the job refuse it (``MalformedRecord``), and so does
``validate`` (docs/schemas.md)."""


@cache
def _validator(name: str) -> Draft202012Validator:
    validator: Draft202012Validator = _StrictValidator(load_schema(name), registry=_registry())
    return validator


def schema_errors(name: str, record: object) -> list[str]:
    """Every way ``record`` breaks schema ``name``, as ``"<JSON path>: <reason>"`` lines (empty if it follows it)."""
    return [f"{error.json_path}: {error.message}" for error in
            sorted(_validator(name).iter_errors(record), key=lambda e: list(map(str, e.absolute_path)))]


def validate(name: str, record: object) -> None:
    """Check ``record`` (parsed JSON) against schema ``name``; ``RecordSchemaError`` naming the first place where
    it does not follow it (the deepest reason of a ``oneOf``/``if`` branch)."""
    from jsonschema.exceptions import best_match

    error = best_match(_validator(name).iter_errors(record))
    if error is not None:
        raise RecordSchemaError(schema_id(name), error.json_path, error.message)


def schema_for_topic(topic: str) -> str:
    """The schema name of the values of ``topic`` (``<realm>.<stream or kind>``)."""
    kind = kind_of(topic)
    name = INPUT_SCHEMAS.get(kind) or OUTPUT_SCHEMAS.get(kind)
    if name is None:
        raise UnknownSchemaError(topic)
    return name
