"""Stage R, the relay chain of one realm: buffer input records until a block includes them, apply blocks in
order with the block machine and the real router, and build each subscriber's relay view of the block.

A block waits until every record its manifest includes has arrived (its input topics are read independently,
as Kafka partitions are), so the outputs depend only on each topic's own order. Pure apart from the state
backend it owns; the buffer, the included positions and the subscription index are plain fields (see
docs/simulator.md, "The seam between the stages").
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from state import MemoryBackend, StateBackend, StateTransaction

from pubsub_core.envelope import KeyRegistry
from pubsub_core.relay import (
    BlockHeader,
    BlockResult,
    ForwardedCall,
    Genesis,
    InputRecord,
    RelayBlock,
    RelayError,
    RelayMachine,
    RecordOutcome,
    Status,
)
from pubsub_core.relay.machine import _CHILD_TRIE, _MAIN_TRIE
from pubsub_core.router import pending_inbound
from pubsub_core.router.relay_adapter import RelayRouter
from pubsub_core.simulator.calls import SetSubscriptions, decode_subscriber_call, subscriber_of
from pubsub_core.simulator.config import SimulatorConfig
from pubsub_core.simulator.errors import SimulatorError, SubscriberCallError
from pubsub_core.simulator.records import (
    INPUT_STREAMS,
    GenesisRecord,
    LogRecord,
    OutputRecord,
    RelayView,
    SimOutcome,
    SubscriberCallFailed,
)
from pubsub_core.trie import RelayTries, StateNodeStore

__all__ = ["RelayStage", "RelayStep"]

Slot = tuple[str, str]
_NO_GENESIS = GenesisRecord(KeyRegistry(), Genesis())
"""What a realm starts from when its first block comes before any genesis record: nobody may sign."""


@dataclass(frozen=True, slots=True)
class RelayStep:
    """What Stage R emits for one block read from ``blocks``: its output records (rejections, relay events,
    refused subscriber calls, the seal; or the block's own rejection) and one view per subscriber."""

    number: int
    outputs: tuple[OutputRecord, ...]
    views: tuple[RelayView, ...]


class RelayStage:
    """One realm's relay chain over a state backend (a MemoryBackend in the simulator)."""

    def __init__(self, realm: str, config: SimulatorConfig, backend: StateBackend | None = None) -> None:
        self.realm = realm
        self.config = config
        self.backend = backend if backend is not None else MemoryBackend()
        self.machine: RelayMachine | None = None
        self.buffer: dict[Slot, dict[int, InputRecord]] = {}
        self.included: dict[Slot, int] = {}
        self.waiting: deque[tuple[LogRecord, InputRecord, BlockHeader]] = deque()
        self.subscriptions: dict[int, dict[int, tuple[bytes, ...]]] = {}

    # -- inputs -------------------------------------------------------------------------------------
    def feed(self, log: LogRecord) -> tuple[list[OutputRecord], list[RelayStep]]:
        """Take one parsed line: its own outcome if it has one now (refused, duplicate), then the blocks it
        made ready, in order."""
        value = log.value
        if isinstance(value, GenesisRecord):
            return self._genesis(log, value), []
        if value.stream == "blocks":
            admitted = (self.machine or self._start(_NO_GENESIS)).admit_header(self.backend, value)
            if isinstance(admitted, RecordOutcome):
                return [self._outcome(f"block/{log.log_id}", log.key, admitted.to_json())], []
            self.waiting.append((log, value, admitted))
        else:
            refused = self._record(log, value)
            if refused is not None:
                return [refused], []
        return [], self._ready_blocks()

    def finish(self) -> list[OutputRecord]:
        """End of input: blocks still waiting for records, and records no block included, are rejected."""
        out: list[OutputRecord] = []
        for log, record, header in self.waiting:
            missing = self._missing(header)
            detail = f"never received {missing[0]}" if missing else "an earlier block never got its records"
            out.append(self._outcome(f"block/{log.log_id}", log.key, SimOutcome(
                header.number, record.record_id, "rejected", "MissingRecords", detail)))
        for (stream, origin), records in sorted(self.buffer.items()):
            for position in sorted(records):
                record_id = records[position].record_id
                out.append(self._outcome(f"outcome/{record_id}", origin, SimOutcome(
                    None, record_id, "rejected", "NeverIncluded", "no block included this record")))
        self.waiting.clear()
        self.buffer.clear()
        return out

    def _outcome(self, output_id: str, key: str, outcome: SimOutcome | dict[str, object]) -> OutputRecord:
        value = outcome if isinstance(outcome, dict) else outcome.to_json()
        return OutputRecord(f"{self.realm}.rejected", key, output_id, value)

    def _genesis(self, log: LogRecord, genesis: GenesisRecord) -> list[OutputRecord]:
        """Start the realm from its genesis record; a second one, or one after a block, is refused."""
        if self.machine is not None:
            return [self._outcome(f"ingest/{log.log_id}", log.key, SimOutcome(
                None, log.log_id, "rejected", "GenesisTooLate", "the realm already has a genesis or a block"))]
        self._start(genesis)
        return []

    def _start(self, genesis: GenesisRecord) -> RelayMachine:
        """Create the realm's block machine (with the real router) and write its genesis state."""
        config = self.config.relay_config(self.realm, genesis.registry)
        router = self.config.router
        machine = RelayMachine(config, router_factory=lambda: RelayRouter(router))
        machine.initialize(self.backend, genesis.genesis)
        self.machine = machine
        return machine

    def _record(self, log: LogRecord, record: InputRecord) -> OutputRecord | None:
        """Buffer a record; a position seen before is a duplicate (same bytes or already included) or a conflict."""
        slot = (record.stream, record.origin)
        pending = self.buffer.setdefault(slot, {})
        earlier = pending.get(record.position)
        if record.position <= self.included.get(slot, -1) or earlier == record:
            return self._outcome(f"ingest/{log.log_id}", record.origin, SimOutcome(
                None, log.log_id, "ignored", "Duplicate", f"{record.record_id} was already received"))
        if earlier is not None:
            return self._outcome(f"ingest/{log.log_id}", record.origin, SimOutcome(
                None, log.log_id, "rejected", "PositionConflict",
                f"{record.record_id} was already received with other bytes"))
        pending[record.position] = record
        return None

    # -- blocks -------------------------------------------------------------------------------------
    def _missing(self, header: BlockHeader) -> list[str]:
        """Record ids the block includes that have not arrived yet."""
        missing: list[str] = []
        for stream, origin, last in header.manifest:
            if stream not in INPUT_STREAMS:
                continue
            have = self.buffer.get((stream, origin), {})
            first = self.included.get((stream, origin), -1) + 1
            missing += [f"{stream}/{origin}/{p}" for p in range(first, last + 1) if p not in have]
        return missing

    def _ready_blocks(self) -> list[RelayStep]:
        """Apply queued blocks, in arrival order, while the head of the queue has all its records."""
        steps: list[RelayStep] = []
        while self.waiting and not self._missing(self.waiting[0][2]):
            steps.append(self._apply(*self.waiting.popleft()))
        return steps

    def _apply(self, log: LogRecord, block: InputRecord, header: BlockHeader) -> RelayStep:
        """Apply one block with the records its manifest includes; a block the machine refuses leaves them
        buffered for a later block."""
        machine = self.machine or self._start(_NO_GENESIS)
        records: list[InputRecord] = []
        for stream, origin, last in header.manifest:
            pending = self.buffer.get((stream, origin), {})
            first = self.included.get((stream, origin), -1) + 1
            records += [pending[p] for p in range(first, last + 1) if p in pending]
        try:
            result = machine.apply_block(self.backend, RelayBlock(header, tuple(records)))
        except RelayError as exc:
            rejection = self._outcome(f"block/{log.log_id}", log.key, SimOutcome(
                header.number, block.record_id, "rejected", type(exc).__name__, str(exc)))
            return RelayStep(header.number, (rejection,), ())
        for record in records:
            slot = (record.stream, record.origin)
            del self.buffer[slot][record.position]
            if not self.buffer[slot]:
                del self.buffer[slot]
            self.included[slot] = max(self.included.get(slot, -1), record.position)
        return self._step(header, result, {r.record_id: r.origin for r in records})

    def _step(self, header: BlockHeader, result: BlockResult, origins: dict[str, str]) -> RelayStep:
        """Stage R's output records for an applied block, its views, then the block's subscription changes
        (they apply after the block's proof, so the views still use the previous subscriptions)."""
        realm, number = self.realm, header.number
        out = [
            OutputRecord(f"{realm}.rejected", origins[o.record_id], f"outcome/{o.record_id}", o.to_json())
            for o in result.outcomes
            if o.status is not Status.APPLIED
        ]
        out += [OutputRecord(f"{realm}.events", "relay", f"relay/{e.block}/{e.index}", e.to_json()) for e in result.events]
        calls: dict[int, list[ForwardedCall]] = {}
        changes: list[tuple[int, SetSubscriptions]] = []
        for forwarded in result.forwarded:
            subscriber: int | None = None
            try:
                subscriber = subscriber_of(forwarded.origin, forwarded.call)
                call = decode_subscriber_call(forwarded.call, self.config.subscriber)
            except SubscriberCallError as exc:
                failed = SubscriberCallFailed(number, forwarded.record_id, subscriber, exc.reason, exc.detail)
                out.append(OutputRecord(f"{realm}.events", "relay" if subscriber is None else str(subscriber),
                                        failed.id, failed.to_json()))
                continue
            calls.setdefault(subscriber, []).append(forwarded)
            if isinstance(call, SetSubscriptions):
                changes.append((subscriber, call))
        out.append(OutputRecord(f"{realm}.seals", str(number), f"seal/{number}", result.seal.to_json()))
        views = self._views(header, result.seal.relay_root, calls)
        for subscriber, change in changes:
            self.subscriptions[subscriber] = change.mapping()
        return RelayStep(number, tuple(out), views)

    def _views(self, header: BlockHeader, relay_root: bytes, calls: dict[int, list[ForwardedCall]]) -> tuple[RelayView, ...]:
        """Each subscriber's view of the state after this block (the relay parent of its next block)."""
        subscribers = sorted(set(self.subscriptions) | set(calls))
        if not subscribers:
            return ()
        txn = StateTransaction(self.backend)
        try:
            tries = RelayTries(lambda space: StateNodeStore(txn, _MAIN_TRIE if not space else _CHILD_TRIE + space.hex()))
            if tries.relay_root != relay_root:
                raise SimulatorError(f"block {header.number}: the stored relay tries do not give the sealed root")
            views = []
            for subscriber in subscribers:
                keys = self.subscriptions.get(subscriber, {})
                nodes = tries.prove(child_keys={para: list(k) for para, k in keys.items()})
                pending = pending_inbound(txn, subscriber, header.number)
                views.append(RelayView(
                    self.realm, subscriber, header.number, header.hash, relay_root, header.max_pov_size,
                    tuple(pending.downward_sizes()), tuple(pending.horizontal_sizes()), tuple(nodes),
                    tuple(calls.get(subscriber, ())),
                ))
        finally:
            txn.rollback()
        return tuple(views)
