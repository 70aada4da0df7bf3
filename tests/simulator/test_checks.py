"""The invariant checks of properties.py can fail: each catches a broken copy of a real simulation."""

from __future__ import annotations

import copy
import json

import pytest
from typing import Any

from tests.simulator.properties import check_outcomes, check_subscribers
from tests.simulator.test_examples import example, parsed_outputs


def small() -> tuple[list[str], list[dict[str, Any]]]:
    return example("small.jsonl"), copy.deepcopy(parsed_outputs("small.jsonl"))


def first(outputs: list[dict[str, Any]], kind: str) -> int:
    return next(i for i, o in enumerate(outputs) if str(o["topic"]).endswith("." + kind))


def test_the_unbroken_run_passes() -> None:
    lines, outputs = small()
    check_outcomes(lines, outputs)
    assert check_subscribers(lines, outputs) > 10


def test_a_lost_rejection_is_caught() -> None:
    lines, outputs = small()
    del outputs[first(outputs, "rejected")]
    with pytest.raises(AssertionError):
        check_outcomes(lines, outputs)


def test_a_wrong_applied_count_is_caught() -> None:
    lines, outputs = small()
    outputs[first(outputs, "seals")]["value"]["applied"] += 1
    with pytest.raises(AssertionError):
        check_outcomes(lines, outputs)


def test_a_missed_update_is_caught() -> None:
    lines, outputs = small()
    del outputs[first(outputs, "updates")]
    with pytest.raises(AssertionError):
        check_subscribers(lines, outputs)


def test_a_stale_value_is_caught() -> None:
    lines, outputs = small()
    outputs[first(outputs, "updates")]["value"]["value"] = "0x00"
    with pytest.raises(AssertionError):
        check_subscribers(lines, outputs)


def test_a_repeated_delivery_is_caught() -> None:
    lines, outputs = small()
    at = first(outputs, "updates")
    outputs.insert(at + 1, json.loads(json.dumps(outputs[at])))
    with pytest.raises(AssertionError, match="delivered twice"):
        check_subscribers(lines, outputs)


def test_a_proof_over_budget_is_caught() -> None:
    lines, outputs = small()
    pov = outputs[first(outputs, "pov")]["value"]
    pov["proof_bytes"] = pov["budget"]["pubsub"] + 1
    with pytest.raises(AssertionError):
        check_subscribers(lines, outputs)
