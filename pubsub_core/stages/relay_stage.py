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

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from state import MemoryBackend, StateBackend, StateTransaction

from pubsub_core.envelope import Envelope, Unauthenticated
from pubsub_core.envelope.errors import EnvelopeDecodeError
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
)
from pubsub_core.relay.machine import relay_tries
from pubsub_core.relay.void import is_void
from pubsub_core.router import pending_inbound
from pubsub_core.router.relay_adapter import RelayRouter
from pubsub_core.subscriber.calls import (
    SetSubscriptions,
    check_subscription_limits,
    decode_subscriber_call,
    subscriber_of,
)
from pubsub_core.stages import stall
from pubsub_core.stages.config import Seam, ProtocolConfig
from pubsub_core.stages.relay_state import RELAY_STATE, QueueEntry, RelayBook
from pubsub_core.subscriber.errors import SubscriberCallError
from pubsub_core.stages.records import (
    INPUT_STREAMS,
    GenesisRecord,
    JsonText,
    LogRecord,
    OutputRecord,
    RelayView,
    SubscriberCallFailed,
    rejection,
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
    book = RelayBook(StateTransaction(backend))
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


def _seam_nodes(book: RelayBook, seam: Seam, subscriber: int, proof: dict[bytes, bytes]) -> tuple[tuple[bytes, ...], bool]:
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
    the realm's state store in the Spark job): the relay state, and its own bookkeeping (``relay_state``: genesis,
    records held until the genesis, buffered records, included positions, seqnos received, blocks waiting for
    records, subscriptions). A new stage over the same backend therefore carries on where the last one stopped;
    it opens the backend with ``RELAY_STATE``, which migrates an older format and refuses a newer one."""

    def __init__(self, realm: str, config: ProtocolConfig, backend: StateBackend | None = None) -> None:
        self.realm = realm
        self.config = config
        self.backend = backend if backend is not None else MemoryBackend()
        RELAY_STATE.open_store(self.backend)
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
        book = RelayBook(StateTransaction(self.backend))
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
        book = RelayBook(StateTransaction(self.backend))
        out = [self._refusal(log, "rejected", "NoGenesis", "the realm's genesis never arrived")
               for log in book.release(self.realm)]
        while (entry := book.first_waiting()) is not None:
            book.pop_waiting(entry)
            if entry.order is not None:
                out.append(self._void_refusal(entry, "VoidNotWaiting", f"block {entry.order.block} never waited"))
                continue
            assert entry.header is not None
            missing = self._missing(book, entry.header, self._voids(book, entry.header)[0])
            detail = f"never received {missing[0]}" if missing else "an earlier block never got its records"
            out.append(self._outcome(f"block/{entry.log_id}", entry.key, RecordOutcome(
                entry.header.number, entry.record.record_id, Status.REJECTED, "MissingRecords", detail)))
        for record in book.buffered():
            out.append(self._outcome(f"outcome/{record.record_id}", record.origin, RecordOutcome(
                None, record.record_id, Status.REJECTED, "NeverIncluded", "no block included this record")))
            book.unbuffer(record)
        book.txn.commit()
        return out

    def _outcome(self, output_id: str, key: str, outcome: RecordOutcome | dict[str, object]) -> OutputRecord:
        """A ``rejected`` record of this realm (``records.rejection``)."""
        return rejection(self.realm, key, output_id, outcome)

    def _refusal(self, log: LogRecord, status: str, reason: str, detail: str) -> OutputRecord:
        """The outcome of a line refused when it arrives: ``block/<log id>`` for a ``blocks`` record,
        ``ingest/<log id>`` for any other."""
        if log.stream == "blocks" and isinstance(log.value, InputRecord):
            return self._outcome(f"block/{log.log_id}", log.key,
                                 RecordOutcome(None, log.value.record_id, Status(status), reason, detail))
        return self._outcome(f"ingest/{log.log_id}", log.key,
                             RecordOutcome(None, log.log_id, Status(status), reason, detail))

    def _genesis(self, book: RelayBook, log: LogRecord,
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

    def _hold(self, book: RelayBook, log: LogRecord) -> list[OutputRecord]:
        """Keep a record that came before the realm's genesis (nothing can authenticate it yet), up to
        ``max_held_before_genesis``."""
        held = book.held_count()
        if held >= self.config.max_held_before_genesis:
            return [self._refusal(log, "rejected", "GenesisBacklogFull",
                                  f"{held} records already wait for the realm's genesis")]
        book.hold(log)
        return []

    def _machine_for(self, book: RelayBook) -> RelayMachine | None:
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

    def _start(self, book: RelayBook, genesis: GenesisRecord) -> RelayMachine:
        """Create the realm's block machine (with the real router), write its genesis state and remember it."""
        machine = self._make(genesis)
        machine.initialize(self.backend, genesis.genesis)
        book.set_genesis(genesis)
        book.start_held_size()
        self._machine = machine
        return machine

    def _arrive(self, book: RelayBook, machine: RelayMachine, log: LogRecord) -> tuple[list[OutputRecord], list[RelayStep]]:
        """A record or block of a realm that has its genesis: its refusal, or the blocks it made ready."""
        record = log.value
        assert isinstance(record, InputRecord)  # a genesis record never gets here
        full = self._hold_full(book, record)
        if full is not None:
            return [self._refusal(log, "rejected", "StalledBufferFull", full)], []
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
        steps = self._ready_blocks(book)
        return self._health(book), steps

    # -- stalls ------------------------------------------------------------------------------------------
    def _hold_full(self, book: RelayBook, record: InputRecord) -> str | None:
        """While the realm is stalled, why ``record`` (not a void order) cannot be held: what Stage R holds is
        at ``max_held_records`` or would pass ``max_held_bytes``. Checked before anything else, so the record
        spends no seqno and can be produced again, unchanged, once the realm moves. None: it may be held."""
        if book.stall() is None or _is_void_record(record):
            return None
        count, size = book.held_size()
        config = self.config
        if count + 1 > config.max_held_records or size + len(record.value) > config.max_held_bytes:
            return (f"the realm is stalled and Stage R holds {count} records and blocks, {size} bytes (limits "
                    f"{config.max_held_records}, {config.max_held_bytes})")
        return None

    def _health(self, book: RelayBook) -> list[OutputRecord]:
        """The health records of a change of the waiting queue: ``Resumed`` when the block declared stalled left
        it; ``Stalled`` when the first waiting block still misses records with ``stall_after_blocks`` blocks
        queued behind it (once per block)."""
        out: list[OutputRecord] = []
        declared = book.stall()
        head = book.first_waiting()
        if declared is not None and (head is None or head.log_id != declared[0]):
            out.append(stall.resumed(self.realm, declared[1], declared[0]))
            book.set_stall(None)
            declared = None
        if declared is None and head is not None and head.header is not None \
                and book.blocks_waiting() > self.config.stall_after_blocks:
            header = head.header
            if self._missing(book, header, self._voids(book, header)[0]):
                ranges = stall.awaits(header, {(s, o): book.included(s, o) for s, o, _ in header.manifest})
                out.append(stall.stalled(self.realm, header.number, head.log_id, self.config.stall_after_blocks,
                                         ranges))
                book.set_stall((head.log_id, header.number))
        return out

    def _voids(self, book: RelayBook, header: BlockHeader) -> tuple[dict[tuple[str, str, int], str], list[QueueEntry],
                                                                 list[tuple[QueueEntry, str]]]:
        """The void orders queued for the first waiting block ``header``: the positions they void (each with its
        order's log id), the orders that apply, and those that cannot (with why: a range outside what the block
        still has to fill). Reads the state only."""
        voids: dict[tuple[str, str, int], str] = {}
        valid: list[QueueEntry] = []
        invalid: list[tuple[QueueEntry, str]] = []
        last = header.last_included()
        for entry in book.queued_voids(header.number):
            assert entry.order is not None
            for stream, origin, first, upto in entry.order.ranges:
                end = last.get((stream, origin))
                included = book.included(stream, origin)
                if end is None or first <= included or upto > end:
                    scope = "names none" if end is None else f"still fills {included + 1}..{end}"
                    invalid.append((entry, f"{stream}/{origin}/{first}..{upto}: block {header.number} {scope}"))
                    break
            else:
                valid.append(entry)
                for position in entry.order.positions():
                    voids.setdefault(position, entry.log_id)
        return voids, valid, invalid

    def _void_refusal(self, entry: QueueEntry, reason: str, detail: str) -> OutputRecord:
        return self._outcome(f"block/{entry.log_id}", entry.key,
                             RecordOutcome(None, entry.record.record_id, Status.REJECTED, reason, detail))

    def waiting(self, shown: int = 4) -> stall.WaitingStatus | None:
        """The first waiting block as the job shows it live (``shown`` missing positions at most), or None when
        no block waits. Writes nothing but the count of what is held, when a state from before it lacks it."""
        book = RelayBook(StateTransaction(self.backend))
        head = book.first_waiting()
        if head is None or head.header is None:
            book.txn.rollback()
            return None
        header = head.header
        missing = self._missing(book, header, self._voids(book, header)[0], shown)
        count, size = book.held_size()
        included = {(s, o): book.included(s, o) for s, o, _ in header.manifest}
        ranges = list(stall.unfilled(header, included))
        status = stall.WaitingStatus(header.number, head.log_id, book.blocks_waiting() - 1, tuple(missing),
                                     book.stall() is not None, count, size, tuple(ranges[:stall.AWAITS_SHOWN]),
                                     tuple(sorted({s for s, _, _, _ in ranges})))
        book.txn.commit()
        return status

    def _record(self, book: RelayBook, machine: RelayMachine, log: LogRecord, record: InputRecord) -> OutputRecord | None:
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
    def _missing(self, book: RelayBook, header: BlockHeader, voids: Collection[tuple[str, str, int]] = (),
                 limit: int = 1) -> list[str]:
        """The first record ids (``limit`` at most) the block includes that have not arrived yet and are not
        ``voids`` (none: an empty list). Stopping there bounds the work by the records buffered and the positions
        voided, whatever position a manifest names (2**64-1)."""
        missing: list[str] = []
        for stream, origin, last in header.manifest:
            if stream not in INPUT_STREAMS:
                continue
            first = book.included(stream, origin) + 1
            for position in range(first, last + 1):
                if not book.has_buffered(stream, origin, position) and (stream, origin, position) not in voids:
                    missing.append(f"{stream}/{origin}/{position}")
                    if len(missing) >= limit:
                        return missing
        return missing

    def _ready_blocks(self, book: RelayBook) -> list[RelayStep]:
        """Apply queued blocks, in arrival order, while the head of the queue has all its records (or void
        orders queued behind it void them); remember the record the head still misses (``_awaited``). A void
        order that reaches the head of the queue found no waiting block to void: it is refused."""
        steps: list[RelayStep] = []
        self._awaited = None
        while (entry := book.first_waiting()) is not None:
            if entry.order is not None:
                book.pop_waiting(entry)
                refusal = self._void_refusal(entry, "VoidNotWaiting",
                                             f"block {entry.order.block} was not waiting when its turn came")
                steps.append(RelayStep(entry.order.block, (refusal,), ()))
                continue
            assert entry.header is not None
            voids, valid, invalid = self._voids(book, entry.header)
            for void, why in invalid:
                book.pop_waiting(void)
                steps.append(RelayStep(entry.header.number, (self._void_refusal(void, "VoidOutOfRange", why),), ()))
            missing = self._missing(book, entry.header, voids)
            if missing:
                self._awaited = missing[0]
                break
            book.pop_waiting(entry)
            for void in valid:
                book.pop_waiting(void)
            steps.append(self._apply(book, entry, voids, valid))
        return steps

    def _apply(self, book: RelayBook, entry: QueueEntry, voids: dict[tuple[str, str, int], str],
               orders: list[QueueEntry]) -> RelayStep:
        """Apply one block with the records its manifest includes, less the positions void ``orders`` voided
        (``voids``: a record that arrived at one is dropped, the order wins); a block the machine refuses leaves
        the records buffered for a later block."""
        machine = self._machine_for(book)
        assert machine is not None and entry.header is not None  # a block is queued only once the realm has its genesis
        header = entry.header
        records: list[InputRecord] = []
        dropped: list[InputRecord] = []
        for stream, origin, last in header.manifest:
            first = book.included(stream, origin) + 1
            for p in range(first, last + 1):
                if (r := book.buffered_at(stream, origin, p)) is not None:
                    (dropped if (stream, origin, p) in voids else records).append(r)
        try:
            result = machine.apply_block(self.backend, RelayBlock(header, tuple(records), tuple(sorted(voids))))
        except RelayError as exc:
            rejection = self._outcome(f"block/{entry.log_id}", entry.key, RecordOutcome(
                header.number, entry.record.record_id, Status.REJECTED, type(exc).__name__, str(exc)))
            refused = [self._void_refusal(o, "VoidNotWaiting", f"block {header.number} was refused") for o in orders]
            return RelayStep(header.number, (rejection, *refused), ())
        for record in (*records, *dropped):
            book.unbuffer(record)
            book.set_included(record.stream, record.origin, record.position)
        outcomes = [stall.voided(self.realm, header.number, entry.log_id, o.log_id, o.order.to_json())
                    for o in orders if o.order is not None]
        for (stream, origin, position), order in sorted(voids.items()):
            book.set_included(stream, origin, position)
            record_id = f"{stream}/{origin}/{position}"
            outcomes.append(self._outcome(f"outcome/{record_id}", origin, RecordOutcome(
                header.number, record_id, Status.REJECTED, "Voided", f"the author's void order {order} voided it")))
        step = self._step(book, header, result, {r.record_id: r.origin for r in records})
        return replace(step, outputs=(*outcomes, *step.outputs)) if outcomes else step

    def _step(self, book: RelayBook, header: BlockHeader, result: BlockResult, origins: dict[str, str]) -> RelayStep:
        """Stage R's output records for an applied block (its seal last) and each subscriber's view of it; the
        block's subscription changes apply after the views' proofs."""
        realm, number = self.realm, header.number
        out = [
            rejection(realm, origins[o.record_id], f"outcome/{o.record_id}", o)
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


def _is_void_record(record: InputRecord) -> bool:
    """Whether a ``blocks`` record's envelope carries a void order (unauthenticated: only to let it past the
    hold's limit, where admission then checks it)."""
    if record.stream != "blocks":
        return False
    try:
        return is_void(Envelope.decode(record.value).data)
    except EnvelopeDecodeError:
        return False
