"""The author's void order (``pubsub author void``): unstick a realm whose first waiting block names positions no
authentic record fills (docs/operations.md, "A stalled realm").

``plan_void`` is pure: from the realm's genesis registry, its ``blocks`` topic and its input topics it finds the
block, the positions of its manifest Stage R has no authentic record for (the author's mirror of Stage R's
checks, ``producers.writers.author.Inclusion``), and the author key's next seqno. ``write_void`` signs the order and
writes it to ``<realm>.blocks`` in a transaction under the author's ``transactional.id``: that fences a running
author of the realm (it stops with ``AuthorFenced``; restart it), so its next block cannot take the order's seqno.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from producers.transport.topics import Settings, consumer_config, producer_config
from producers.writers.author import AUTHOR_ORIGIN, AuthorError, AuthorKafkaError, ChainState, Inclusion, transactional_id
from pubsub_core.envelope import AdmissionConfig, KeyRegistry, Signer, Topic
from pubsub_core.relay import MAX_VOID_POSITIONS, BlockHeader, InputRecord, VoidOrder, canonical_json
from pubsub_core.stages import GenesisRecord, IngestError
from pubsub_core.stages.ingest import decode_record
from pubsub_core.stages.records import INPUT_STREAMS
from pubsub_core.stages.topics import topic

__all__ = ["KafkaRecords", "NothingToVoid", "VOID_POSITION_BASE", "VoidError", "VoidPlan", "plan_void", "read_realm",
           "void_record", "write_void"]

VOID_POSITION_BASE = 1 << 32
"""A void order's ``blocks`` record takes position ``VOID_POSITION_BASE + seqno - 1``: never a header's (number - 1)."""

KafkaRecords = list[tuple[bytes | None, bytes | None, int]]
"""(key, value, offset) of a topic's records, in offset order."""

_TIMEOUT = 30.0


class VoidError(AuthorError):
    """A void order that cannot be planned: the block is not on the topic, or the positions given do not fit it."""


class NothingToVoid(VoidError):
    """Every position of the block has an authentic record: it waits for nothing a void order could fill."""


@dataclass(frozen=True)
class VoidPlan:
    """What ``write_void`` writes: ``order`` for ``block`` (its ``<topic>@<offset>``), signed with ``seqno``;
    ``missing`` says whether the ranges were computed from the topics (or given)."""

    realm: str
    block: BlockHeader
    block_record: str
    order: VoidOrder
    seqno: int
    computed: bool

    def lines(self) -> list[str]:
        """What the command prints before writing."""
        ranges = [f"{s}/{o}/{first}" + (f"..{last}" if last != first else "") for s, o, first, last in self.order.ranges]
        count = sum(last - first + 1 for _, _, first, last in self.order.ranges)
        how = "no authentic record on the input topics" if self.computed else "as given"
        return [f"block {self.block.number} of {self.realm} ({self.block_record}): void {count} position(s) ({how}):",
                *(f"  {r}" for r in ranges),
                f"signed by the author key with seqno {self.seqno}; a late record at these positions will be refused"]


def _ranges(positions: Iterable[tuple[str, str, int]]) -> tuple[tuple[str, str, int, int], ...]:
    """Sorted positions as runs (stream, origin, first, last)."""
    runs: list[tuple[str, str, int, int]] = []
    for stream, origin, position in sorted(set(positions)):
        if runs and runs[-1][:2] == (stream, origin) and runs[-1][3] + 1 == position:
            runs[-1] = (stream, origin, runs[-1][2], position)
        else:
            runs.append((stream, origin, position, position))
    return tuple(runs)


def plan_void(realm: str, registry: KeyRegistry, blocks: KafkaRecords, inputs: Mapping[str, KafkaRecords],
              number: int, author: bytes, admission: AdmissionConfig | None = None,
              positions: Sequence[tuple[str, str, int, int]] | None = None) -> VoidPlan:
    """The void order for block ``number``: ``positions`` (stream, origin, first, last) if given, else every
    position of its manifest after what the blocks before it included that holds no record Stage R buffers;
    ``inputs``: each input topic's records. ``VoidError`` when the block is not on the topic or the order would
    not fit it, ``NothingToVoid`` when nothing is missing."""
    chain = ChainState(realm, registry, admission or AdmissionConfig(realm=realm))
    before: dict[tuple[str, str], int] | None = None
    header: BlockHeader | None = None
    record = ""
    for key, value, offset in blocks:
        if chain.next_number == number and header is None:
            before = dict(chain.included)
        replayed = chain.replay(key, value, offset)
        if replayed is not None and replayed.number == number:
            header, record = replayed, f"{topic(realm, 'blocks')}@{offset}"
    if header is None or before is None:
        raise VoidError(realm, f"block {number} does not extend the chain on {topic(realm, 'blocks')}")
    ranges = {(s, o): (before.get((s, o), -1) + 1, last) for s, o, last in header.manifest if s in INPUT_STREAMS}
    if positions is None:
        inclusion = Inclusion(realm, registry)
        for name, records in inputs.items():
            for key, value, offset in records:
                inclusion.arrive(name, key, value, offset)
        missing: list[tuple[str, str, int]] = []
        for (stream, origin), (first, last) in sorted(ranges.items()):
            held = inclusion.buffered.get((stream, origin), {})
            position = first
            while position <= last and len(missing) <= MAX_VOID_POSITIONS:
                if position not in held:
                    missing.append((stream, origin, position))
                position += 1
        if not missing:
            raise NothingToVoid(realm, f"every position of block {number} has an authentic record")
        chosen = _ranges(missing)
    else:
        chosen = tuple(sorted(positions))
        for stream, origin, first, last in chosen:
            span = ranges.get((stream, origin))
            if span is None or first < span[0] or last > span[1]:
                fits = "names none" if span is None else f"fills {span[0]}..{span[1]}"
                raise VoidError(realm, f"{stream}/{origin}/{first}..{last}: block {number} {fits}")
    try:
        order = VoidOrder(number, chosen)
    except ValueError as exc:
        raise VoidError(realm, f"not a void order: {exc}") from exc
    return VoidPlan(realm, header, record, order, chain.next_seqno(author), positions is None)


def void_record(realm: str, signer: Signer, plan: VoidPlan) -> bytes:
    """The Kafka value of the order: its ``InputRecord`` JSON (stream ``blocks``, origin ``author``)."""
    envelope = signer.sign(Topic(realm, "blocks", AUTHOR_ORIGIN), plan.seqno, plan.order.encode())
    record = InputRecord("blocks", AUTHOR_ORIGIN, VOID_POSITION_BASE + plan.seqno - 1, envelope.encode())
    return canonical_json(record.to_json()).encode()


def read_realm(settings: Settings, realm: str) -> tuple[KeyRegistry, KafkaRecords, dict[str, KafkaRecords]]:
    """The realm's genesis registry (its first genesis record), ``blocks`` and input topics, read to their end."""
    consumer = Consumer({**consumer_config(settings, f"pubsub-void-{realm}"), "isolation.level": "read_committed"})
    try:
        genesis = None
        for key, value, offset in _read(consumer, realm, topic(realm, "genesis")):
            try:
                decoded = decode_record(topic(realm, "genesis"), key, value, offset).value
            except IngestError:
                continue
            if isinstance(decoded, GenesisRecord):
                genesis = decoded
                break
        if genesis is None:
            raise VoidError(realm, f"no genesis record on {topic(realm, 'genesis')}")
        blocks = _read(consumer, realm, topic(realm, "blocks"))
        inputs = {topic(realm, s): _read(consumer, realm, topic(realm, s)) for s in INPUT_STREAMS}
        return genesis.registry, blocks, inputs
    finally:
        consumer.close()


def _read(consumer: Consumer, realm: str, name: str) -> KafkaRecords:
    """A single-partition topic's committed records, from offset 0 to its end now."""
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(name, 0), timeout=_TIMEOUT)
        if high <= 0:
            return []
        consumer.assign([TopicPartition(name, 0, 0)])
        out: KafkaRecords = []
        deadline = time.monotonic() + 4 * _TIMEOUT
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            error, offset = message.error(), message.offset()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    raise AuthorKafkaError(realm, f"reading {name}", error.str())
                if offset is not None and offset >= high:
                    return out
                continue
            assert offset is not None
            out.append((message.key(), message.value(), offset))
            if offset + 1 >= high:
                return out
        raise AuthorKafkaError(realm, f"reading {name}", "not read to its end in time")
    except KafkaException as exc:
        raise AuthorKafkaError(realm, f"reading {name}", str(exc.args[0])) from exc


def write_void(settings: Settings, realm: str, signer: Signer, plan: VoidPlan) -> None:
    """Write the signed order to ``<realm>.blocks`` in one transaction under the author's ``transactional.id``
    (fencing a running author of the realm)."""
    producer = Producer({**producer_config(settings), "transactional.id": transactional_id(realm),
                         "transaction.timeout.ms": "60000"})
    failures: list[KafkaError] = []
    try:
        producer.init_transactions(_TIMEOUT)
        producer.begin_transaction()
        producer.produce(topic(realm, "blocks"), key=AUTHOR_ORIGIN.encode(), value=void_record(realm, signer, plan),
                         on_delivery=lambda err, _msg: failures.append(err) if err is not None else None)
        producer.flush(_TIMEOUT)
        if failures:
            raise KafkaException(failures[0])
        producer.commit_transaction(_TIMEOUT)
    except KafkaException as exc:
        raise AuthorKafkaError(realm, "writing the void order", str(exc.args[0])) from exc
    finally:
        producer.flush(5)
