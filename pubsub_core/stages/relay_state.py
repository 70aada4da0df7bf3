"""Stage R's stored state, declared in one place: its namespaces, their keys and values, and the format's
version history (``RELAY_STATE``). Everything Stage R keeps besides the relay state itself (the block machine's
pallets) is here, read and written through ``RelayBook``; docs/simulator.md ("Stage R's state") lists the same.

Versions: 1 is release 0.1.0's (no marker; its namespaces were called ``simulator.*``); 2 renames them
``relay.*`` and records the version in ``relay.Format``. A change to any namespace, key or value encoding below
is a new version with its migration in ``MIGRATIONS``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

from state import StateTransaction
from state.formats import StoredFormat

from pubsub_core.codec.memo import DecodeMemo
from pubsub_core.relay import BlockHeader, InputRecord, canonical_json
from pubsub_core.relay.void import VoidOrder
from pubsub_core.release import RELEASE
from pubsub_core.stages.errors import StageError
from pubsub_core.stages.records import GenesisRecord, LogRecord
from pubsub_core.subscriber.calls import SetSubscriptions, decode_subscriber_call

__all__ = ["ENVELOPE", "NAMESPACES", "RELAY_STATE", "CorruptStateError", "QueueEntry", "RelayBook"]

FORMAT: Final = "relay.Format"
"""Value: the format version and the release that wrote it (``state.formats.Version``)."""
GENESIS: Final = "relay.Genesis"  # value: the realm's genesis record, JSON
HELD: Final = "relay.Held"  # u64 BE arrival number -> {stream, key, offset, record} JSON, before the genesis
HELD_COUNT: Final = "relay.HeldCount"  # value: u64 LE, how many records are held
RECEIVED: Final = "relay.Received"  # slot ‖ sender -> u64 LE highest seqno received from it (authentic)
BUFFER: Final = "relay.Buffer"  # slot ‖ u64 BE position -> 0x01 ‖ envelope
INCLUDED: Final = "relay.Included"  # slot -> u64 LE last included position
WAITING: Final = "relay.Waiting"  # u64 BE arrival number -> {log_id, key, record, header or void} JSON
SUBSCRIPTIONS: Final = "relay.Subscriptions"  # u32 BE subscriber -> set_subscriptions call (SCALE)
LAST_VIEW: Final = "relay.LastView"  # u32 BE subscriber -> u64 BE block of its latest view
SENT_NODES: Final = "relay.SentNodes"  # u32 BE subscriber -> its latest view's P_n: 32-byte hashes, sorted
HELD_SIZE: Final = "relay.HeldSize"  # value: u64 LE records and queued blocks ‖ u64 LE their envelopes' bytes
STALL: Final = "relay.Stall"  # value: {log_id, block} JSON of the waiting block declared stalled
VOIDS_QUEUED: Final = "relay.VoidsQueued"  # value: u64 LE, how many void orders wait in WAITING

NAMESPACES: Final = (GENESIS, HELD, HELD_COUNT, RECEIVED, BUFFER, INCLUDED, WAITING, SUBSCRIPTIONS, LAST_VIEW,
                     SENT_NODES, HELD_SIZE, STALL, VOIDS_QUEUED)
"""Every namespace of Stage R's bookkeeping (a slot is stream ‖ 0 ‖ origin ‖ 0)."""


class CorruptStateError(StageError):
    """Stage R's stored state holds what its format does not allow; carries the namespace."""

    def __init__(self, namespace: str, detail: str) -> None:
        super().__init__(f"Stage R state {namespace}: {detail}")
        self.namespace = namespace
        self.detail = detail


def _v1_to_v2(txn: StateTransaction) -> None:
    """Version 1 (release 0.1.0) to 2: each ``simulator.<Name>`` namespace becomes ``relay.<Name>``, unchanged,
    except ``Buffer`` values written as ``InputRecord`` JSON (states older than 0.1.0 that 0.1.0 still read),
    which become 0x01 ‖ envelope, and a missing ``HeldSize`` after the genesis, which is counted."""
    for namespace in NAMESPACES:
        old = "simulator." + namespace.removeprefix("relay.")
        for key, value in txn.items(old).items():
            if namespace == BUFFER and value[:1] == b"{":
                value = ENVELOPE + InputRecord.from_json(json.loads(value)).value
            txn.put(namespace, key, value)
            txn.delete(old, key)
    if txn.get_value(GENESIS) is not None and txn.get_value(HELD_SIZE) is None:
        sizes = [len(value) - 1 for value in txn.items(BUFFER).values()]
        sizes += [len(InputRecord.from_json(json.loads(value)["record"]).value)
                  for value in txn.items(WAITING).values()]
        txn.set_value(HELD_SIZE, len(sizes).to_bytes(8, "little") + sum(sizes).to_bytes(8, "little"))


RELAY_STATE: Final = StoredFormat("Stage R state", 2, RELEASE, FORMAT, {1: _v1_to_v2})
"""Stage R's state format: ``RelayStage`` opens its backend with it (migrates an older one, refuses a newer)."""


_DECLARED: Final[DecodeMemo[dict[int, tuple[bytes, ...]]]] = DecodeMemo(1 << 10)
"""Declared subscriptions (publisher -> keys, read only) by the stored ``set_subscriptions`` call: every block
proves every subscriber's declaration, which rarely changes, so decoding them every block is work saved
(docs/benchmarks.md, "Measured code choices")."""


def _slot(stream: str, origin: str) -> bytes:
    return stream.encode() + b"\x00" + origin.encode() + b"\x00"


def _buffer_key(stream: str, origin: str, position: int) -> bytes:
    """stream ‖ 0 ‖ origin ‖ 0 ‖ u64 BE position (streams hold no 0 byte, the position's length is fixed)."""
    return _slot(stream, origin) + position.to_bytes(8, "big")


ENVELOPE: Final = b"\x01"
"""First byte of a buffered record's stored value: the envelope's bytes follow (the key holds the rest)."""


def _buffered_record(stream: str, origin: str, position: int, raw: bytes) -> InputRecord:
    if raw[:1] != ENVELOPE:
        raise CorruptStateError(BUFFER, f"a buffered record at {stream}/{origin}/{position} starts {raw[:1]!r}")
    return InputRecord(stream, origin, position, raw[1:])


@dataclass(frozen=True, slots=True)
class QueueEntry:
    """One entry of Stage R's queue: a block (``header``) or a void order (``order``), with its ``blocks`` record,
    its line's log id and key, and its place in the queue (``slot``)."""

    slot: bytes
    log_id: str
    key: str
    record: InputRecord
    header: BlockHeader | None
    order: VoidOrder | None

    @classmethod
    def parse(cls, slot: bytes, raw: bytes) -> QueueEntry:
        body = json.loads(raw)
        void = body.get("void")
        order = None if void is None else VoidOrder(int(void["block"]), tuple(
            (str(s), str(o), int(first), int(last)) for s, o, first, last in void["ranges"]))
        header = None if "header" not in body else BlockHeader.from_json(body["header"])
        return cls(slot, str(body["log_id"]), str(body["key"]), InputRecord.from_json(body["record"]), header, order)


class RelayBook:
    """Stage R's bookkeeping in its StateTransaction (the ``relay.*`` namespaces of ``RELAY_STATE``)."""

    def __init__(self, txn: StateTransaction) -> None:
        self.txn = txn

    def genesis(self) -> GenesisRecord | None:
        raw = self.txn.get_value(GENESIS)
        return None if raw is None else GenesisRecord.from_json(json.loads(raw))

    def set_genesis(self, genesis: GenesisRecord) -> None:
        self.txn.set_value(GENESIS, canonical_json(genesis.to_json()).encode())

    def held_count(self) -> int:
        raw = self.txn.get_value(HELD_COUNT)
        return 0 if raw is None else int.from_bytes(raw, "little")

    def hold(self, log: LogRecord) -> None:
        """Keep a record until the realm's genesis, after those already held."""
        assert isinstance(log.value, InputRecord)
        number = self.held_count()
        body = {"stream": log.stream, "key": log.key, "offset": log.offset, "record": log.value.to_json()}
        self.txn.put(HELD, number.to_bytes(8, "big"), canonical_json(body).encode())
        self.txn.set_value(HELD_COUNT, (number + 1).to_bytes(8, "little"))

    def release(self, realm: str) -> list[LogRecord]:
        """Every held record, in arrival order, no longer held."""
        held = []
        for number, raw in sorted(self.txn.items(HELD).items()):
            body = json.loads(raw)
            held.append(LogRecord(realm, str(body["stream"]), str(body["key"]), int(body["offset"]),
                                  InputRecord.from_json(body["record"])))
            self.txn.delete(HELD, number)
        self.txn.set_value(HELD_COUNT, None)
        return held

    def received(self, stream: str, origin: str, sender: bytes) -> int | None:
        """The highest seqno of ``sender`` received in an authentic envelope on (stream, origin), if any."""
        raw = self.txn.get(RECEIVED, _slot(stream, origin) + sender)
        return None if raw is None else int.from_bytes(raw, "little")

    def set_received(self, stream: str, origin: str, sender: bytes, seqno: int) -> None:
        self.txn.put(RECEIVED, _slot(stream, origin) + sender, seqno.to_bytes(8, "little"))

    def included(self, stream: str, origin: str) -> int:
        raw = self.txn.get(INCLUDED, _slot(stream, origin))
        return -1 if raw is None else int.from_bytes(raw, "little")

    def set_included(self, stream: str, origin: str, position: int) -> None:
        if position > self.included(stream, origin):
            self.txn.put(INCLUDED, _slot(stream, origin), position.to_bytes(8, "little"))

    def buffered_at(self, stream: str, origin: str, position: int) -> InputRecord | None:
        raw = self.txn.get(BUFFER, _buffer_key(stream, origin, position))
        return None if raw is None else _buffered_record(stream, origin, position, raw)

    def has_buffered(self, stream: str, origin: str, position: int) -> bool:
        """Whether a record is buffered at that position (``buffered_at`` without decoding it)."""
        return self.txn.get(BUFFER, _buffer_key(stream, origin, position)) is not None

    def buffer(self, record: InputRecord) -> None:
        self.txn.put(BUFFER, _buffer_key(record.stream, record.origin, record.position), ENVELOPE + record.value)
        self._held(1, len(record.value))

    def unbuffer(self, record: InputRecord) -> None:
        """Drop a buffered record (``record`` is one ``buffered_at`` or ``buffered`` returned)."""
        self.txn.delete(BUFFER, _buffer_key(record.stream, record.origin, record.position))
        self._held(-1, -len(record.value))

    def start_held_size(self) -> None:
        self.txn.set_value(HELD_SIZE, bytes(16))

    def _held(self, count: int, size: int) -> None:
        """Count a record or block in (or out of) what is held (kept from the genesis on: before it, records
        are held in ``HELD`` and nothing is buffered or queued)."""
        raw = self.txn.get_value(HELD_SIZE)
        if raw is not None:
            count += int.from_bytes(raw[:8], "little")
            size += int.from_bytes(raw[8:], "little")
            self.txn.set_value(HELD_SIZE, count.to_bytes(8, "little") + size.to_bytes(8, "little"))

    def held_size(self) -> tuple[int, int]:
        """Records buffered and blocks queued, and their envelopes' bytes."""
        raw = self.txn.get_value(HELD_SIZE)
        if raw is None:  # no genesis yet: nothing buffered or queued
            return 0, 0
        return int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little")

    def stall(self) -> tuple[str, int] | None:
        """The waiting block declared stalled: its log id and number."""
        raw = self.txn.get_value(STALL)
        if raw is None:
            return None
        body = json.loads(raw)
        return str(body["log_id"]), int(body["block"])

    def set_stall(self, declared: tuple[str, int] | None) -> None:
        value = None if declared is None else canonical_json({"log_id": declared[0], "block": declared[1]}).encode()
        self.txn.set_value(STALL, value)

    def buffered(self) -> list[InputRecord]:
        """Every buffered record, by stream, origin and position."""
        records = []
        for key, raw in sorted(self.txn.items(BUFFER).items()):
            stream, _, rest = key.partition(b"\x00")  # the inverse of ``_buffer_key``
            records.append(_buffered_record(stream.decode(), rest[:-9].decode(), int.from_bytes(rest[-8:], "big"), raw))
        return records

    def _push(self, body: dict[str, object], record: InputRecord) -> None:
        entries = self.txn.items(WAITING)
        number = int.from_bytes(max(entries), "big") + 1 if entries else 0
        self.txn.put(WAITING, number.to_bytes(8, "big"), canonical_json(body).encode())
        self._held(1, len(record.value))

    def push_waiting(self, log_id: str, key: str, record: InputRecord, admitted: BlockHeader | VoidOrder) -> None:
        """Queue a block, or a void order (it waits with the blocks, in the blocks topic's order)."""
        body: dict[str, object] = {"log_id": log_id, "key": key, "record": record.to_json()}
        if isinstance(admitted, VoidOrder):
            body["void"] = {"block": admitted.block, "ranges": [list(r) for r in admitted.ranges]}
            self._count_voids(1)
        else:
            body["header"] = admitted.to_json()
        self._push(body, record)

    def _count_voids(self, change: int) -> None:
        count = self.voids_queued() + change
        self.txn.set_value(VOIDS_QUEUED, count.to_bytes(8, "little") if count else None)

    def voids_queued(self) -> int:
        raw = self.txn.get_value(VOIDS_QUEUED)
        return 0 if raw is None else int.from_bytes(raw, "little")

    def blocks_waiting(self) -> int:
        return len(self.txn.items(WAITING)) - self.voids_queued()

    def first_waiting(self) -> QueueEntry | None:
        entries = self.txn.items(WAITING)
        if not entries:
            return None
        first = min(entries)
        return QueueEntry.parse(first, entries[first])

    def queued_voids(self, block: int) -> list[QueueEntry]:
        """The void orders in the queue that name ``block``, in arrival order."""
        if not self.voids_queued():
            return []
        found = []
        for slot, raw in sorted(self.txn.items(WAITING).items()):
            if raw.startswith(b'{"key":'):  # canonical JSON: a block's body starts with "header", an order's not
                entry = QueueEntry.parse(slot, raw)
                if entry.order is not None and entry.order.block == block:
                    found.append(entry)
        return found

    def pop_waiting(self, entry: QueueEntry) -> None:
        """Take ``entry`` (a block or void order ``first_waiting`` or ``queued_voids`` returned) off the queue."""
        self.txn.delete(WAITING, entry.slot)
        self._held(-1, -len(entry.record.value))
        if entry.order is not None:
            self._count_voids(-1)

    def subscriptions(self) -> dict[int, dict[int, tuple[bytes, ...]]]:
        """Subscriber -> publisher -> keys, as the subscribers declared them in earlier blocks."""
        declared: dict[int, dict[int, tuple[bytes, ...]]] = {}
        for raw_subscriber, raw_call in sorted(self.txn.items(SUBSCRIPTIONS).items()):
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
        raw = self.txn.get(LAST_VIEW, subscriber.to_bytes(4, "big"))
        return None if raw is None else int.from_bytes(raw, "big")

    def set_last_view(self, subscriber: int, number: int) -> None:
        self.txn.put(LAST_VIEW, subscriber.to_bytes(4, "big"), number.to_bytes(8, "big"))

    def sent_nodes(self, subscriber: int) -> set[bytes] | None:
        """The node hashes of the proof in the subscriber's latest view (None before its first view)."""
        raw = self.txn.get(SENT_NODES, subscriber.to_bytes(4, "big"))
        return None if raw is None else {raw[i:i + 32] for i in range(0, len(raw), 32)}

    def set_sent_nodes(self, subscriber: int, hashes: list[bytes]) -> None:
        self.txn.put(SENT_NODES, subscriber.to_bytes(4, "big"), b"".join(sorted(hashes)))

    def set_subscriptions(self, subscriber: int, call: SetSubscriptions) -> None:
        self.txn.put(SUBSCRIPTIONS, subscriber.to_bytes(4, "big"), call.encode())
