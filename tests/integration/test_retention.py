"""Input topics with a finite retention: the job and the block author restart from their checkpoint and snapshot
after retention deleted the segments they had read, and give the outputs of the whole log.

A workload in three parts. Part A is written, the author writes its blocks, the job runs to its end (available-now,
checkpoint kept). Part B is written (rolling the inputs' segments: ``segment.ms`` is a second) and the author
writes its blocks. Then the inputs get a ``retention.ms`` that part A has outlived but B has not, until Kafka
deleted A's segments (the embedded broker checks retention every 5 seconds); an author without its snapshot can
no longer start (``InputExpired``). Part C is written, the author restarts from its snapshot and writes C's blocks,
the job restarts from its checkpoint and runs to the end: every output topic equals the simulator on the whole
log as it was before the deletion."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

import pytest

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from producers.readers.export import export_line, interleave
from producers.transport.kafka_io import read_topic
from producers.transport.topics import consumer_config, ensure_realm_topics
from producers.workload import WorkloadSpec, generate, signer
from producers.writers.author import BlockAuthor, InputExpired
from pubsub_core.stages.edge import ConsumerRecord
from pubsub_core.stages.topics import input_topics
from settings.settings import Settings
from supervise.verify import check_outputs
from tests.integration.test_author import without_blocks
from tests.integration.test_author_snapshot import send
from tests.support.paths import REPO_ROOT

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

EXPIRING = ("upward", "horizontal", "extrinsics", "blocks")
"""The inputs given a retention (``genesis`` keeps its record: every start reads it)."""
OUTLIVED_S = 25
"""Part A is at least this old when the retention (``RETENTION_MS``) is set; part B is younger than it."""
RETENTION_MS = 15_000


def set_configs(admin: AdminClient, realm: str, configs: Mapping[str, str]) -> None:
    resources = [ConfigResource(ConfigResource.Type.TOPIC, f"{realm}.{stream}",
                                incremental_configs=[ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
                                                     for k, v in configs.items()]) for stream in EXPIRING]
    for future in admin.incremental_alter_configs(resources).values():
        future.result(30)


def earliest(settings: Settings, name: str) -> int:
    consumer = Consumer(consumer_config(settings, f"retention-{uuid.uuid4().hex[:6]}"))
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(name, 0), timeout=30)[0])
    finally:
        consumer.close()


def write_blocks(settings: Settings, realm: str) -> BlockAuthor:
    """An author (from its snapshot when there is one) writes blocks until it has nothing left to include."""
    author = BlockAuthor(settings, realm, signer("author"))
    author.start(genesis_timeout=20)
    author.catch_up()
    for _ in range(40):
        if not author.write_block().header.manifest:
            break
    author.close()
    return author


def run_job(settings: Settings, realm: str, checkpoint: Path, log: Path) -> None:
    args = [sys.executable, "-m", "streaming.job", "--bootstrap", str(settings.kafka_bootstrap), "--checkpoint",
            str(checkpoint), "--available-now", "--realm", realm]
    with log.open("ab") as out:
        done = subprocess.run(args, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT, timeout=900,
                              env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert done.returncode == 0, log.read_text()[-3000:]


def test_the_job_and_the_author_restart_past_deleted_segments_and_equal_the_simulator(
        kafka_settings: Settings, tmp_path: Path) -> None:
    realm = f"retain{uuid.uuid4().hex[:8]}"
    ensure_realm_topics(kafka_settings, realm)
    admin = AdminClient({**kafka_settings.kafka_client_config(), "log_level": "3"})
    set_configs(admin, realm, {"segment.ms": "1000"})
    parts = [without_blocks(c) for c in generate(WorkloadSpec(seed=41, blocks=9, bad_records=0.2, realm=realm))]
    a, b, c = parts[:4], parts[4:8], parts[8:]
    checkpoint, log = tmp_path / "checkpoint", tmp_path / "job.log"

    send(kafka_settings, realm, [line for chunk in a for line in chunk])
    assert write_blocks(kafka_settings, realm).resumed_from is None  # a new realm: nothing to resume from
    a_written = time.monotonic()
    run_job(kafka_settings, realm, checkpoint, log)
    before = {name: read_topic(kafka_settings, name) for name in input_topics(realm)}

    time.sleep(max(0.0, OUTLIVED_S - (time.monotonic() - a_written)))
    send(kafka_settings, realm, [line for chunk in b for line in chunk])
    assert write_blocks(kafka_settings, realm).resumed_from is not None
    set_configs(admin, realm, {"retention.ms": str(RETENTION_MS)})
    try:
        deadline = time.monotonic() + 60
        while min(earliest(kafka_settings, f"{realm}.{s}") for s in ("upward", "blocks")) == 0:
            assert time.monotonic() < deadline, "retention deleted no segment in 60 s"
            time.sleep(1)
    finally:
        set_configs(admin, realm, {"retention.ms": "-1"})
    with pytest.raises(InputExpired):  # the history a snapshot-less author needs is gone
        BlockAuthor(kafka_settings, realm, signer("author"), use_snapshot=False).start(genesis_timeout=20)

    send(kafka_settings, realm, [line for chunk in c for line in chunk])
    assert write_blocks(kafka_settings, realm).resumed_from is not None
    run_job(kafka_settings, realm, checkpoint, log)

    after = {name: read_topic(kafka_settings, name) for name in input_topics(realm)}
    whole: dict[str, list[ConsumerRecord]] = {}
    for name in input_topics(realm):
        last = max((r.offset for r in before[name]), default=-1)
        whole[name] = before[name] + [r for r in after[name] if r.offset > last]
        assert [r.offset for r in whole[name]] == sorted({r.offset for r in whole[name]})
    lines = [export_line(record)[0].encode() for record in interleave(whole.values())]
    assert sum(len(after[f"{realm}.{s}"]) < len(whole[f"{realm}.{s}"]) for s in EXPIRING) >= 2  # segments went
    result = check_outputs(lines, kafka_settings, [realm])
    bad = [t for t in result.topics if not t.ok]
    assert not bad, f"differences: {bad}"
    assert sum(t.matched for t in result.topics) == sum(t.expected for t in result.topics) > 0
    assert result.pending_at_end == 0
