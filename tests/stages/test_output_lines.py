"""Output lines built from their parts equal the canonical JSON of the whole record, byte for byte, whatever the
strings hold; Stage R's events reuse the text they were rendered as, and that text is what the value encodes to."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pubsub_core.relay import canonical_json
from pubsub_core.simulator import simulate
from pubsub_core.stages import OutputRecord
from pubsub_core.stages.records import JsonText

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(st.text(), st.text(), st.text(), st.dictionaries(st.text(), json_values, max_size=5))
def test_a_line_is_the_canonical_json_of_the_record(topic: str, key: str, record_id: str, value: dict[str, object]) -> None:
    record = OutputRecord(topic, key, record_id, value)
    assert record.to_line() == json.dumps(record.to_json(), sort_keys=True, separators=(",", ":"))
    assert record.value_json() == json.dumps(value, sort_keys=True, separators=(",", ":"))


def test_strings_that_need_escaping_are_escaped_as_in_the_whole_record() -> None:
    awkward = 'quote " backslash \\ newline \n nul \x00 del \x7f e-acute \u00e9 snowman \u2603 emoji \U0001f600'
    record = OutputRecord(awkward, awkward, awkward, {awkward: awkward})
    assert record.to_line() == json.dumps(record.to_json(), sort_keys=True, separators=(",", ":"))
    assert record.to_line().isascii()


def test_a_value_given_as_text_is_used_as_is_and_reads_as_the_object() -> None:
    value = JsonText('{"a":[1,2],"b":"x"}')
    record = OutputRecord("polkadot.events", "relay", "relay/1/0", value)
    assert dict(record.value) == {"a": [1, 2], "b": "x"} and record.value["b"] == "x" and len(record.value) == 2
    assert record == OutputRecord("polkadot.events", "relay", "relay/1/0", {"a": [1, 2], "b": "x"})
    assert record.to_line() == '{"id":"relay/1/0","key":"relay","topic":"polkadot.events","value":{"a":[1,2],"b":"x"}}'


def test_stage_r_events_carry_text_equal_to_their_canonical_json() -> None:
    lines = (EXAMPLES / "small.jsonl").read_text().splitlines()
    events = [r for r in simulate(lines) if r.topic.endswith(".events") and r.key == "relay" and r.value_text]
    assert len(events) > 10
    for record in events:
        assert record.value_text is not None
        assert record.value_text == canonical_json(json.loads(record.value_text))  # canonical
        assert json.loads(record.value_text) == dict(record.value)
        assert record.to_line() == canonical_json(record.to_json())
