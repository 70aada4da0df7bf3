"""`pubsub author` against a real Kafka broker, run as a subprocess in its own process group.

Genuine records come from producers.workload (LogBuilder-signed envelopes, its own blocks dropped), hostile ones
included; the author's blocks are read back from `<realm>.blocks` (read committed) and checked: consecutive
numbers on a hash chain, every genuine position included exactly once across SIGKILLs, and, fed with the
records to the simulator (the real Stage R), sealed blocks with no MissingRecords or NeverIncluded."""

from __future__ import annotations

import json
import re
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from confluent_kafka import Producer

from producers.transport.kafka_io import produce, read_topic, route_event_log
from producers.transport.topics import ensure_realm_topics, producer_config
from producers.workload import LogBuilder, WorkloadSpec, generate, signer
from producers.writers.author import AuthorFenced, BlockAuthor, transactional_id
from pubsub_core.envelope import Envelope, KeyRegistry
from pubsub_core.relay import BlockHeader, Genesis, InputRecord, canonical_json
from pubsub_core.simulator import simulate
from pubsub_core.stages import LineParser
from settings.settings import Settings
from tests.simulator.properties import check_outcomes

pytestmark = pytest.mark.kafka

ROOT = Path(__file__).resolve().parents[2]
BLOCK_TIME = "0.3"
BLOCK_LINE = re.compile(r'"topic":\s*"[^"]*\.blocks"')
AUTHOR_SEED = signer("author")  # the workload's author key (in every workload genesis)
COLLATOR = signer("collator/1000")


def author_seed_hex() -> str:
    from pubsub_core.hashing import blake2_256

    return blake2_256(b"rfc0160/workload/author").hex()  # producers.workload.signer("author")'s seed


class Author:
    """One `pubsub author` process: stdout and stderr in files, its own process group."""

    def __init__(self, settings: Settings, realm: str, tmp: Path, *args: str, key: str | None = None) -> None:
        self.out = tmp / f"author-{uuid.uuid4().hex[:6]}.out"
        self.err = self.out.with_suffix(".err")
        env = {**os.environ, "PUBSUB_AUTHOR_KEY": author_seed_hex() if key is None else key}
        command = [sys.executable, "-m", "cli.main", "author", "--realm", realm, "--bootstrap",
                   str(settings.kafka_bootstrap), "--block-time", BLOCK_TIME, "--genesis-timeout", "20", *args]
        with self.out.open("w") as out, self.err.open("w") as err:
            self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=err,
                                            start_new_session=True)

    def lines(self) -> list[str]:
        return self.out.read_text().splitlines()

    def wait_blocks(self, count: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.lines()) < count:
            assert self.process.poll() is None, f"author exited: {self.err.read_text()}"
            assert time.monotonic() < deadline, f"only {len(self.lines())} blocks: {self.err.read_text()}"
            time.sleep(0.05)

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def interrupt(self) -> int:
        os.killpg(self.process.pid, signal.SIGINT)
        return self.process.wait(30)

    def finish(self, timeout: float = 60.0) -> int:
        return self.process.wait(timeout)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.kill()


@pytest.fixture
def realm(kafka_settings: Settings) -> str:
    name = f"author{uuid.uuid4().hex[:8]}"
    ensure_realm_topics(kafka_settings, name, outputs=False, seam=False)
    return name


@pytest.fixture
def authors() -> Iterator[list[Author]]:
    started: list[Author] = []
    yield started
    for author in started:
        author.stop()


def send_lines(settings: Settings, realm: str, lines: list[str]) -> None:
    records = [r for r, _ in (item for item in route_event_log((line.encode() for line in lines), LineParser(realm))
                              if isinstance(item, tuple))]
    produce(settings, records)


def without_blocks(lines: list[str]) -> list[str]:
    """A workload chunk without its blocks (malformed lines, which name no topic we can read, stay)."""
    return [line for line in lines if not BLOCK_LINE.search(line)]


def topic_lines(settings: Settings, realm: str, stream: str) -> list[str]:
    return [canonical_json({"topic": r.topic, "key": (r.key or b"").decode(), "value": json.loads(r.value or b"")})
            for r in read_topic(settings, f"{realm}.{stream}")]


def headers(settings: Settings, realm: str) -> list[BlockHeader]:
    return [BlockHeader.decode(Envelope.decode(InputRecord.from_json(json.loads(r.value or b"")).value).data)
            for r in read_topic(settings, f"{realm}.blocks")]


def check_chain(blocks: list[BlockHeader]) -> dict[tuple[str, str], list[int]]:
    """Numbers 1..n, each parent the previous hash; returns each (stream, origin)'s manifest positions in order
    (strictly increasing: nothing included twice)."""
    assert [b.number for b in blocks] == list(range(1, len(blocks) + 1))
    parent = bytes(32)
    for block in blocks:
        assert block.parent_hash == parent
        parent = block.hash
    lasts: dict[tuple[str, str], list[int]] = {}
    for block in blocks:
        for stream, origin, last in block.manifest:
            lasts.setdefault((stream, origin), []).append(last)
    for positions in lasts.values():
        assert positions == sorted(set(positions))
    return lasts


def genuine_lasts(lines: list[str]) -> dict[tuple[str, str], int]:
    """The last genuine position per (stream, origin) of a LogBuilder log: the highest position a line has."""
    lasts: dict[tuple[str, str], int] = {}
    for line in lines:
        try:
            body = json.loads(line)
        except json.JSONDecodeError:
            continue
        stream = str(body.get("topic", "")).rpartition(".")[2]
        if stream in ("upward", "horizontal", "extrinsics"):
            value = body["value"]
            if isinstance(value, dict) and isinstance(value.get("position"), int) and value["position"] < 10**6:
                key = (stream, str(value["origin"]))
                lasts[key] = max(lasts.get(key, -1), value["position"])
    return lasts


def simulate_topics(settings: Settings, realm: str) -> list[dict[str, object]]:
    """The realm's input topics read back as an event log, through the simulator (the real Stage R)."""
    lines = [line for stream in ("genesis", "upward", "horizontal", "extrinsics", "blocks")
             for line in topic_lines(settings, realm, stream)]
    outputs = [json.loads(record.to_line()) for record in simulate(lines)]
    check_outcomes(lines, outputs)
    return outputs


def rejected_reasons(outputs: list[dict[str, object]]) -> set[str]:
    return {str(o["value"]["reason"]) for o in outputs if str(o["topic"]).endswith(".rejected")}  # type: ignore[index]


def test_every_record_is_included_exactly_once_across_sigkills(kafka_settings: Settings, realm: str,
                                                                authors: list[Author], tmp_path: Path) -> None:
    """A hostile workload arrives in chunks; the author is SIGKILLed once between blocks (right after one) and
    once while records arrive (wherever it is), restarted each time, then stopped with SIGINT once everything is
    included. The blocks form one chain, include each genuine position once, and seal in the simulator."""
    chunks = [without_blocks(c) for c in generate(WorkloadSpec(seed=5, blocks=12, bad_records=0.4, realm=realm))]
    sent = chunks[0] + chunks[1]
    send_lines(kafka_settings, realm, sent)
    first = Author(kafka_settings, realm, tmp_path)
    authors.append(first)
    first.wait_blocks(2)
    first.kill()  # just after a block: between blocks
    second = Author(kafka_settings, realm, tmp_path)
    authors.append(second)
    for chunk in chunks[2:8]:
        send_lines(kafka_settings, realm, chunk)
        sent += chunk
        time.sleep(0.15)
    second.kill()  # while records arrive
    third = Author(kafka_settings, realm, tmp_path)
    authors.append(third)
    for chunk in chunks[8:]:
        send_lines(kafka_settings, realm, chunk)
        sent += chunk
    expected = genuine_lasts(sent)
    deadline = time.monotonic() + 60
    while {k: v[-1] for k, v in check_chain(headers(kafka_settings, realm)).items()} != expected:
        assert time.monotonic() < deadline, "the author did not include every record"
        time.sleep(0.3)
    assert third.interrupt() == 0
    assert "stopped after" in third.err.read_text()
    blocks = headers(kafka_settings, realm)
    lasts = check_chain(blocks)
    assert {k: v[-1] for k, v in lasts.items()} == expected
    outputs = simulate_topics(kafka_settings, realm)
    assert not rejected_reasons(outputs) & {"MissingRecords", "NeverIncluded", "BlockOrderError", "ManifestMismatch"}
    seals = [int(o["value"]["number"]) for o in outputs if str(o["topic"]).endswith(".seals")]  # type: ignore[index]
    assert seals == list(range(1, len(blocks) + 1))


def test_a_second_author_fences_the_first(kafka_settings: Settings, realm: str, authors: list[Author],
                                          tmp_path: Path) -> None:
    """The newer author wins (init_transactions fences the older producer); the older one exits 1 with the typed
    error, having written no block after being fenced: the chain has no repeated number."""
    send_lines(kafka_settings, realm, without_blocks(next(generate(WorkloadSpec(seed=2, blocks=3, realm=realm)))))
    older = Author(kafka_settings, realm, tmp_path)
    authors.append(older)
    older.wait_blocks(2)
    newer = Author(kafka_settings, realm, tmp_path)
    authors.append(newer)
    newer.wait_blocks(3)
    assert older.finish(30) == 1
    assert "fenced by a newer author" in older.err.read_text()
    assert newer.process.poll() is None
    assert newer.interrupt() == 0
    check_chain(headers(kafka_settings, realm))


def test_an_author_fenced_mid_block_raises_the_typed_error(kafka_settings: Settings, realm: str) -> None:
    """In process: once a newer producer took the transactional id, the next block fails with ``AuthorFenced``,
    whichever call notices first (produce, a purged delivery, the abort it triggers or the commit)."""
    send_lines(kafka_settings, realm, without_blocks(next(generate(WorkloadSpec(seed=2, blocks=2, realm=realm)))))
    author = BlockAuthor(kafka_settings, realm, AUTHOR_SEED)
    try:
        author.start(20)
        first = author.write_block()
        newer = Producer({**producer_config(kafka_settings), "transactional.id": transactional_id(realm)})
        newer.init_transactions(30)
        with pytest.raises(AuthorFenced) as raised:
            author.write_block()
        assert raised.value.number == first.header.number + 1
    finally:
        author.close()
    assert [h.number for h in headers(kafka_settings, realm)] == [first.header.number]


def one_para_log(realm: str) -> LogBuilder:
    log = LogBuilder(realm)
    registry = KeyRegistry(para_keys={1000: frozenset({COLLATOR.public_key})},
                           author_keys=frozenset({AUTHOR_SEED.public_key}))
    log.genesis(registry, Genesis())
    return log


def test_an_over_full_block_is_split(kafka_settings: Settings, realm: str, authors: list[Author],
                                     tmp_path: Path) -> None:
    """20 upward messages of one para: 16 (the router's limit per para) in the first block, 4 in the second."""
    log = one_para_log(realm)
    for i in range(20):
        log.publish(1000, COLLATOR, [(bytes([i]) * 32, b"v", 0)])
    send_lines(kafka_settings, realm, log.lines)
    author = Author(kafka_settings, realm, tmp_path, "--blocks", "2")
    authors.append(author)
    assert author.finish() == 0, author.err.read_text()
    assert [b.manifest for b in headers(kafka_settings, realm)] == [(("upward", "1000", 15),), (("upward", "1000", 19),)]
    assert author.lines()[0].startswith("block 1 | upward 16 horizontal 0 extrinsics 0 |")


def test_a_forged_record_is_skipped_and_the_genuine_one_included_later(kafka_settings: Settings, realm: str,
                                                                      authors: list[Author], tmp_path: Path) -> None:
    """A forged copy takes position 0 first: the block includes nothing; once the genuine record comes, the next
    author run (resuming at block 2) includes it, and the simulator seals both blocks."""
    log = one_para_log(realm)
    genuine = log.publish(1000, COLLATOR, [(bytes(32), b"v", 0)])
    forged = InputRecord("upward", "1000", 0, genuine.value[:-1] + bytes((genuine.value[-1] ^ 1,)))
    send_lines(kafka_settings, realm, [log.lines[0], log.lines[1].replace(genuine.value.hex(), forged.value.hex())])
    once = Author(kafka_settings, realm, tmp_path, "--once")
    authors.append(once)
    assert once.finish() == 0, once.err.read_text()
    send_lines(kafka_settings, realm, [log.lines[1]])
    again = Author(kafka_settings, realm, tmp_path, "--once")
    authors.append(again)
    assert again.finish() == 0, again.err.read_text()
    assert [(b.number, b.manifest) for b in headers(kafka_settings, realm)] == [(1, ()), (2, (("upward", "1000", 0),))]
    outputs = simulate_topics(kafka_settings, realm)
    assert rejected_reasons(outputs) == {"BadSignature"}


def test_a_key_that_is_not_an_author_key_is_refused_at_start(kafka_settings: Settings, realm: str,
                                                             authors: list[Author], tmp_path: Path) -> None:
    send_lines(kafka_settings, realm, one_para_log(realm).lines)
    stranger = Author(kafka_settings, realm, tmp_path, "--once", key="11" * 32)
    authors.append(stranger)
    assert stranger.finish() == 1
    error = stranger.err.read_text()
    assert "is not an author key of the genesis" in error and "11" * 32 not in error
    assert read_topic(kafka_settings, f"{realm}.blocks") == []
