"""Regressions: problems of the subscriber package that the simulator's random workloads found, each fixed in
that package since (resubscription re-delivery, a stale value after a cache clear, colliding update ids, a
KeyError when the budget ran out between a child-root read and a progress read). Each test is the smallest
workload that showed it."""

from __future__ import annotations

import json

from producers.workload import WorkloadSpec, generate
from pubsub_core.simulator import simulate
from tests.simulator.properties import check_subscribers


def outputs(spec: WorkloadSpec) -> list[dict[str, object]]:
    lines = [line for chunk in generate(spec) for line in chunk]
    return [json.loads(record.to_line()) for record in simulate(lines)]


def updates(spec: WorkloadSpec) -> list[dict[str, object]]:
    return [o["value"] for o in outputs(spec) if str(o["topic"]).endswith(".updates")]  # type: ignore[misc]


RESUBSCRIBED = WorkloadSpec(seed=1, blocks=2, publishers=0, system_publishers=1, subscribers=2, keys=3, subscribed_keys=2,
                            value_min=0, value_max=1, update_rate=0.5, bad_records=0.0, dmp_rate=0.0, quiet_blocks=1,
                            ttl_mix=((0, 1.0),))


def test_unsubscribing_a_key_does_not_redeliver_the_other_keys() -> None:
    seen = [(u["subscriber"], u["publisher"], u["key"], u["value"], u["child_root"]) for u in updates(RESUBSCRIBED)]
    assert len(seen) == len(set(seen))


def test_a_key_that_expires_while_the_cache_is_cleared_is_reported_removed() -> None:
    """Subscriber 3001 unsubscribes a key in block 2 while a key it keeps expires in block 3: the clear must
    not make it forget that it held that key."""
    spec = WorkloadSpec(**{**RESUBSCRIBED.__dict__, "ttl_mix": ((2, 1.0),)})
    lines = [line for chunk in generate(spec) for line in chunk]
    result = [json.loads(record.to_line()) for record in simulate(lines)]
    assert check_subscribers(lines, result) >= 4
    removed = [(u["subscriber"], u["relay_block_number"], u["kind"]) for u in updates(spec) if u["kind"] != "set"]
    assert (3001, 3, "expired") in removed


def test_update_ids_differ_for_distinct_deliveries() -> None:
    """Regression: a key that expired twice once gave two deliveries the same id (the empty trie's root)."""
    spec = WorkloadSpec(seed=19282, blocks=4, publishers=0, system_publishers=1, subscribers=1, keys=1, subscribed_keys=1,
                        value_min=0, value_max=1, update_rate=0.5, ttl_mix=((2, 1.0),), bad_records=0.0, dmp_rate=0.0,
                        quiet_blocks=2)
    ids = [u["id"] for u in updates(spec)]
    assert len(ids) == len(set(ids))


def test_budget_exhausted_before_a_publishers_root_is_read() -> None:
    spec = WorkloadSpec(seed=0, blocks=3, publishers=2, system_publishers=2, subscribers=2, keys=2, subscribed_keys=4,
                        value_min=0, value_max=53, update_rate=1.0, ttl_mix=((0, 1.0),), bad_records=0.0, dmp_rate=0.0,
                        quiet_blocks=1, max_pov_size=4000)
    assert outputs(spec)
