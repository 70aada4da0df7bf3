"""Seeded synthetic event logs for the simulator and the streaming job (input generation, not protocol).

``LogBuilder`` authors one realm's log the way real producers would: it signs envelopes, numbers each
(stream, origin)'s records, and writes blocks whose manifests include everything sent since the previous
block. ``generate(spec)`` drives it into a workload: registrations, subscriptions, Publish traffic with a TTL
mix, downward and horizontal messages, and a fraction of bad records of several kinds. Every choice comes
from ``random.Random`` seeded by the spec, so a spec always gives the same bytes.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from pubsub_core.codec.scale import encode_bytes, encode_compact, encode_u32
from pubsub_core.envelope import KeyRegistry, Signer, Topic
from pubsub_core.hashing import blake2_256
from pubsub_core.relay import BlockHeader, BroadcasterCall, CallKind, Genesis, InputRecord, VoidOrder, canonical_json
from pubsub_core.router.calls import AcceptOpenChannel, HorizontalRecord, InitOpenChannel, SendDownward
from pubsub_core.router.records import OutboundHrmpMessage
from pubsub_core.stages import GenesisRecord
from pubsub_core.subscriber import SetSubscriptions
from pubsub_core.xcm import Publish, Xcm, encode_versioned_xcm
from pubsub_core.xcm.executor import sovereign_account
from pubsub_core.xcm.types import ClearOrigin

__all__ = [
    "Actors", "BAD_KINDS", "LogBuilder", "WorkloadSpec", "actors", "generate", "genesis_record", "minimal_example",
    "parse_ttl_mix", "publish_item", "register_publishers", "subscribe",
]

BAD_KINDS = (
    "bad_signature", "replayed_seqno", "oversize", "malformed_json", "non_publish", "unregistered",
    "unknown_topic", "bad_hex",
)
"""The kinds of bad records ``generate`` mixes in; docs/simulator.md gives the outcome of each."""

MAX_POV_SIZE = 5 * 1024 * 1024
PUBLISHES_PER_MESSAGE = 16


def signer(label: str) -> Signer:
    """A fixed ed25519 key named by ``label`` (the same key in every run)."""
    return Signer(blake2_256(b"rfc0160/workload/" + label.encode()))


def published_key(publisher: int, index: int) -> bytes:
    """The ``index``-th 32-byte key a publisher uses: Blake2-256 of ``"<publisher>/key-<index>"``."""
    return blake2_256(f"{publisher}/key-{index}".encode())


@dataclass
class LogBuilder:
    """One realm's event log, line by line.

    Genuine records take consecutive positions per (stream, origin), and blocks include them. Hostile records
    (``hostile``, ``before_next``) are written at the position of the next genuine record without taking it:
    Stage R refuses them when they arrive, so a block including them would wait forever.
    """

    realm: str = "polkadot"
    lines: list[str] = field(default_factory=list)
    number: int = 0
    session: int = 0
    positions: dict[tuple[str, str], int] = field(default_factory=dict)
    seqnos: dict[tuple[str, str, bytes], int] = field(default_factory=dict)
    since_block: dict[tuple[str, str], int] = field(default_factory=dict)
    author: Signer = field(default_factory=lambda: signer("author"))
    pending: dict[tuple[str, str], list[Callable[[InputRecord], bytes]]] = field(default_factory=dict)

    def line(self, topic: str, key: str, value: object) -> None:
        self.lines.append(canonical_json({"topic": topic, "key": key, "value": value}))

    def genesis(self, registry: KeyRegistry, genesis: Genesis) -> None:
        self.line(f"{self.realm}.genesis", self.realm, GenesisRecord(registry, genesis).to_json())

    def raw(self, stream: str, origin: str, value: bytes) -> InputRecord:
        """Append a genuine record of arbitrary bytes at the next position of (stream, origin), after the
        hostile copies ``before_next`` asked for."""
        position = self.positions.get((stream, origin), 0)
        self.positions[(stream, origin)] = position + 1
        if stream != "blocks":
            self.since_block[(stream, origin)] = position
        record = InputRecord(stream, origin, position, value)
        for make in self.pending.pop((stream, origin), []):
            self.line(f"{self.realm}.{stream}", origin, InputRecord(stream, origin, position, make(record)).to_json())
        self.line(f"{self.realm}.{stream}", origin, record.to_json())
        return record

    def hostile(self, stream: str, origin: str, value: bytes) -> InputRecord:
        """Append a record at the next position of (stream, origin) without taking it (the next genuine record
        comes at the same position): one Stage R refuses when it arrives."""
        record = InputRecord(stream, origin, self.positions.get((stream, origin), 0), value)
        self.line(f"{self.realm}.{stream}", origin, record.to_json())
        return record

    def before_next(self, stream: str, origin: str, make: Callable[[InputRecord], bytes]) -> None:
        """Just before the next genuine record of (stream, origin), write a hostile one at its position whose
        value is ``make(genuine record)`` (e.g. a forged copy of it)."""
        self.pending.setdefault((stream, origin), []).append(make)

    def signed(self, key: Signer, stream: str, origin: str, data: bytes, seqno: int | None = None) -> InputRecord:
        """Sign ``data`` as the next (or the given) seqno of ``key`` on (stream, origin) and append it."""
        slot = (stream, origin, key.public_key)
        number = self.seqnos.get(slot, 0) + 1 if seqno is None else seqno
        self.seqnos[slot] = max(self.seqnos.get(slot, 0), number)
        return self.raw(stream, origin, key.sign(Topic(self.realm, stream, origin), number, data).encode())

    def publish(self, para: int, key: Signer, items: list[tuple[bytes, bytes, int]]) -> InputRecord:
        """One upward message of ``para`` with a Publish per (key, value, ttl)."""
        message = Xcm(tuple(Publish(k, v, ttl) for k, v, ttl in items))
        return self.signed(key, "upward", str(para), encode_versioned_xcm(message))

    def block(self, max_pov_size: int = MAX_POV_SIZE) -> BlockHeader:
        """A block including every record appended since the previous block, signed by the author."""
        self.number += 1
        manifest = tuple(sorted((s, o, p) for (s, o), p in self.since_block.items()))
        header = BlockHeader(self.number, self.block_hash(self.number), self.block_hash(self.number - 1),
                             max_pov_size, self.session, manifest)
        self.since_block = {}
        self.signed(self.author, "blocks", "author", header.encode())
        return header

    def block_hash(self, number: int) -> bytes:
        return bytes(32) if number == 0 else blake2_256(f"{self.realm}/block/{number}".encode())


@dataclass(frozen=True)
class WorkloadSpec:
    """What ``pubsub workload`` generates (its flags, one to one)."""

    seed: int = 0
    blocks: int = 20
    publishers: int = 2
    system_publishers: int = 1
    subscribers: int = 2
    keys: int = 6
    subscribed_keys: int = 4
    value_min: int = 8
    value_max: int = 64
    update_rate: float = 0.3
    ttl_mix: tuple[tuple[int, float], ...] = ((0, 0.8), (5, 0.2))
    bad_records: float = 0.05
    dmp_rate: float = 0.2
    quiet_blocks: int = 3
    max_pov_size: int = MAX_POV_SIZE
    realm: str = "polkadot"

    def __post_init__(self) -> None:
        if self.max_pov_size < 0:
            raise ValueError("max_pov_size cannot be negative")
        if self.blocks < 1 or self.keys < 1 or self.publishers < 0 or self.system_publishers < 0:
            raise ValueError("blocks and keys must be at least 1, publisher counts non-negative")
        if self.publishers + self.system_publishers < 1:
            raise ValueError("a workload needs at least one publisher")
        if not 0 <= self.value_min <= self.value_max <= 1024:
            raise ValueError("need 0 <= value-min <= value-max <= 1024 (XCM's MaxPublishValueLength)")
        if self.keys * (32 + self.value_max) > 2048:
            raise ValueError(f"{self.keys} keys of up to {self.value_max} bytes exceed a publisher's 2048-byte "
                             "MaxTotalStorageSize; lower --keys or --value-max")
        if not (0 <= self.update_rate <= 1 and 0 <= self.bad_records <= 1 and 0 <= self.dmp_rate <= 1):
            raise ValueError("rates and fractions are in [0, 1]")
        if not self.ttl_mix or any(ttl < 0 or w < 0 for ttl, w in self.ttl_mix) or sum(w for _, w in self.ttl_mix) <= 0:
            raise ValueError("the TTL mix needs non-negative TTLs and weights with a positive sum")


def parse_ttl_mix(text: str) -> tuple[tuple[int, float], ...]:
    """``"0:0.8,5:0.2"`` -> ((0, 0.8), (5, 0.2)): TTL in blocks (0 = never expires) and its weight."""
    try:
        pairs = tuple((int(ttl), float(weight)) for ttl, weight in (part.split(":") for part in text.split(",")))
    except ValueError as exc:
        raise ValueError(f"a TTL mix is ttl:weight[,ttl:weight...], got {text!r}") from exc
    return pairs


@dataclass
class Actors:
    """Who takes part in a workload: the manager account, governance, the author and every para's collator key."""

    manager: Signer
    root: Signer
    collators: dict[int, Signer]
    system: list[int]
    registered: list[int]
    subscribers: list[int]
    unregistered: int

    @property
    def publishers(self) -> list[int]:
        return self.system + self.registered


def actors(spec: WorkloadSpec) -> Actors:
    """The spec's paras (system publishers 1000.., registered publishers 2000.., subscribers 3000.., and 2999,
    which is never registered) and their fixed keys."""
    system = [1000 + i for i in range(spec.system_publishers)]
    registered = [2000 + i for i in range(spec.publishers)]
    subscribers = [3000 + i for i in range(spec.subscribers)]
    unregistered = 2999
    paras = system + registered + subscribers + [unregistered]
    return Actors(signer("manager"), signer("root"), {p: signer(f"collator/{p}") for p in paras}, system,
                  registered, subscribers, unregistered)


def genesis_record(cast: Actors, author: Signer) -> GenesisRecord:
    """The realm's genesis: every collator key, the manager account, root and ``author``; the manager's and the
    subscribers' sovereign accounts endowed; the manager managing every registered publisher."""
    registry = KeyRegistry(
        para_keys={p: frozenset({s.public_key}) for p, s in cast.collators.items()},
        accounts=frozenset({cast.manager.public_key}),
        root_keys=frozenset({cast.root.public_key}),
        author_keys=frozenset({author.public_key}),
    )
    endowments = [(cast.manager.public_key, 10**6)] + [(sovereign_account(p), 10**15) for p in cast.subscribers]
    return GenesisRecord(registry, Genesis(tuple(sorted(endowments)),
                                           tuple((p, cast.manager.public_key) for p in cast.registered)))


def register_publishers(log: LogBuilder, cast: Actors) -> int:
    """The manager's ``register_publisher`` extrinsic for each registered (non-system) publisher; their count."""
    account = cast.manager.public_key.hex()
    for para in cast.registered:
        log.signed(cast.manager, "extrinsics", account, BroadcasterCall(CallKind.REGISTER_PUBLISHER, para).encode())
    return len(cast.registered)


def subscribe(log: LogBuilder, rng: random.Random, spec: WorkloadSpec, cast: Actors, para: int) -> SetSubscriptions:
    """Subscriber ``para``'s ``set_subscriptions`` call (``spec.subscribed_keys`` (publisher, key) pairs drawn
    from ``rng``), signed by its collator on ``extrinsics/para:<para>``."""
    pairs = [(p, i) for p in cast.publishers for i in range(spec.keys)]
    chosen = rng.sample(pairs, min(spec.subscribed_keys, len(pairs)))
    mapping: dict[int, set[bytes]] = {}
    for publisher, index in chosen:
        mapping.setdefault(publisher, set()).add(published_key(publisher, index))
    call = SetSubscriptions(tuple((p, tuple(sorted(keys))) for p, keys in sorted(mapping.items())))
    log.signed(cast.collators[para], "extrinsics", f"para:{para}", call.encode())
    return call


def publish_item(rng: random.Random, spec: WorkloadSpec, para: int, index: int) -> tuple[bytes, bytes, int]:
    """One Publish of ``para``'s ``index``-th key: a value of ``value_min..value_max`` random bytes and a TTL from
    the mix."""
    ttls, weights = [t for t, _ in spec.ttl_mix], [w for _, w in spec.ttl_mix]
    return (published_key(para, index), rng.randbytes(rng.randint(spec.value_min, spec.value_max)),
            rng.choices(ttls, weights)[0])


def generate(spec: WorkloadSpec, counts: Counter[str] | None = None) -> Iterator[list[str]]:
    """The workload's lines, one list per relay block (the set-up and genesis come with block 1).

    ``counts``, if given, is filled with what was generated: publishes, bad records by kind, and so on.
    """
    rng = random.Random(spec.seed)
    tally: Counter[str] = counts if counts is not None else Counter()
    cast = actors(spec)
    log = LogBuilder(spec.realm)
    start = genesis_record(cast, log.author)
    log.genesis(start.registry, start.genesis)
    dmq_pending: dict[int, list[int]] = {p: [] for p in cast.subscribers}
    sent: list[InputRecord] = []
    total_blocks = spec.blocks + spec.quiet_blocks
    emitted = 0
    for number in range(1, total_blocks + 1):
        quiet = number > spec.blocks
        if number == 1:
            tally["registrations"] += register_publishers(log, cast)
            if len(cast.subscribers) >= 2:
                first, second = cast.subscribers[:2]
                log.signed(cast.collators[first], "extrinsics", f"para:{first}", InitOpenChannel(second, 8, 1024).encode())
                log.signed(cast.collators[second], "extrinsics", f"para:{second}", AcceptOpenChannel(first).encode())
        if number == 2:
            log.session += 1  # the session change opens the HRMP channel requested in block 1
        if number == 1 or (number == spec.blocks // 2 + 1 and not quiet):
            for para in cast.subscribers:
                if number == 1 or rng.random() < 0.5:
                    subscribe(log, rng, spec, cast, para)
                    tally["subscription calls"] += 1
        if not quiet:
            for para in cast.publishers:
                items = [publish_item(rng, spec, para, i) for i in range(spec.keys) if rng.random() < spec.update_rate]
                for chunk in range(0, len(items), PUBLISHES_PER_MESSAGE):
                    batch = items[chunk: chunk + PUBLISHES_PER_MESSAGE]
                    sent.append(log.publish(para, cast.collators[para], batch))
                    tally["publishes"] += len(batch)
                    tally["upward messages"] += 1
                    if rng.random() < spec.bad_records:
                        _bad(rng, log, cast, sent, tally)
            for para in cast.subscribers:
                if rng.random() < spec.dmp_rate:
                    log.signed(cast.root, "extrinsics", "root", SendDownward(para, rng.randbytes(rng.randint(16, 256))).encode())
                    dmq_pending[para].append(number)
                    tally["downward messages"] += 1
        for index, para in enumerate(cast.subscribers):
            processed = sum(1 for at in dmq_pending[para] if at < number)
            dmq_pending[para] = [at for at in dmq_pending[para] if at >= number]
            messages: tuple[OutboundHrmpMessage, ...] = ()
            if index == 0 and len(cast.subscribers) >= 2 and number >= 3 and not quiet and rng.random() < 0.5:
                messages = (OutboundHrmpMessage(cast.subscribers[1], rng.randbytes(rng.randint(16, 512))),)
                tally["horizontal messages"] += 1
            record = HorizontalRecord(messages, processed, number - 1)
            log.signed(cast.collators[para], "horizontal", str(para), record.encode())
        log.block(spec.max_pov_size)
        tally["blocks"] += 1
        yield log.lines[emitted:]
        emitted = len(log.lines)


def _bad(rng: random.Random, log: LogBuilder, cast: Actors, sent: list[InputRecord], tally: Counter[str]) -> None:
    """Append one bad record of a random kind. The two hostile copies (``bad_signature``, ``replayed_seqno``)
    are written, and counted, just before the next genuine upward record of their para, at its position; if
    that para sends nothing more, they are not written."""
    kind = rng.choice(BAD_KINDS)
    para = rng.choice(cast.publishers)
    origin, collator = str(para), cast.collators[para]
    item = (published_key(para, 0), b"\x01", 0)

    def counted(make: Callable[[InputRecord], bytes]) -> Callable[[InputRecord], bytes]:
        def write(genuine: InputRecord) -> bytes:
            tally[f"bad: {kind}"] += 1
            return make(genuine)
        return write

    if kind == "bad_signature":
        log.before_next("upward", origin, counted(_forged))
        return
    if kind == "replayed_seqno":
        earlier = rng.choice(sent)
        log.before_next(earlier.stream, earlier.origin, counted(lambda _: earlier.value))
        return
    tally[f"bad: {kind}"] += 1
    if kind == "oversize":
        publish = bytes((0x34,)) + item[0] + encode_bytes(b"\x00" * 1025) + encode_u32(0)
        log.signed(collator, "upward", origin, b"\x05" + encode_compact(1) + publish)
    elif kind == "non_publish":
        log.signed(collator, "upward", origin, encode_versioned_xcm(Xcm((ClearOrigin(),))))
    elif kind == "unregistered":
        other = cast.unregistered
        log.publish(other, cast.collators[other], [(published_key(other, 0), b"\x02", 0)])
    elif kind == "malformed_json":
        log.lines.append('{"topic": "' + log.realm + '.upward", "key": "' + origin + '", "value": {')
    elif kind == "unknown_topic":
        log.lines.append(canonical_json({"topic": f"{log.realm}.sideways", "key": origin, "value": {}}))
    else:
        value = {"stream": "upward", "origin": origin, "position": 10**6, "value": "0xzz"}
        log.lines.append(json.dumps({"topic": f"{log.realm}.upward", "key": origin, "value": value}, sort_keys=True))


def _forged(genuine: InputRecord) -> bytes:
    """A copy of a genuine envelope with one signature byte flipped."""
    return genuine.value[:-1] + bytes((genuine.value[-1] ^ 0xFF,))


def minimal_example(realm: str = "polkadot") -> list[str]:
    """examples/minimal.jsonl: system para 1000 publishes keys "price" and "volume", para 3000 subscribes to both.
    Block 1 carries the subscription, block 2 publishes both keys, block 3 updates "price"."""
    log = LogBuilder(realm)
    publisher, subscriber = signer("collator/1000"), signer("collator/3000")
    keys = {1000: frozenset({publisher.public_key}), 3000: frozenset({subscriber.public_key})}
    log.genesis(KeyRegistry(para_keys=keys, author_keys=frozenset({log.author.public_key})), Genesis())
    price, volume = blake2_256(b"price"), blake2_256(b"volume")
    log.signed(subscriber, "extrinsics", "para:3000", SetSubscriptions(((1000, tuple(sorted((price, volume)))),)).encode())
    log.block()
    log.publish(1000, publisher, [(price, b"42", 0), (volume, b"1000", 0)])
    log.block()
    log.publish(1000, publisher, [(price, b"43", 0)])
    log.block()
    return log.lines


def stalled_example(realm: str = "polkadot") -> list[str]:
    """examples/stalled.jsonl: as the minimal example, but the only copy of para 1000's second upward message
    (position 1) is forged. Block 3 includes that position, so it waits; blocks 4 to 6 queue behind it (the realm
    is seen stalled after 3 later blocks); the author's void order for block 3 voids the position, and blocks 3 to
    7 apply (block 7 publishes ``price`` = "44" at position 2)."""
    log = LogBuilder(realm)
    publisher, subscriber = signer("collator/1000"), signer("collator/3000")
    keys = {1000: frozenset({publisher.public_key}), 3000: frozenset({subscriber.public_key})}
    log.genesis(KeyRegistry(para_keys=keys, author_keys=frozenset({log.author.public_key})), Genesis())
    price = blake2_256(b"price")
    log.signed(subscriber, "extrinsics", "para:3000", SetSubscriptions(((1000, (price,)),)).encode())
    log.block()
    log.publish(1000, publisher, [(price, b"42", 0)])
    log.block()
    slot = ("upward", "1000")
    seqno = log.seqnos.get((*slot, publisher.public_key), 0) + 1
    log.seqnos[(*slot, publisher.public_key)] = seqno
    never_sent = InputRecord(*slot, log.positions[slot], publisher.sign(
        Topic(realm, *slot), seqno, encode_versioned_xcm(Xcm((Publish(price, b"43", 0),)))).encode())
    log.hostile(*slot, _forged(never_sent))
    log.positions[slot] = never_sent.position + 1
    log.since_block[slot] = never_sent.position
    log.block()
    for _ in range(3):
        log.block()
    log.signed(log.author, "blocks", "author", VoidOrder(3, ((*slot, never_sent.position, never_sent.position),)).encode())
    log.publish(1000, publisher, [(price, b"44", 0)])
    log.block()
    return log.lines
