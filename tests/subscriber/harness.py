"""A small driver for subscriber tests: one relay state, one subscriber, blocks run through Prune then Verify."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pubsub_core.codec.types import PublishedEntry, SubscribedKey
from pubsub_core.hashing import blake2_256
from pubsub_core.subscriber import (
    BlockContext,
    BlockOutcome,
    RelayProof,
    SubscriberConfig,
    Subscriptions,
    collate,
    process_relay_proof,
    prune,
    pubsub_budget,
)
from pubsub_core.subscriber.engine import EngineResult
from pubsub_core.trie import ProofDB, RelayTries, walk_path
from state import MemoryBackend, StateTransaction

SUBSCRIBER = 4000


def key(name: str) -> bytes:
    """A 32-byte published key named like the scenarios (Blake2-256 of the name)."""
    return blake2_256(name.encode())


def entry(value: bytes, ttl: int = 0, when: int = 0) -> bytes:
    return PublishedEntry(value, ttl, when).encode()


@dataclass
class Harness:
    """Relay state + subscriber state; ``block()`` publishes nothing, it proves and verifies one relay block."""

    config: SubscriberConfig = field(default_factory=SubscriberConfig)
    relay: RelayTries = field(default_factory=RelayTries)
    backend: MemoryBackend = field(default_factory=MemoryBackend)
    number: int = 1
    proofs: list[RelayProof] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Something else in the main trie, so no publisher's entry is the whole main trie.
        self.relay.set_main({b":code": b"runtime", b"other": b"x" * 40})

    def publish(self, para: int, changes: Mapping[bytes, bytes | None]) -> None:
        self.relay.apply(child_changes={para: dict(changes)})

    def context(self, max_pov: int = 5_000_000, dmq: Sequence[int] = (), hrmp: Sequence[int] = ()) -> BlockContext:
        budget = pubsub_budget(max_pov, dmq, hrmp, self.config)
        return BlockContext(SUBSCRIBER, self.number, blake2_256(b"block" + self.number.to_bytes(8, "little")),
                            self.relay.relay_root, budget)

    def collate(self, subs: Subscriptions, ctx: BlockContext) -> RelayProof:
        return collate(self.relay, self.backend, ctx, subs, self.config)

    def full_proof(self, para_keys: Mapping[int, Sequence[bytes]]) -> list[bytes]:
        """What a collator without pruning would send: full paths to every subscribed key."""
        return self.relay.prove(child_keys={para: list(keys) for para, keys in para_keys.items()})

    def predict(self, subs: Subscriptions, ctx: BlockContext) -> EngineResult:
        initial = ProofDB(self.relay.prove(child_keys={p: list(k) for p, k in subs.merged().items()}))
        return prune(initial, self.backend, ctx, subs, self.config)

    def block(
        self,
        subs: Subscriptions,
        *,
        max_pov: int = 5_000_000,
        dmq: Sequence[int] = (),
        hrmp: Sequence[int] = (),
        tamper: Callable[[RelayProof], RelayProof] | None = None,
    ) -> BlockOutcome:
        """Prune, (optionally tamper), Verify and commit one block; the relay block number then advances."""
        ctx = self.context(max_pov, dmq, hrmp)
        proof = self.collate(subs, ctx)
        self.proofs.append(proof)
        if tamper is not None:
            proof = tamper(proof)
        txn = StateTransaction(self.backend)
        outcome = process_relay_proof(txn, proof, ctx, subs, self.config)
        txn.commit()
        self.number += 1
        return outcome

    def txn(self) -> StateTransaction:
        return StateTransaction(self.backend)


def subs_of(mapping: Mapping[int, Sequence[bytes]]) -> Subscriptions:
    return Subscriptions.of({para: [SubscribedKey(k) for k in keys] for para, keys in mapping.items()})


def path_nodes(h: Harness, para: int, keys: Sequence[bytes]) -> dict[bytes, bytes]:
    """Hash -> node of every hashed structure node on the paths to ``keys`` in the current child trie."""
    child = h.relay.child(para)
    db = ProofDB(child.prove(list(keys)))
    found: dict[bytes, bytes] = {}
    for k in keys:
        for step in walk_path(db, child.root, k):
            if step.node_hash is not None:
                found[step.node_hash] = step.encoded
    return found
