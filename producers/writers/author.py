"""The relay block author of one realm (``pubsub author``): every block time it writes the next block on
``<realm>.blocks`` with the inclusion manifest Stage R expects.

What it may include (docs/threat-model.md, "The block author"): a position only when Stage R's checks on arrival
buffer a record there. ``Inclusion`` mirrors those checks record by record, reading each input topic in offset
order as Stage R does: the strict ingest decoding (``pubsub_core.stages.ingest.decode_record``), then the same
pure ``pubsub_core.envelope.authenticate`` against the realm's key registry (from its genesis record), then the
seqno rule (a seqno its sender already used on that stream and origin is a ``Duplicate``) and the position rule
(a position already received is a ``PositionConflict``). A block then takes, per (stream, origin), the contiguous
run of buffered positions after the last included one: a forged or undecodable record takes no position (the
genuine one, when it comes, is included), and a gap stops the run, so no block ever waits forever.

Blocks are capped (``AuthorLimits``: records and bytes per block, upward messages and horizontal candidates per
para, from the relay's configuration); what does not fit goes in the next block, a run being cut, never
reordered.

Restarts and fencing: the author writes each block in its own Kafka transaction (``transactional.id =
pubsub-author-<realm>``), with a signed snapshot of its state after that block on the compacted
``<realm>.author-state`` (``producers.writers.author_state``). Starting calls ``init_transactions``, which fences any older
author of the realm (its next block fails with ``AuthorFenced``) and aborts the transaction it may have left open,
then takes the latest snapshot an author key signed, replays the blocks written after its block with Stage R's
rules (``ChainState``: none unless another author wrote some) and reads each input topic from the snapshot's
offset, so a restart costs what arrived since the last block, whatever the realm's age, and repeats no block
number and includes no record twice or never. Without a snapshot (a realm written by an older author) it replays
the blocks topic and every input topic from offset 0, once. Records the snapshot still needs that retention
deleted stop the start with ``InputExpired``.

Imports nothing from ``streaming/`` (the ``Settings`` protocol of ``producers.transport.topics`` is all it needs).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from producers.errors import ProducerError
from producers.transport.topics import Settings, consumer_config, ensure_realm_topics, producer_config
from producers.writers.author_state import AUTHOR_STATE, SNAPSHOT_KEY, AuthorSnapshot, open_snapshot, snapshot_record
from pubsub_core.codec.scale import encode_bytes
from pubsub_core.envelope import (AdmissionConfig, Envelope, KeyRegistry, Signer, Topic, Unauthenticated,
                                  authenticate)
from pubsub_core.errors import PubSubError
from pubsub_core.hashing import blake2_256
from pubsub_core.relay import BlockHeader, InputRecord, canonical_json
from pubsub_core.router import RouterConfig
from pubsub_core.stages import GenesisRecord, IngestError
from pubsub_core.stages.ingest import decode_record
from pubsub_core.stages.records import INPUT_STREAMS
from pubsub_core.stages.topics import topic

__all__ = [
    "AUTHOR_KEY_ENV",
    "AUTHOR_ORIGIN",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_POV_SIZE",
    "AuthorError",
    "AuthorFenced",
    "AuthorKafkaError",
    "AuthorKeyError",
    "AuthorLimits",
    "BlockAuthor",
    "BlockPlan",
    "BlockReport",
    "ChainState",
    "GenesisMissing",
    "Inclusion",
    "InputExpired",
    "NotAnAuthor",
    "block_hash",
    "block_record",
    "latest_snapshot",
    "parse_key",
    "read_author_key",
    "transactional_id",
]

AUTHOR_KEY_ENV = "PUBSUB_AUTHOR_KEY"
"""The environment variable holding the author key when no key file is given."""
AUTHOR_ORIGIN = "author"
"""The Kafka key (and envelope origin) of every ``blocks`` record."""
DEFAULT_MAX_POV_SIZE = 5 * 1024 * 1024
"""A block's ``max_pov_size`` unless told otherwise: the workload's (``producers.workload.MAX_POV_SIZE``)."""
DEFAULT_MAX_BYTES = DEFAULT_MAX_POV_SIZE
"""Envelope bytes per block unless told otherwise: a block carries no more than the relay's 5 MiB PoV."""
_ZERO_HASH = bytes(32)
_KAFKA_TIMEOUT = 30.0
_SNAPSHOT_WINDOW = 64
"""Records of the snapshot topic's tail read first (a snapshot and a commit marker per block)."""
_FENCED_CODES = frozenset({KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH})


# -- errors ------------------------------------------------------------------------------------------------------
class AuthorError(ProducerError):
    """Base class of the block author's errors; each carries the realm."""

    def __init__(self, realm: str, message: str) -> None:
        super().__init__(f"block author of {realm}: {message}")
        self.realm = realm


class AuthorKeyError(AuthorError):
    """The signing key is missing or is not 32 bytes of hex; ``source`` says where it was read (never its value)."""

    def __init__(self, realm: str, source: str, reason: str) -> None:
        super().__init__(realm, f"the author key from {source} is unusable: {reason}")
        self.source = source
        self.reason = reason


class NotAnAuthor(AuthorError):
    """The key's public key is not among the genesis ``author_keys``: Stage R would refuse every block."""

    def __init__(self, realm: str, public_key: bytes, author_keys: frozenset[bytes]) -> None:
        allowed = ", ".join(f"0x{k.hex()}" for k in sorted(author_keys)) or "none"
        super().__init__(realm, f"public key 0x{public_key.hex()} is not an author key of the genesis ({allowed})")
        self.public_key = public_key
        self.author_keys = author_keys


class GenesisMissing(AuthorError):
    """No usable genesis record arrived on ``<realm>.genesis`` within ``waited`` seconds."""

    def __init__(self, realm: str, waited: float) -> None:
        super().__init__(realm, f"no genesis record on {topic(realm, 'genesis')} after {waited:.0f}s")
        self.waited = waited


class AuthorFenced(AuthorError):
    """Another author of the realm started (same ``transactional.id``): this one must stop. ``number`` is the
    block it was writing, which it did not write."""

    def __init__(self, realm: str, number: int, detail: str) -> None:
        super().__init__(realm, f"fenced by a newer author (transactional.id {transactional_id(realm)}) while "
                                f"writing block {number}; this author stops: {detail}")
        self.number = number
        self.detail = detail


class AuthorKafkaError(AuthorError):
    """Kafka failed in a way retrying this block cannot fix; carries the operation and Kafka's reason."""

    def __init__(self, realm: str, operation: str, reason: str) -> None:
        super().__init__(realm, f"{operation} failed: {reason}")
        self.operation = operation
        self.reason = reason


class InputExpired(AuthorError):
    """Retention deleted records of ``topic`` the author has not read: it resumes at offset ``wanted`` and the
    topic now starts at ``earliest``. The positions in between can never be included by this author."""

    def __init__(self, realm: str, topic_name: str, wanted: int, earliest: int) -> None:
        super().__init__(realm, f"{topic_name} now starts at offset {earliest} but the author resumes at {wanted}: "
                                f"retention deleted {earliest - wanted} records it never read (its retention.ms is "
                                f"shorter than the author's outage). To go on without them run `pubsub author "
                                f"--accept-input-loss` (docs/operations.md, 'Input retention')")
        self.topic = topic_name
        self.wanted = wanted
        self.earliest = earliest


def transactional_id(realm: str) -> str:
    """The realm's author ``transactional.id``: one author per realm, the newest fences the others."""
    return f"pubsub-author-{realm}"


def parse_key(realm: str, text: str, source: str) -> Signer:
    """The author's ed25519 key from a 32-byte seed written as hex (``0x`` optional, surrounding blanks ignored).
    ``AuthorKeyError`` names ``source`` and the problem, never the text."""
    body = text.strip()
    body = body[2:] if body[:2] in ("0x", "0X") else body
    try:
        seed = bytes.fromhex(body)
    except ValueError:
        raise AuthorKeyError(realm, source, "not hexadecimal") from None
    if len(seed) != 32:
        raise AuthorKeyError(realm, source, f"{len(seed)} bytes, an ed25519 seed is 32")
    return Signer(seed)


def read_author_key(realm: str, key_file: Path | None) -> Signer:
    """The author key from ``key_file``, else from $PUBSUB_AUTHOR_KEY; never printed."""
    if key_file is not None:
        try:
            text = key_file.read_text()
        except OSError as exc:
            raise AuthorKeyError(realm, str(key_file), exc.strerror or "unreadable") from exc
        return parse_key(realm, text, str(key_file))
    from_env = os.environ.get(AUTHOR_KEY_ENV)
    if from_env is None:
        raise AuthorKeyError(realm, f"${AUTHOR_KEY_ENV}", f"not set (give --key-file or set {AUTHOR_KEY_ENV})")
    return parse_key(realm, from_env, f"${AUTHOR_KEY_ENV}")


# -- limits ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AuthorLimits:
    """What one block may include.

    ``max_records`` (all streams) defaults to admission's ``max_messages_per_block`` (600): no (stream, origin)
    can then reach admission's per-block rate limit, whatever the mix. ``max_bytes`` counts envelope bytes
    (default 5 MiB, the relay's PoV size); a record larger than it goes alone in a block (else it would stop its
    run forever). ``upward_per_para`` is the router's ``max_upward_message_num_per_candidate`` (16: more would
    refuse the para's whole batch) and ``horizontal_per_para`` one candidate per para per relay block.
    """

    max_records: int = AdmissionConfig().max_messages_per_block
    max_bytes: int = DEFAULT_MAX_BYTES
    upward_per_para: int = RouterConfig().max_upward_message_num_per_candidate
    horizontal_per_para: int = 1

    def __post_init__(self) -> None:
        if min(self.max_records, self.max_bytes, self.upward_per_para, self.horizontal_per_para) < 1:
            raise ValueError("block limits must be at least 1")

    @classmethod
    def from_relay(cls, admission: AdmissionConfig, router: RouterConfig, *, max_records: int | None = None,
                   max_bytes: int | None = None) -> AuthorLimits:
        """The limits a relay configured with ``admission`` and ``router`` implies, with optional overrides."""
        return cls(admission.max_messages_per_block if max_records is None else max_records,
                   DEFAULT_MAX_BYTES if max_bytes is None else max_bytes,
                   router.max_upward_message_num_per_candidate)

    def per_origin(self, stream: str) -> int:
        """The most records of one origin of ``stream`` a block takes."""
        if stream == "upward":
            return self.upward_per_para
        if stream == "horizontal":
            return self.horizontal_per_para
        return self.max_records


# -- the mirror of Stage R's arrival checks ----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class BlockPlan:
    """What the next block includes: its manifest and, per stream, the records and envelope bytes."""

    manifest: tuple[tuple[str, str, int], ...]
    records: Mapping[str, int]
    size: int


@dataclass
class Inclusion:
    """The author's copy of Stage R's buffering decisions for one realm (docs/threat-model.md): which positions
    hold an authentic record, and which are included. Pure: fed Kafka records, asked for the next block."""

    realm: str
    registry: KeyRegistry
    included: dict[tuple[str, str], int] = field(default_factory=dict)
    """(stream, origin) -> last included position (absent: -1)."""
    buffered: dict[tuple[str, str], dict[int, int]] = field(default_factory=dict)
    """(stream, origin) -> position -> envelope bytes, for positions above the last included one."""
    received: dict[tuple[str, str, bytes], int] = field(default_factory=dict)
    """(stream, origin, sender) -> highest seqno buffered (Stage R's ``Duplicate`` watermark)."""

    def arrive(self, topic_name: str, key: bytes | None, value: bytes | None, offset: int) -> str | None:
        """Take one record of an input topic, in offset order. Returns None when Stage R buffers it (its position
        may be included), else the reason Stage R refuses it (it takes no position)."""
        try:
            log = decode_record(topic_name, key, value, offset)
        except IngestError as exc:
            return exc.reason
        record = log.value
        if not isinstance(record, InputRecord):  # a genesis record decodes only from the genesis topic
            return "NotAnInput"
        try:
            envelope = authenticate(self.registry, self.realm, record.stream, record.origin, record.value).envelope
        except Unauthenticated as exc:
            return exc.reason.value
        slot = (record.stream, record.origin)
        seen = self.received.get((*slot, envelope.sender))
        if seen is not None and envelope.seqno <= seen:
            return "Duplicate"
        self.received[(*slot, envelope.sender)] = envelope.seqno  # spent even when refused, as Stage R does
        positions = self.buffered.setdefault(slot, {})
        if record.position in positions or record.position <= self.included.get(slot, -1):
            return "PositionConflict"
        positions[record.position] = len(record.value)
        return None

    def mark_included(self, included: Mapping[tuple[str, str], int]) -> None:
        """Positions some block already included (a replayed chain, or a block just written): forget them."""
        for slot, last in included.items():
            if last > self.included.get(slot, -1):
                self.included[slot] = last
                positions = self.buffered.get(slot, {})
                for position in [p for p in positions if p <= last]:
                    del positions[position]

    def plan(self, limits: AuthorLimits) -> BlockPlan:
        """The next block: per (stream, origin) the longest contiguous run of buffered positions after the last
        included one that fits, taking one record per origin in turn (sorted order) so no origin starves."""
        runs: dict[tuple[str, str], list[int]] = {}
        for slot in sorted(self.buffered):
            positions, run = self.buffered[slot], list[int]()
            position = self.included.get(slot, -1) + 1
            while position in positions and len(run) < limits.per_origin(slot[0]):
                run.append(positions[position])
                position += 1
            if run:
                runs[slot] = run
        taken: dict[tuple[str, str], int] = {}
        count = size = 0
        progress = True
        while progress and count < limits.max_records:
            progress = False
            for slot, run in runs.items():
                index = taken.get(slot, 0)
                if index >= len(run) or count >= limits.max_records:
                    continue
                if count and size + run[index] > limits.max_bytes:
                    continue
                taken[slot] = index + 1
                count += 1
                size += run[index]
                progress = True
        per_stream: dict[str, int] = {}
        for (stream, _), n in taken.items():
            per_stream[stream] = per_stream.get(stream, 0) + n
        manifest = tuple(sorted((s, o, self.included.get((s, o), -1) + n) for (s, o), n in taken.items()))
        return BlockPlan(manifest, per_stream, size)


# -- the chain so far --------------------------------------------------------------------------------------------
@dataclass
class ChainState:
    """The realm's chain as Stage R applies it, replayed from the ``blocks`` topic: the head, every included
    position and each author key's seqno watermark."""

    realm: str
    registry: KeyRegistry
    admission: AdmissionConfig = field(default_factory=AdmissionConfig)
    number: int | None = None
    hash: bytes = _ZERO_HASH
    included: dict[tuple[str, str], int] = field(default_factory=dict)
    watermarks: dict[bytes, int] = field(default_factory=dict)

    def replay(self, key: bytes | None, value: bytes | None, offset: int) -> BlockHeader | None:
        """Take one ``blocks`` record, in offset order: the header when it extends the chain, else None. The same
        steps as Stage R: ingest decoding, ``authenticate``, the seqno watermark (advanced by every authentic
        envelope, as admission does), size, a decodable header, then number and parent hash against the head
        and a manifest over input streams only."""
        try:
            record = decode_record(topic(self.realm, "blocks"), key, value, offset).value
            if not isinstance(record, InputRecord):
                return None
            envelope = authenticate(self.registry, self.realm, "blocks", record.origin, record.value).envelope
        except (IngestError, Unauthenticated):
            return None
        seen = self.watermarks.get(envelope.sender)
        if seen is not None and envelope.seqno <= seen:
            return None
        self.watermarks[envelope.sender] = envelope.seqno
        if len(record.value) > self.admission.max_message_size:
            return None
        try:
            header = BlockHeader.decode(envelope.data)
        except PubSubError:
            return None
        if self.number is not None and (header.number != self.number + 1 or header.parent_hash != self.hash):
            return None
        if any(stream not in INPUT_STREAMS for stream, _, _ in header.manifest):
            return None
        self.extend(header)
        return header

    @property
    def next_number(self) -> int:
        """The number of the block that extends the head (1 on an empty chain)."""
        return 1 if self.number is None else self.number + 1

    def next_header(self, manifest: tuple[tuple[str, str, int], ...], max_pov_size: int,
                    session_index: int) -> BlockHeader:
        """The header extending the head with ``manifest``, its hash from ``block_hash``."""
        draft = BlockHeader(self.next_number, _ZERO_HASH, self.hash, max_pov_size, session_index, manifest)
        return BlockHeader(draft.number, block_hash(self.realm, draft), self.hash, max_pov_size, session_index,
                           manifest)

    def append(self, header: BlockHeader, author: bytes, seqno: int) -> None:
        """A block ``author`` wrote with ``seqno`` (committed): the new head."""
        self.watermarks[author] = seqno
        self.extend(header)

    def extend(self, header: BlockHeader) -> None:
        """Make ``header`` the head and record what it includes."""
        self.number, self.hash = header.number, header.hash
        for stream, origin, last in header.manifest:
            self.included[(stream, origin)] = max(last, self.included.get((stream, origin), -1))

    def next_seqno(self, author: bytes) -> int:
        """The seqno admission accepts next from ``author``."""
        return self.watermarks.get(author, 0) + 1


def block_hash(realm: str, header: BlockHeader) -> bytes:
    """Blake2-256 of the realm and the header's SCALE encoding with its own hash field zeroed: number, parent
    hash, max PoV size, session index and manifest decide it."""
    unhashed = BlockHeader(header.number, bytes(32), header.parent_hash, header.max_pov_size,
                           header.session_index, header.manifest)
    return blake2_256(b"rfc0160/block/v1" + encode_bytes(realm.encode()) + unhashed.encode())


def block_record(realm: str, signer: Signer, seqno: int, header: BlockHeader) -> bytes:
    """The Kafka value of a block: the ``InputRecord`` JSON (stream ``blocks``, origin ``author``, position
    number - 1 as ``LogBuilder`` numbers them) of the header signed by the author."""
    envelope = signer.sign(Topic(realm, "blocks", AUTHOR_ORIGIN), seqno, header.encode())
    record = InputRecord("blocks", AUTHOR_ORIGIN, header.number - 1, envelope.encode())
    return canonical_json(record.to_json()).encode()


@dataclass(frozen=True, slots=True)
class BlockReport:
    """One written block, for the progress line."""

    header: BlockHeader
    records: Mapping[str, int]
    size: int

    def line(self) -> str:
        """``block 12 | upward 3 horizontal 2 extrinsics 0 | 4096 bytes | 0x1a2b3c4d``."""
        counts = " ".join(f"{stream} {self.records.get(stream, 0)}" for stream in INPUT_STREAMS)
        return f"block {self.header.number} | {counts} | {self.size} bytes | 0x{self.header.hash.hex()[:8]}"


# -- the Kafka side ----------------------------------------------------------------------------------------------
class BlockAuthor:
    """Writes one realm's blocks to Kafka. ``start`` waits for the genesis, fences older authors and resumes from
    the latest snapshot (else replays the chain and the inputs); ``step`` reads what arrived until the block time
    and writes one block.

    ``use_snapshot=False`` ignores the snapshots and replays the topics' whole history (they must still hold it);
    ``accept_input_loss`` resumes an input whose unread records retention deleted at its earliest offset instead
    of raising ``InputExpired``."""

    def __init__(self, settings: Settings, realm: str, signer: Signer, *, limits: AuthorLimits | None = None,
                 admission: AdmissionConfig | None = None, max_pov_size: int = DEFAULT_MAX_POV_SIZE,
                 session_index: int = 0, session_every: int | None = None,
                 trusted_genesis: bytes | None = None, use_snapshot: bool = True,
                 accept_input_loss: bool = False) -> None:
        if session_every is not None and session_every < 1:
            raise ValueError("session_every must be at least 1")
        self.settings = settings
        self.realm = realm
        self.signer = signer
        self.limits = limits or AuthorLimits()
        self.admission = admission or AdmissionConfig(realm=realm)
        self.max_pov_size = max_pov_size
        self.session_index = session_index
        self.session_every = session_every
        self.trusted_genesis = trusted_genesis
        self.use_snapshot = use_snapshot
        self.accept_input_loss = accept_input_loss
        self.resumed_from: AuthorSnapshot | None = None
        """The snapshot the last ``start`` resumed from (None: it replayed the topics' whole history)."""
        self._producer: Producer | None = None
        self._consumer: Consumer | None = None
        self._chain: ChainState | None = None
        self._inclusion: Inclusion | None = None
        self._offsets: dict[str, int] = {}
        """Input stream -> next offset to read (the snapshot's ``offsets``)."""
        self._head_offset = -1
        """Offset of the head block on the blocks topic (-1: none yet)."""

    # -- start -------------------------------------------------------------------------------------------------
    def start(self, genesis_timeout: float = 60.0) -> ChainState:
        """Everything before the first block; returns the chain it resumes from."""
        ensure_realm_topics(self.settings, self.realm, outputs=False, seam=False)
        registry = self._genesis(genesis_timeout)
        if self.signer.public_key not in registry.author_keys:
            raise NotAnAuthor(self.realm, self.signer.public_key, registry.author_keys)
        producer = Producer({**producer_config(self.settings), "transactional.id": transactional_id(self.realm),
                             "transaction.timeout.ms": "60000"})
        try:
            producer.init_transactions(_KAFKA_TIMEOUT)  # fences older authors, aborts what they left open
        except KafkaException as exc:
            raise AuthorKafkaError(self.realm, "init_transactions", str(exc.args[0])) from exc
        self._producer = producer
        snapshot = latest_snapshot(self.settings, self.realm, registry.author_keys) if self.use_snapshot else None
        if snapshot is not None and not self._head_matches(snapshot):
            snapshot = None  # the blocks topic is not the one the snapshot describes: rebuild from the topics
        chain, inclusion = _restore(self.realm, registry, self.admission, snapshot)
        self._offsets = {s: 0 for s in INPUT_STREAMS} if snapshot is None else dict(snapshot.offsets)
        self._head_offset = -1 if snapshot is None else snapshot.block_offset
        blocks = topic(self.realm, "blocks")
        for key, value, offset in self._read_to_end([blocks], self._head_offset + 1):
            if chain.replay(key, value, offset) is not None:
                self._head_offset = offset
        reader = self._input_consumer(start=True)
        try:
            self._catch_up(reader, inclusion)
        finally:
            reader.close()
        self._consumer = self._input_consumer(start=False)
        inclusion.mark_included(chain.included)
        self._chain, self._inclusion, self.resumed_from = chain, inclusion, snapshot
        return chain

    def _head_matches(self, snapshot: AuthorSnapshot) -> bool:
        """Whether the blocks topic holds the snapshot's head block at its offset. Retention may have deleted the
        head (an author down longer than it): the signed snapshot is then taken as it is, unless records written
        after the head and its commit marker went too (``InputExpired``, unless ``accept_input_loss``)."""
        name = topic(self.realm, "blocks")
        low, _ = self._watermarks(name)
        if snapshot.block_offset < low:
            if low > snapshot.block_offset + 2 and not self.accept_input_loss:
                raise InputExpired(self.realm, name, snapshot.block_offset + 1, low)
            return True
        records = self._read_to_end([name], snapshot.block_offset, snapshot.block_offset + 1)
        if not records:
            return False
        key, value, offset = records[0]
        try:
            record = decode_record(name, key, value, offset).value
            envelope = Envelope.decode(record.value) if isinstance(record, InputRecord) else None
            header = BlockHeader.decode(envelope.data) if envelope is not None else None
        except PubSubError:
            return False
        return header is not None and (header.number, header.hash) == (snapshot.number, snapshot.hash)

    def _genesis(self, timeout: float) -> KeyRegistry:
        """The key registry of the realm's first genesis record (the pinned one when ``trusted_genesis`` is
        set), as Stage R takes it; waits up to ``timeout`` seconds for one."""
        deadline = time.monotonic() + timeout
        name = topic(self.realm, "genesis")
        while True:
            for key, value, offset in self._read_to_end([name]):
                try:
                    genesis = decode_record(name, key, value, offset).value
                except IngestError:
                    continue
                if isinstance(genesis, GenesisRecord) and self.trusted_genesis in (None, genesis.digest()):
                    return genesis.registry
            if time.monotonic() > deadline:
                raise GenesisMissing(self.realm, timeout)
            time.sleep(0.5)

    def _consumer_config(self, *, start: bool) -> dict[str, str]:
        return _reader_config(self.settings, self.realm, start=start)

    def _watermarks(self, name: str) -> tuple[int, int]:
        return _topic_watermarks(self.settings, self.realm, name)

    def _read_to_end(self, names: list[str], start: int = 0,
                     end: int | None = None) -> list[tuple[bytes | None, bytes | None, int]]:
        return _read_range(self.settings, self.realm, names, start, end)

    def _input_consumer(self, *, start: bool) -> Consumer:
        """A reader of the input topics from ``_offsets``; ``InputExpired`` (unless ``accept_input_loss``) when
        retention deleted records from there."""
        starts = []
        for stream in INPUT_STREAMS:
            name = topic(self.realm, stream)
            low, _ = self._watermarks(name)
            if self._offsets[stream] < low:
                if not self.accept_input_loss:
                    raise InputExpired(self.realm, name, self._offsets[stream], low)
                self._offsets[stream] = low
            starts.append(TopicPartition(name, 0, self._offsets[stream]))
        consumer = Consumer(self._consumer_config(start=start))
        consumer.assign(starts)
        return consumer

    def catch_up(self) -> None:
        """Read every input record written up to now (``step`` reads only for a block time)."""
        assert self._consumer is not None and self._inclusion is not None, "start() first"
        self._catch_up(self._consumer, self._inclusion)

    def _catch_up(self, consumer: Consumer, inclusion: Inclusion) -> None:
        """Feed every input record up to the topics' end offsets now."""
        ends = {}
        for stream in INPUT_STREAMS:
            name = topic(self.realm, stream)
            _, high = consumer.get_watermark_offsets(TopicPartition(name, 0), timeout=_KAFKA_TIMEOUT)
            if high > self._offsets[stream]:
                ends[name] = high
        try:
            for message in _drain(self.realm, consumer, ends):
                self._arrive(inclusion, message)
        except KafkaException as exc:
            raise AuthorKafkaError(self.realm, "reading the input topics", str(exc.args[0])) from exc

    def _arrive(self, inclusion: Inclusion, message: Message) -> None:
        """One input record, in offset order, and the offset to read next."""
        name, offset = str(message.topic()), _offset(message)
        inclusion.arrive(name, message.key(), message.value(), offset)
        self._offsets[name[len(self.realm) + 1:]] = offset + 1

    # -- blocks ------------------------------------------------------------------------------------------------
    def step(self, block_time: float, stop: Callable[[], bool] = lambda: False) -> BlockReport | None:
        """Read what arrives for ``block_time`` seconds, then write the next block. None when ``stop()`` became
        true while waiting (nothing written)."""
        assert self._consumer is not None and self._inclusion is not None, "start() first"
        deadline = time.monotonic() + block_time
        while (left := deadline - time.monotonic()) > 0:
            if stop():
                return None
            message = self._consumer.poll(min(left, 0.1))
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    raise AuthorKafkaError(self.realm, "reading the input topics", error.str())
                continue
            self._arrive(self._inclusion, message)
        return self.write_block()

    def write_block(self) -> BlockReport:
        """Write the next block with what is buffered now, and the snapshot after it, in one transaction."""
        assert self._producer is not None and self._chain is not None and self._inclusion is not None
        chain, inclusion = self._chain, self._inclusion
        plan = inclusion.plan(self.limits)
        number = chain.next_number
        session = self.session_index + (number // self.session_every if self.session_every else 0)
        header = chain.next_header(plan.manifest, self.max_pov_size, session)
        seqno = chain.next_seqno(self.signer.public_key)

        def snapshot(block_offset: int) -> bytes:
            after = _snapshot_after(chain, inclusion, header, self.signer.public_key, seqno, block_offset,
                                    self._offsets)
            return snapshot_record(self.realm, self.signer, after)

        self._head_offset = self._commit(number, block_record(self.realm, self.signer, seqno, header), snapshot)
        chain.append(header, self.signer.public_key, seqno)
        inclusion.mark_included(header.last_included())
        return BlockReport(header, plan.records, plan.size)

    def _commit(self, number: int, value: bytes, snapshot: Callable[[int], bytes]) -> int:
        """One transaction holding the block and ``snapshot(offset of the block)``; returns the block's offset.
        ``AuthorFenced`` when a newer author took over."""
        producer = self._producer
        assert producer is not None
        failures: list[KafkaError] = []
        offsets: list[int] = []

        def delivered(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                failures.append(err)
            else:
                offsets.append(_offset(msg))

        try:
            producer.begin_transaction()
            producer.produce(topic(self.realm, "blocks"), key=AUTHOR_ORIGIN.encode(), value=value,
                             on_delivery=delivered)
            producer.flush(_KAFKA_TIMEOUT)
            if failures or not offsets:
                raise KafkaException(failures[0] if failures else KafkaError(KafkaError._TIMED_OUT))
            producer.produce(topic(self.realm, AUTHOR_STATE), key=SNAPSHOT_KEY, value=snapshot(offsets[0]),
                             on_delivery=delivered)
            producer.flush(_KAFKA_TIMEOUT)
            if failures:
                raise KafkaException(failures[0])
            producer.commit_transaction(_KAFKA_TIMEOUT)
            return offsets[0]
        except (KafkaException, SystemError) as exc:  # a fatal error may surface as a SystemError from flush
            error = _kafka_error(exc)
            if error is None:
                raise
            if error.code() not in _FENCED_CODES and error.txn_requires_abort():
                # A delivery error (a purged queue, say) may be the first sign of fencing: the abort then fails
                # with the fencing error, which is the one to report.
                try:
                    producer.abort_transaction(_KAFKA_TIMEOUT)
                except KafkaException as abort_exc:
                    error = _kafka_error(abort_exc) or error
            if error.code() in _FENCED_CODES:
                raise AuthorFenced(self.realm, number, error.str()) from exc
            raise AuthorKafkaError(self.realm, f"writing block {number}", error.str()) from exc

    def close(self) -> None:
        """Release the clients. The producer is not flushed: each block's transaction is committed or aborted
        before ``_commit`` returns, so nothing is pending, and a flush would drain librdkafka's queue of events,
        where a fencing the failed block already reported as ``AuthorFenced`` may still wait as a fatal error and
        would be raised again, in place of the typed error."""
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
        self._producer = None


def latest_snapshot(settings: Settings, realm: str, author_keys: frozenset[bytes]) -> AuthorSnapshot | None:
    """The realm's newest snapshot an author key signed: the highest-numbered genuine one among the last records
    of ``<realm>.author-state`` (a window widened backwards until one is found; a compacted topic whose tail is not
    cleaned yet still ends with the newest). None when there is none (or no topic)."""
    name = topic(realm, AUTHOR_STATE)
    try:
        low, high = _topic_watermarks(settings, realm, name)
    except AuthorKafkaError:
        return None  # no snapshot topic: a realm no author with snapshots wrote
    window = _SNAPSHOT_WINDOW
    while high > low:
        start = max(low, high - window)
        found = [s for _, value, _ in _read_range(settings, realm, [name], start, high)
                 if (s := open_snapshot(realm, author_keys, value)) is not None]
        if found:
            return max(found, key=lambda s: s.number)
        high, window = start, window * 4
    return None


def _reader_config(settings: Settings, realm: str, *, start: bool = True) -> dict[str, str]:
    """Read committed. ``start``: for reads that wait for each topic's end (a start's): the broker answers an
    empty fetch at once instead of holding it for the default 500 ms."""
    config = {**consumer_config(settings, f"pubsub-author-{realm}-reader"), "isolation.level": "read_committed"}
    return {**config, "fetch.wait.max.ms": "10"} if start else config


def _topic_watermarks(settings: Settings, realm: str, name: str) -> tuple[int, int]:
    """The earliest offset kept and the end offset of a single-partition topic."""
    consumer = Consumer(_reader_config(settings, realm))
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(name, 0), timeout=_KAFKA_TIMEOUT)
        return int(low), int(high)
    except KafkaException as exc:
        raise AuthorKafkaError(realm, f"reading the offsets of {name}", str(exc.args[0])) from exc
    finally:
        consumer.close()


def _read_range(settings: Settings, realm: str, names: list[str], start: int = 0,
                end: int | None = None) -> list[tuple[bytes | None, bytes | None, int]]:
    """Every committed record of single-partition topics from offset ``start`` to ``end`` (default: their end
    now), as (key, value, offset)."""
    consumer = Consumer(_reader_config(settings, realm))
    try:
        out: list[tuple[bytes | None, bytes | None, int]] = []
        for name in names:
            _, high = consumer.get_watermark_offsets(TopicPartition(name, 0), timeout=_KAFKA_TIMEOUT)
            stop = high if end is None else min(end, high)
            if stop <= start:
                continue
            consumer.assign([TopicPartition(name, 0, start)])
            for m in _drain(realm, consumer, {name: stop}):
                if _offset(m) < stop:
                    out.append((m.key(), m.value(), _offset(m)))
        return out
    except KafkaException as exc:
        raise AuthorKafkaError(realm, f"reading {', '.join(names)}", str(exc.args[0])) from exc
    finally:
        consumer.close()


def _restore(realm: str, registry: KeyRegistry, admission: AdmissionConfig,
             snapshot: AuthorSnapshot | None) -> tuple[ChainState, Inclusion]:
    """The chain and inclusion state a snapshot holds (empty ones without a snapshot)."""
    if snapshot is None:
        return ChainState(realm, registry, admission), Inclusion(realm, registry)
    chain = ChainState(realm, registry, admission, snapshot.number, snapshot.hash, dict(snapshot.included),
                       dict(snapshot.watermarks))
    buffered = {slot: dict(positions) for slot, positions in snapshot.buffered.items()}
    return chain, Inclusion(realm, registry, dict(snapshot.included), buffered, dict(snapshot.received))


def _snapshot_after(chain: ChainState, inclusion: Inclusion, header: BlockHeader, author: bytes, seqno: int,
                    block_offset: int, offsets: Mapping[str, int]) -> AuthorSnapshot:
    """The snapshot once ``header`` (written by ``author`` with ``seqno`` at ``block_offset``) is the head,
    computed without changing ``chain`` or ``inclusion`` (the block is not committed yet)."""
    included = dict(chain.included)
    for slot, last in header.last_included().items():
        included[slot] = max(last, included.get(slot, -1))
    buffered = {slot: {p: n for p, n in positions.items() if p > included.get(slot, -1)}
                for slot, positions in inclusion.buffered.items()}
    return AuthorSnapshot(header.number, header.hash, block_offset, {**chain.watermarks, author: seqno}, included,
                          dict(inclusion.received), {slot: ps for slot, ps in buffered.items() if ps},
                          dict(offsets))


def _kafka_error(exc: BaseException) -> KafkaError | None:
    """The KafkaError behind ``exc``: its own, or one of the exceptions it was raised from or during (librdkafka's
    fatal errors reach Python through the delivery callback as a SystemError whose cause is the KafkaException)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, KafkaException) and isinstance(seen.args[0], KafkaError):
            return seen.args[0]
        seen = seen.__cause__ or seen.__context__
    return None


def _offset(message: Message) -> int:
    offset = message.offset()
    assert offset is not None  # a fetched message always has one
    return offset


def _drain(realm: str, consumer: Consumer, ends: Mapping[str, int]) -> Iterable[Message]:
    """The assigned partitions' records, in offset order per topic, until each topic of ``ends`` reached its end
    offset (or an end-of-partition event at or past it: with transactions the last offsets may be commit markers,
    never returned). Records past an end that arrive meanwhile are yielded too, so none is skipped."""
    done: set[str] = set()
    deadline = time.monotonic() + 4 * _KAFKA_TIMEOUT
    while len(done) < len(ends):
        if time.monotonic() > deadline:
            raise AuthorKafkaError(realm, "catching up", f"topics {sorted(set(ends) - done)} not read to their end")
        message = consumer.poll(0.5)
        if message is None:
            continue
        name, error, offset = str(message.topic()), message.error(), message.offset()
        if error is not None:
            if error.code() != KafkaError._PARTITION_EOF:
                raise AuthorKafkaError(realm, f"reading {name}", error.str())
            if name in ends and offset is not None and offset >= ends[name]:
                done.add(name)
            continue
        yield message
        if name in ends and offset is not None and offset + 1 >= ends[name]:
            done.add(name)
