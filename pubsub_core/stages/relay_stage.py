"""Stage R, the relay chain of one realm: authenticate input records when they arrive, buffer them until a
block includes them, apply blocks in order with the block machine and the real router, and build each
subscriber's relay view of the block.

Nothing unauthenticated occupies a place (docs/threat-model.md): a record is buffered at its (stream, origin,
position) only once its envelope is signed, for this realm, stream and origin, by a member for that origin, and
carries a seqno its sender has not used on that stream and origin before; a block is queued only once
admitted. Everything that arrives before the realm's genesis (which holds the key registry) is held and
authenticated when the genesis comes. A block waits until every record its manifest includes has arrived (its
input topics are read independently, as Kafka partitions are), so the outputs depend only on each topic's own
order. Pure apart from the state backend it owns, which holds everything it keeps (see docs/simulator.md,
"The seam between the stages").
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Final

from state import MemoryBackend, StateBackend, StateTransaction

from pubsub_core.codec.memo import DecodeMemo
from pubsub_core.envelope import Unauthenticated
from pubsub_core.relay import (
    BlockHeader,
    BlockResult,
    ForwardedCall,
    InputRecord,
    RelayBlock,
    RelayError,
    RelayMachine,
    RecordOutcome,
    Status,
    canonical_json,
)
from pubsub_core.relay.machine import relay_tries
from pubsub_core.router import pending_inbound
from pubsub_core.router.relay_adapter import RelayRouter
from pubsub_core.subscriber.calls import (
    SetSubscriptions,
    check_subscription_limits,
    decode_subscriber_call,
    subscriber_of,
)
from pubsub_core.stages.config import Seam, SimulatorConfig
from pubsub_core.stages.ingest import short
from pubsub_core.subscriber.errors import SubscriberCallError
from pubsub_core.stages.records import (
    INPUT_STREAMS,
    GenesisRecord,
    JsonText,
    LogRecord,
    OutputRecord,
    RelayView,
    SimOutcome,
    SubscriberCallFailed,
)

__all__ = ["RelayStage", "RelayStep", "proof_delta"]


@dataclass(frozen=True, slots=True)
class RelayStep:
    """What Stage R emits for one block read from ``blocks``: its output records (rejections, relay events,
    refused subscriber calls, the seal; or the block's own rejection) and one view per subscriber."""

    number: int
    outputs: tuple[OutputRecord, ...]
    views: tuple[RelayView, ...]


def _views(backend: StateBackend, realm: str, seam: Seam, header: BlockHeader, relay_root: bytes,
           declared: dict[int, dict[int, tuple[bytes, ...]]], calls: dict[int, tuple[ForwardedCall, ...]],
           pending: dict[int, tuple[tuple[int, ...], tuple[int, ...]]]) -> tuple[RelayView, ...]:
    """Each subscriber's view of the state after the block (the relay parent of its next block): for each
    subscriber in ``pending``, a proof of the keys it ``declared`` before this block, its ``calls`` in the block
    and the sizes of its pending downward and horizontal messages; commits the views' bookkeeping."""
    subscribers = sorted(pending)
    if not subscribers:
        return ()
    book = _Book(StateTransaction(backend))
    txn = StateTransaction(backend)
    try:
        proofs = relay_tries(txn).prove_each_hashed([declared.get(subscriber, {}) for subscriber in subscribers])
    finally:
        txn.rollback()
    views = []
    for subscriber, proof in zip(subscribers, proofs):
        sent, full = _seam_nodes(book, seam, subscriber, proof)
        downward, horizontal = pending[subscriber]
        views.append(RelayView(realm, subscriber, header.number, header.hash, relay_root, header.max_pov_size,
                               downward, horizontal, sent, calls.get(subscriber, ()), book.last_view(subscriber),
                               full))
        book.set_last_view(subscriber, header.number)
    book.txn.commit()
    return tuple(views)


def _seam_nodes(book: _Book, seam: Seam, subscriber: int, proof: dict[bytes, bytes]) -> tuple[tuple[bytes, ...], bool]:
    """What a view carries of the proof P_n (``proof``: node -> hash; sent sorted by node): all of it
    (``full``) for a subscriber's first view and under ``seam: "full"``; otherwise the nodes not in its
    previous view's P_{n-1}. Remembers P_n's hashes either way, so the next view can be a delta whatever this
    one was."""
    nodes = sorted(proof)
    hashes = [proof[node] for node in nodes]
    previous = book.sent_nodes(subscriber)
    book.set_sent_nodes(subscriber, hashes)
    if previous is None or seam is Seam.FULL:
        return tuple(nodes), True
    return proof_delta(nodes, hashes, previous), False


class RelayStage:
    """One realm's relay chain. Everything it keeps is in its state backend (a MemoryBackend in the simulator,
    the realm's state store in the Spark job): the relay state, and its own bookkeeping under ``simulator.*``
    (genesis, records held until the genesis, buffered records, included positions, seqnos received, blocks
    waiting for records, subscriptions). A new stage over the same backend therefore carries on where the last
    one stopped."""

    def __init__(self, realm: str, config: SimulatorConfig, backend: StateBackend | None = None) -> None:
        self.realm = realm
        self.config = config
        self.backend = backend if backend is not None else MemoryBackend()
        self._machine: RelayMachine | None = None
        self._awaited: str | None = None
        """The record the first waiting block misses, None when unknown. Until it arrives no other record can
        make a block ready, so the queue is not looked at again (a batch that feeds a block before its records
        would otherwise re-read the queue and rescan the buffer on every record). In memory only: a stage built
        afresh, as the job builds one every micro-batch, finds it again from the stored queue."""

    # -- inputs -------------------------------------------------------------------------------------
    def feed(self, log: LogRecord) -> tuple[list[OutputRecord], list[RelayStep]]:
        """Take one parsed record: the refusals it caused now (its own; with a genesis, those of the records
        held until it), then the blocks it made ready, in order. Commits the stage's bookkeeping once."""
        book = _Book(StateTransaction(self.backend))
        value = log.value
        immediate: list[OutputRecord] = []
        steps: list[RelayStep] = []
        try:
            if isinstance(value, GenesisRecord):
                immediate, steps = self._genesis(book, log, value)
            elif (machine := self._machine_for(book)) is None:
                immediate = self._hold(book, log)
            else:
                immediate, steps = self._arrive(book, machine, log)
        except BaseException:
            self._awaited = None  # it may describe state that is not committed
            raise
        book.txn.commit()
        return immediate, steps

    def finish(self) -> list[OutputRecord]:
        """End of input: records held for a genesis that never came, blocks still waiting for records, and
        records no block included, are rejected."""
        self._awaited = None
        book = _Book(StateTransaction(self.backend))
        out = [self._refusal(log, "rejected", "NoGenesis", "the realm's genesis never arrived")
               for log in book.release(self.realm)]
        while (waiting := book.first_waiting()) is not None:
            log_id, key, record, header = waiting
            missing = self._missing(book, header)
            detail = f"never received {missing[0]}" if missing else "an earlier block never got its records"
            out.append(self._outcome(f"block/{log_id}", key, SimOutcome(
                header.number, record.record_id, "rejected", "MissingRecords", detail)))
            book.pop_waiting()
        for record in book.buffered():
            out.append(self._outcome(f"outcome/{record.record_id}", record.origin, SimOutcome(
                None, record.record_id, "rejected", "NeverIncluded", "no block included this record")))
            book.unbuffer(record)
        book.txn.commit()
        return out

    def _outcome(self, output_id: str, key: str, outcome: SimOutcome | dict[str, object]) -> OutputRecord:
        """A ``rejected`` record; its detail and key are cut short (they may quote hostile input)."""
        value = dict(outcome if isinstance(outcome, dict) else outcome.to_json())
        value["detail"] = short(str(value["detail"]))
        return OutputRecord(f"{self.realm}.rejected", short(key), output_id, value)

    def _refusal(self, log: LogRecord, status: str, reason: str, detail: str) -> OutputRecord:
        """The outcome of a line refused when it arrives: ``block/<log id>`` for a ``blocks`` record,
        ``ingest/<log id>`` for any other."""
        if log.stream == "blocks" and isinstance(log.value, InputRecord):
            return self._outcome(f"block/{log.log_id}", log.key,
                                 SimOutcome(None, log.value.record_id, status, reason, detail))
        return self._outcome(f"ingest/{log.log_id}", log.key, SimOutcome(None, log.log_id, status, reason, detail))

    def _genesis(self, book: _Book, log: LogRecord,
                 genesis: GenesisRecord) -> tuple[list[OutputRecord], list[RelayStep]]:
        """Start the realm from its first genesis record (refused if ``trusted_genesis`` pins another one), then
        take the records held until it, in arrival order. A later genesis is refused."""
        if self._machine_for(book) is not None:
            return [self._refusal(log, "rejected", "GenesisTooLate", "the realm already has its genesis")], []
        trusted = self.config.trusted_genesis.get(self.realm)
        if trusted is not None and genesis.digest() != trusted:
            detail = f"digest 0x{genesis.digest().hex()} is not the trusted 0x{trusted.hex()}"
            return [self._refusal(log, "rejected", "UntrustedGenesis", detail)], []
        machine = self._start(book, genesis)
        immediate: list[OutputRecord] = []
        steps: list[RelayStep] = []
        for held in book.release(self.realm):
            refused, ready = self._arrive(book, machine, held)
            immediate += refused
            steps += ready
        return immediate, steps

    def _hold(self, book: _Book, log: LogRecord) -> list[OutputRecord]:
        """Keep a record that came before the realm's genesis (nothing can authenticate it yet), up to
        ``max_held_before_genesis``."""
        held = book.held_count()
        if held >= self.config.max_held_before_genesis:
            return [self._refusal(log, "rejected", "GenesisBacklogFull",
                                  f"{held} records already wait for the realm's genesis")]
        book.hold(log)
        return []

    def _machine_for(self, book: _Book) -> RelayMachine | None:
        """The realm's block machine, from the stored genesis; None while the realm has none."""
        if self._machine is None:
            genesis = book.genesis()
            if genesis is not None:
                self._machine = self._make(genesis)
        return self._machine

    def _make(self, genesis: GenesisRecord) -> RelayMachine:
        router = self.config.router
        return RelayMachine(self.config.relay_config(self.realm, genesis.registry),
                            router_factory=lambda: RelayRouter(router))

    def _start(self, book: _Book, genesis: GenesisRecord) -> RelayMachine:
        """Create the realm's block machine (with the real router), write its genesis state and remember it."""
        machine = self._make(genesis)
        machine.initialize(self.backend, genesis.genesis)
        book.set_genesis(genesis)
        self._machine = machine
        return machine

    def _arrive(self, book: _Book, machine: RelayMachine, log: LogRecord) -> tuple[list[OutputRecord], list[RelayStep]]:
        """A record or block of a realm that has its genesis: its refusal, or the blocks it made ready."""
        record = log.value
        assert isinstance(record, InputRecord)  # a genesis record never gets here
        if record.stream == "blocks":
            admitted = machine.admit_header(self.backend, record)
            if isinstance(admitted, RecordOutcome):  # refused on arrival: no block number (that would depend
                # on how far the chain got, i.e. on how the topics interleave)
                return [self._refusal(log, admitted.status.value, str(admitted.reason), admitted.detail)], []
            book.push_waiting(log.log_id, log.key, record, admitted)
        else:
            refused = self._record(book, machine, log, record)
            if refused is not None:
                return [refused], []
            if self._awaited is not None and self._awaited != record.record_id:
                return [], []
        return [], self._ready_blocks(book)

    def _record(self, book: _Book, machine: RelayMachine, log: LogRecord, record: InputRecord) -> OutputRecord | None:
        """Buffer an authentic record at its position, or refuse it: not authentic (admission's ``Malformed``,
        ``BadSignature``, ``NotMember``), a seqno at or below the highest its sender used on this stream and
        origin (ignored ``Duplicate``: a copy or a replay, wherever it was placed), or another envelope at a
        position already received (``PositionConflict``: only the origin's own key can sign one). An authentic
        envelope with a new seqno spends it, buffered or refused, as admission's watermark does (envelope.md)."""
        try:
            envelope = machine.admission.authenticate(record.stream, record.origin, record.value).envelope
        except Unauthenticated as exc:
            return self._refusal(log, "rejected", exc.reason.value, exc.detail)
        stream, origin = record.stream, record.origin
        received = book.received(stream, origin, envelope.sender)
        if received is not None and envelope.seqno <= received:
            return self._refusal(log, "ignored", "Duplicate",
                                 f"seqno {envelope.seqno} of 0x{envelope.sender.hex()} on {stream}/{origin} was "
                                 f"already received")
        book.set_received(stream, origin, envelope.sender, envelope.seqno)
        taken = book.has_buffered(stream, origin, record.position)
        if taken or record.position <= book.included(stream, origin):
            return self._refusal(log, "rejected", "PositionConflict",
                                 f"{record.record_id} was already received with another envelope")
        book.buffer(record)
        return None

    # -- blocks -------------------------------------------------------------------------------------
    def _missing(self, book: _Book, header: BlockHeader) -> list[str]:
        """The first record id the block includes that has not arrived yet (none: an empty list). Stopping at
        the first bounds the work by the records buffered, whatever position a manifest names (2**64-1)."""
        for stream, origin, last in header.manifest:
            if stream not in INPUT_STREAMS:
                continue
            first = book.included(stream, origin) + 1
            for position in range(first, last + 1):
                if not book.has_buffered(stream, origin, position):
                    return [f"{stream}/{origin}/{position}"]
        return []

    def _ready_blocks(self, book: _Book) -> list[RelayStep]:
        """Apply queued blocks, in arrival order, while the head of the queue has all its records; remember
        the record the head still misses (``_awaited``)."""
        steps: list[RelayStep] = []
        self._awaited = None
        while (waiting := book.first_waiting()) is not None:
            missing = self._missing(book, waiting[3])
            if missing:
                self._awaited = missing[0]
                break
            book.pop_waiting()
            steps.append(self._apply(book, *waiting))
        return steps

    def _apply(self, book: _Book, log_id: str, key: str, block: InputRecord, header: BlockHeader) -> RelayStep:
        """Apply one block with the records its manifest includes; a block the machine refuses leaves them
        buffered for a later block."""
        machine = self._machine_for(book)
        assert machine is not None  # a block is queued only once the realm has its genesis
        records: list[InputRecord] = []
        for stream, origin, last in header.manifest:
            first = book.included(stream, origin) + 1
            records += [r for p in range(first, last + 1) if (r := book.buffered_at(stream, origin, p)) is not None]
        try:
            result = machine.apply_block(self.backend, RelayBlock(header, tuple(records)))
        except RelayError as exc:
            rejection = self._outcome(f"block/{log_id}", key, SimOutcome(
                header.number, block.record_id, "rejected", type(exc).__name__, str(exc)))
            return RelayStep(header.number, (rejection,), ())
        for record in records:
            book.unbuffer(record)
            book.set_included(record.stream, record.origin, record.position)
        return self._step(book, header, result, {r.record_id: r.origin for r in records})

    def _step(self, book: _Book, header: BlockHeader, result: BlockResult, origins: dict[str, str]) -> RelayStep:
        """Stage R's output records for an applied block (its seal last) and each subscriber's view of it; the
        block's subscription changes apply after the views' proofs."""
        realm, number = self.realm, header.number
        out = [
            OutputRecord(f"{realm}.rejected", origins[o.record_id], f"outcome/{o.record_id}", o.to_json())
            for o in result.outcomes
            if o.status is not Status.APPLIED
        ]
        out += [OutputRecord(f"{realm}.events", "relay", f"relay/{e.block}/{e.index}", JsonText(e.json_text()))
                for e in result.events]
        calls: dict[int, list[ForwardedCall]] = {}
        changes: list[tuple[int, SetSubscriptions]] = []
        for forwarded in result.forwarded:
            subscriber: int | None = None
            try:
                call = decode_subscriber_call(forwarded.call)
                subscriber = subscriber_of(forwarded.origin, call, forwarded.call)
                check_subscription_limits(call, self.config.subscriber, forwarded.call)
            except SubscriberCallError as exc:
                failed = SubscriberCallFailed(number, forwarded.record_id, subscriber, exc.reason, exc.detail)
                out.append(OutputRecord(f"{realm}.events", "relay" if subscriber is None else str(subscriber),
                                        failed.id, failed.to_json()))
                continue
            calls.setdefault(subscriber, []).append(forwarded)
            if isinstance(call, SetSubscriptions):
                changes.append((subscriber, call))
        declared = book.subscriptions()
        subscribers = sorted(set(declared) | set(calls))
        txn = StateTransaction(self.backend)
        pending: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        for subscriber in subscribers:
            inbound = pending_inbound(txn, subscriber, number)
            pending[subscriber] = (tuple(inbound.downward_sizes()), tuple(inbound.horizontal_sizes()))
        txn.rollback()
        proven = {subscriber: declared[subscriber] for subscriber in subscribers if subscriber in declared}
        # the block's subscription changes apply after its proof: its views still use the previous subscriptions
        for subscriber, change in changes:
            book.set_subscriptions(subscriber, change)
        views = _views(self.backend, realm, self.config.seam, header, result.seal.relay_root, proven,
                       {subscriber: tuple(forwarded) for subscriber, forwarded in calls.items()}, pending)
        out.append(OutputRecord(f"{realm}.seals", str(number), f"seal/{number}", result.seal.to_json()))
        return RelayStep(number, tuple(out), views)


def proof_delta(proof: Sequence[bytes], hashes: Sequence[bytes], previous: Collection[bytes]) -> tuple[bytes, ...]:
    """The nodes of ``proof`` (``hashes``: their Blake2-256, in the same order) whose hash is not in
    ``previous``, in the proof's order: what a delta view carries (benchmarks/metering.py measures it too)."""
    return tuple(node for node, node_hash in zip(proof, hashes) if node_hash not in previous)


_DECLARED: Final[DecodeMemo[dict[int, tuple[bytes, ...]]]] = DecodeMemo(1 << 10)
"""Declared subscriptions (publisher -> keys, read only) by the stored ``set_subscriptions`` call: every block
proves every subscriber's declaration, which rarely changes (decoding them every block was 0.7% of the
simulator benchmark's instructions)."""


def _slot(stream: str, origin: str) -> bytes:
    return stream.encode() + b"\x00" + origin.encode() + b"\x00"


def _buffer_key(stream: str, origin: str, position: int) -> bytes:
    """stream ‖ 0 ‖ origin ‖ 0 ‖ u64 BE position (streams hold no 0 byte, the position's length is fixed)."""
    return _slot(stream, origin) + position.to_bytes(8, "big")


_ENVELOPE: Final = b"\x01"
"""First byte of a buffered record's stored value: the envelope's bytes follow (the key holds the rest). Older
states hold the record's JSON with the envelope in hex, which cost 3% of the simulator's run to encode and decode;
JSON values start with ``{``, so such a state still reads."""


def _buffered_record(stream: str, origin: str, position: int, raw: bytes) -> InputRecord:
    if raw[:1] == _ENVELOPE:
        return InputRecord(stream, origin, position, raw[1:])
    return InputRecord.from_json(json.loads(raw))


class _Book:
    """Stage R's bookkeeping in its StateTransaction (namespaces ``simulator.*``, JSON or SCALE values)."""

    GENESIS: Final = "simulator.Genesis"
    HELD: Final = "simulator.Held"  # u64 BE arrival number -> {stream, key, offset, record} JSON, before the genesis
    HELD_COUNT: Final = "simulator.HeldCount"  # u64 LE: how many records are held
    RECEIVED: Final = "simulator.Received"  # slot ‖ sender -> u64 LE highest seqno received from it (authentic)
    BUFFER: Final = "simulator.Buffer"  # slot ‖ u64 BE position -> 0x01 ‖ envelope (InputRecord JSON before)
    INCLUDED: Final = "simulator.Included"  # slot -> u64 LE last included position
    WAITING: Final = "simulator.Waiting"  # u64 BE arrival number -> {log_id, key, record, header} JSON
    SUBSCRIPTIONS: Final = "simulator.Subscriptions"  # u32 BE subscriber -> set_subscriptions call
    LAST_VIEW: Final = "simulator.LastView"  # u32 BE subscriber -> u64 BE block of its latest view
    SENT_NODES: Final = "simulator.SentNodes"  # u32 BE subscriber -> its latest view's P_n: 32-byte hashes, sorted

    def __init__(self, txn: StateTransaction) -> None:
        self.txn = txn

    def genesis(self) -> GenesisRecord | None:
        raw = self.txn.get_value(self.GENESIS)
        return None if raw is None else GenesisRecord.from_json(json.loads(raw))

    def set_genesis(self, genesis: GenesisRecord) -> None:
        self.txn.set_value(self.GENESIS, canonical_json(genesis.to_json()).encode())

    def held_count(self) -> int:
        raw = self.txn.get_value(self.HELD_COUNT)
        return 0 if raw is None else int.from_bytes(raw, "little")

    def hold(self, log: LogRecord) -> None:
        """Keep a record until the realm's genesis, after those already held."""
        assert isinstance(log.value, InputRecord)
        number = self.held_count()
        body = {"stream": log.stream, "key": log.key, "offset": log.offset, "record": log.value.to_json()}
        self.txn.put(self.HELD, number.to_bytes(8, "big"), canonical_json(body).encode())
        self.txn.set_value(self.HELD_COUNT, (number + 1).to_bytes(8, "little"))

    def release(self, realm: str) -> list[LogRecord]:
        """Every held record, in arrival order, no longer held."""
        held = []
        for number, raw in sorted(self.txn.items(self.HELD).items()):
            body = json.loads(raw)
            held.append(LogRecord(realm, str(body["stream"]), str(body["key"]), int(body["offset"]),
                                  InputRecord.from_json(body["record"])))
            self.txn.delete(self.HELD, number)
        self.txn.set_value(self.HELD_COUNT, None)
        return held

    def received(self, stream: str, origin: str, sender: bytes) -> int | None:
        """The highest seqno of ``sender`` received in an authentic envelope on (stream, origin), if any."""
        raw = self.txn.get(self.RECEIVED, _slot(stream, origin) + sender)
        return None if raw is None else int.from_bytes(raw, "little")

    def set_received(self, stream: str, origin: str, sender: bytes, seqno: int) -> None:
        self.txn.put(self.RECEIVED, _slot(stream, origin) + sender, seqno.to_bytes(8, "little"))

    def included(self, stream: str, origin: str) -> int:
        raw = self.txn.get(self.INCLUDED, _slot(stream, origin))
        return -1 if raw is None else int.from_bytes(raw, "little")

    def set_included(self, stream: str, origin: str, position: int) -> None:
        if position > self.included(stream, origin):
            self.txn.put(self.INCLUDED, _slot(stream, origin), position.to_bytes(8, "little"))

    def buffered_at(self, stream: str, origin: str, position: int) -> InputRecord | None:
        raw = self.txn.get(self.BUFFER, _buffer_key(stream, origin, position))
        return None if raw is None else _buffered_record(stream, origin, position, raw)

    def has_buffered(self, stream: str, origin: str, position: int) -> bool:
        """Whether a record is buffered at that position (``buffered_at`` without decoding it)."""
        return self.txn.get(self.BUFFER, _buffer_key(stream, origin, position)) is not None

    def buffer(self, record: InputRecord) -> None:
        self.txn.put(self.BUFFER, _buffer_key(record.stream, record.origin, record.position), _ENVELOPE + record.value)

    def unbuffer(self, record: InputRecord) -> None:
        self.txn.delete(self.BUFFER, _buffer_key(record.stream, record.origin, record.position))

    def buffered(self) -> list[InputRecord]:
        """Every buffered record, by stream, origin and position."""
        records = []
        for key, raw in sorted(self.txn.items(self.BUFFER).items()):
            stream, _, rest = key.partition(b"\x00")  # the inverse of ``_buffer_key``
            records.append(_buffered_record(stream.decode(), rest[:-9].decode(), int.from_bytes(rest[-8:], "big"), raw))
        return records

    def push_waiting(self, log_id: str, key: str, record: InputRecord, header: BlockHeader) -> None:
        entries = self.txn.items(self.WAITING)
        number = int.from_bytes(max(entries), "big") + 1 if entries else 0
        body = {"log_id": log_id, "key": key, "record": record.to_json(), "header": header.to_json()}
        self.txn.put(self.WAITING, number.to_bytes(8, "big"), canonical_json(body).encode())

    def first_waiting(self) -> tuple[str, str, InputRecord, BlockHeader] | None:
        entries = self.txn.items(self.WAITING)
        if not entries:
            return None
        body = json.loads(entries[min(entries)])
        return (str(body["log_id"]), str(body["key"]), InputRecord.from_json(body["record"]),
                BlockHeader.from_json(body["header"]))

    def pop_waiting(self) -> None:
        self.txn.delete(self.WAITING, min(self.txn.items(self.WAITING)))

    def subscriptions(self) -> dict[int, dict[int, tuple[bytes, ...]]]:
        """Subscriber -> publisher -> keys, as the subscribers declared them in earlier blocks."""
        declared: dict[int, dict[int, tuple[bytes, ...]]] = {}
        for raw_subscriber, raw_call in sorted(self.txn.items(self.SUBSCRIPTIONS).items()):
            mapping = _DECLARED.get(raw_call)
            if mapping is None:
                call = decode_subscriber_call(raw_call)
                if not isinstance(call, SetSubscriptions):
                    continue
                mapping = call.mapping()
                _DECLARED.remember(raw_call, mapping)
            declared[int.from_bytes(raw_subscriber, "big")] = mapping
        return declared

    def last_view(self, subscriber: int) -> int | None:
        """The block of the subscriber's latest view (its next view's ``previous``)."""
        raw = self.txn.get(self.LAST_VIEW, subscriber.to_bytes(4, "big"))
        return None if raw is None else int.from_bytes(raw, "big")

    def set_last_view(self, subscriber: int, number: int) -> None:
        self.txn.put(self.LAST_VIEW, subscriber.to_bytes(4, "big"), number.to_bytes(8, "big"))

    def sent_nodes(self, subscriber: int) -> set[bytes] | None:
        """The node hashes of the proof in the subscriber's latest view (None before its first view)."""
        raw = self.txn.get(self.SENT_NODES, subscriber.to_bytes(4, "big"))
        return None if raw is None else {raw[i:i + 32] for i in range(0, len(raw), 32)}

    def set_sent_nodes(self, subscriber: int, hashes: list[bytes]) -> None:
        self.txn.put(self.SENT_NODES, subscriber.to_bytes(4, "big"), b"".join(sorted(hashes)))

    def set_subscriptions(self, subscriber: int, call: SetSubscriptions) -> None:
        self.txn.put(self.SUBSCRIPTIONS, subscriber.to_bytes(4, "big"), call.encode())
