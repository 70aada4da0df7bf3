"""Nothing unauthenticated occupies a place (invariant 5). Forged, replayed and foreign copies of genuine records
and blocks, written before, between or after the genuine ones, add their own typed rejection and change no
other output; and any interleaving of the topics, hostile lines included, gives the same outputs."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from functools import cache

import pytest

from producers.workload import WorkloadSpec, generate, signer
from pubsub_core.envelope import Topic
from pubsub_core.relay import InputRecord, canonical_json
from pubsub_core.simulator import simulate
from pubsub_core.stages import GenesisRecord, ProtocolConfig
from tests.simulator.properties import check_outcomes

SPEC = WorkloadSpec(seed=3, blocks=6, bad_records=0, quiet_blocks=1)
STRANGER = signer("stranger")
STREAMS = ("upward", "horizontal", "extrinsics", "blocks")
PLACES = ("before", "between", "after")


@cache
def clean_log() -> tuple[str, ...]:
    return tuple(line for chunk in generate(SPEC) for line in chunk)


@cache
def clean_outputs() -> tuple[str, ...]:
    return tuple(run(list(clean_log())))


def run(lines: list[str], config: ProtocolConfig | None = None) -> list[str]:
    outputs = [record.to_line() for record in simulate(lines, config)]
    check_outcomes(lines, [json.loads(line) for line in outputs])
    return outputs


def entry(line: str) -> tuple[str, InputRecord | None]:
    """(stream, record) of a log line (record None for the genesis)."""
    body = json.loads(line)
    stream = str(body["topic"]).rpartition(".")[2]
    return stream, None if stream == "genesis" else InputRecord.from_json(body["value"])


def line_of(record: InputRecord, realm: str = "polkadot") -> str:
    return canonical_json({"topic": f"{realm}.{record.stream}", "key": record.origin, "value": record.to_json()})


def hostile_copies(lines: list[str], target: int) -> list[tuple[InputRecord, str, str]]:
    """(record, status, reason) of the hostile copies of the genuine record on line ``target``, at its position:
    a forged copy (a signature byte flipped), an envelope a stranger signed, the same envelope on another origin
    (signed for this one), and an earlier envelope of the same origin replayed (when there is one)."""
    stream, genuine = entry(lines[target])
    assert genuine is not None
    flipped = bytearray(genuine.value)
    flipped[-1 - target % 64] ^= 1 << (target % 8)
    strange = STRANGER.sign(Topic("polkadot", stream, genuine.origin), 1, b"\x00").encode()
    other = "2999" if stream in ("upward", "horizontal") else "para:2999" if stream == "extrinsics" else None
    copies = [(InputRecord(stream, genuine.origin, genuine.position, bytes(flipped)), "rejected", "BadSignature"),
              (InputRecord(stream, genuine.origin, genuine.position, strange), "rejected", "NotMember")]
    if other is not None:
        copies.append((InputRecord(stream, other, genuine.position, genuine.value), "rejected", "NotMember"))
    earlier = [record for s, record in map(entry, lines[:target])
               if s == stream and record is not None and record.origin == genuine.origin]
    if earlier:
        replay = earlier[target % len(earlier)]
        copies.append((InputRecord(stream, genuine.origin, genuine.position, replay.value), "ignored", "Duplicate"))
    return copies


def place(lines: list[str], target: int, where: str, rng: random.Random) -> int:
    """Where a hostile copy of line ``target`` goes: just before it, between it and the next block line, or
    anywhere after that block."""
    block = next((i for i in range(target + 1, len(lines)) if '"topic":"polkadot.blocks"' in lines[i]), len(lines))
    if where == "before":
        return target
    if where == "between":
        return rng.randint(target + 1, block)
    return rng.randint(min(block + 1, len(lines)), len(lines))


def attacked(stream: str, where: str, seed: int, targets: int = 4) -> tuple[list[str], Counter[tuple[str, str]]]:
    """The clean log with hostile copies of ``targets`` genuine ``stream`` records inserted ``where``; and the
    (status, reason) each hostile line must end in."""
    rng = random.Random(f"{stream}/{where}/{seed}")
    lines = list(clean_log())
    chosen = rng.sample([i for i, line in enumerate(lines) if f'"topic":"polkadot.{stream}"' in line], targets)
    expected: Counter[tuple[str, str]] = Counter()
    for target in sorted(chosen, reverse=True):  # later targets first, so earlier indices stay valid
        for record, status, reason in hostile_copies(lines, target):
            at = place(lines, target, where, rng)
            lines.insert(at, line_of(record))
            expected[(status, reason)] += 1
            target += at <= target
    return lines, expected


def added(outputs: list[str]) -> tuple[list[str], Counter[tuple[str, str]]]:
    """The outputs other than refusals on arrival, and the (status, reason) of those refusals."""
    kept, refused = [], Counter[tuple[str, str]]()
    for line in outputs:
        body = json.loads(line)
        if str(body["id"]).startswith(("ingest/", "block/")):
            refused[(body["value"]["status"], body["value"]["reason"])] += 1
        else:
            kept.append(line)
    return kept, refused


@pytest.mark.parametrize("where", PLACES)
@pytest.mark.parametrize("stream", STREAMS)
def test_hostile_copies_change_nothing_but_add_their_rejections(stream: str, where: str) -> None:
    lines, expected = attacked(stream, where, seed=1)
    assert len(lines) > len(clean_log())
    kept, refused = added(run(lines))
    assert kept == list(clean_outputs())
    assert refused == expected


def _topic(line: str) -> str:
    try:
        return str(json.loads(line)["topic"])
    except (ValueError, KeyError, TypeError):
        return "?"


def interleavings(lines: list[str], rng: random.Random) -> list[list[str]]:
    """Each topic keeps its order; across topics: records first, blocks first, the genesis last, random merges."""
    by_topic: dict[str, list[str]] = {}
    for line in lines:
        by_topic.setdefault(_topic(line), []).append(line)
    genesis = by_topic.pop("polkadot.genesis", [])
    blocks = by_topic.pop("polkadot.blocks", [])
    others = [line for topic in sorted(by_topic) for line in by_topic[topic]]
    variants = [genesis + others + blocks, genesis + blocks + others, others + blocks + genesis,
                blocks + others + genesis]
    for _ in range(2):
        queues = [list(q) for q in (*by_topic.values(), blocks, genesis)]
        merged: list[str] = []
        while any(queues):
            merged.append(rng.choice([q for q in queues if q]).pop(0))
        variants.append(merged)
    return variants


@pytest.mark.parametrize("stream", STREAMS)
def test_any_interleaving_of_topics_gives_the_same_outputs_hostile_lines_included(stream: str) -> None:
    lines, _ = attacked(stream, "between", seed=2, targets=2)
    lines.insert(5, '{"topic": "polkadot.upward", "key": "2000", "value": {')
    lines.insert(9, canonical_json({"topic": "polkadot.sideways", "key": "x", "value": 1}))
    baseline = settled(_unnumbered(run(lines)))
    for variant in interleavings(lines, random.Random(stream)):
        assert sorted(variant) == sorted(lines)
        assert settled(_unnumbered(run(variant))) == baseline


def settled(outputs: list[str]) -> list[str]:
    """The outputs, sorted, less the health records of blocks seen waiting (``Stalled``, ``Resumed``): whether a
    block is seen stalled depends on how far the blocks ran ahead of their records in that reading."""
    return sorted(line for line in outputs if not re.search(r'"kind":"(?:Stalled|Resumed)"', line)
                  or not _topic(line).endswith(".health"))


def _unnumbered(outputs: list[str]) -> list[str]:
    """Outputs with the line numbers of unroutable lines masked: they name where the line is in the file, which an
    interleaving moves; everything else must be equal."""
    return [re.sub(r'line-\d+"', 'line-?"', line) for line in outputs]


def test_records_and_blocks_wait_for_the_genesis_then_apply_as_if_it_came_first() -> None:
    lines = list(clean_log())
    late = lines[1:] + lines[:1]
    assert sorted(run(late)) == sorted(clean_outputs())
    without = lines[1:]
    outputs = [json.loads(line) for line in run(without)]
    assert {o["value"]["reason"] for o in outputs} == {"NoGenesis"}
    assert len(outputs) == len(without)


def test_the_held_backlog_is_bounded() -> None:
    lines = list(clean_log())
    config = ProtocolConfig(max_held_before_genesis=3)
    outputs = [json.loads(line) for line in run(lines[1:6] + lines[:1], config)]
    reasons = Counter(str(o["value"]["reason"]) for o in outputs if str(o["topic"]).endswith(".rejected"))
    assert reasons["GenesisBacklogFull"] == 2


def test_a_forged_genesis_first_is_refused_when_the_genesis_is_pinned() -> None:
    lines = list(clean_log())
    genuine = GenesisRecord.from_json(json.loads(lines[0])["value"])
    forged = GenesisRecord.from_json({**genuine.to_json(), "registry": {"author_keys": ["0x" + "11" * 32]}})
    pinned = ProtocolConfig(trusted_genesis={"polkadot": genuine.digest()})
    hostile = canonical_json({"topic": "polkadot.genesis", "key": "polkadot", "value": forged.to_json()})
    kept, refused = added(run([hostile, *lines], pinned))
    assert kept == list(clean_outputs())
    assert refused == Counter({("rejected", "UntrustedGenesis"): 1})
    # Unpinned, the first genesis on the topic is the realm's root of trust (docs/threat-model.md).
    kept, refused = added(run([hostile, *lines]))
    assert kept != list(clean_outputs()) and refused[("rejected", "GenesisTooLate")] == 1


def test_a_block_replayed_or_forged_at_any_height_never_displaces_the_authors_block() -> None:
    lines = list(clean_log())
    blocks = [i for i, line in enumerate(lines) if '"topic":"polkadot.blocks"' in line]
    hostile: list[str] = []
    for index in blocks:
        stream, record = entry(lines[index])
        assert record is not None
        forged = bytearray(record.value)
        forged[33] ^= 1  # the seqno: still a well-formed envelope, no longer the author's signature
        hostile.append(line_of(InputRecord(stream, record.origin, record.position, bytes(forged))))
    # Every forged block before the first genuine one, and every genuine block replayed after the last.
    attack = lines[: blocks[0]] + hostile + lines[blocks[0]:] + [lines[i] for i in blocks]
    kept, refused = added(run(attack))
    assert kept == list(clean_outputs())
    assert refused == Counter({("rejected", "BadSignature"): len(blocks), ("ignored", "Duplicate"): len(blocks)})
