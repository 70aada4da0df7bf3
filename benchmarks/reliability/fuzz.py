"""A fuzzer over every input edge of pubsub_core: mutated valid encodings, or atheris (libFuzzer).

    python -m benchmarks.reliability.fuzz --inputs N [--seed S] [--target NAME] [--seconds T] [--engine mutate|atheris]

Each target takes bytes. Seed corpora are VALID inputs (a generated workload's event log, examples/*.jsonl, the
trie vectors, encodings built with the codecs); the default engine mutates them (bit flips, byte insert/delete,
truncation, splicing two inputs, SCALE length/integer tweaks, list-level edits of proof nodes, JSON-level edits:
type swaps, huge/negative/fractional numbers, deep nesting, removed/extra fields, broken hex) with a
``random.Random`` per target seeded from ``--seed``: the same seed runs the same inputs.

The oracle (``execute``): an input ends ``accepted`` or as a typed rejection (a ``PubSubError`` subclass, or a
rejection record/outcome). Anything else is a failure: an untyped exception, a typed exception escaping an edge
documented never to raise (``Simulator.feed_line``, ``ingest_record``), more than ``MAX_SECONDS`` on one input
(an interval timer interrupts it), or a tracemalloc peak over ``MAX_PEAK_BYTES``. Each failure's input is saved
to ``tests/fuzz/regressions/<target>/<sha>.bin``; tests/fuzz/test_fuzz_regressions.py replays every file there.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import random
import signal
import sys
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.common import write_result

if TYPE_CHECKING:  # imported lazily at run time: a target loads only what it fuzzes
    from rich.table import Table

    from pubsub_core.envelope import KeyRegistry, Signer
    from pubsub_core.relay import Genesis
    from pubsub_core.simulator import Simulator
    from pubsub_core.subscriber import BlockContext, RelayProof, SubscriberConfig, Subscriptions
    from state import MemoryBackend

ROOT = Path(__file__).resolve().parents[2]
REGRESSIONS = ROOT / "tests" / "fuzz" / "regressions"

MAX_SECONDS = 2.0
"""An input taking more CPU seconds than this is a failure (a hang); wall time is reported too."""
MAX_PEAK_BYTES = 64 << 20
"""An input whose tracemalloc peak exceeds this is a failure (a memory blow-up)."""
REALM = "polkadot"


class Hang(BaseException):
    """Raised by the interval timer inside an input that ran past ``MAX_SECONDS`` (not an ``Exception``, so no
    ``except Exception`` in the code under test swallows it)."""


# -- outcomes ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Outcome:
    """``kind`` is ``accepted``, ``rejected`` (``label``: the error class or rejection reason) or ``failure``
    (``label``: what went wrong)."""

    kind: str
    label: str = ""
    seconds: float = 0.0
    peak: int = 0

    @property
    def failed(self) -> bool:
        return self.kind == "failure"


class Rejected(Exception):
    """Raised by a target for a rejection that is a returned value (an outcome record, a verdict), not an error."""

    def __init__(self, label: str) -> None:
        super().__init__(label)
        self.label = label


class Escaped(Exception):
    """Raised by a target whose edge is documented never to raise, when a typed error escaped it anyway."""


def execute(target: Target, data: bytes, *, measure_memory: bool = True) -> Outcome:
    """Run ``target`` on ``data`` under the oracle (timer, tracemalloc) and classify the outcome."""
    from pubsub_core.errors import PubSubError

    if measure_memory:
        tracemalloc.reset_peak()
    signal.setitimer(signal.ITIMER_PROF, MAX_SECONDS)  # CPU time: a loaded machine's stalls are not hangs
    start, cpu = time.perf_counter(), time.process_time()
    try:
        target.run(data)
        kind, label = "accepted", ""
    except Rejected as exc:
        kind, label = "rejected", exc.label
    except Escaped as exc:
        kind, label = "failure", f"escaped {exc}"
    except PubSubError as exc:
        kind, label = "rejected", type(exc).__name__
    except Hang:
        kind, label = "failure", f"hang over {MAX_SECONDS} s"
    except Exception as exc:  # noqa: BLE001 - the point: any other exception is a finding
        kind, label = "failure", f"{type(exc).__name__}: {str(exc)[:120]}"
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = tracemalloc.get_traced_memory()[1] if measure_memory else 0
    if kind != "failure" and cpu > MAX_SECONDS:
        kind, label = "failure", f"slow: {cpu:.2f} s of CPU"
    if kind != "failure" and peak > MAX_PEAK_BYTES:
        kind, label = "failure", f"memory: peak {peak >> 20} MiB"
    return Outcome(kind, label, seconds, peak)


def _on_alarm(signum: int, frame: object) -> None:
    raise Hang()


class Oracle:
    """The process-wide set-up ``execute`` needs (the timer's handler, tracemalloc), undone on exit."""

    def __init__(self, measure_memory: bool = True) -> None:
        self.measure_memory = measure_memory

    def __enter__(self) -> Oracle:
        self._previous = signal.signal(signal.SIGPROF, _on_alarm)
        self._tracing = tracemalloc.is_tracing()
        if self.measure_memory and not self._tracing:
            tracemalloc.start()
        return self

    def __exit__(self, *exc: object) -> None:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, self._previous)
        if self.measure_memory and not self._tracing:
            tracemalloc.stop()


# -- targets ----------------------------------------------------------------------------------------------------
@dataclass
class Target:
    """A fuzz target: ``run(bytes)`` returns on acceptance and raises to reject; ``corpus`` holds valid inputs.
    ``kind`` picks the structure-aware mutations: ``bytes``, ``json`` (the whole input is JSON), ``record``
    (``topic \\0 key \\0 value``, the value JSON) or ``nodes`` (a SCALE ``Vec<Vec<u8>>`` after a 1-byte selector)."""

    name: str
    description: str
    run: Callable[[bytes], object]
    corpus: list[bytes]
    kind: str = "bytes"


def _scale_vec(items: Sequence[bytes]) -> bytes:
    from pubsub_core.codec.scale import encode_bytes, encode_compact

    return encode_compact(len(items)) + b"".join(encode_bytes(item) for item in items)


def _read_vec(data: bytes) -> list[bytes]:
    """A SCALE ``Vec<Vec<u8>>`` read leniently (a harness, not the code under test): what does not parse is
    cut off, so every input means some list of byte strings."""
    from pubsub_core.codec.scale import ScaleDecodeError, ScaleReader

    reader = ScaleReader(data)
    items: list[bytes] = []
    try:
        count = reader.compact()
        for _ in range(min(count, 4096)):
            items.append(reader.bytes_vec())
    except ScaleDecodeError:
        pass
    return items


@cache
def workload() -> tuple[list[bytes], Signer]:
    """A generated event log with every kind of record (and a few bad ones), and its block author's key."""
    from producers.workload import WorkloadSpec, generate, signer

    spec = WorkloadSpec(seed=3, blocks=6, bad_records=0.1)
    lines = [line.encode() for chunk in generate(spec) for line in chunk]
    return lines, signer("author")


@cache
def example_lines() -> list[bytes]:
    lines: list[bytes] = []
    for path in sorted((ROOT / "examples").glob("*.jsonl")):
        lines += [line for line in path.read_bytes().splitlines() if line.strip()]
    return lines


def _records() -> list[tuple[str, str, bytes]]:
    """(stream, origin, value bytes) of every input record of the seed logs (not the genesis)."""
    out = []
    for line in workload()[0] + example_lines():
        try:
            entry = json.loads(line)
            value = entry["value"]
            if isinstance(value, dict) and isinstance(value.get("value"), str) and value["value"].startswith("0x"):
                out.append((str(value.get("stream")), str(value.get("origin")), bytes.fromhex(value["value"][2:])))
        except (ValueError, KeyError, TypeError):
            continue
    return out


@cache
def registry() -> tuple[KeyRegistry, Genesis]:
    from pubsub_core.stages.records import GenesisRecord, decode_value

    first = json.loads(workload()[0][0])
    genesis = decode_value(REALM, "genesis", first["key"], first["value"])
    assert isinstance(genesis, GenesisRecord)
    return genesis.registry, genesis.genesis


def _payloads(stream: str) -> list[bytes]:
    from pubsub_core.envelope import Envelope, EnvelopeError

    out = []
    for s, _, raw in _records():
        if s == stream:
            try:
                out.append(Envelope.decode(raw).data)
            except EnvelopeError:
                continue
    return _unique(out)


def _unique(items: Sequence[bytes], limit: int = 200) -> list[bytes]:
    return list(dict.fromkeys(items))[:limit]


def envelope_target() -> Target:
    """Raw envelope bytes: ``authenticate`` then ``Admission.admit`` (fresh state) on the topic it claims."""
    from pubsub_core.envelope import Admission, AdmissionConfig, Envelope, EnvelopeError, Verdict
    from state import MemoryBackend, StateTransaction
    from pubsub_core.envelope.admission import RateCounter

    keys, _ = registry()
    admission = Admission(keys, AdmissionConfig(realm=REALM))

    def no_validation(envelope: object, origin: object) -> None:
        return None

    def run(data: bytes) -> None:
        try:
            topic = Envelope.decode(data).topic
            stream, origin = topic.stream, topic.origin
        except EnvelopeError:
            stream, origin = "extrinsics", "root"
        result = admission.admit(StateTransaction(MemoryBackend()), stream, origin, data, RateCounter(), no_validation)
        if result.verdict is not Verdict.ACCEPT:
            raise Rejected(f"{result.verdict.value}:{result.reason}")

    return Target("envelope", "signed envelopes: authenticate + Admission.admit", run,
                  _unique([raw for _, _, raw in _records()], 300))


def xcm_target() -> Target:
    """``decode_versioned_xcm``; a decoded program is encoded again."""
    from pubsub_core.xcm import decode_versioned_xcm, encode_versioned_xcm

    def run(data: bytes) -> None:
        encode_versioned_xcm(decode_versioned_xcm(data))

    corpus = _payloads("upward") + _payloads("horizontal")
    return Target("xcm", "XCM programs: decode_versioned_xcm", run, _unique(corpus))


def scale_target() -> Target:
    """The first byte picks a SCALE type of pubsub_core/codec (and the relay's call/event codecs); the rest is
    decoded as that type."""
    from pubsub_core.broadcaster.events import decode_event
    from pubsub_core.codec.scale import ScaleReader, decode_compact, encode_compact
    from pubsub_core.codec.types import PublishedEntry, PublisherInfo, SubscribedKey, TtlState
    from pubsub_core.errors import PubSubError
    from pubsub_core.relay.calls import BroadcasterCall

    def reader_all(data: bytes) -> None:
        r = ScaleReader(data)
        r.u8(), r.u16(), r.u32(), r.u64(), r.compact(), r.bytes_vec()
        r.finish()

    decoders: list[Callable[[bytes], object]] = [
        lambda d: PublishedEntry.decode(d),
        lambda d: PublishedEntry.decode(d, 8, 1024),
        TtlState.decode,
        SubscribedKey.decode,
        PublisherInfo.decode,
        lambda d: decode_compact(d),
        BroadcasterCall.decode,
        decode_event,
        reader_all,
    ]

    def run(data: bytes) -> None:
        if not data:
            raise Rejected("empty")
        decoders[data[0] % len(decoders)](data[1:])

    from pubsub_core.codec.scale import encode_bytes, encode_u16, encode_u32, encode_u64

    corpus = [
        b"\x00" + PublishedEntry(b"value", 10, 3).encode(),
        b"\x00" + PublishedEntry(b"", 0, 0).encode(),
        b"\x01" + PublishedEntry(b"v" * 40, 5, 7).encode(8),
        b"\x02" + TtlState.valid_for(7).encode(),
        b"\x02" + TtlState.infinite().encode(),
        b"\x02" + TtlState.timed_out().encode(),
        b"\x03" + SubscribedKey(bytes(range(32))).encode(),
        b"\x05" + encode_compact(1 << 40),
        b"\x05" + encode_compact(70),
        b"\x08" + b"\x01" + encode_u16(2) + encode_u32(3) + encode_u64(4) + encode_compact(5) + encode_bytes(b"abc"),
    ]
    for payload in _payloads("extrinsics"):
        try:
            BroadcasterCall.decode(payload)
        except PubSubError:
            continue
        corpus.append(b"\x06" + payload)
    return Target("scale", "SCALE types: codec/types, compact, BroadcasterCall, events", run, _unique(corpus))


def subscriber_call_target() -> Target:
    from pubsub_core.subscriber import SetSubscriptions, decode_subscriber_call
    from pubsub_core.subscriber.calls import EnablePublisher

    def run(data: bytes) -> None:
        decode_subscriber_call(data)

    corpus = [p for p in _payloads("extrinsics") if p[:1] == b"\x35"]
    try:
        corpus.append(SetSubscriptions(((1000, (bytes(32), bytes([1]) * 32)), (2000, ()))).encode())
        corpus.append(EnablePublisher(2000).encode())
    except (AttributeError, TypeError):
        pass
    return Target("subscriber_call", "subscriber calls: decode_subscriber_call", run, _unique(corpus))


def header_target() -> Target:
    """``BlockHeader.decode`` of the bytes; then the same bytes signed by the author through
    ``RelayMachine.admit_header`` (fresh state, genesis registry) and, when admitted, ``apply_block`` of the
    header with no records (its manifest checked against what arrived)."""
    from pubsub_core.envelope import Topic
    from pubsub_core.relay import (BlockHeader, InputRecord, RecordOutcome, RelayBlock, RelayConfig, RelayMachine,
                                   VoidOrder, is_void)
    from state import MemoryBackend

    keys, genesis = registry()
    author = workload()[1]
    config = RelayConfig(registry=keys)
    topic = Topic(REALM, "blocks", "author")

    def run(data: bytes) -> None:
        decoded: Exception | None = None
        try:
            VoidOrder.decode(data) if is_void(data) else BlockHeader.decode(data)  # a void order: 2^32-1 reserved
        except Exception as exc:  # re-raised below, after the signed path ran too
            decoded = exc
        machine, backend = RelayMachine(config), MemoryBackend()
        machine.initialize(backend, genesis)
        record = InputRecord("blocks", "author", 0, author.sign(topic, 1, data).encode())
        admitted = machine.admit_header(backend, record)
        if isinstance(admitted, RecordOutcome):
            if decoded is None:
                raise Escaped(f"a header that decodes was refused: {admitted.reason}")
            raise Rejected(f"{admitted.status.value}:{admitted.reason}")
        if decoded is not None:
            raise decoded
        if isinstance(admitted, VoidOrder):  # not a block: Stage R queues it (tests/stages/test_stall.py)
            return
        machine.apply_block(backend, RelayBlock(admitted, ()))

    corpus = _payloads("blocks")
    corpus.append(BlockHeader(1, bytes(32), bytes(32), 5 << 20, 0, ()).encode())
    corpus.append(VoidOrder(1, (("upward", "2000", 0, 3),)).encode())
    return Target("header", "relay block headers + manifests: BlockHeader.decode, admit_header, apply_block", run,
                  _unique(corpus))


@cache
def trie_vectors() -> dict[str, Any]:
    vectors: dict[str, Any] = json.loads((ROOT / "tests" / "trie" / "vectors" / "trie.json").read_text())
    return vectors


def proof_target() -> Target:
    """``read_proof`` over a node list: the input is ``Vec<Vec<u8>>`` keys-then-nodes (``len(keys)`` in the
    first byte); the root is the hash of the first node, so a mutated root node is still decoded."""
    from pubsub_core.hashing import blake2_256
    from pubsub_core.trie import read_proof
    from pubsub_core.trie.node import decode_node

    def run(data: bytes) -> None:
        if not data:
            raise Rejected("empty")
        items = _read_vec(data[1:])
        split = min(data[0], len(items))
        keys, nodes = items[:split], items[split:]
        for node in nodes[:4]:
            decode_node(node)
        root = blake2_256(nodes[0]) if nodes else bytes(32)
        read_proof(root, nodes, keys)

    corpus = []
    for proof in trie_vectors()["proofs"]:
        nodes = [bytes.fromhex(n) for n in proof["nodes"]]
        reads = [bytes.fromhex(k) for k in proof["reads"]] if isinstance(proof["reads"], dict) else [
            bytes.fromhex(r[0] if isinstance(r, list) else r["key"]) for r in proof["reads"]]
        root = bytes.fromhex(proof["root"])
        nodes.sort(key=lambda n: blake2_256(n) != root)  # the root node first
        corpus.append(bytes([len(reads)]) + _scale_vec(reads + nodes))
    return Target("proof", "trie proofs: read_proof (and decode_node)", run, _unique(corpus), "nodes")


@dataclass
class _ProofFixture:
    ctx: BlockContext
    subs: Subscriptions
    backend: MemoryBackend
    config: SubscriberConfig
    proof: RelayProof


@cache
def proof_fixtures() -> list[_ProofFixture]:
    """Subscriber states after a genuine block, and the genuine proof of their next block (collate)."""
    from pubsub_core.codec.types import PublishedEntry, SubscribedKey
    from pubsub_core.hashing import blake2_256
    from pubsub_core.subscriber import BlockContext, SubscriberConfig, Subscriptions, collate, process_relay_proof
    from pubsub_core.subscriber import pubsub_budget
    from pubsub_core.trie import RelayTries
    from state import MemoryBackend, StateTransaction

    fixtures = []
    for variant, (publishers, keys, max_pov) in enumerate(((2, 4, 5_000_000), (3, 12, 5_000_000), (2, 30, 6_000))):
        rng = random.Random(variant)
        relay = RelayTries()
        relay.set_main({b":code": b"runtime", b"other": b"x" * 40})
        config = SubscriberConfig()
        names = {p: [blake2_256(f"{p}/{i}".encode()) for i in range(keys)] for p in range(1000, 1000 + publishers)}
        subs = Subscriptions.of({p: [SubscribedKey(k) for k in ks] for p, ks in names.items()})
        backend = MemoryBackend()
        for number in (1, 2, 3):
            changes = {p: {k: PublishedEntry(rng.randbytes(rng.randrange(1, 80)), rng.choice((0, 0, 5)), number).encode()
                           for k in ks if rng.random() < 0.6} for p, ks in names.items()}
            relay.apply(child_changes=changes)
            budget = pubsub_budget(max_pov, (), (), config)
            ctx = BlockContext(3000, number, blake2_256(b"block" + number.to_bytes(8, "little")), relay.relay_root,
                               budget)
            proof = collate(relay, backend, ctx, subs, config)
            if number < 3:
                txn = StateTransaction(backend)
                process_relay_proof(txn, proof, ctx, subs, config)
                txn.commit()
        fixtures.append(_ProofFixture(ctx, subs, backend, config, proof))
    return fixtures


def relay_proof_target() -> Target:
    """The subscriber's Verify on a tampered proof: the first byte picks a fixture (a subscriber state and its
    next block), the rest is the proof's node list; ``process_relay_proof`` runs on an uncommitted transaction."""
    from pubsub_core.subscriber import RelayProof, process_relay_proof
    from state import StateTransaction

    fixtures = proof_fixtures()

    def run(data: bytes) -> None:
        if not data:
            raise Rejected("empty")
        f = fixtures[data[0] % len(fixtures)]
        genuine = f.proof
        proof = RelayProof(genuine.relay_block_number, genuine.relay_block_hash, genuine.relay_root,
                           tuple(_read_vec(data[1:])))
        process_relay_proof(StateTransaction(f.backend), proof, f.ctx, f.subs, f.config)

    corpus = [bytes([i]) + _scale_vec(f.proof.nodes) for i, f in enumerate(fixtures)]
    return Target("relay_proof", "subscriber proof processing: collate, then process_relay_proof on a tampered proof",
                  run, corpus, "nodes")


@cache
def prepared_simulator() -> Simulator:
    """A simulator fed a valid prefix of the workload log: the genesis and the first two blocks."""
    from pubsub_core.simulator import Simulator

    sim = Simulator()
    blocks = 0
    for line in workload()[0]:
        sim.feed_line(line)
        blocks += b'"polkadot.blocks"' in line
        if blocks == 2:
            break
    return sim


def sim_line_target() -> Target:
    """One event-log line into a fork of a simulator fed a valid prefix. ``feed_line`` must never raise."""
    from pubsub_core.errors import PubSubError

    template = prepared_simulator()

    def run(data: bytes) -> None:
        sim = template.fork()
        try:
            out = sim.feed_line(data)
        except Exception as exc:
            if isinstance(exc, PubSubError):
                raise Escaped(f"{type(exc).__name__} from feed_line: {exc}") from exc
            raise
        reasons = sorted({str(r.value.get("reason")) for r in out if r.topic.endswith(".rejected")})
        if reasons:
            raise Rejected("rejected:" + ",".join(map(str, reasons)))

    lines = workload()[0]
    return Target("sim_line", "event-log lines: Simulator.feed_line after a valid prefix", run,
                  _unique(lines[1:] + example_lines()[1:], 400), "json")


def ingest_target() -> Target:
    """A Kafka-shaped record ``topic \\0 key \\0 value`` through ``ingest_record`` (must never raise)."""
    from pubsub_core.stages.ingest import ingest_record
    from pubsub_core.stages.records import OutputRecord

    def run(data: bytes) -> None:
        parts = data.split(b"\x00", 2)
        topic = parts[0].decode("utf-8", "replace")
        key = parts[1] if len(parts) > 1 else None
        value = parts[2] if len(parts) > 2 else None
        try:
            out = ingest_record(topic, key, value, 7, REALM)
        except Exception as exc:
            from pubsub_core.errors import PubSubError

            if isinstance(exc, PubSubError):
                raise Escaped(f"{type(exc).__name__} from ingest_record: {exc}") from exc
            raise
        if isinstance(out, OutputRecord):
            raise Rejected(str(out.value.get("reason")))

    corpus = []
    for line in workload()[0] + example_lines():
        try:
            entry = json.loads(line)
            value = entry["value"] if isinstance(entry["value"], str) else json.dumps(entry["value"])
            entry["topic"].encode(), (entry["key"] or "").encode()
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        corpus.append(entry["topic"].encode() + b"\x00" + (entry["key"] or "").encode() + b"\x00" + value.encode())
    return Target("ingest", "Kafka records: ingest_record (decode_record + decode_value)", run,
                  _unique(corpus, 400), "record")


BUILDERS: dict[str, Callable[[], Target]] = {
    "envelope": envelope_target,
    "xcm": xcm_target,
    "scale": scale_target,
    "subscriber_call": subscriber_call_target,
    "header": header_target,
    "proof": proof_target,
    "relay_proof": relay_proof_target,
    "sim_line": sim_line_target,
    "ingest": ingest_target,
}


@cache
def target(name: str) -> Target:
    return BUILDERS[name]()


# -- mutations --------------------------------------------------------------------------------------------------
INTERESTING_INTS = (0, 1, 2, 63, 64, 127, 128, 255, 256, 16383, 16384, 65535, 65536, (1 << 30) - 1, 1 << 30,
                    (1 << 31) - 1, (1 << 32) - 1, 1 << 32, (1 << 63) - 1, (1 << 64) - 1)
INTERESTING_JSON: tuple[object, ...] = (
    None, True, False, 0, -1, 1.5, -0.0, 1e308, -1e308, 10**30, -(10**30), 2**64, 2**64 - 1, 2**63, 2**32,
    "", "0x", "0x0", "0xzz", "para:", "para:-1", "root", "\ud800", "x" * 5000, [], {}, [[[[]]]],
)


def _compact(value: int) -> bytes:
    from pubsub_core.codec.scale import encode_compact

    return encode_compact(value)


def mutate_bytes(rng: random.Random, data: bytes, corpus: Sequence[bytes]) -> bytes:
    """One byte-level mutation."""
    b = bytearray(data)
    op = rng.randrange(12)
    n = len(b)
    if op == 0 and n:  # bit flip(s)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(n)
            b[i] ^= 1 << rng.randrange(8)
    elif op == 1 and n:  # interesting byte
        b[rng.randrange(n)] = rng.choice((0, 1, 0x7F, 0x80, 0xFF, 0x03, 0xFC, 0xFD, 0xFE))
    elif op == 2:  # insert random bytes
        i = rng.randrange(n + 1)
        b[i:i] = rng.randbytes(rng.choice((1, 1, 2, 4, 8, 33)))
    elif op == 3 and n:  # delete a range
        i = rng.randrange(n)
        del b[i:i + rng.choice((1, 1, 2, 4, 16, 64))]
    elif op == 4 and n:  # truncate
        del b[rng.randrange(n):]
    elif op == 5 and n:  # duplicate a range
        i = rng.randrange(n)
        j = min(n, i + rng.choice((1, 4, 32, 64)))
        b[j:j] = b[i:j]
    elif op == 6 and corpus:  # splice with another input
        other = rng.choice(corpus)
        i, j = rng.randrange(n + 1), rng.randrange(len(other) + 1)
        b = bytearray(bytes(b[:i]) + other[j:]) if rng.random() < 0.5 else bytearray(other[:j] + bytes(b[i:]))
    elif op == 7:  # a SCALE compact length/number, replacing 1 to 5 bytes
        i = rng.randrange(n + 1)
        b[i:i + rng.randint(0, 5)] = _compact(rng.choice(INTERESTING_INTS))
    elif op == 8 and n:  # a fixed-width little-endian integer overwritten
        width = rng.choice((1, 2, 4, 8))
        i = rng.randrange(n)
        value = rng.choice(INTERESTING_INTS) & ((1 << (8 * width)) - 1)
        b[i:i + width] = value.to_bytes(width, "little")
    elif op == 9 and n:  # a repeated chunk (size blow-up)
        i = rng.randrange(n)
        b[i:i] = bytes(b[i:i + 16]) * rng.choice((8, 64, 512))
    elif op == 10 and n:  # a random byte
        b[rng.randrange(n)] = rng.randrange(256)
    else:  # append
        b += rng.randbytes(rng.randint(1, 16))
    return bytes(b)


def mutate_nodes(rng: random.Random, data: bytes, corpus: Sequence[bytes]) -> bytes:
    """List-level edits of a ``selector ‖ Vec<Vec<u8>>`` input: drop, duplicate, swap in a node from another
    input, reorder, or mutate one node's bytes."""
    head, items = data[:1] or b"\x00", _read_vec(data[1:])
    op = rng.randrange(7)
    if op == 0 and items:
        del items[rng.randrange(len(items))]
    elif op == 1 and items:
        items.insert(rng.randrange(len(items) + 1), rng.choice(items))
    elif op == 2 and corpus:
        other = _read_vec(rng.choice(corpus)[1:])
        if other:
            items.insert(rng.randrange(len(items) + 1), rng.choice(other))
    elif op == 3:
        rng.shuffle(items)
    elif op == 4 and items:
        i = rng.randrange(len(items))
        items[i] = mutate_bytes(rng, items[i], [x for c in corpus[:20] for x in _read_vec(c[1:])])
    elif op == 5 and items:
        items = items[: rng.randrange(len(items))]
    else:
        head = bytes([rng.randrange(256)])
    return head + _scale_vec(items)


def _paths(value: object, path: tuple[object, ...] = (), depth: int = 0) -> Iterator[tuple[object, ...]]:
    yield path
    if depth > 6:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, path + (k,), depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value[:16]):
            yield from _paths(v, path + (i,), depth + 1)


def _get(value: object, path: tuple[object, ...]) -> object:
    for step in path:
        value = value[step]  # type: ignore[index]
    return value


def _mutate_hex(rng: random.Random, text: str) -> str:
    op = rng.randrange(6)
    body = text[2:] if text.startswith("0x") else text
    if op == 0:
        return body  # no 0x
    if op == 1:
        return text[:-1]  # odd length
    if op == 2:
        return text.upper()
    if op == 3 and len(body) >= 2:
        raw = bytearray(bytes.fromhex(body)) if all(c in "0123456789abcdefABCDEF" for c in body) and len(body) % 2 == 0 \
            else bytearray(body.encode())
        return "0x" + mutate_bytes(rng, bytes(raw), ()).hex()
    if op == 4:
        return text + rng.choice(("g", " ", "00" * 40, "\u00e9"))
    return "0x" + "00" * rng.choice((0, 1, 31, 33, 65))


def _interesting(rng: random.Random) -> object:
    return copy.deepcopy(rng.choice(INTERESTING_JSON))  # a fresh copy: mutations edit documents in place


def mutate_json_value(rng: random.Random, doc: object) -> object:
    """One JSON-level mutation somewhere in ``doc``."""
    paths = list(_paths(doc))
    path = rng.choice(paths)
    node = _get(doc, path)
    op = rng.randrange(9)
    if op == 0:  # type swap / interesting value
        new: object = _interesting(rng)
    elif op == 1 and isinstance(node, str) and (node.startswith("0x") or len(node) > 16):
        new = _mutate_hex(rng, node)
    elif op == 2 and isinstance(node, int) and not isinstance(node, bool) and node.bit_length() > 4000:
        new = -node  # a huge int from an earlier mutation: str() and float arithmetic on it would fail here
    elif op == 2 and isinstance(node, bool | int | float):
        choice = rng.randrange(8)
        try:
            new = (str(node), None if isinstance(node, bool) else -node, node + 0.5, node * 10**20, float("nan"),
                   float("inf"), [node], 10**4400 if rng.random() < 0.1 else 2**70)[choice]
        except OverflowError:  # a huge int plus 0.5
            new = str(node)
    elif op == 3:  # deep nesting
        new = node
        for _ in range(rng.choice((2, 10, 31, 33, 200, 5000))):
            new = [new] if rng.random() < 0.5 else {"a": new}
    elif op == 4 and isinstance(node, dict) and node:  # removed field
        new = dict(node)
        del new[rng.choice(list(new))]
    elif op == 5 and isinstance(node, dict):  # extra field
        new = dict(node)
        new[rng.choice(("extra", "value", "origin", "position", "stream", "topic", "key", ""))] = _interesting(rng)
    elif op == 6 and isinstance(node, str):
        new = rng.choice((node + node, node[: len(node) // 2], node.replace("0", "1"), "", node * 50))
    elif op == 7 and isinstance(node, list):
        new = node[:-1] if node and rng.random() < 0.5 else node + node
    else:
        new = _interesting(rng)
    if not path:
        return new
    parent = _get(doc, path[:-1])
    parent[path[-1]] = new  # type: ignore[index]
    return doc


def _dumps(rng: random.Random, doc: object) -> bytes:
    try:
        if rng.random() < 0.8:
            return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("utf-8", "surrogatepass")
        return json.dumps(doc, indent=rng.choice((None, 1)), ensure_ascii=rng.random() < 0.5).encode(
            "utf-8", "surrogatepass")
    except (ValueError, RecursionError, TypeError):
        return b"[" * 40


def mutate_json_bytes(rng: random.Random, data: bytes, corpus: Sequence[bytes]) -> bytes:
    """A JSON-level mutation when ``data`` parses (nested JSON strings holding JSON are left as text)."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return mutate_bytes(rng, data, corpus)
    for _ in range(rng.choice((1, 1, 2, 3))):
        doc = mutate_json_value(rng, doc)
    return _dumps(rng, doc)


def mutate(rng: random.Random, t: Target, data: bytes) -> bytes:
    """1 to 4 stacked mutations, structure-aware for the target's kind about two times in three."""
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 4))):
        structured = rng.random() < 0.65
        if t.kind == "json" and structured:
            data = mutate_json_bytes(rng, data, t.corpus)
        elif t.kind == "record" and structured:
            head, sep, value = data.rpartition(b"\x00")
            if rng.random() < 0.2:
                parts = data.split(b"\x00", 2)
                parts[0] = rng.choice((b"polkadot.upward", b"polkadot.blocks", b"polkadot.genesis", b"kusama.upward",
                                       b"polkadot.nope", b"x", b"", b"polkadot.", b".upward", b"a.b.c"))
                data = b"\x00".join(parts)
            else:
                data = head + sep + mutate_json_bytes(rng, value, ())
        elif t.kind == "nodes" and structured:
            data = mutate_nodes(rng, data, t.corpus)
        else:
            data = mutate_bytes(rng, data, t.corpus)
    return data[: 4 << 20]


def inputs(t: Target, seed: int) -> Iterator[bytes]:
    """The target's inputs for ``seed``: the corpus itself first, then mutations of it, forever."""
    rng = random.Random(f"{seed}/{t.name}")
    yield from t.corpus
    while True:
        yield mutate(rng, t, rng.choice(t.corpus))


# -- campaign ---------------------------------------------------------------------------------------------------
@dataclass
class Stats:
    inputs: int = 0
    accepted: int = 0
    rejections: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    max_seconds: float = 0.0
    max_peak: int = 0
    seconds: float = 0.0
    reproducers: list[str] = field(default_factory=list)

    def add(self, outcome: Outcome) -> None:
        self.inputs += 1
        self.seconds += outcome.seconds
        self.max_seconds = max(self.max_seconds, outcome.seconds)
        self.max_peak = max(self.max_peak, outcome.peak)
        if outcome.kind == "accepted":
            self.accepted += 1
        elif outcome.kind == "rejected":
            self.rejections[outcome.label] += 1
        else:
            self.failures[outcome.label] += 1

    def to_json(self) -> dict[str, object]:
        return {
            "inputs": self.inputs,
            "accepted": self.accepted,
            "rejected": sum(self.rejections.values()),
            "rejections": dict(self.rejections.most_common()),
            "failures": sum(self.failures.values()),
            "failure_kinds": dict(self.failures.most_common()),
            "max_seconds_per_input": round(self.max_seconds, 4),
            "max_tracemalloc_peak_bytes": self.max_peak,
            "exec_per_second": round(self.inputs / self.seconds, 1) if self.seconds else None,
            "reproducers": self.reproducers,
        }


def save_reproducer(name: str, data: bytes, directory: Path = REGRESSIONS) -> Path:
    path = directory / name / f"{hashlib.sha256(data).hexdigest()[:16]}.bin"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def campaign(names: Sequence[str], total: int, seed: int, *, seconds: float | None = None,
             measure_memory: bool = True, save: bool = True, progress: Callable[[str, int], None] | None = None,
             regressions: Path = REGRESSIONS) -> dict[str, Stats]:
    """``total`` inputs spread evenly over ``names`` (interleaved in chunks), or until ``seconds`` pass."""
    targets = [target(n) for n in names]
    streams = {t.name: inputs(t, seed) for t in targets}
    stats = {t.name: Stats() for t in targets}
    share = {t.name: total // len(targets) + (i < total % len(targets)) for i, t in enumerate(targets)}
    deadline = None if seconds is None else time.monotonic() + seconds
    chunk = 50
    with Oracle(measure_memory):
        while any(stats[n].inputs < share[n] for n in share):
            if deadline is not None and time.monotonic() > deadline:
                break
            for t in targets:
                s = stats[t.name]
                for _ in range(min(chunk, share[t.name] - s.inputs)):
                    data = next(streams[t.name])
                    outcome = execute(t, data, measure_memory=measure_memory)
                    s.add(outcome)
                    if outcome.failed and save:
                        s.reproducers.append(str(save_reproducer(t.name, data, regressions).relative_to(ROOT)))
                    if progress is not None:
                        progress(t.name, 1)
    return stats


def run_atheris(name: str, runs: int, seed: int, seconds: float | None, measure_memory: bool) -> Stats:
    """Coverage-guided: libFuzzer (through atheris) mutates the same seed corpus, with the same oracle, after
    every loaded pubsub_core function is instrumented."""
    import tempfile

    import atheris

    t = target(name)
    stats = Stats()
    corpus_dir = Path(tempfile.mkdtemp(prefix=f"fuzz-{name}-"))
    for item in t.corpus:
        (corpus_dir / hashlib.sha256(item).hexdigest()[:16]).write_bytes(item)
    atheris.instrument_all()

    def one(data: bytes) -> None:
        outcome = execute(t, data, measure_memory=measure_memory)
        stats.add(outcome)
        if outcome.failed:
            stats.reproducers.append(str(save_reproducer(name, data).relative_to(ROOT)))

    argv = [sys.argv[0], str(corpus_dir), f"-seed={seed}", f"-runs={runs}", "-max_len=65536", "-rss_limit_mb=4096",
            "-timeout=30"]
    if seconds is not None:
        argv.append(f"-max_total_time={int(seconds)}")
    atheris.Setup(argv, one)
    try:
        with Oracle(measure_memory):
            atheris.Fuzz()
    except SystemExit:
        pass
    return stats


def _table(stats: dict[str, Stats], wall: float) -> Table:
    from rich.table import Table

    table = Table(title=f"fuzz: {sum(s.inputs for s in stats.values()):,} inputs in {wall:.0f} s")
    for column in ("target", "inputs", "accepted", "typed rejections (top classes)", "failures", "max s/input",
                   "exec/s"):
        table.add_column(column, justify="left" if column.startswith(("target", "typed")) else "right")
    for name, s in stats.items():
        top = ", ".join(f"{label} {count:,}" for label, count in s.rejections.most_common(4))
        more = len(s.rejections) - 4
        table.add_row(name, f"{s.inputs:,}", f"{s.accepted:,}", top + (f" (+{more} more)" if more > 0 else ""),
                      str(sum(s.failures.values())), f"{s.max_seconds:.3f}",
                      f"{s.inputs / s.seconds:,.0f}" if s.seconds else "-")
    return table


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.reliability.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=20_000, help="inputs in all (spread evenly over targets)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target", action="append", choices=sorted(BUILDERS), help="repeatable; default: all")
    parser.add_argument("--seconds", type=float, default=None, help="stop after this long even if inputs remain")
    parser.add_argument("--engine", choices=("mutate", "atheris"), default="mutate")
    parser.add_argument("--no-memory", action="store_true", help="skip tracemalloc (faster; no memory oracle)")
    parser.add_argument("--json", type=Path, default=None,
                        help="write figures here (e.g. benchmarks/results/fuzz.json)")
    args = parser.parse_args(argv)
    names = args.target or list(BUILDERS)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    console = Console(stderr=True, width=max(Console(stderr=True).width, 150))
    started = time.monotonic()
    cpu0 = time.process_time()
    if args.engine == "atheris":
        if len(names) != 1:
            parser.error("--engine atheris fuzzes one --target at a time")
        for n in names:
            target(n)  # build (and import) before instrumenting
        stats = {names[0]: run_atheris(names[0], args.inputs, args.seed, args.seconds, not args.no_memory)}
    else:
        for n in names:
            target(n)
        with Progress(TextColumn("[bold]fuzz"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                      TimeElapsedColumn(), TimeRemainingColumn(), console=console) as bar:
            task = bar.add_task("", total=args.inputs)
            last = [""]

            def progress(name: str, n: int) -> None:
                if name != last[0]:
                    bar.update(task, description=name)
                    last[0] = name
                bar.advance(task, n)

            stats = campaign(names, args.inputs, args.seed, seconds=args.seconds,
                             measure_memory=not args.no_memory, progress=progress)
    wall = time.monotonic() - started
    console.print(_table(stats, wall))
    failures = sum(sum(s.failures.values()) for s in stats.values())
    if args.json is not None:
        body = {
            "engine": args.engine,
            "seed": args.seed,
            "inputs": sum(s.inputs for s in stats.values()),
            "failures": failures,
            "wall_seconds": round(wall, 1),
            "cpu_seconds": round(time.process_time() - cpu0, 1),
            "max_seconds_per_input_limit": MAX_SECONDS,
            "max_peak_bytes_limit": None if args.no_memory else MAX_PEAK_BYTES,
            "python": sys.version.split()[0],
            "targets": {name: s.to_json() for name, s in stats.items()},
        }
        write_result("fuzz", body, module="benchmarks.reliability.fuzz", argv=argv, path=args.json)
    for name, s in stats.items():
        for label, count in s.failures.items():
            console.print(f"[red]FAILURE[/] {name}: {label} ×{count}")
        for path in s.reproducers[:20]:
            console.print(f"  reproducer: {path}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
