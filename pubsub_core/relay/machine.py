"""The relay block state machine: apply block N (header plus included records) in one documented order.

Order (docs/relay.md):
  0. checks: the block extends the last one, and its records are exactly those its manifest includes;
  1. session change (when the header's session index moved): router, then broadcaster offboarding;
  2. ``upward``: per para ascending, records by position: admission (envelope checks, then the XCM
     barrier as custom validation), then the para's admitted messages go to the router at once;
  3. ``horizontal``: per sender ascending: admission, then the router;
  4. ``extrinsics``: per origin (root, paras, accounts): admission (a broadcaster or subscriber call must
     decode), then dispatch (subscriber calls are forwarded to the subscriber stage);
  5. upward dispatch: the router hands due messages to the XCM executor;
  6. ``on_idle``: TTL expiry within the idle weight;
  7. child tries of the paras whose entries changed, then the relay root; the seal.
Everything runs in one StateTransaction, committed once at the end, so a block applies fully or not at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from state import StateBackend, StateTransaction

from pubsub_core.broadcaster.balances import Balances
from pubsub_core.broadcaster.config import BroadcasterConfig
from pubsub_core.broadcaster.events import BroadcasterEvent, DataPublished
from pubsub_core.broadcaster.pallet import CHILD_NAMESPACE, Broadcaster, split_child_data_key
from pubsub_core.codec.scale import encode_u32
from pubsub_core.envelope.admission import Admission, AdmissionConfig, RateCounter, Verdict, error_reason
from pubsub_core.envelope.envelope import Envelope
from pubsub_core.envelope.keys import KeyRegistry, Origin, OriginKind
from pubsub_core.errors import PubSubError
from pubsub_core.hashing import blake2_256
from pubsub_core.relay.calls import BROADCASTER, ROUTER, SUBSCRIBER, BroadcasterCall, CallKind, split_call
from pubsub_core.relay.records import (
    BlockHeader,
    BlockResult,
    BlockSeal,
    EventRecord,
    ForwardedCall,
    InputRecord,
    MessageExecuted,
    RecordOutcome,
    RelayBlock,
    Status,
    event_record,
)
from pubsub_core.relay.void import VoidOrder, is_void
from pubsub_core.router.relay_adapter import RelayRouter
from pubsub_core.router.relay_port import DispatchReport, RoutingPort
from pubsub_core.subscriber.calls import decode_subscriber_call
from pubsub_core.trie import RelayTries, StateNodeStore
from pubsub_core.xcm.barriers import (
    AllowPublishFrom,
    AllowTopLevelPaidExecutionFrom,
    BarrierChain,
    Everything,
    OriginFilter,
)
from pubsub_core.xcm.errors import BarrierRejected, XcmDecodeError
from pubsub_core.xcm.executor import ExecutorConfig, XcmExecutor
from pubsub_core.xcm.types import MAX_PUBLISH_VALUE_LENGTH, Location, Xcm, decode_versioned_xcm

__all__ = ["BadOrigin", "BlockOrderError", "Genesis", "ManifestMismatch", "RelayConfig", "RelayError", "RelayMachine"]

STREAMS = ("upward", "horizontal", "extrinsics")
"""The streams a block's manifest covers (``blocks`` records are headers, opened by ``admit_header``)."""
_HEAD = "relay.Head"
_SESSION = "relay.Session"
_INCLUDED = "relay.Included"
_MAIN_TRIE = "relay.trie.main"
_CHILD_TRIE = "relay.trie.child."


class RelayError(PubSubError):
    """Base class of the block machine's errors: a block that cannot be applied at all (nothing is written)."""


class BlockOrderError(RelayError):
    """The block does not extend the last applied block."""

    def __init__(self, number: int, expected: int, parent_hash: bytes, head_hash: bytes) -> None:
        super().__init__(
            f"block {number} (parent 0x{parent_hash.hex()}) does not extend block {expected - 1} (0x{head_hash.hex()})"
        )
        self.number = number
        self.expected = expected
        self.parent_hash = parent_hash
        self.head_hash = head_hash


class ManifestMismatch(RelayError):
    """The records given with a block are not exactly those its manifest includes."""

    def __init__(self, number: int, stream: str, origin: str, expected: list[int], got: list[int]) -> None:
        super().__init__(f"block {number}: {stream}/{origin} should include positions {expected}, got {got}")
        self.number = number
        self.stream = stream
        self.origin = origin
        self.expected = expected
        self.got = got


class BadOrigin(RelayError):
    """A call from an origin it does not accept (a force_* call not from root, a signed call not from an account)."""

    code = "BadOrigin"

    def __init__(self, call: str, origin: Origin) -> None:
        super().__init__(f"{call} is not callable by {origin.kind.value} origins")
        self.call = call
        self.origin = origin


@dataclass(frozen=True)
class RelayConfig:
    """Everything the relay stage is configured with; defaults are the reference code's and the specs'
    (docs/design.md, "Sources")."""

    registry: KeyRegistry = field(default_factory=KeyRegistry)
    admission: AdmissionConfig = field(default_factory=AdmissionConfig)
    broadcaster: BroadcasterConfig = field(default_factory=BroadcasterConfig)
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)
    max_publish_instructions: int = 16
    publish_origins: OriginFilter = field(default_factory=Everything)
    """Origins ``AllowPublishFrom`` admits (Westend uses ``OnlyParachains``; every upward origin is one)."""
    idle_weight: int = 250_000_000_000
    """Weight left for on_idle each block; the default covers MaxTtlScansPerIdle (500) scans."""
    max_publish_value_length: int = MAX_PUBLISH_VALUE_LENGTH
    """XCM's ``MaxPublishValueLength``: a longer Publish value does not decode (``Malformed``)."""

    def __post_init__(self) -> None:
        if self.broadcaster.max_value_length >= self.max_publish_value_length:
            raise ValueError(
                f"MaxValueLength {self.broadcaster.max_value_length} must be below XCM's MaxPublishValueLength "
                f"{self.max_publish_value_length}, so that a value between them is the pallet's ValueTooLarge "
                "and a longer one Malformed"
            )
        if self.max_publish_instructions < 1 or self.idle_weight < 0:
            raise ValueError("max_publish_instructions must be at least 1 and idle_weight non-negative")


@dataclass(frozen=True)
class Genesis:
    """Initial state: account endowments and the registrar's para managers (kept sorted).

    JSON: ``{"endowments": {"0x<account>": amount}, "para_managers": {"<para>": "0x<account>"}}``.
    """

    endowments: tuple[tuple[bytes, int], ...] = ()
    para_managers: tuple[tuple[int, bytes], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "endowments", tuple(sorted(self.endowments)))
        object.__setattr__(self, "para_managers", tuple(sorted(self.para_managers)))

    def to_json(self) -> dict[str, object]:
        return {
            "endowments": {"0x" + account.hex(): amount for account, amount in self.endowments},
            "para_managers": {str(para): "0x" + manager.hex() for para, manager in self.para_managers},
        }

    @classmethod
    def from_json(cls, body: dict[str, dict[str, object]]) -> Genesis:
        endowments = tuple((bytes.fromhex(a[2:]), int(str(v))) for a, v in body.get("endowments", {}).items())
        managers = tuple((int(p), bytes.fromhex(str(m)[2:])) for p, m in body.get("para_managers", {}).items())
        return cls(endowments, managers)


@dataclass
class _Block:
    """Per-block accumulators."""

    number: int
    events: list[object] = field(default_factory=list)
    outcomes: list[RecordOutcome] = field(default_factory=list)
    forwarded: list[ForwardedCall] = field(default_factory=list)
    decoded: dict[bytes, Xcm] = field(default_factory=dict)
    """Upward messages admission decoded in this block, for their dispatch (decoding is a pure function of the
    bytes): each message was decoded twice, 0.44 s of a 7.9 s profiled relay run; now once."""

    def outcome(self, record: InputRecord, status: Status, reason: str | None = None, detail: str = "") -> None:
        self.outcomes.append(RecordOutcome(self.number, record.record_id, status, reason, detail))


def _origin_order(stream: str, origin: str) -> tuple[int, int, str]:
    try:
        parsed = Origin.parse(stream, origin)
    except PubSubError:
        return 3, 0, origin
    rank, para, account = parsed.sort_key()
    return rank, para, account.hex()


def _default_routing() -> RoutingPort:
    """The default router: the Router Module's UMP/DMP/HRMP router with its default config."""
    return RelayRouter()


def child_changes(txn: StateTransaction) -> dict[int, dict[bytes, bytes | None]]:
    """The child-trie entries this transaction changed, per para in para order (key -> value, None: removed)."""
    changes: dict[int, dict[bytes, bytes | None]] = {}
    for raw_key, value in txn.pending_changes_in(CHILD_NAMESPACE).items():
        para, key = split_child_data_key(raw_key)
        changes.setdefault(para, {})[key] = value
    return {para: changes[para] for para in sorted(changes)}


def apply_child_changes(
    txn: StateTransaction, changes: dict[int, dict[bytes, bytes | None]]
) -> tuple[bytes, tuple[tuple[int, bytes | None], ...]]:
    """Apply a block's child-trie changes (``child_changes``) to the relay tries in ``txn``; return the relay root
    and the changed child roots (a seal's)."""
    tries = relay_tries(txn)
    relay_root = tries.apply(child_changes=changes)
    return relay_root, tuple((para, tries.child_root(para)) for para in changes)


def relay_tries(txn: StateTransaction) -> RelayTries:
    """The relay main trie and the publishers' child tries as the block machine stores them in ``txn``."""
    return RelayTries(lambda space: StateNodeStore(txn, _MAIN_TRIE if not space else _CHILD_TRIE + space.hex()))


class RelayMachine:
    """Applies relay blocks to a state backend; pure apart from the backend it is given."""

    def __init__(self, config: RelayConfig | None = None,
                 router_factory: Callable[[], RoutingPort] | None = None) -> None:
        self.config = config or RelayConfig()
        self.broadcaster = Broadcaster(self.config.broadcaster)
        self.barriers = BarrierChain(
            [
                AllowPublishFrom(self.config.publish_origins, self.config.max_publish_instructions),
                AllowTopLevelPaidExecutionFrom(Everything()),
            ]
        )
        self.executor = XcmExecutor(self.barriers, self.broadcaster, self.config.executor)
        self.admission = Admission(self.config.registry, self.config.admission)
        self.router_factory = router_factory or _default_routing

    # -- genesis ---------------------------------------------------------------------------------
    def initialize(self, backend: StateBackend, genesis: Genesis) -> None:
        """Write the genesis state (one commit)."""
        txn = StateTransaction(backend)
        for account, amount in genesis.endowments:
            Balances.mint(txn, account, amount)
        for para, manager in genesis.para_managers:
            Broadcaster.set_para_manager(txn, para, manager)
        txn.commit()

    # -- block headers ---------------------------------------------------------------------------
    def admit_header(self, backend: StateBackend, record: InputRecord) -> BlockHeader | VoidOrder | RecordOutcome:
        """Open a ``blocks`` record: an envelope from ``author`` carrying a SCALE ``BlockHeader`` or a
        ``VoidOrder`` (``pubsub_core.relay.void``).

        Returns the header or order, or the record's outcome (rejected or ignored, under the last applied block's
        number) when admission refuses it; commits only the author's seqno watermark.
        """
        txn = StateTransaction(backend)
        result = self.admission.admit(txn, record.stream, record.origin, record.value, RateCounter(), _validate_header)
        txn.commit()
        if result.verdict is Verdict.ACCEPT and result.envelope is not None:
            data = result.envelope.data
            return VoidOrder.decode(data) if is_void(data) else BlockHeader.decode(data)
        head = StateTransaction(backend).get(_HEAD, b"")
        number = 0 if head is None else int.from_bytes(head[:4], "little")
        status = Status.IGNORED if result.verdict is Verdict.IGNORE else Status.REJECTED
        return RecordOutcome(number, record.record_id, status, result.reason, result.detail)

    # -- one block -------------------------------------------------------------------------------
    def apply_block(self, backend: StateBackend, block: RelayBlock) -> BlockResult:
        """Apply ``block`` and commit; raise ``RelayError`` (writing nothing) if it cannot be applied."""
        txn = StateTransaction(backend)
        try:
            result = self._apply(txn, block)
        except BaseException:
            txn.rollback()
            raise
        txn.commit()
        return result

    def _apply(self, txn: StateTransaction, block: RelayBlock) -> BlockResult:
        header = block.header
        now = header.number
        self._check_order(txn, block)
        grouped = self._check_manifest(txn, block)
        acc = _Block(now)
        router = self.router_factory()
        self._session(txn, acc, router, header.session_index, now)
        rate = RateCounter(block=now)
        self._upward(txn, acc, router, grouped.get("upward", {}), rate, now)
        self._horizontal(txn, acc, router, grouped.get("horizontal", {}), rate, now)
        self._extrinsics(txn, acc, router, grouped.get("extrinsics", {}), rate, now)
        # The block's upward paras are most of those dispatch publishes for: their records in one read each.
        self.broadcaster.prefetch_publishers(txn, [int(origin) for origin in grouped.get("upward", {})])
        acc.events += router.dispatch_upward(txn, now, lambda t, para, message: self._dispatch(t, acc, para, message, now))
        idle = self.broadcaster.on_idle(txn, now, self.config.idle_weight)
        acc.events += idle.events
        changes = child_changes(txn)
        relay_root, child_roots = apply_child_changes(txn, changes)
        txn.put(_HEAD, b"", encode_u32(now) + header.hash)
        events = _event_records(now, acc.events)
        acc.outcomes.sort(key=_outcome_order)
        counts = {status: sum(1 for o in acc.outcomes if o.status is status) for status in Status}
        seal = BlockSeal(now, header.hash, header.parent_hash, header.session_index, relay_root, child_roots,
                         counts[Status.APPLIED], counts[Status.IGNORED], counts[Status.REJECTED], len(events))
        return BlockResult(seal, events, tuple(acc.outcomes), tuple(acc.forwarded))

    def _check_order(self, txn: StateTransaction, block: RelayBlock) -> None:
        head = txn.get(_HEAD, b"")
        header = block.header
        if head is None:
            return
        number, head_hash = int.from_bytes(head[:4], "little"), head[4:]
        if header.number != number + 1 or header.parent_hash != head_hash:
            raise BlockOrderError(header.number, number + 1, header.parent_hash, head_hash)

    def _check_manifest(self, txn: StateTransaction, block: RelayBlock) -> dict[str, dict[str, list[InputRecord]]]:
        """Group records by stream and origin, checking they are exactly the manifest's new positions."""
        grouped: dict[str, dict[str, list[InputRecord]]] = {}
        for record in block.records:
            grouped.setdefault(record.stream, {}).setdefault(record.origin, []).append(record)
        last = block.header.last_included()
        voided: dict[tuple[str, str], set[int]] = {}
        for stream, origin, position in block.voided:
            voided.setdefault((stream, origin), set()).add(position)
        keys = sorted(set(last) | {(s, o) for s, origins in grouped.items() for o in origins} | set(voided))
        txn.prefetch(_INCLUDED, [_included_key(s, o) for s, o in keys])
        for stream, origin in keys:
            records = sorted(grouped.get(stream, {}).get(origin, []), key=lambda r: r.position)
            stored = txn.get(_INCLUDED, _included_key(stream, origin))
            previous = -1 if stored is None else int.from_bytes(stored, "little") - 1
            upto = last.get((stream, origin), previous)
            expected = range(previous + 1, upto + 1)  # not a list: a hostile manifest may name position 2**64-1
            got = [r.position for r in records]
            void = voided.get((stream, origin), set())
            # the positions the block fills: its range less the voided ones, which must lie in it (then the range
            # is at most len(got) + len(void) long, so it is listed only once that holds)
            if (stream not in STREAMS or any(p not in expected for p in void)
                    or max(upto - previous, 0) != len(got) + len(void)
                    or got != [p for p in expected if p not in void]):
                raise ManifestMismatch(block.header.number, stream, origin, list(expected[:64]), got)
            if records:
                grouped[stream][origin] = records
            if records or void:
                txn.put(_INCLUDED, _included_key(stream, origin), (upto + 1).to_bytes(8, "little"))
        return grouped

    def _session(self, txn: StateTransaction, acc: _Block, router: RoutingPort, session: int, now: int) -> None:
        stored = txn.get_value(_SESSION)
        txn.set_value(_SESSION, encode_u32(session))
        if stored is None or int.from_bytes(stored, "little") == session:
            return
        change = router.on_session_change(txn, session, now)
        acc.events += change.events
        acc.events += self.broadcaster.offboard(txn, change.outgoing)

    def _admit(self, txn: StateTransaction, acc: _Block, record: InputRecord, rate: RateCounter,
               validate: Callable[[Envelope, Origin], None]) -> tuple[Envelope, Origin] | None:
        result = self.admission.admit(txn, record.stream, record.origin, record.value, rate, validate)
        if result.verdict is Verdict.ACCEPT and result.envelope is not None and result.origin is not None:
            return result.envelope, result.origin
        status = Status.IGNORED if result.verdict is Verdict.IGNORE else Status.REJECTED
        acc.outcome(record, status, result.reason, result.detail)
        return None

    def _upward(self, txn: StateTransaction, acc: _Block, router: RoutingPort,
                by_origin: dict[str, list[InputRecord]], rate: RateCounter, now: int) -> None:
        for origin in sorted(by_origin, key=lambda o: _origin_order("upward", o)):
            admitted: list[tuple[InputRecord, bytes]] = []
            for record in by_origin[origin]:
                parsed = self._admit(txn, acc, record, rate,
                                     lambda env, who: self._validate_upward(env, who, acc.decoded))
                if parsed is not None:
                    admitted.append((record, parsed[0].data))
            if not admitted:
                continue
            para = int(origin)
            try:
                with txn.atomic():
                    acc.events += router.receive_upward(txn, para, [data for _, data in admitted], now)
            except PubSubError as exc:
                for record, _ in admitted:
                    acc.outcome(record, Status.REJECTED, error_reason(exc), str(exc))
                continue
            for record, _ in admitted:
                acc.outcome(record, Status.APPLIED)

    def _validate_upward(self, envelope: Envelope, origin: Origin, decoded: dict[bytes, Xcm]) -> None:
        """Custom validation of an upward message: it decodes and some barrier admits it. The decoded message
        is kept in ``decoded`` for its dispatch."""
        message = decode_versioned_xcm(envelope.data, self.config.max_publish_value_length)
        decoded[envelope.data] = message
        self.barriers.check(Location.parachain(origin.para_id), message, self.config.executor.weigh(message))

    def _horizontal(self, txn: StateTransaction, acc: _Block, router: RoutingPort,
                    by_origin: dict[str, list[InputRecord]], rate: RateCounter, now: int) -> None:
        for origin in sorted(by_origin, key=lambda o: _origin_order("horizontal", o)):
            for record in by_origin[origin]:
                parsed = self._admit(txn, acc, record, rate, _no_validation)
                if parsed is None:
                    continue
                try:
                    with txn.atomic():
                        acc.events += router.receive_horizontal(txn, parsed[1].para_id, parsed[0].data, now)
                except PubSubError as exc:
                    acc.outcome(record, Status.REJECTED, error_reason(exc), str(exc))
                    continue
                acc.outcome(record, Status.APPLIED)

    def _extrinsics(self, txn: StateTransaction, acc: _Block, router: RoutingPort,
                    by_origin: dict[str, list[InputRecord]], rate: RateCounter, now: int) -> None:
        for origin_key in sorted(by_origin, key=lambda o: _origin_order("extrinsics", o)):
            for record in by_origin[origin_key]:
                parsed = self._admit(txn, acc, record, rate, _validate_call)
                if parsed is None:
                    continue
                envelope, origin = parsed
                try:
                    with txn.atomic():
                        pallet = split_call(envelope.data)
                        if pallet == BROADCASTER:
                            acc.events += self._broadcaster_call(txn, origin, BroadcasterCall.decode(envelope.data))
                        elif pallet == ROUTER:
                            acc.events += router.handle_call(txn, origin, envelope.data, now)
                        else:
                            acc.forwarded.append(ForwardedCall(now, record.record_id, origin_key, envelope.data))
                except PubSubError as exc:
                    acc.outcome(record, Status.REJECTED, error_reason(exc), str(exc))
                    continue
                acc.outcome(record, Status.APPLIED)

    def _broadcaster_call(self, txn: StateTransaction, origin: Origin, call: BroadcasterCall) -> list[BroadcasterEvent]:
        """Dispatch a broadcaster call: force calls from root, the others signed by an account; ``delete_keys``
        also from the para itself (``para:<id>`` naming its own id; the pub-sub spec, "Parachain self-deletion")."""
        pallet, who, para = self.broadcaster, origin.account, call.para_id
        if call.kind is CallKind.DELETE_KEYS and origin.kind is OriginKind.PARA and origin.para_id == para:
            return pallet.delete_own_keys(txn, para, call.keys)
        wanted = OriginKind.ROOT if call.kind.needs_root else OriginKind.ACCOUNT
        if origin.kind is not wanted:
            raise BadOrigin(call.kind.name.lower(), origin)
        match call.kind:
            case CallKind.REGISTER_PUBLISHER:
                return pallet.register_publisher(txn, who, para)
            case CallKind.FORCE_REGISTER_PUBLISHER:
                return pallet.force_register_publisher(txn, call.manager, call.deposit, para)
            case CallKind.CLEANUP_PUBLISHED_DATA:
                return pallet.cleanup_published_data(txn, who, para)
            case CallKind.DEREGISTER_PUBLISHER:
                return pallet.deregister_publisher(txn, who, para)
            case CallKind.FORCE_DEREGISTER_PUBLISHER:
                return pallet.force_deregister_publisher(txn, para)
            case CallKind.DELETE_KEYS:
                return pallet.delete_keys(txn, who, para, call.keys)
            case CallKind.FORCE_DELETE_KEYS:
                return pallet.force_delete_keys(txn, para, call.keys)

    def _dispatch(self, txn: StateTransaction, acc: _Block, para: int, message_bytes: bytes, now: int) -> DispatchReport:
        """Execute one upward message with ``para`` as origin; record ``MessageExecuted`` and the pallet events."""
        message_hash = blake2_256(message_bytes)
        try:
            message = acc.decoded.get(message_bytes)
            if message is None:
                message = decode_versioned_xcm(message_bytes, self.config.max_publish_value_length)
            outcome = self.executor.execute(txn, Location.parachain(para), message, now)
        except (XcmDecodeError, BarrierRejected) as exc:
            acc.events.append(MessageExecuted(para, message_hash, "Error", exc.reason_code, 0, 0))
            return DispatchReport(0, False, exc.reason_code)
        acc.events += outcome.events
        error = outcome.error
        used = outcome.used_weight.ref_time
        if error is None:
            acc.events.append(MessageExecuted(para, message_hash, "Complete", "", len(message.instructions), used))
            return DispatchReport(used, True)
        acc.events.append(MessageExecuted(para, message_hash, "Incomplete", error.reason_code, error.index, used))
        return DispatchReport(used, False, error.reason_code)


def _event_records(block: int, events: list[object]) -> tuple[EventRecord, ...]:
    """The block's events as records, in order. A ``DataPublished`` body is rendered once per (publisher, count):
    nearly every event of a run is one (docs/benchmarks.md, "Measured code choices")."""
    published: dict[tuple[int, int], str] = {}
    records = []
    for index, event in enumerate(events):
        if type(event) is DataPublished:
            body = published.get((event.publisher, event.items_count))
            if body is None:
                body = published[(event.publisher, event.items_count)] = event_record(block, index, event).body
            records.append(EventRecord(block, index, body))
        else:
            records.append(event_record(block, index, event))
    return tuple(records)


def _outcome_order(outcome: RecordOutcome) -> tuple[int, tuple[int, int, str], int]:
    """Outcomes are emitted in processing order: stream, origin, position."""
    stream, origin, position = outcome.record_id.split("/")
    return STREAMS.index(stream), _origin_order(stream, origin), int(position)


def _included_key(stream: str, origin: str) -> bytes:
    return stream.encode() + b"\x00" + origin.encode()


def _validate_header(envelope: Envelope, origin: Origin) -> None:
    """Custom validation of a ``blocks`` record: it carries a decodable header or void order."""
    if is_void(envelope.data):
        VoidOrder.decode(envelope.data)
    else:
        BlockHeader.decode(envelope.data)


def _no_validation(envelope: Envelope, origin: Origin) -> None:
    return None


def _validate_call(envelope: Envelope, origin: Origin) -> None:
    """Custom validation of an extrinsic: a broadcaster or subscriber call must decode (``Malformed`` otherwise);
    router calls are decoded by the router when dispatched. Whether a subscriber call can apply (its origin, the
    subscriber's limits and state) is decided where it applies, as a ``CallFailed`` event."""
    pallet = split_call(envelope.data)
    if pallet == BROADCASTER:
        BroadcasterCall.decode(envelope.data)
    elif pallet == SUBSCRIBER:
        decode_subscriber_call(envelope.data)


