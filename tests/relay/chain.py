"""A test harness that authors relay blocks: signs envelopes, numbers records, writes manifests."""

from __future__ import annotations

from dataclasses import dataclass, field

from state import MemoryBackend

from pubsub_core.envelope import KeyRegistry, Signer, Topic
from pubsub_core.hashing import blake2_256
from pubsub_core.relay import BlockHeader, BlockResult, Genesis, InputRecord, RelayBlock, RelayConfig, RelayMachine
from pubsub_core.xcm import Xcm, encode_versioned_xcm, sovereign_account

REALM = "polkadot"
MANAGER = Signer(bytes([21]) * 32)
OTHER = Signer(bytes([22]) * 32)
ROOT = Signer(bytes([23]) * 32)
COLLATORS = {para: Signer(blake2_256(b"collator" + para.to_bytes(4, "little"))) for para in (1000, 2000, 2001, 3000)}


def registry() -> KeyRegistry:
    return KeyRegistry(
        para_keys={para: frozenset({signer.public_key}) for para, signer in COLLATORS.items()},
        accounts=frozenset({MANAGER.public_key, OTHER.public_key}),
        root_keys=frozenset({ROOT.public_key}),
    )


def genesis() -> Genesis:
    return Genesis(
        endowments=((MANAGER.public_key, 10_000), (OTHER.public_key, 10_000), (sovereign_account(2000), 200)),
        para_managers=((2000, MANAGER.public_key), (2001, MANAGER.public_key), (3000, OTHER.public_key)),
    )


def block_hash(number: int) -> bytes:
    return blake2_256(b"block" + number.to_bytes(4, "little"))


@dataclass
class Chain:
    """Authors records and blocks for one realm; ``produce`` returns the next block's records and header."""

    config: RelayConfig = field(default_factory=lambda: RelayConfig(registry=registry()))
    number: int = 0
    session: int = 0
    positions: dict[tuple[str, str], int] = field(default_factory=dict)
    seqnos: dict[tuple[str, str, bytes], int] = field(default_factory=dict)
    pending: list[InputRecord] = field(default_factory=list)

    def raw(self, stream: str, origin: str, value: bytes) -> InputRecord:
        """Queue a record with arbitrary bytes (for malformed input)."""
        position = self.positions.get((stream, origin), 0)
        self.positions[(stream, origin)] = position + 1
        record = InputRecord(stream, origin, position, value)
        self.pending.append(record)
        return record

    def signed(self, signer: Signer, stream: str, origin: str, data: bytes, seqno: int | None = None) -> InputRecord:
        slot = (stream, origin, signer.public_key)
        number = self.seqnos.get(slot, 0) + 1 if seqno is None else seqno
        self.seqnos[slot] = max(self.seqnos.get(slot, 0), number)
        envelope = signer.sign(Topic(REALM, stream, origin), number, data)
        return self.raw(stream, origin, envelope.encode())

    def upward(self, para: int, message: Xcm) -> InputRecord:
        return self.signed(COLLATORS[para], "upward", str(para), encode_versioned_xcm(message))

    def call(self, signer: Signer, data: bytes, root: bool = False) -> InputRecord:
        return self.signed(signer, "extrinsics", "root" if root else signer.public_key.hex(), data)

    def produce(self) -> RelayBlock:
        self.number += 1
        last: dict[tuple[str, str], int] = {}
        for record in self.pending:
            last[(record.stream, record.origin)] = record.position
        header = BlockHeader(
            self.number, block_hash(self.number), block_hash(self.number - 1), 5 * 1024 * 1024, self.session,
            tuple(sorted((s, o, p) for (s, o), p in last.items())),
        )
        block = RelayBlock(header, tuple(self.pending))
        self.pending = []
        return block


def fresh_machine(config: RelayConfig | None = None) -> tuple[RelayMachine, MemoryBackend]:
    machine = RelayMachine(config or RelayConfig(registry=registry()))
    backend = MemoryBackend()
    machine.initialize(backend, genesis())
    return machine, backend


def run(blocks: list[RelayBlock], config: RelayConfig | None = None, restart: bool = False) -> list[BlockResult]:
    """Apply ``blocks`` on a fresh backend; with ``restart``, through a new machine for every block."""
    machine, backend = fresh_machine(config)
    results = []
    for block in blocks:
        if restart:
            machine = RelayMachine(machine.config)
        results.append(machine.apply_block(backend, block))
    return results
