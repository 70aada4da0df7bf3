"""Stage R's views from the positions a block affected (view_paths) equal the old computation, node for node:
the full proof P_n of the declared keys minus the nodes whose hash was in the previous view's P_{n-1}
(``full_view_nodes``, which builds the whole proof as ``_views`` used to)."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence

import pytest

import pubsub_core.stages.relay_stage as relay_stage
from producers.workload import WorkloadSpec
from pubsub_core.hashing import blake2_256
from pubsub_core.simulator import simulate
from pubsub_core.stages import RelayView, SimulatorConfig
from pubsub_core.stages.config import Seam
from pubsub_core.stages.relay_stage import RelayStage, _BlockPaths, _Book, full_view_nodes
from pubsub_core.stages.view_paths import PathProver
from pubsub_core.trie import RelayTries
from pubsub_core.trie.trie import Trie
from state import MemoryBackend, StateTransaction
from tests.stages.test_seam_delta import WORKLOADS, workload

Keys = Mapping[int, Sequence[bytes]]


class Checked:
    """Wraps ``RelayStage._seam_nodes``: every view it makes is compared with the reference, whose previous
    proof is the reference's own (the full proof it built for the subscriber's last view)."""

    def __init__(self) -> None:
        self.previous: dict[int, set[bytes]] = {}
        self.views = self.deltas = self.cheap = 0

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        original = RelayStage._seam_nodes
        original_changed = _BlockPaths.changed
        checked = self

        def changed(block: _BlockPaths, tag: bytes) -> object:
            checked.cheap += 1
            return original_changed(block, tag)

        def seam_nodes(stage: RelayStage, book: _Book, subscriber: int, number: int, keys: Keys,
                       block: _BlockPaths) -> tuple[tuple[bytes, ...], bool]:
            proof = full_view_nodes(block.tries, keys, None)
            previous = checked.previous.get(subscriber)
            full = previous is None or stage.config.seam is Seam.FULL
            expected = proof if full else full_view_nodes(block.tries, keys, previous)
            got = original(stage, book, subscriber, number, keys, block)
            assert got == (expected, full), f"view of block {number} for subscriber {subscriber}"
            checked.previous[subscriber] = {blake2_256(node) for node in proof}
            assert book.sent_nodes(subscriber) == checked.previous[subscriber]
            checked.views += 1
            checked.deltas += not full
            return got

        monkeypatch.setattr(RelayStage, "_seam_nodes", seam_nodes)
        monkeypatch.setattr(_BlockPaths, "changed", changed)


def simulator_workload() -> list[str]:
    """The issue 11 workload, shortened: 20 publishers, 6 subscribers, half the keys updated each block."""
    return workload(WorkloadSpec(seed=3, blocks=30, publishers=20, system_publishers=4, subscribers=6, keys=20,
                                 subscribed_keys=40, update_rate=0.5, bad_records=0.01))


def late_subscribers() -> list[str]:
    """Seed 5: subscribers that change subscriptions and TTLs that empty keys."""
    return workload(WorkloadSpec(seed=5, blocks=20, publishers=4, system_publishers=1, subscribers=4, keys=6,
                                 subscribed_keys=9, update_rate=0.3, ttl_mix=((0, 0.5), (2, 0.5))))


ALL: dict[str, Callable[[], list[str]]] = {**WORKLOADS, "simulator": simulator_workload, "late": late_subscribers}


@pytest.mark.parametrize("name", sorted(ALL))
@pytest.mark.parametrize("seam", [Seam.DELTA, Seam.FULL])
def test_every_view_equals_the_full_proof_computation(name: str, seam: Seam, monkeypatch: pytest.MonkeyPatch) -> None:
    checked = Checked()
    checked.install(monkeypatch)
    outputs = list(simulate(ALL[name](), SimulatorConfig(seam=seam), relay_proofs=True))
    views = [RelayView.from_json(r.value) for r in outputs if r.topic.endswith(".relay-proofs")]
    assert checked.views == len(views) > 0
    if seam is Seam.DELTA:
        assert checked.deltas > 0 and checked.cheap > 0  # the cheap path ran


# -- by hand: tries changed directly, views made by _seam_nodes -----------------------------------------------

def run_blocks(blocks: list[tuple[dict[int, dict[bytes, bytes | None]], dict[int, Keys]]]) -> int:
    """Apply each block's child changes to one RelayTries, then make every subscriber's view with the stage's
    ``_seam_nodes`` and compare it with the reference. Returns how many views were deltas."""
    stage = RelayStage("realm", SimulatorConfig())
    book = _Book(StateTransaction(MemoryBackend()))
    tries = RelayTries()
    previous: dict[int, set[bytes]] = {}
    deltas = 0
    for number, (changes, declared) in enumerate(blocks, start=1):
        tries.apply(child_changes=changes)
        block = _BlockPaths(tries, {para: list(c) for para, c in changes.items()})
        for subscriber, keys in sorted(declared.items()):
            proof = full_view_nodes(tries, keys, None)
            expected = full_view_nodes(tries, keys, previous.get(subscriber)) if subscriber in previous else proof
            got = stage._seam_nodes(book, subscriber, number, keys, block)
            assert got == (expected, subscriber not in previous), f"block {number}, subscriber {subscriber}"
            deltas += subscriber in previous
            previous[subscriber] = {blake2_256(node) for node in proof}
            book.set_last_view(subscriber, number)
    return deltas


A, B, C = b"a" * 32, b"b" * 32, b"c" * 32  # 32-byte values: inline in V1, leaves of 34+ bytes (hash-referenced)
K1, K2, K3 = bytes([0x10]) * 32, bytes([0x20]) * 32, bytes([0x21]) * 32


def test_two_identical_leaves_at_different_positions() -> None:
    """K1 and K2 hold the same value under the same partial key: one node at two positions. When K2 moves
    away and back, the node stays in P_n through K1 (counted twice, then once); the same holds across two
    child tries with identical contents (identical roots at two main-trie positions)."""
    both = {1: {K1: A, K2: A}, 2: {K1: A, K2: A}}
    follow: dict[int, Keys] = {7: {1: [K1, K2], 2: [K1, K2]}, 8: {1: [K2], 2: [K1]}}
    deltas = run_blocks([
        (both, follow),
        ({1: {K2: B}}, follow),
        ({1: {K2: A}}, follow),
        ({2: {K1: C}}, follow),
        ({2: {K1: A}, 1: {K3: B}}, follow),  # K3 splits K2's leaf: a moved node off K3's path
        ({1: {K3: None}}, follow),           # and merges it back
        ({1: {K1: None, K2: None}}, follow),  # child 1 keeps only... nothing of K1, K2
        ({1: {K3: None}}, follow),            # a delete of an absent key: no change
        ({2: {K1: None, K2: None}}, follow),  # child 2 emptied: its root entry leaves the main trie
        ({2: {K2: A}}, follow),               # and created again
        ({1: {K1: A}}, {7: {1: [K1]}, 8: {1: [K2], 2: [K1]}}),  # 7's keys change: full computation, as a delta
        ({1: {K2: A}}, {7: {1: [K1]}, 8: {1: [K2], 2: [K1]}, 9: {2: [K2]}}),  # 9's first view
    ])
    assert deltas >= 15


def test_random_blocks_with_hashed_values_and_subscription_changes() -> None:
    rng = random.Random(11)
    keys = [bytes([rng.randrange(4) * 16 + rng.randrange(2)]) + bytes([i]) * 3 for i in range(24)]
    values = [b"x" * 40, b"y" * 40, b"z" * 8, b"w" * 32, b"v" * 33]  # hashed (V1: 33 bytes and over) and inline
    blocks: list[tuple[dict[int, dict[bytes, bytes | None]], dict[int, Keys]]] = []
    declared: dict[int, Keys] = {}
    for number in range(60):
        changes: dict[int, dict[bytes, bytes | None]] = {}
        for para in (1, 2, 3):
            if rng.random() < 0.7:
                changes[para] = {rng.choice(keys): rng.choice([*values, None]) for _ in range(rng.randint(1, 6))}
        if number % 9 == 0:
            subscriber = rng.randrange(4)
            declared[subscriber] = {para: rng.sample(keys, rng.randint(1, 10)) for para in rng.sample([1, 2, 3, 4], 2)}
        blocks.append((changes, dict(declared)))
    assert run_blocks(blocks) > 100


@pytest.mark.parametrize("values", [[A, A, B], [b"x" * 40, b"x" * 40, b"q"], [b"s"] * 3])
def test_path_prover_gives_the_trie_proof(values: list[bytes]) -> None:
    trie = Trie()
    keys = [K1, K2, K3]
    trie.apply(dict(zip(keys, values)))
    prover = PathProver(trie, empty_node=True)
    for wanted in ([K1], [K1, K2], keys, [b"\x10"], [K1 + b"\x00", b"\xff" * 32]):
        entries = prover.entries(wanted)
        assert sorted({node for _, node in entries.values()}) == trie.prove(wanted)
        assert all(blake2_256(node) == node_hash for node_hash, node in entries.values())
    assert [node for _, node in PathProver(Trie(), empty_node=True).entries([K1]).values()] == Trie().prove([K1])
