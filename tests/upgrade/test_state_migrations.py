"""Stage R's and Stage S's stored state across releases: the previous release (built from git) runs the first part
of a log in the simulator and hands over its stores; the current code opens them (migrating each one version step
at a time), runs the rest, and gives the outputs of an uninterrupted current run, record for record. A store of a
newer version than the code knows is refused in one line and left as it was.

One test per format version step: the fixture comes from ``PREVIOUS`` (tests/support/releases.py), so the next
release's step is that one line."""

from __future__ import annotations

import json
from typing import Any

import pytest

from producers.workload import WorkloadSpec, generate
from pubsub_core.simulator import Simulator
from pubsub_core.stages import OutputRecord
from pubsub_core.stages.relay_stage import RelayStage
from pubsub_core.stages.relay_state import NAMESPACES as RELAY_NAMESPACES, RELAY_STATE
from pubsub_core.stages.subscriber_stage import SubscriberStage
from pubsub_core.stages.subscriber_state import SUBSCRIBER_STATE
from state import MemoryBackend, StateTransaction
from state.formats import FormatTooNewError, Version
from tests.support.releases import Release

RUN_HALF = """
import json, sys
from pubsub_core.simulator import Simulator
lines = json.load(sys.stdin)
simulator = Simulator()
outputs = [json.dumps(r.to_json(), sort_keys=True) for line in lines for r in simulator.feed_line(line)]
def dump(backend):
    return {ns: {k.hex(): v.hex() for k, v in entries.items()} for ns, entries in backend._namespaces.items()}
print(json.dumps({
    "outputs": outputs,
    "offsets": simulator.router.offsets,
    "line": simulator.router.line,
    "relays": {realm: dump(stage.backend) for realm, stage in simulator.relays.items()},
    "subscribers": [[realm, sub, dump(stage.backend)] for (realm, sub), stage in simulator.subscribers.items()],
}))
"""
"""Run by the previous release: its simulator on the first part of the log, its stores and outputs on stdout."""


def a_log() -> list[str]:
    """Nine blocks with bad records, cut later mid-block (records buffered, blocks waiting at the cut)."""
    return [line for chunk in generate(WorkloadSpec(seed=43, blocks=9, bad_records=0.2)) for line in chunk]


def _backend(stored: dict[str, dict[str, str]]) -> MemoryBackend:
    backend = MemoryBackend()
    backend.write_many({ns: {bytes.fromhex(k): bytes.fromhex(v) for k, v in entries.items()}
                        for ns, entries in stored.items()})
    return backend


def _lines(records: list[OutputRecord]) -> list[str]:
    return [json.dumps(r.to_json(), sort_keys=True) for r in records]


def resumed(handed: dict[str, Any]) -> Simulator:
    """A current simulator over the stores and line offsets the previous release handed over."""
    simulator = Simulator()
    simulator.router.offsets = dict(handed["offsets"])
    simulator.router.line = handed["line"]
    for realm, stored in handed["relays"].items():
        simulator.relays[realm] = RelayStage(realm, simulator.config, _backend(stored))
    for realm, subscriber, stored in handed["subscribers"]:
        simulator.subscribers[(realm, subscriber)] = SubscriberStage(realm, subscriber, simulator.config.subscriber,
                                                                     _backend(stored))
    return simulator


@pytest.fixture(scope="module")
def handed_over(previous_release: Release) -> tuple[list[str], int, dict[str, Any]]:
    lines = a_log()
    cut = next(i for i, line in enumerate(lines) if i > len(lines) // 2 and '.blocks"' in line)  # its records wait
    handed = previous_release.python(RUN_HALF, lines[:cut])
    assert isinstance(handed, dict)
    return lines, cut, handed


def test_the_previous_release_stores_resume_and_give_the_outputs_of_an_uninterrupted_run(
        handed_over: tuple[list[str], int, dict[str, Any]]) -> None:
    lines, cut, handed = handed_over
    stored_names = {ns for stored in handed["relays"].values() for ns in stored}
    assert any(ns.startswith("simulator.") for ns in stored_names)  # 0.1.0's names, no version marker
    assert RELAY_STATE.marker not in stored_names
    assert {"simulator.Buffer", "simulator.Waiting"} & {ns for stored in handed["relays"].values()
                                                        for ns, entries in stored.items() if entries}
    simulator = resumed(handed)
    rest = _lines([r for line in lines[cut:] for r in simulator.feed_line(line)] + simulator.finish())
    fresh = Simulator()
    whole = _lines([r for line in lines for r in fresh.feed_line(line)] + fresh.finish())
    assert len(handed["outputs"]) > 50 and len(rest) > 50
    assert handed["outputs"] + rest == whole


def test_stage_r_state_of_version_1_is_renamed_to_relay_namespaces_and_marked_version_2(
        handed_over: tuple[list[str], int, dict[str, Any]]) -> None:
    _, _, handed = handed_over
    simulator = resumed(handed)
    for realm, stage in simulator.relays.items():
        names = set(stage.backend._namespaces) if isinstance(stage.backend, MemoryBackend) else set()
        non_empty = {ns for ns in names if stage.backend.scan(ns)}
        assert not any(ns.startswith("simulator.") for ns in non_empty), realm
        assert {ns for ns in non_empty if ns.startswith("relay.")} >= {"relay.Genesis", "relay.Included"}
        assert non_empty & set(RELAY_NAMESPACES)
        txn = StateTransaction(stage.backend)
        assert RELAY_STATE.stored(txn) == Version(2, RELAY_STATE.release)
        before = {ns: stage.backend.scan(ns) for ns in names}
        RelayStage(realm, simulator.config, stage.backend)  # opening a current store again changes nothing
        assert {ns: stage.backend.scan(ns) for ns in names} == before


def test_stage_s_state_of_version_1_is_marked_version_2_with_its_layout_unchanged(
        handed_over: tuple[list[str], int, dict[str, Any]]) -> None:
    _, _, handed = handed_over
    assert handed["subscribers"]
    for realm, subscriber, stored in handed["subscribers"]:
        backend = _backend(stored)
        SubscriberStage(realm, subscriber, Simulator().config.subscriber, backend)
        assert SUBSCRIBER_STATE.stored(StateTransaction(backend)) == Version(2, SUBSCRIBER_STATE.release)
        after = {ns: {k.hex(): v.hex() for k, v in backend.scan(ns).items()} for ns in stored}
        assert after == stored


@pytest.mark.parametrize("fmt", [RELAY_STATE, SUBSCRIBER_STATE], ids=["stage-r", "stage-s"])
def test_a_store_of_a_newer_version_is_refused_in_one_line_and_left_as_it_was(fmt: Any) -> None:
    backend = MemoryBackend()
    newer = Version(fmt.version + 1, "9.0.0")
    backend.write_many({fmt.marker: {b"": newer.encode()}, "relay.Genesis": {b"": b"{...}"}})
    with pytest.raises(FormatTooNewError) as refused:
        if fmt is RELAY_STATE:
            RelayStage("polkadot", Simulator().config, backend)
        else:
            SubscriberStage("polkadot", 2000, Simulator().config.subscriber, backend)
    message = str(refused.value)
    assert "\n" not in message and f"format version {fmt.version + 1}, written by release 9.0.0" in message
    assert backend.scan(fmt.marker) == {b"": newer.encode()} and backend.scan("relay.Genesis") == {b"": b"{...}"}


RESUME_REST = """
import json, sys
from pubsub_core.simulator import Simulator
from pubsub_core.stages.relay_stage import RelayStage
from state import MemoryBackend
body = json.load(sys.stdin)
simulator = Simulator()
simulator.router.offsets, simulator.router.line = body["offsets"], body["line"]
for realm, stored in body["relays"].items():
    backend = MemoryBackend()
    backend.write_many({ns: {bytes.fromhex(k): bytes.fromhex(v) for k, v in e.items()} for ns, e in stored.items()})
    simulator.relays[realm] = RelayStage(realm, simulator.config, backend)
out = [r for line in body["lines"] for r in simulator.feed_line(line)]
print(json.dumps(sorted({r.topic.rpartition(".")[2] + " " + str(r.value.get("reason")) for r in out})))
"""
"""Run by the previous release: its Stage R over a current store, fed the rest of the log."""


def test_release_0_1_0_over_a_current_store_finds_no_genesis_and_holds_everything(
        previous_release: Release, handed_over: tuple[list[str], int, dict[str, Any]]) -> None:
    """What docs/operations.md ("Rolling back") says 0.1.0 does with a 0.2.0 checkpoint: it reads no version, finds
    no ``simulator.Genesis`` and holds every record as if the realm had no genesis yet: no block, no seal, nothing
    but the refusals of malformed lines. Hence: restore the checkpoint copied before the upgrade."""
    lines, cut, handed = handed_over
    simulator = resumed(handed)
    current = {realm: {ns: {k.hex(): v.hex() for k, v in stage.backend.scan(ns).items()}
                       for ns in stage.backend._namespaces} for realm, stage in simulator.relays.items()
               if isinstance(stage.backend, MemoryBackend)}
    kinds = previous_release.python(RESUME_REST, {"offsets": handed["offsets"], "line": handed["line"],
                                                  "relays": current, "lines": lines[cut:]})
    assert isinstance(kinds, list)
    assert not [k for k in kinds if k.startswith(("seals", "events"))], kinds
    assert all(k.startswith("rejected") for k in kinds), kinds
