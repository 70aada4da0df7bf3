"""``supervise.verify.compare``: health records that describe Stage R's reading are not differences; everything
else, those records' contents included, is compared by id."""

from __future__ import annotations

from pubsub_core.relay import canonical_json
from supervise.verify import compare

TOPICS = ["polkadot.health", "polkadot.seals"]


def line(topic: str, record_id: str, value: dict[str, object]) -> str:
    return canonical_json({"topic": topic, "key": "polkadot", "id": record_id, "value": value})


STALLED = line("polkadot.health", "stalled/polkadot.blocks@2", {"kind": "Stalled", "block": 3})
RESUMED = line("polkadot.health", "resumed/polkadot.blocks@2", {"kind": "Resumed", "block": 3})
VOIDED = line("polkadot.health", "voided/polkadot.blocks@6", {"kind": "Voided", "block": 3})
SEAL = line("polkadot.seals", "seal/1", {"number": 1})


def test_stalled_and_resumed_on_one_side_only_are_counted_apart_not_as_differences() -> None:
    health, seals = compare([VOIDED, SEAL], [STALLED, RESUMED, VOIDED, SEAL], TOPICS)
    assert health.ok and (health.extra, health.reading, health.matched) == (0, 2, 1)
    health, _ = compare([STALLED, VOIDED, SEAL], [VOIDED, SEAL], TOPICS)
    assert health.ok and (health.missing, health.reading) == (0, 1)
    assert seals.ok


def test_a_voided_record_on_one_side_only_and_a_differing_stall_are_differences() -> None:
    health, _ = compare([SEAL], [VOIDED, SEAL], TOPICS)
    assert not health.ok and health.extra == 1
    other = line("polkadot.health", "stalled/polkadot.blocks@2", {"kind": "Stalled", "block": 4})
    health, _ = compare([STALLED], [other], TOPICS)
    assert not health.ok and health.differing == 1
