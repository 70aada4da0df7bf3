"""The delta seam: Stage R sends each subscriber only the nodes of its proof P_n that were not
in its previous view's P_{n-1}; Stage S keeps a mirror of relay nodes and runs the one pass over it.

The outputs must not depend on the seam mode, nor on when Stage S collects its mirror; each delta is P_n minus
P_{n-1} as the full seam's views give them; the mirror stays bounded; replays and out-of-order views still go
through the view ledger."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import replace

import pytest

import pubsub_core.stages.subscriber_stage as subscriber_stage
from producers.workload import LogBuilder, WorkloadSpec, actors, generate, genesis_record, published_key, register_publishers
from pubsub_core.hashing import blake2_256
from pubsub_core.relay import BroadcasterCall, CallKind, canonical_json
from pubsub_core.simulator import Simulator, simulate
from pubsub_core.stages import ConfigError, OutputRecord, RelayView, ProtocolConfig, SubscriberStage
from pubsub_core.stages.config import Seam
from pubsub_core.stages.records import MalformedViewError
from pubsub_core.stages.subscriber_stage import _RelayMirror, live_nodes
from pubsub_core.subscriber import SubscriberConfig, declared_subscriptions
from pubsub_core.subscriber.engine import Subscriptions
from pubsub_core.subscriber.calls import ClearPublisherCache, EnablePublisher, GovernanceCall, SetSubscriptions
from state import StateTransaction

DELTA, FULL = ProtocolConfig(seam=Seam.DELTA), ProtocolConfig(seam=Seam.FULL)


def workload(spec: WorkloadSpec) -> list[str]:
    return [line for chunk in generate(spec) for line in chunk]


def churn() -> list[str]:
    """Two publishers and two subscribers through what changes a proof's shape: keys deleted and re-added, a
    publisher's cache cleared and re-enabled by governance, a publisher deregistered (its child trie gone)
    and registered again, subscriptions changed mid-run, and values with a TTL that expire."""
    spec = WorkloadSpec(publishers=1, system_publishers=1, subscribers=2)
    cast = actors(spec)
    log = LogBuilder()
    start = genesis_record(cast, log.author)
    log.genesis(start.registry, start.genesis)
    register_publishers(log, cast)
    system, registered = cast.system[0], cast.registered[0]
    first, second = cast.subscribers
    keys = {p: [published_key(p, i) for i in range(8)] for p in (system, registered)}

    def subscribe(para: int, mapping: dict[int, list[bytes]]) -> None:
        call = SetSubscriptions(tuple((p, tuple(sorted(k))) for p, k in sorted(mapping.items())))
        log.signed(cast.collators[para], "extrinsics", f"para:{para}", call.encode())

    def root(call: bytes) -> None:
        log.signed(cast.root, "extrinsics", "root", call)

    subscribe(first, {system: keys[system][:6], registered: keys[registered][:5]})
    subscribe(second, {registered: keys[registered][2:8]})
    log.block()
    rng = random.Random(7)
    for number in range(2, 40):
        for para in (system, registered):
            items = [(k, rng.randbytes(rng.randint(1, 40)), rng.choice((0, 0, 0, 3))) for k in keys[para]
                     if rng.random() < 0.5]
            if items:
                log.publish(para, cast.collators[para], items)
        if number == 8:
            root(BroadcasterCall(CallKind.FORCE_DELETE_KEYS, system, keys=tuple(keys[system][:3])).encode())
        if number == 12:
            root(GovernanceCall(first, ClearPublisherCache(system)).encode())
        if number == 14:
            root(GovernanceCall(first, EnablePublisher(system)).encode())
        if number == 16:
            root(BroadcasterCall(CallKind.FORCE_DEREGISTER_PUBLISHER, registered).encode())
        if number == 20:
            register_publishers(log, cast)
        if number == 24:
            subscribe(first, {system: keys[system][4:8]})
            subscribe(second, {system: keys[system][:2], registered: keys[registered][:3]})
        log.block()
    for _ in range(6):  # quiet blocks: the TTLs run out
        log.block()
    return log.lines


def resubscribing() -> list[str]:
    """Seed 3: subscribers change their subscriptions mid-run, values with a TTL expire, a few bad records."""
    return workload(WorkloadSpec(seed=3, blocks=24, publishers=3, system_publishers=1, subscribers=3, keys=8,
                                 subscribed_keys=10, update_rate=0.5, ttl_mix=((0, 0.7), (3, 0.3)), bad_records=0.02))


def small_budget() -> list[str]:
    """Seed 11: a PoV budget that runs out part way through the keys."""
    return workload(WorkloadSpec(seed=11, blocks=16, publishers=2, system_publishers=2, subscribers=2, keys=6,
                                 subscribed_keys=8, update_rate=0.8, ttl_mix=((0, 0.5), (2, 0.5)), max_pov_size=6000))


WORKLOADS: dict[str, Callable[[], list[str]]] = {
    "churn": churn, "resubscribing": resubscribing, "small budget": small_budget}


def lines_of(records: list[OutputRecord], views: bool = False) -> list[str]:
    return [r.to_line() for r in records if r.topic.endswith(".relay-proofs") == views]


def run(lines: list[str], config: ProtocolConfig) -> list[OutputRecord]:
    return list(simulate(lines, config, relay_proofs=True))


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_delta_and_full_seams_give_the_same_outputs(name: str) -> None:
    lines = WORKLOADS[name]()
    delta, full = run(lines, DELTA), run(lines, FULL)
    assert lines_of(delta) == lines_of(full)
    assert lines_of(delta) == [r.to_line() for r in simulate(lines)]  # the default is the delta seam
    delta_views = [RelayView.from_json(r.value) for r in delta if r.topic.endswith(".relay-proofs")]
    full_views = [RelayView.from_json(r.value) for r in full if r.topic.endswith(".relay-proofs")]
    assert all(v.full for v in full_views)
    assert any(not v.full for v in delta_views)
    sent = sum(len(v.nodes) for v in delta_views)
    assert sent < sum(len(v.nodes) for v in full_views)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_each_delta_is_the_proof_minus_the_previous_proof(name: str) -> None:
    """P_n from the full seam's views; the delta view of block n carries exactly P_n minus P_{n-1}, and the
    first view of a subscriber is full."""
    lines = WORKLOADS[name]()
    full = [RelayView.from_json(r.value) for r in run(lines, FULL) if r.topic.endswith(".relay-proofs")]
    delta = [RelayView.from_json(r.value) for r in run(lines, DELTA) if r.topic.endswith(".relay-proofs")]
    assert [(v.subscriber, v.number) for v in full] == [(v.subscriber, v.number) for v in delta]
    previous: dict[int, set[bytes]] = {}
    for whole, part in zip(full, delta):
        proof = set(whole.nodes)
        if whole.subscriber not in previous:
            assert part.full and part.nodes == whole.nodes
        else:
            assert not part.full
            assert set(part.nodes) == proof - previous[whole.subscriber]
            assert list(part.nodes) == sorted(part.nodes)
        previous[whole.subscriber] = proof


def mirror_nodes(stage: SubscriberStage) -> dict[bytes, bytes]:
    return StateTransaction(stage.backend).items(_RelayMirror.NODES)


def test_the_mirror_contains_each_proof_and_stays_bounded_over_200_blocks() -> None:
    lines = workload(WorkloadSpec(seed=5, blocks=200, publishers=2, system_publishers=1, subscribers=2, keys=10,
                                  subscribed_keys=12, update_rate=0.6, bad_records=0.0, quiet_blocks=0))
    full = Simulator(FULL, relay_proofs=True)
    proofs: dict[tuple[int, int], set[bytes]] = {}
    for line in lines:
        for record in full.feed_line(line):
            if record.topic.endswith(".relay-proofs"):
                view = RelayView.from_json(record.value)
                proofs[(view.subscriber, view.number)] = set(view.nodes)
    simulator = Simulator(DELTA, relay_proofs=True)
    largest = {subscriber: 0 for subscriber, _ in proofs}
    seen: set[tuple[int, int]] = set()
    for line in lines:
        # the latest view of each subscriber this line let through; Stage S has applied it when feed_line returns
        latest = {v.subscriber: v.number for r in simulator.feed_line(line) if r.topic.endswith(".relay-proofs")
                  for v in [RelayView.from_json(r.value)]}
        for subscriber, number in latest.items():
            seen.add((subscriber, number))
            held = mirror_nodes(simulator.subscribers[("polkadot", subscriber)])
            proof = proofs[(subscriber, number)]
            assert proof <= set(held.values())  # the invariant: the mirror after view n contains P_n
            largest[subscriber] = max(largest[subscriber], len(proof))
            # collected once it holds more than twice what the last collection kept (at most the largest P)
            assert len(held) <= max(2 * largest[subscriber], subscriber_stage.MIRROR_GC_FLOOR) + len(proof)
    checked = len(seen)
    assert checked >= 400  # 2 subscribers x 200 blocks


def test_collection_keeps_exactly_the_proof_and_never_changes_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = churn()
    reference = lines_of(run(lines, DELTA))
    monkeypatch.setattr(subscriber_stage, "MIRROR_GC_FLOOR", 0)  # collect as soon as the mirror doubles
    collected = Simulator(DELTA, relay_proofs=True)
    out: list[OutputRecord] = []
    for line in lines:
        out += collected.feed_line(line)
    out += collected.finish()
    assert lines_of(out) == reference
    sent: dict[int, set[bytes]] = {}
    for record in out:
        if record.topic.endswith(".relay-proofs"):
            view = RelayView.from_json(record.value)
            sent.setdefault(view.subscriber, set()).update(view.nodes)
    final = {RelayView.from_json(r.value).subscriber: RelayView.from_json(r.value)
             for r in run(lines, FULL) if r.topic.endswith(".relay-proofs")}
    for (_, subscriber), stage in collected.subscribers.items():
        held = set(mirror_nodes(stage).values())
        assert set(final[subscriber].nodes) <= held  # the last P_n survived every collection
        assert len(held) < len(sent[subscriber])  # and collections did drop nodes
    monkeypatch.setattr(subscriber_stage, "MIRROR_GC_FLOOR", 10**9)  # never collect
    assert lines_of(run(lines, DELTA)) == reference


def test_marking_over_the_mirror_gives_the_full_proof(monkeypatch: pytest.MonkeyPatch) -> None:
    """``live_nodes`` over a source holding P_n plus unrelated nodes, along the subscriber's declarations
    before block n, gives P_n exactly (what collection keeps)."""
    seen: list[tuple[RelayView, Subscriptions]] = []
    step = SubscriberStage.step

    def recording_step(stage: SubscriberStage, view: RelayView) -> list[OutputRecord]:
        seen.append((view, declared_subscriptions(StateTransaction(stage.backend))))
        return step(stage, view)

    monkeypatch.setattr(SubscriberStage, "step", recording_step)
    list(simulate(churn(), FULL))
    noise = {blake2_256(n): n for view, _ in seen[:20] for n in view.nodes}
    for view, declared in seen:
        source = {**noise, **{blake2_256(n): n for n in view.nodes}}
        live = live_nodes(_Dict(source), view.relay_root, declared)
        assert sorted(live.values()) == list(view.nodes)
    assert len(seen) > 60 and any(view.nodes for view, _ in seen)


class _Dict:
    def __init__(self, nodes: dict[bytes, bytes]) -> None:
        self.nodes = nodes

    def get(self, node_hash: bytes) -> bytes | None:
        return self.nodes.get(node_hash)


def digest(view: RelayView) -> bytes:
    return blake2_256(canonical_json(view.to_json()).encode())


def test_delta_views_replayed_and_out_of_order_go_through_the_ledger() -> None:
    """Each subscriber's delta views, delivered shuffled with duplicates, give the in-order outputs: parked
    views wait for their predecessor (a delta needs the mirror of the view before it) and replays are skipped."""
    out = run(WORKLOADS["churn"](), DELTA)
    by_subscriber: dict[int, list[RelayView]] = {}
    for record in out:
        if record.topic.endswith(".relay-proofs"):
            view = RelayView.from_json(record.value)
            by_subscriber.setdefault(view.subscriber, []).append(view)
    rng = random.Random(4)
    for subscriber, views in by_subscriber.items():
        in_order = SubscriberStage("polkadot", subscriber, DELTA.subscriber)
        expected = [r.to_line() for v in views for r in in_order.receive(v, digest(v))]
        delivered = views + rng.sample(views, len(views) // 3)
        # a few deliveries out of order within windows of 4 views, then the replays
        shuffled = [v for start in range(0, len(views), 4) for v in rng.sample(views[start:start + 4], len(views[start:start + 4]))]
        shuffled += delivered[len(views):]
        stage = SubscriberStage("polkadot", subscriber, DELTA.subscriber)
        got = [r.to_line() for v in shuffled for r in stage.receive(v, digest(v))]
        assert got == expected and expected


def test_a_view_without_full_is_malformed() -> None:
    view = next(RelayView.from_json(r.value) for r in run(WORKLOADS["churn"](), DELTA) if r.topic.endswith(".relay-proofs"))
    body = view.to_json()
    assert RelayView.from_json(json.loads(json.dumps(body))) == view
    for bad in ({k: v for k, v in body.items() if k != "full"}, {**body, "full": 1}, {**body, "full": "true"}):
        with pytest.raises(MalformedViewError):
            RelayView.from_json(bad)
    with pytest.raises(ValueError):  # readers refusing malformed seam records with ValueError still do
        RelayView.from_json({k: v for k, v in body.items() if k != "nodes"})


def test_the_seam_setting() -> None:
    assert ProtocolConfig().seam is Seam.DELTA
    assert ProtocolConfig.from_json({"seam": "full"}).seam is Seam.FULL
    with pytest.raises(ConfigError):
        ProtocolConfig.from_json({"seam": "partial"})


def test_the_metering_seam_table_on_a_small_workload() -> None:
    """``benchmarks.metering --seam``: the delta view carries exactly the changed nodes, fewer bytes than the
    full view, and Stage S gives the same outputs on both (``run_seam`` exits otherwise)."""
    from benchmarks.metering import Workload, run_seam, seam_summary
    from benchmarks.render import seam

    work = Workload(keys_per_publisher=400, subscribed_keys=20, blocks=3, updated_per_block=0.02)
    rows = run_seam(work)
    assert len(rows) == 3
    for row in rows:
        assert row.delta_bytes == row.changed_bytes
        assert 0 < row.delta_bytes < row.full_bytes and row.delta_record < row.full_record
    summary = seam_summary(rows)
    assert summary["delta_bytes"] == summary["changed_bytes"] < summary["full_bytes"]
    assert "| raw proof-node bytes |" in seam({"figures": {"summary": summary}})


@pytest.mark.parametrize("depth", [1, 2])
def test_a_subscriber_disabling_a_publisher_itself_gives_the_same_outputs_in_both_seams(depth: int) -> None:
    """MaxTrieDepth below the tries' depth: the subscriber disables publishers itself (and governance re-enables
    one at block 14 of the churn log, which disables it again); the delta seam still gives the full seam's
    outputs, and each delta view is still P_n minus P_{n-1}."""
    shallow = SubscriberConfig(max_trie_depth=depth)
    lines = churn()
    delta = run(lines, replace(DELTA, subscriber=shallow))
    full = run(lines, replace(FULL, subscriber=shallow))
    assert lines_of(delta) == lines_of(full)
    disabled = [r for r in delta if r.topic.endswith(".events") and "PublisherDisabled" in r.to_line()]
    assert disabled, "the shallow MaxTrieDepth must disable a publisher"
    assert lines_of(delta) != lines_of(run(lines, DELTA))  # the depth limit changed what was delivered
    full_views = [RelayView.from_json(r.value) for r in full if r.topic.endswith(".relay-proofs")]
    delta_views = [RelayView.from_json(r.value) for r in delta if r.topic.endswith(".relay-proofs")]
    previous: dict[int, set[bytes]] = {}
    for whole, part in zip(full_views, delta_views, strict=True):
        if whole.subscriber in previous:
            assert set(part.nodes) == set(whole.nodes) - previous[whole.subscriber]
        previous[whole.subscriber] = set(whole.nodes)
