"""The skeleton's per-key fold in plain Python: order-independent input, deterministic bytes, rejects not fatal."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from streaming.skeleton import CounterState, InputRecord, fold


def _records(values: list[bytes | None], key: str | None = "k") -> list[InputRecord]:
    return [InputRecord("in", 0, offset, key, value) for offset, value in enumerate(values)]


@given(st.permutations(range(12)))
def test_arrival_order_within_a_batch_does_not_change_the_output(order: list[int]) -> None:
    records = _records([json.dumps({"n": i}).encode() for i in range(12)])
    expected = fold(CounterState(), records, "out", "rej")
    assert fold(CounterState(), [records[i] for i in order], "out", "rej") == expected


@given(st.integers(min_value=0, max_value=12))
def test_splitting_the_input_into_two_batches_gives_the_same_records(split: int) -> None:
    records = _records([json.dumps({"n": i}).encode() for i in range(12)])
    state, whole = fold(CounterState(), records, "out", "rej")
    middle, first = fold(CounterState(), records[:split], "out", "rej")
    end, second = fold(middle, records[split:], "out", "rej")
    assert (end, first + second) == (state, whole)
    assert CounterState.decode(state.encode()) == state


def test_bad_input_is_rejected_with_its_reason_and_leaves_state_alone() -> None:
    records = _records([b'{"n": 1}', b"\xff\xfe", b"[]", b'{"n": 2}'])
    state, outputs = fold(CounterState(), records, "out", "rej")
    assert state.count == 2
    assert [o.topic for o in outputs] == ["out", "rej", "rej", "out"]
    reasons = [json.loads(o.value)["reason"] for o in outputs if o.topic == "rej"]
    assert reasons == ["the value is not JSON (JSONDecodeError)", "the value is a JSON list, not an object"]
    _, keyless = fold(CounterState(), _records([b"{}"], key=None), "out", "rej")
    assert json.loads(keyless[0].value)["reason"] == "the record has no key"
