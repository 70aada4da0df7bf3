"""Hypothesis properties over small random workloads: one outcome per input, convergence to the publishers'
state with nothing missed or stale, no delivery repeated for the same root, proofs within budget."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from producers.workload import MAX_POV_SIZE, WorkloadSpec, generate
from pubsub_core.simulator import simulate
from tests.simulator.properties import check_outcomes, check_subscribers, outputs_by_topic


@st.composite
def workloads(draw: st.DrawFn) -> WorkloadSpec:
    value_max = draw(st.integers(1, 120))
    return WorkloadSpec(
        seed=draw(st.integers(0, 2**32 - 1)),
        blocks=draw(st.integers(1, 5)),
        publishers=draw(st.integers(0, 2)),
        system_publishers=draw(st.integers(1, 2)),
        subscribers=draw(st.integers(1, 2)),
        keys=draw(st.integers(1, 4)),
        subscribed_keys=draw(st.integers(1, 6)),
        value_min=draw(st.integers(0, value_max)),
        value_max=value_max,
        update_rate=draw(st.floats(0.1, 1.0)),
        ttl_mix=draw(st.sampled_from([((0, 1.0),), ((0, 0.5), (1, 0.5)), ((2, 1.0),), ((0, 0.3), (3, 0.7))])),
        bad_records=draw(st.floats(0.0, 0.5)),
        dmp_rate=draw(st.floats(0.0, 0.6)),
        quiet_blocks=draw(st.integers(1, 3)),
        max_pov_size=draw(st.sampled_from([MAX_POV_SIZE, MAX_POV_SIZE, 4_000, 6_000])),
    )


@settings(max_examples=30)
@given(workloads())
def test_random_workloads_keep_every_invariant(spec: WorkloadSpec) -> None:
    lines = [line for chunk in generate(spec) for line in chunk]
    outputs = [json.loads(record.to_line()) for record in simulate(lines)]
    check_outcomes(lines, outputs)
    check_subscribers(lines, outputs)
    pov = outputs_by_topic(outputs).get("pov", [])
    if spec.max_pov_size == MAX_POV_SIZE:
        # A roomy budget: every block completes, so every block was compared with the replayed state.
        assert pov and all(o["value"]["result"] == "complete" for o in pov)
