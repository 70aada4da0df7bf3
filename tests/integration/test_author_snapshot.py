"""The block author's restart from its snapshot (``<realm>.author-state``) against a real Kafka broker.

Two realms get the same workload (its own blocks dropped), chunk by chunk. On one, a single ``BlockAuthor`` writes
every block; on the other, the author is closed and a new one started at arbitrary points (between blocks, after
records arrived but before a block was written, once with the snapshots ignored). Both chains must hold the same
blocks: numbers, manifests, sessions. Retention deleting records the author has not read stops its start with
``InputExpired``; ``accept_input_loss`` resumes at the topic's earliest offset."""

from __future__ import annotations

import json
import uuid

import pytest

from confluent_kafka.admin import AdminClient
from confluent_kafka import TopicPartition

from producers.transport.kafka_io import produce, read_topic, route_event_log
from producers.transport.topics import ensure_realm_topics
from producers.workload import WorkloadSpec, generate, signer
from producers.writers.author import AuthorLimits, BlockAuthor, InputExpired
from producers.writers.author_state import open_snapshot
from pubsub_core.envelope import Envelope
from pubsub_core.relay import BlockHeader, InputRecord
from pubsub_core.stages import LineParser
from pubsub_core.stages.edge import ProducerRecord
from settings.settings import Settings
from tests.integration.test_author import without_blocks

pytestmark = pytest.mark.kafka

AUTHOR = signer("author")
LIMITS = AuthorLimits(max_records=3)
SPEC = dict(seed=7, blocks=10, bad_records=0.4)


def new_realm(settings: Settings) -> str:
    name = f"snap{uuid.uuid4().hex[:8]}"
    ensure_realm_topics(settings, name, outputs=False, seam=False)
    return name


def chunks(realm: str) -> list[list[str]]:
    return [without_blocks(chunk) for chunk in generate(WorkloadSpec(**SPEC, realm=realm))]  # type: ignore[arg-type]


def send(settings: Settings, realm: str, lines: list[str]) -> None:
    records = [r for r, _ in (item for item in route_event_log((line.encode() for line in lines), LineParser(realm))
                              if isinstance(item, tuple))]
    produce(settings, records)


def blocks(settings: Settings, realm: str) -> list[tuple[int, int, tuple[tuple[str, str, int], ...]]]:
    headers = [BlockHeader.decode(Envelope.decode(InputRecord.from_json(json.loads(r.value or b"")).value).data)
               for r in read_topic(settings, f"{realm}.blocks")]
    return [(h.number, h.session_index, h.manifest) for h in headers]


def author(settings: Settings, realm: str, *, use_snapshot: bool = True, accept_input_loss: bool = False) -> BlockAuthor:
    started = BlockAuthor(settings, realm, AUTHOR, limits=LIMITS, session_every=4, use_snapshot=use_snapshot,
                          accept_input_loss=accept_input_loss)
    started.start(genesis_timeout=20)
    return started


PER_CHUNK = 2
"""Blocks written after each chunk (the workload's chunks hold more than LIMITS lets two blocks take, so records
stay buffered across blocks and restarts); then blocks until everything is included."""
DRAIN = 30


def run(settings: Settings, realm: str, restarts: set[tuple[int, int]], full_replay_at: tuple[int, int] | None,
        restart_before_catch_up: set[int]) -> list[int | None]:
    """Writes the workload's blocks; ``restarts``: (chunk, block index) after which the author is replaced.
    Returns, per restart, the block number of the snapshot it resumed from (None: a full replay)."""
    parts = chunks(realm)
    send(settings, realm, parts[0])  # the genesis
    current = author(settings, realm)
    resumed: list[int | None] = []
    for index, chunk in enumerate([*parts, []]):
        if index:
            send(settings, realm, chunk)
        if index in restart_before_catch_up:
            current.close()
            current = author(settings, realm)
            resumed.append(None if current.resumed_from is None else current.resumed_from.number)
        current.catch_up()
        for block in range(PER_CHUNK if chunk else DRAIN):
            current.write_block()
            if (index, block) in restarts or (index, block) == full_replay_at:
                current.close()
                current = author(settings, realm, use_snapshot=(index, block) != full_replay_at)
                resumed.append(None if current.resumed_from is None else current.resumed_from.number)
    current.close()
    return resumed


def test_an_author_restarted_at_arbitrary_points_writes_the_blocks_an_uninterrupted_one_writes(
        kafka_settings: Settings) -> None:
    steady, restarted = new_realm(kafka_settings), new_realm(kafka_settings)
    assert run(kafka_settings, steady, set(), None, set()) == []
    resumed = run(kafka_settings, restarted, {(0, 0), (1, 1), (3, 0), (3, 1), (7, 1), (13, 4)}, (5, 0), {2, 9})
    expected = blocks(kafka_settings, steady)
    assert len(expected) == 13 * PER_CHUNK + DRAIN  # the workload has 13 chunks and any(manifest for _, _, manifest in expected[-DRAIN:])
    assert blocks(kafka_settings, restarted) == expected
    # every restart but the one told to ignore snapshots resumed from the block just written (no full replay)
    assert resumed == [1, 4, 4, 7, 8, None, 16, 18, 31]


def test_the_snapshot_topic_keeps_only_signed_snapshots_a_forged_one_is_skipped(kafka_settings: Settings) -> None:
    realm = new_realm(kafka_settings)
    send(kafka_settings, realm, chunks(realm)[0])
    first = author(kafka_settings, realm)
    first.write_block()
    first.close()
    forger = signer("not-the-author")
    records = list(read_topic(kafka_settings, f"{realm}.author-state"))
    genuine = Envelope.decode(records[-1].value or b"")
    forged = forger.sign(genuine.topic, 99, genuine.data.replace(b'"number":1', b'"number":99')).encode()
    produce(kafka_settings, [ProducerRecord(f"{realm}.author-state", b"author", forged)])
    keys = frozenset({AUTHOR.public_key})
    assert open_snapshot(realm, keys, forged) is None and open_snapshot(realm, keys, records[-1].value) is not None
    second = author(kafka_settings, realm)
    assert second.resumed_from is not None and second.resumed_from.number == 1
    assert second.write_block().header.number == 2
    second.close()


def test_records_deleted_before_the_author_read_them_stop_its_start_with_input_expired(
        kafka_settings: Settings) -> None:
    realm = new_realm(kafka_settings)
    parts = chunks(realm)
    send(kafka_settings, realm, parts[0])
    first = author(kafka_settings, realm)
    first.write_block()
    first.close()
    send(kafka_settings, realm, parts[1])
    upward = f"{realm}.upward"
    records = list(read_topic(kafka_settings, upward))
    admin = AdminClient({**kafka_settings.kafka_client_config(), "log_level": "3"})
    cut = len(records) - 1  # what retention would do: the log now starts at the last record
    for future in admin.delete_records([TopicPartition(upward, 0, cut)]).values():
        future.result(30)
    with pytest.raises(InputExpired) as caught:
        author(kafka_settings, realm)
    assert caught.value.topic == upward and caught.value.earliest == cut and caught.value.wanted < cut
    assert "--accept-input-loss" in str(caught.value)
    lossy = author(kafka_settings, realm, accept_input_loss=True)
    assert lossy.resumed_from is not None and lossy.write_block().header.number == 2
    lossy.close()


def test_a_head_block_deleted_by_retention_is_taken_from_the_snapshot_unless_later_blocks_went_too(
        kafka_settings: Settings) -> None:
    """An author down longer than the blocks topic's retention finds its head block gone: its signed snapshot is
    enough. When records written after the head went too (another writer's), they may have been blocks it needs:
    ``InputExpired``."""
    realm = new_realm(kafka_settings)
    send(kafka_settings, realm, chunks(realm)[0])
    first = author(kafka_settings, realm)
    first.write_block()
    first.close()
    blocks_topic = f"{realm}.blocks"
    admin = AdminClient({**kafka_settings.kafka_client_config(), "log_level": "3"})
    high = first._watermarks(blocks_topic)[1]  # the head block and its commit marker
    for future in admin.delete_records([TopicPartition(blocks_topic, 0, high)]).values():
        future.result(30)
    second = author(kafka_settings, realm)
    assert second.resumed_from is not None and second.write_block().header.number == 2
    second.close()
    produce(kafka_settings, [ProducerRecord(blocks_topic, b"author", b"junk")])
    high = second._watermarks(blocks_topic)[1]
    for future in admin.delete_records([TopicPartition(blocks_topic, 0, high)]).values():
        future.result(30)
    with pytest.raises(InputExpired) as caught:
        author(kafka_settings, realm)
    assert caught.value.topic == blocks_topic
    third = author(kafka_settings, realm, accept_input_loss=True)
    assert third.write_block().header.number == 3
    third.close()
