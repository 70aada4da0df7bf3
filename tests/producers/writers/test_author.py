"""The block author's pure logic (producers/writers/author.py): which positions it includes (Stage R's checks on
arrival, mirrored), contiguous runs and gaps, block limits, the chain replayed from the blocks topic, block
hashes and keys. The decisive check runs its blocks through the simulator (the real Stage R): every block
seals, no block waits for records (MissingRecords), no record is left out (NeverIncluded)."""

from __future__ import annotations

import json
from collections.abc import Iterable

import pytest

from producers.writers.author import (
    AuthorKeyError,
    AuthorLimits,
    BlockPlan,
    ChainState,
    Inclusion,
    block_hash,
    block_record,
    parse_key,
)
from producers.workload import LogBuilder, WorkloadSpec, generate, signer
from pubsub_core.envelope import KeyRegistry, Topic
from pubsub_core.relay import BlockHeader, Genesis, InputRecord, canonical_json
from pubsub_core.simulator import simulate
from pubsub_core.stages import GenesisRecord, LineParser
from pubsub_core.stages.edge import ProducerRecord
from tests.simulator.properties import check_outcomes

REALM = "polkadot"
AUTHOR = signer("author")
COLLATOR = signer("collator/1000")


def routed(line: str, router: LineParser) -> tuple[ProducerRecord, int]:
    result = router.route(line)
    assert not hasattr(result, "id"), f"unroutable line {line[:80]}"
    assert isinstance(result, tuple)
    return result


def registry_of(lines: Iterable[str]) -> KeyRegistry:
    for line in lines:
        body = json.loads(line)
        if body["topic"] == f"{REALM}.genesis":
            return GenesisRecord.from_json(body["value"]).registry
    raise AssertionError("no genesis")


class Author:
    """The pure half of ``BlockAuthor``: feed event-log lines as Kafka records, write block lines."""

    def __init__(self, registry: KeyRegistry, limits: AuthorLimits | None = None) -> None:
        self.inclusion = Inclusion(REALM, registry)
        self.chain = ChainState(REALM, registry)
        self.limits = limits or AuthorLimits()
        self.router = LineParser(REALM)
        self.refusals: list[str | None] = []

    def feed(self, lines: Iterable[str]) -> None:
        for line in lines:
            result = self.router.route(line)
            if not isinstance(result, tuple):  # refused at the edge: it never reaches a Kafka input topic
                continue
            record, offset = result
            if record.topic.endswith((".upward", ".horizontal", ".extrinsics")):
                self.refusals.append(self.inclusion.arrive(record.topic, record.key, record.value, offset))

    def block(self) -> tuple[str, BlockHeader, BlockPlan]:
        plan = self.inclusion.plan(self.limits)
        header = self.chain.next_header(plan.manifest, 5 << 20, 0)
        seqno = self.chain.next_seqno(AUTHOR.public_key)
        value = json.loads(block_record(REALM, AUTHOR, seqno, header))
        self.chain.append(header, AUTHOR.public_key, seqno)
        self.inclusion.mark_included(header.last_included())
        return canonical_json({"topic": f"{REALM}.blocks", "key": "author", "value": value}), header, plan


def without_blocks(lines: Iterable[str]) -> list[str]:
    return [line for line in lines if f'"topic":"{REALM}.blocks"' not in line.replace(" ", "")]


def run(lines: list[str]) -> list[dict[str, object]]:
    outputs = [json.loads(record.to_line()) for record in simulate(lines)]
    check_outcomes(lines, outputs)
    return outputs


def reasons(outputs: list[dict[str, object]]) -> set[str]:
    return {str(o["value"]["reason"]) for o in outputs if str(o["topic"]).endswith(".rejected")}  # type: ignore[index]


def sealed(outputs: list[dict[str, object]]) -> list[int]:
    return [int(o["value"]["number"]) for o in outputs if str(o["topic"]).endswith(".seals")]  # type: ignore[index]


@pytest.mark.parametrize("limits", [AuthorLimits(), AuthorLimits(max_records=3), AuthorLimits(max_bytes=400)])
def test_authored_blocks_of_a_hostile_workload_all_seal_and_include_every_genuine_record(limits: AuthorLimits) -> None:
    """A workload with many bad records (forged copies, replayed seqnos, bad JSON and hex...), its blocks dropped:
    the author's blocks, written after each chunk, then some empty ones to drain, all seal through the real
    Stage R, none waits for records and every genuine record is included exactly once."""
    chunks = [without_blocks(chunk) for chunk in generate(WorkloadSpec(seed=11, blocks=8, bad_records=0.6))]
    author = Author(registry_of(chunks[0]), limits)
    log: list[str] = []
    for chunk in chunks:
        author.feed(chunk)
        log += chunk
        log.append(author.block()[0])
    while any(author.inclusion.buffered.values()):
        log.append(author.block()[0])
    outputs = run(log)
    assert not reasons(outputs) & {"MissingRecords", "NeverIncluded", "BlockOrderError", "ManifestMismatch"}
    assert sealed(outputs) == list(range(1, author.chain.number + 1))  # type: ignore[operator]
    assert {"BadSignature", "Duplicate"} <= set(author.refusals)


def two_para_log() -> LogBuilder:
    log = LogBuilder(REALM)
    keys = {1000: frozenset({COLLATOR.public_key})}
    log.genesis(KeyRegistry(para_keys=keys, author_keys=frozenset({AUTHOR.public_key})), Genesis())
    return log


def publish(log: LogBuilder, index: int) -> InputRecord:
    return log.publish(1000, COLLATOR, [(bytes([index]) * 32, b"v", 0)])


def test_a_forged_record_takes_no_position_and_the_genuine_one_is_included_when_it_comes() -> None:
    log = two_para_log()
    author = Author(registry_of(log.lines))
    genuine = publish(log, 1)
    forged = genuine.value[:-1] + bytes((genuine.value[-1] ^ 1,))
    author.feed([log.lines[-1].replace(genuine.value.hex(), forged.hex())])
    assert author.refusals == ["BadSignature"]
    assert author.block()[2].manifest == ()
    author.feed([log.lines[-1]])
    assert author.block()[2].manifest == (("upward", "1000", 0),)


def test_a_gap_stops_the_run_until_the_missing_position_arrives() -> None:
    """Para 1000 has two collator keys; the record at position 1 (the second key's) arrives after position 2."""
    second_key = signer("collator/1000/b")
    log = LogBuilder(REALM)
    keys = {1000: frozenset({COLLATOR.public_key, second_key.public_key})}
    log.genesis(KeyRegistry(para_keys=keys, author_keys=frozenset({AUTHOR.public_key})), Genesis())
    author = Author(registry_of(log.lines))
    publish(log, 0)
    log.publish(1000, second_key, [(bytes(32), b"w", 0)])
    publish(log, 2)
    lines = log.lines[-3:]
    author.feed([lines[0], lines[2]])  # position 1 has not arrived yet
    assert author.block()[2].manifest == (("upward", "1000", 0),)
    assert author.block()[2].manifest == ()
    author.feed([lines[1]])
    assert author.refusals == [None, None, None]
    assert author.block()[2].manifest == (("upward", "1000", 2),)


def test_a_position_whose_record_comes_with_an_older_seqno_stays_empty_as_in_stage_r() -> None:
    """One sender writes seqno 2 (position 1) before seqno 1 (position 0): Stage R ignores the late one as a
    Duplicate, so position 0 never fills and the author never includes position 1 (it would wait forever)."""
    log = two_para_log()
    author = Author(registry_of(log.lines))
    publish(log, 0)
    publish(log, 1)
    author.feed([log.lines[-1], log.lines[-2]])
    assert author.refusals == [None, "Duplicate"]
    assert author.block()[2].manifest == ()


def test_a_replayed_seqno_and_an_undecodable_record_take_no_position() -> None:
    log = two_para_log()
    author = Author(registry_of(log.lines))
    genuine = publish(log, 1)
    replay = InputRecord("upward", "1000", 1, genuine.value)  # the same envelope at the next position
    garbage = {"topic": f"{REALM}.upward", "key": "1000", "value": {"stream": "upward", "origin": "1000",
                                                                     "position": 1, "value": "0xzz"}}
    author.feed([log.lines[-1], canonical_json({"topic": f"{REALM}.upward", "key": "1000", "value": replay.to_json()}),
                 canonical_json(garbage)])
    assert author.refusals == [None, "Duplicate", "MalformedRecord"]
    publish(log, 2)
    author.feed([log.lines[-1]])
    assert author.block()[2].manifest == (("upward", "1000", 1),)


def test_an_over_full_block_is_split_without_reordering() -> None:
    """20 upward messages of one para: the router's 16 per para, then the rest; a total cap cuts runs in turn."""
    log = two_para_log()
    author = Author(registry_of(log.lines))
    for i in range(20):
        publish(log, i)
    author.feed(log.lines[1:])
    assert author.block()[2].manifest == (("upward", "1000", 15),)
    assert author.block()[2].manifest == (("upward", "1000", 19),)

    capped = Author(registry_of(log.lines), AuthorLimits(max_records=7))
    capped.feed(log.lines[1:])
    assert [capped.block()[2].manifest for _ in range(3)] == [
        (("upward", "1000", 6),), (("upward", "1000", 13),), (("upward", "1000", 19),)]


def test_the_byte_cap_cuts_a_run_and_a_record_over_it_goes_alone() -> None:
    log = two_para_log()
    author = Author(registry_of(log.lines), AuthorLimits(max_bytes=1))
    for i in range(3):
        publish(log, i)
    author.feed(log.lines[1:])
    plans = [author.block()[2] for _ in range(4)]
    assert [p.manifest for p in plans] == [(("upward", "1000", 0),), (("upward", "1000", 1),),
                                           (("upward", "1000", 2),), ()]
    assert plans[0].size > 1 and plans[0].records == {"upward": 1}


def test_round_robin_across_origins_so_no_origin_starves() -> None:
    other = signer("collator/1001")
    log = LogBuilder(REALM)
    keys = {1000: frozenset({COLLATOR.public_key}), 1001: frozenset({other.public_key})}
    log.genesis(KeyRegistry(para_keys=keys, author_keys=frozenset({AUTHOR.public_key})), Genesis())
    for i in range(5):
        log.publish(1000, COLLATOR, [(bytes([i]) * 32, b"v", 0)])
    log.publish(1001, other, [(bytes(32), b"v", 0)])
    author = Author(registry_of(log.lines), AuthorLimits(max_records=2))
    author.feed(log.lines[1:])
    assert author.block()[2].manifest == (("upward", "1000", 0), ("upward", "1001", 0))


def test_the_chain_replayed_from_the_blocks_topic_resumes_where_the_author_stopped() -> None:
    """Blocks written by LogBuilder (same key), then a forged block and a replayed one, are replayed into the
    head, every included position and the author's seqno watermark; the next block extends the head."""
    log = two_para_log()
    publish(log, 0)
    log.block()
    publish(log, 1)
    publish(log, 2)
    second = log.block()
    blocks = [InputRecord.from_json(json.loads(line)["value"]) for line in log.lines if ".blocks" in line]
    forged = InputRecord("blocks", "author", 2, blocks[1].value[:-1] + bytes((blocks[1].value[-1] ^ 1,)))
    stranger = signer("stranger").sign(Topic(REALM, "blocks", "author"), 9, second.encode()).encode()
    chain = ChainState(REALM, registry_of(log.lines))
    values = [*blocks, forged, blocks[1], InputRecord("blocks", "author", 4, stranger)]
    applied = [chain.replay(b"author", canonical_json(r.to_json()).encode(), i) for i, r in enumerate(values)]
    assert [h.number if h else None for h in applied] == [1, 2, None, None, None]
    assert (chain.number, chain.hash, chain.included) == (2, second.hash, {("upward", "1000"): 2})
    assert chain.next_seqno(AUTHOR.public_key) == 3 and chain.next_number == 3
    header = chain.next_header((), 5 << 20, 0)
    assert (header.number, header.parent_hash) == (3, second.hash)


def test_a_block_that_does_not_extend_the_head_is_not_the_head() -> None:
    registry = KeyRegistry(author_keys=frozenset({AUTHOR.public_key}))
    chain = ChainState(REALM, registry)
    first = chain.next_header((), 5 << 20, 0)
    wrong_parent = BlockHeader(2, bytes(32), bytes([1]) * 32, 5 << 20, 0, ())
    skipped_number = BlockHeader(3, bytes(32), first.hash, 5 << 20, 0, ())
    for seqno, header in enumerate((first, wrong_parent, skipped_number), 1):
        chain.replay(b"author", block_record(REALM, AUTHOR, seqno, header), seqno - 1)
    assert (chain.number, chain.hash, chain.next_seqno(AUTHOR.public_key)) == (1, first.hash, 4)


def test_block_hash_commits_to_realm_number_parent_and_manifest() -> None:
    base = BlockHeader(4, bytes(32), bytes([7]) * 32, 5 << 20, 0, (("upward", "1000", 3),))
    variants = [
        BlockHeader(5, bytes(32), base.parent_hash, base.max_pov_size, 0, base.manifest),
        BlockHeader(4, bytes(32), bytes(32), base.max_pov_size, 0, base.manifest),
        BlockHeader(4, bytes(32), base.parent_hash, base.max_pov_size, 0, (("upward", "1000", 4),)),
    ]
    hashes = {block_hash(REALM, base), block_hash("kusama", base), *(block_hash(REALM, v) for v in variants)}
    assert len(hashes) == 5
    same = BlockHeader(4, bytes([9]) * 32, base.parent_hash, base.max_pov_size, 0, base.manifest)
    assert block_hash(REALM, same) == block_hash(REALM, base)  # the hash field itself does not count


@pytest.mark.parametrize("text, reason", [("zz" * 32, "not hexadecimal"), ("ab" * 31, "31 bytes")])
def test_a_bad_key_is_a_typed_error_that_never_shows_the_key(text: str, reason: str) -> None:
    with pytest.raises(AuthorKeyError) as caught:
        parse_key(REALM, text, "$PUBSUB_AUTHOR_KEY")
    assert reason in str(caught.value) and text not in str(caught.value)
    assert caught.value.source == "$PUBSUB_AUTHOR_KEY"


def test_a_key_reads_with_or_without_0x_and_blanks() -> None:
    seed = bytes(range(32))
    assert parse_key(REALM, f" 0x{seed.hex()}\n", "f").public_key == parse_key(REALM, seed.hex(), "f").public_key


def test_limits_come_from_the_relay_configuration() -> None:
    from pubsub_core.envelope import AdmissionConfig
    from pubsub_core.router import RouterConfig

    limits = AuthorLimits.from_relay(AdmissionConfig(max_messages_per_block=50),
                                     RouterConfig(max_upward_message_num_per_candidate=4))
    assert (limits.max_records, limits.upward_per_para, limits.per_origin("extrinsics")) == (50, 4, 50)
    assert AuthorLimits().upward_per_para == 16 and AuthorLimits().max_records == 600
    with pytest.raises(ValueError):
        AuthorLimits(max_bytes=0)


def test_a_seqno_spent_on_a_position_conflict_makes_a_lower_one_a_duplicate_as_in_stage_r() -> None:
    """The collator signs seqno 5 at a position already taken (PositionConflict), then seqno 3 at the next one:
    Stage R spends seqno 5 on the refused record, so seqno 3 is a Duplicate there and the author must not include
    it (a block naming it would wait forever)."""
    log = two_para_log()
    author = Author(registry_of(log.lines))
    publish(log, 0)
    clash = InputRecord("upward", "1000", 0, COLLATOR.sign(Topic(REALM, "upward", "1000"), 5, b"\x01").encode())
    log.line(f"{REALM}.upward", "1000", clash.to_json())
    log.signed(COLLATOR, "upward", "1000", b"\x02", seqno=3)
    author.feed(log.lines[1:])
    assert author.refusals == [None, "PositionConflict", "Duplicate"]
    line, _, plan = author.block()
    assert plan.manifest == (("upward", "1000", 0),)
    outputs = run([*log.lines, line])
    assert not reasons(outputs) & {"MissingRecords", "NeverIncluded"} and sealed(outputs) == [1]
