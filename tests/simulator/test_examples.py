"""The shipped example logs: they are what the documented commands generate, and simulating them satisfies the
simulator's invariants (one outcome per input, convergence, no double delivery, budget, determinism)."""

from __future__ import annotations

import functools
import json
import random
import re
from pathlib import Path

import pytest
from typing import Any

from producers.workload import WorkloadSpec, generate, minimal_example, stalled_example
from pubsub_core.codec.hexjson import unhex_0x
from pubsub_core.simulator import Simulator, simulate
from pubsub_core.stages import RelayStage, SubscriberStage
from tests.simulator.properties import check_outcomes, check_subscribers, outputs_by_topic

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GENERATED = {
    "small.jsonl": WorkloadSpec(seed=7, blocks=12),
    "busy.jsonl": WorkloadSpec(seed=11, blocks=40, publishers=4, system_publishers=2, subscribers=3, keys=8,
                               subscribed_keys=10, value_max=200, update_rate=0.4, ttl_mix=((0, 0.7), (3, 0.2), (10, 0.1)),
                               bad_records=0.1),
    "tight.jsonl": WorkloadSpec(seed=5, blocks=10, keys=6, subscribed_keys=8, value_min=100, value_max=200,
                                update_rate=0.8, max_pov_size=4_500, quiet_blocks=8),
}
NAMES = ["minimal.jsonl", "stalled.jsonl", *GENERATED]


def example(name: str) -> list[str]:
    return (EXAMPLES / name).read_text().splitlines()


def run(lines: list[str]) -> list[str]:
    return [record.to_line() for record in simulate(lines)]


@functools.cache
def simulated(name: str) -> tuple[str, ...]:
    """The outputs of an example, simulated once per test session."""
    return tuple(run(example(name)))


def parsed_outputs(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in simulated(name)]


def test_minimal_example_is_what_the_builder_writes() -> None:
    assert example("minimal.jsonl") == minimal_example()


def test_stalled_example_is_what_the_builder_writes() -> None:
    assert example("stalled.jsonl") == stalled_example()


def test_stalled_example_is_seen_stalled_then_voided_and_moves_on() -> None:
    """Block 3 waits on a forged record: seen stalled when block 6 queues behind it; the void order fills the
    position with nothing, block 3 applies empty, and block 7's publish reaches the subscriber."""
    outputs = parsed_outputs("stalled.jsonl")
    health = [(o["id"], o["value"]) for o in outputs if o["topic"] == "polkadot.health"]
    assert [i for i, _ in health] == ["stalled/polkadot.blocks@2", "resumed/polkadot.blocks@2",
                                      "voided/polkadot.blocks@6"]
    assert health[0][1] == {"kind": "Stalled", "realm": "polkadot", "block": 3, "block_record": "polkadot.blocks@2",
                            "after_blocks": 3, "awaits": [{"stream": "upward", "origin": "1000", "first": 1, "last": 1}]}
    rejected = {o["id"]: o["value"] for o in outputs if o["topic"] == "polkadot.rejected"}
    assert rejected["outcome/upward/1000/1"]["reason"] == "Voided"
    assert rejected["ingest/polkadot.upward@1"]["reason"] == "BadSignature"
    assert [o["value"]["number"] for o in outputs if o["topic"] == "polkadot.seals"] == list(range(1, 8))
    updates = [o["value"]["value"] for o in outputs if o["topic"] == "polkadot.updates"]
    assert updates == ["0x3432", "0x3434"]  # "42", then "44": "43" was never sent


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_examples_are_what_their_spec_writes(name: str) -> None:
    assert example(name) == [line for chunk in generate(GENERATED[name]) for line in chunk]


def test_minimal_example_delivers_each_value_once() -> None:
    outputs = parsed_outputs("minimal.jsonl")
    updates = [(o["value"]["relay_block_number"], unhex_0x(o["value"]["value"])) for o in outputs_by_topic(outputs)["updates"]]
    assert updates == [(2, b"1000"), (2, b"42"), (3, b"43")] or updates == [(2, b"42"), (2, b"1000"), (3, b"43")]
    assert [o["value"]["result"] for o in outputs_by_topic(outputs)["pov"]] == ["complete"] * 3
    assert "rejected" not in outputs_by_topic(outputs)


@pytest.mark.parametrize("name", NAMES)
def test_every_input_has_exactly_one_outcome(name: str) -> None:
    check_outcomes(example(name), parsed_outputs(name))


@pytest.mark.parametrize("name", NAMES)
def test_subscribers_converge_without_double_delivery_within_budget(name: str) -> None:
    outputs = parsed_outputs(name)
    compared = check_subscribers(example(name), outputs)
    assert compared >= 3
    pov = outputs_by_topic(outputs)["pov"]
    last = max(o["value"]["relay_block_number"] for o in pov)
    assert all(o["value"]["result"] == "complete" for o in pov if o["value"]["relay_block_number"] == last)


def test_tight_budget_example_runs_out_of_budget_and_resumes() -> None:
    outputs = parsed_outputs("tight.jsonl")
    results = [o["value"]["result"] for o in outputs_by_topic(outputs)["pov"]]
    assert "incomplete" in results and results[-1] == "complete"


@pytest.mark.parametrize("name", NAMES)
def test_outputs_are_byte_identical_across_runs_and_ids_unique(name: str) -> None:
    first = list(simulated(name))
    assert run(example(name)) == first
    ids = [json.loads(line)["id"] for line in first]
    assert len(ids) == len(set(ids))
    assert all(line == json.dumps(json.loads(line), sort_keys=True, separators=(",", ":")) for line in first)


def _strings(body: object) -> list[tuple[str, str]]:
    """(field name, string) of every string in a JSON value, at any depth."""
    found: list[tuple[str, str]] = []
    items = body.items() if isinstance(body, dict) else [("", v) for v in body] if isinstance(body, list) else []
    for name, element in items:
        found += [(str(name), element)] if isinstance(element, str) else _strings(element)
    return found


@pytest.mark.parametrize("name", NAMES)
def test_every_byte_string_in_every_output_record_is_0x_hex(name: str) -> None:
    """One hex convention. No output value holds bare hex digits (a hash, key, root or node), and the
    fields that hold bytes (update values and keys, event keys, roots, hashes, update ids) are 0x hex."""
    byte_fields = {"key", "value", "child_root", "entry_hash", "relay_block_hash", "relay_root", "hash",
                   "parent_hash", "message_hash"}
    checked = 0
    for output in parsed_outputs(name):
        value = output["value"]
        assert isinstance(value, dict)
        for field, text in _strings(value):
            assert not re.fullmatch(r"[0-9a-f]{8,}", text), (output["id"], field, text[:80])
            if field in byte_fields or (field == "id" and str(output["topic"]).endswith(".updates")):
                assert re.fullmatch(r"0x([0-9a-f]{2})*", text), (output["id"], field, text[:80])
                checked += 1
    assert checked


def _split(lines: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(genesis lines, block lines, other lines), each in log order."""
    def stream(line: str) -> str:
        try:
            return str(json.loads(line)["topic"]).rpartition(".")[2]
        except (ValueError, KeyError, TypeError):
            return "?"
    return ([line for line in lines if stream(line) == "genesis"], [line for line in lines if stream(line) == "blocks"],
            [line for line in lines if stream(line) not in ("genesis", "blocks")])


def _topic(line: str) -> str:
    try:
        return str(json.loads(line)["topic"])
    except (ValueError, KeyError, TypeError):
        return "?"


def _without_ingest(outputs: list[str]) -> tuple[list[str], list[str]]:
    """The outputs without the ingest refusals and health records, and those refusals as a set with the line
    numbers of unroutable lines masked (they name where the line is in the file, which an interleaving moves)."""
    ingest = sorted(re.sub(r'line-\d+"', 'line-?"', line) for line in outputs if '"id":"ingest/' in line)
    kept = [line for line in outputs if '"id":"ingest/' not in line and not _health(line)]
    return kept, ingest


def _health(line: str) -> bool:
    return _topic(line).endswith(".health")


def _lasting(outputs: list[str]) -> set[str]:
    """The health records every reading of a log gives: a void order's ``Voided``. Whether a block is seen
    stalled depends on how far the blocks ran ahead of their records in that reading (pipeline.md, "Health
    records")."""
    return {line for line in outputs if _health(line) and '"kind":"Voided"' in line}


def canonical(record: object) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def test_the_readme_names_what_an_interleaving_changes_as_this_module_masks_it() -> None:
    """The README's determinism sentence claims no more than the interleaving test below checks: the health records
    that describe the reading, and the ids of lines that name no topic, are the exceptions it names."""
    readme = " ".join((EXAMPLES.parent / "README.md").read_text().split())
    claim = readme[readme.index("The same log always gives the same bytes."):][:700]
    assert "whatever the interleaving" not in claim
    assert "`Stalled` and `Resumed` records of `<realm>.health`" in claim
    assert "ids of lines that name no topic" in claim and "`ingest/line-<n>`" in claim


@pytest.mark.parametrize("name", NAMES)
def test_interleaving_of_topics_does_not_change_the_outputs(name: str) -> None:
    """Each topic keeps its own order (as a Kafka partition does); how topics interleave is free. A line's own
    ingest refusal comes out where the line is read, so those are compared as a set (an unroutable line's id names
    its line number, which the interleaving moves); health records describe Stage R's reading, so only those every
    reading gives are compared."""
    lines = example(name)
    genesis, blocks, others = _split(lines)
    baseline = _without_ingest(list(simulated(name)))
    records_first = genesis + others + blocks
    by_topic: dict[str, list[str]] = {}
    for line in others:
        by_topic.setdefault(_topic(line), []).append(line)
    blocks_first = genesis + blocks + [line for topic in sorted(by_topic, reverse=True) for line in by_topic[topic]]
    rng = random.Random(name)
    queues = [list(q) for q in by_topic.values()] + [list(blocks)]
    shuffled = list(genesis)
    while any(queues):
        queue = rng.choice([q for q in queues if q])
        shuffled.append(queue.pop(0))
    variants = [shuffled] if name == "busy.jsonl" else [records_first, blocks_first, shuffled]  # busy: keep CI fast
    lasting = _lasting(list(simulated(name)))
    for variant in variants:
        assert sorted(variant) == sorted(lines)
        outputs = run(variant)
        assert _without_ingest(outputs) == baseline
        assert _lasting(outputs) == lasting


def _restarted(old: Simulator) -> Simulator:
    """A new simulator over the old one's state backends (and its topic offsets, which Kafka would keep, and its
    line number in the file, which a reader resuming the file knows)."""
    new = Simulator(old.config)
    new.router.offsets = dict(old.router.offsets)
    new.router.line = old.router.line
    new.relays = {realm: RelayStage(realm, old.config, stage.backend) for realm, stage in old.relays.items()}
    new.subscribers = {key: SubscriberStage(key[0], key[1], old.config.subscriber, stage.backend)
                       for key, stage in old.subscribers.items()}
    return new


@pytest.mark.parametrize("name", ["minimal.jsonl", "small.jsonl", "tight.jsonl"])
def test_a_restart_anywhere_changes_nothing(name: str) -> None:
    """Both stages keep everything in their state backends: restarting from them after any line gives the
    same bytes (the Spark job restarts from its state store the same way)."""
    simulator = Simulator()
    outputs: list[str] = []
    for number, line in enumerate(example(name)):
        outputs += [o.to_line() for o in simulator.feed_line(line)]
        if number % 3 == 0:
            simulator = _restarted(simulator)
    outputs += [o.to_line() for o in simulator.finish()]
    assert outputs == list(simulated(name))
