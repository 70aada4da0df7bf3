"""``canonical_json`` reuses one C encoder instead of building one per call: its text must stay what
``json.dumps(body, sort_keys=True, separators=(",", ":"))`` gives, for any JSON-like body."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from pubsub_core.relay import canonical_json

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text())
bodies = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner), st.dictionaries(st.text(), inner)),
                      max_leaves=30)


@given(bodies)
def test_canonical_json_is_json_dumps_with_sorted_keys_and_no_spaces(body: object) -> None:
    assert canonical_json(body) == json.dumps(body, sort_keys=True, separators=(",", ":"))


def test_the_same_text_for_the_edge_cases_json_dumps_allows() -> None:
    body = {"b": [float("nan"), float("inf"), -0.0, 1e300], "a": "é\ud800\x00", "": {"z": None, "y": True}}
    expected = '{"":{"y":true,"z":null},"a":"\\u00e9\\ud800\\u0000","b":[NaN,Infinity,-0.0,1e+300]}'
    assert canonical_json(body) == expected == json.dumps(body, sort_keys=True, separators=(",", ":"))
    assert canonical_json("text") == '"text"' and canonical_json(7) == "7"
