"""docs/subscriber.md: its example runs, and its JSON examples are exactly what that example produces."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pubsub_core.subscriber import PalletEvent, PovRecord, RelayProof, Update

DOC = Path(__file__).resolve().parents[2] / "docs" / "subscriber.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.S)


def test_subscriber_doc_example_runs_and_matches_its_json() -> None:
    (code,) = blocks("python")
    namespace: dict[str, Any] = {}
    exec(compile(code, str(DOC), "exec"), namespace)
    outcome, proof = namespace["outcome"], namespace["proof"]
    produced = [outcome.updates[0].to_json(), outcome.events[0].to_json(), outcome.pov.to_json(), proof.to_json()]
    documented = [json.loads(block) for block in blocks("json")]
    assert documented == produced


def test_subscriber_doc_json_round_trips() -> None:
    update, event, pov, proof = (json.loads(block) for block in blocks("json"))
    assert Update.from_json(update).to_json() == update
    assert PalletEvent.from_json(event).to_json() == event
    assert PovRecord.from_json(pov).to_json() == pov
    assert RelayProof.from_json(proof).to_json() == proof
