"""The shipped JSON Schemas against the records the code writes and reads: every line of every example log and of
generated workloads (bad records included), and every output the simulator writes for them (the seam's records
too), follow their schemas; the input lines the simulator refuses for their form are exactly those that do not."""

from __future__ import annotations

import json
import tomllib
from collections import Counter
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from cli.main import main
from producers.schemas import (
    INPUT_SCHEMAS,
    OUTPUT_SCHEMAS,
    SCHEMA_NAMES,
    SCHEMA_VERSION,
    RecordSchemaError,
    UnknownSchemaError,
    load_schema,
    schema_errors,
    schema_for_topic,
    validate,
)
from pubsub_core.simulator import simulate
from pubsub_core.stages.topics import INPUTS, OUTPUTS

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.jsonl"))
FORM_REASONS = {"MalformedJson", "UnknownTopic", "MalformedRecord"}
"""Ingest refusals for a line's form (what a schema can say); the others (KeyMismatch, signatures, seqnos...) are
about a well-formed record."""


def workload(tmp_path: Path, seed: int, realm: str = "polkadot") -> Path:
    path = tmp_path / f"workload-{realm}-{seed}.jsonl"
    code = main(["workload", "-o", str(path), "--seed", str(seed), "--blocks", "10", "--bad-records", "0.4",
                 "--realm", realm])
    assert code == 0
    return path


def logs(tmp_path: Path) -> list[Path]:
    return [*EXAMPLES, *(workload(tmp_path, seed) for seed in (1, 2, 3)), workload(tmp_path, 4, "kusama")]


def test_every_schema_is_a_versioned_draft_2020_12_schema() -> None:
    files = sorted(p.name for p in (REPO / "producers" / "schemas").glob("*.json"))
    assert files == sorted(f"{name}.v{SCHEMA_VERSION}.json" for name in SCHEMA_NAMES)
    for name in SCHEMA_NAMES:
        schema = load_schema(name)
        Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["$id"] == f"urn:rfc0160-pubsub:schema:{name}:v{SCHEMA_VERSION}"
        assert schema["x-schema-version"] == SCHEMA_VERSION


def test_the_schemas_are_package_data_and_every_topic_has_one() -> None:
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "*.json" in package_data["producers.schemas"]
    assert set(INPUT_SCHEMAS) == set(INPUTS)
    assert set(OUTPUT_SCHEMAS) == {*OUTPUTS, "relay-proofs"}
    assert schema_for_topic("kusama.updates") == "update"
    with pytest.raises(UnknownSchemaError):
        schema_for_topic("polkadot.sideways")


def test_every_output_of_every_log_follows_its_schema(tmp_path: Path) -> None:
    kinds: Counter[str] = Counter()
    for log in logs(tmp_path):
        for record in simulate(log.read_bytes().splitlines(), relay_proofs=True):
            line = json.loads(record.to_line())
            assert schema_errors("output-line", line) == [], f"{log.name}: {record.to_line()[:300]}"
            validate(schema_for_topic(record.topic), line["value"])
            kinds[record.topic.rpartition(".")[2]] += 1
    assert set(kinds) == set(OUTPUT_SCHEMAS)  # every kind was seen, so every schema was exercised


def test_input_lines_follow_the_schema_unless_the_simulator_refuses_their_form(tmp_path: Path) -> None:
    refused_form = 0
    for log in logs(tmp_path):
        lines = log.read_bytes().splitlines()
        refused = {record.value["record"] for record in simulate(lines)
                   if record.id.startswith("ingest/") and record.value["reason"] in FORM_REASONS}
        offsets: Counter[str] = Counter()
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except ValueError:
                refused_form += 1  # not JSON: no schema can be applied, and the simulator refuses it (MalformedJson)
                continue
            topic = line.get("topic")
            log_id = f"{topic}@{offsets[topic]}"
            offsets[topic] += 1
            errors = schema_errors("event-log-line", line)
            # a line on a topic no stream reads is named by its line number, any other by its topic and offset
            named = log_id in refused or f"line-{number}" in refused
            assert (errors != []) == named, f"{log.name} {log_id}: {errors} {raw[:200]!r}"
            refused_form += bool(errors)
    assert refused_form > 10  # the bad records were there


@pytest.mark.parametrize(("name", "record", "where"), [
    ("update", {"kind": "changed"}, "$.kind"),
    ("record-outcome", {"block": -1, "record": "upward/2000/1", "status": "rejected", "reason": "BadFormat",
                        "detail": ""}, "$.block"),
    ("input-record", {"stream": "upward", "origin": "2000", "position": 1, "value": "0xzz"}, "$.value"),
    ("seal", {"number": 1}, "$"),
])
def test_a_malformed_record_is_refused_with_where_and_why(name: str, record: dict[str, object], where: str) -> None:
    if name == "update":  # a genuine update but for its kind
        update = json.loads((REPO / "docs" / "schemas.md").read_text().split("```json\n", 1)[1].split("\n```", 1)[0])
        validate("update", update)
        record = {**update, **record}
    with pytest.raises(RecordSchemaError) as caught:
        validate(name, record)
    assert caught.value.path == where and caught.value.schema.endswith(f":{name}:v{SCHEMA_VERSION}")


def test_a_line_whose_value_is_not_its_streams_is_refused() -> None:
    record = {"stream": "upward", "origin": "2000", "position": 0, "value": "0x00"}
    validate("event-log-line", {"topic": "polkadot.upward", "key": "2000", "value": record})
    assert schema_errors("event-log-line", {"topic": "polkadot.horizontal", "key": "2000", "value": record})
    assert schema_errors("event-log-line", {"topic": "polkadot.genesis", "key": "polkadot", "value": record})


@pytest.mark.parametrize("written", ["0.0", "0e0", "1.0"])
def test_an_integer_written_with_a_fraction_is_refused_by_the_schema_as_by_the_simulator(written: str) -> None:
    """JSON Schema counts 0.0 as an integer; the simulator refuses such a line (MalformedRecord), and so does
    ``validate``: the schema check and the simulator agree on every line (docs/schemas.md)."""
    lines = (REPO / "examples" / "minimal.jsonl").read_bytes().splitlines()
    index = next(i for i, raw in enumerate(lines) if json.loads(raw)["topic"] == "polkadot.extrinsics")
    raw = lines[index].decode()
    assert raw.count('"position":0,') == 1
    bad = raw.replace('"position":0,', f'"position":{written},').encode()
    outcomes = [r for r in simulate([*lines[:index], bad, *lines[index + 1:]])
                if r.topic == "polkadot.rejected" and r.id.startswith("ingest/")]
    assert [r.value["reason"] for r in outcomes] == ["MalformedRecord"]
    assert schema_errors("event-log-line", json.loads(bad)) != []
    with pytest.raises(RecordSchemaError, match="is not of type 'integer'"):
        validate("input-record", json.loads(bad)["value"])
    validate("input-record", json.loads(raw)["value"])
