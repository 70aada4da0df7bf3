"""Upgrade in place: the previous release (built from git, ``tests.support.releases``) serves the first part of a
log (its produce, its block author, its job on checkpoint C), then the current code produces the rest, its author
resumes the previous one's snapshot and its job resumes C. Every output topic equals the simulator over the whole
log, record for record; nothing is read again from offset 0 (the job's first batch after the upgrade starts at the
offsets C committed, and a second run has every record before them deleted first, as retention would).

One test per format version step: the fixture comes from ``PREVIOUS``; the next release's is that one line. And a
store one version above the current one is refused in one line: a seam record (the job) and a snapshot (the
author)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from producers.readers.export import export_line, interleave
from producers.transport.kafka_io import read_topic
from producers.transport.topics import ensure_realm_topics
from producers.workload import WorkloadSpec, generate, signer
from producers.writers.author import BlockAuthor
from producers.writers.author_state import AUTHOR_STATE, SNAPSHOT_KEY, SNAPSHOT_VERSION
from pubsub_core.envelope import Envelope, Topic
from pubsub_core.relay import BlockHeader, InputRecord, canonical_json
from pubsub_core.release import RELEASE
from pubsub_core.stages import RelayView
from pubsub_core.stages.edge import ConsumerRecord
from pubsub_core.stages.seam import MAC_BYTES, SEAM_FORMAT, encode_view, seam_mac
from pubsub_core.stages.topics import VIEWS, input_topics
from settings.settings import Settings
from state.formats import FormatTooNewError
from supervise.verify import check_outputs
from tests.integration.test_author import without_blocks
from tests.integration.test_author_snapshot import send
from tests.integration.test_retention import earliest, write_blocks
from tests.support.paths import REPO_ROOT
from tests.support.releases import Release

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

PREVIOUS_PART = """
import json, os, sys
from producers.topics import ensure_realm_topics
from settings.settings import load_settings
from tests.integration.test_author_snapshot import send
from tests.integration.test_retention import write_blocks
body = json.load(sys.stdin)
settings = load_settings().with_bootstrap(body["bootstrap"])
ensure_realm_topics(settings, body["realm"])
send(settings, body["realm"], body["lines"])
author = write_blocks(settings, body["realm"])
print(json.dumps({"resumed": author.resumed_from is not None}))
"""
"""Run by the previous release (its own module paths): it creates the realm's topics and produces the first part,
then its author writes that part's blocks."""

EXPIRING = ("upward", "horizontal", "extrinsics", "blocks")


def job_args(settings: Settings, realm: str, checkpoint: Path) -> list[str]:
    return ["-m", "streaming.job", "--bootstrap", str(settings.kafka_bootstrap), "--checkpoint", str(checkpoint),
            "--available-now", "--realm", realm]


def run_current_job(settings: Settings, realm: str, checkpoint: Path, log: Path) -> None:
    with log.open("ab") as out:
        done = subprocess.run([sys.executable, *job_args(settings, realm, checkpoint)], cwd=REPO_ROOT, stdout=out,
                              stderr=subprocess.STDOUT, timeout=900, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert done.returncode == 0, log.read_text()[-3000:]


def committed(checkpoint: Path) -> tuple[int, dict[str, int]]:
    """The relay query's last committed batch and its end offsets per input topic (Spark's offset log)."""
    commits = checkpoint / "relay" / "commits"
    batch = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    lines = (checkpoint / "relay" / "offsets" / str(batch)).read_text().splitlines()
    offsets: dict[str, int] = {}
    for line in lines[2:]:  # version, metadata, then one source's offsets each
        for topic, partitions in json.loads(line).items():
            offsets[topic] = int(partitions["0"])
    return batch, offsets


def first_batch_after(checkpoint: Path, batch: int) -> dict[str, int]:
    """The end offsets of ``batch + 1``, whose start is ``batch``'s end; raises if that batch does not exist."""
    lines = (checkpoint / "relay" / "offsets" / str(batch + 1)).read_text().splitlines()
    return {topic: int(p["0"]) for line in lines[2:] for topic, p in json.loads(line).items()}


@pytest.mark.parametrize("deleted", [False, True], ids=["topics-whole", "early-records-deleted"])
def test_the_previous_release_deployment_is_taken_over_without_replay_and_equals_the_simulator(
        previous_release: Release, kafka_settings: Settings, tmp_path: Path, deleted: bool) -> None:
    realm = f"upgrade{uuid.uuid4().hex[:8]}"
    parts = [without_blocks(c) for c in generate(WorkloadSpec(seed=47, blocks=8, bad_records=0.2, realm=realm))]
    first = [line for chunk in parts[:4] for line in chunk]
    rest = [line for chunk in parts[4:] for line in chunk]
    checkpoint, log = tmp_path / "checkpoint", tmp_path / "job.log"

    handed = previous_release.python(PREVIOUS_PART, {"bootstrap": kafka_settings.kafka_bootstrap, "realm": realm,
                                                     "lines": first})
    assert handed == {"resumed": False}
    done = previous_release.run(job_args(kafka_settings, realm, checkpoint), log=log)
    assert done.returncode == 0, log.read_text()[-3000:]
    before = {name: read_topic(kafka_settings, name) for name in input_topics(realm)}
    batch, offsets = committed(checkpoint)
    assert offsets and all(offsets[f"{realm}.{s}"] > 0 for s in ("upward", "blocks"))

    if deleted:  # everything the job and the author have read, as retention would delete it
        admin = AdminClient({**kafka_settings.kafka_client_config(), "log_level": "3"})
        upto = [TopicPartition(f"{realm}.{s}", 0, offsets[f"{realm}.{s}"] - (1 if s == "blocks" else 0))
                for s in EXPIRING if offsets.get(f"{realm}.{s}", 0) > 0]
        for future in admin.delete_records(upto).values():
            future.result(30)
        assert earliest(kafka_settings, f"{realm}.upward") == offsets[f"{realm}.upward"]

    send(kafka_settings, realm, rest)
    author = write_blocks(kafka_settings, realm)
    assert author.resumed_from is not None  # from the previous release's snapshot
    upgraded_log = tmp_path / "job-upgraded.log"
    run_current_job(kafka_settings, realm, checkpoint, upgraded_log)

    # Nothing replayed: the upgraded job's first relay batch is the one after C's last, and it read exactly the
    # records after C's committed offsets.
    now = {name: read_topic(kafka_settings, name) for name in input_topics(realm)}
    text = upgraded_log.read_text()
    first_batch = re.search(r"^relay batch (\d+):", text, re.MULTILINE)
    assert first_batch is not None and int(first_batch.group(1)) == batch + 1, text[-3000:]
    done_line = re.search(r"^job done: \d+ batches, (\d+) input rows", text, re.MULTILINE)
    new_records = sum(1 for name in input_topics(realm) for r in now[name] if r.offset >= offsets.get(name, 0))
    assert done_line is not None and int(done_line.group(1)) == new_records > 0, text[-3000:]
    assert all(first_batch_after(checkpoint, batch)[topic] >= offset for topic, offset in offsets.items())
    whole: dict[str, list[ConsumerRecord]] = {}
    for name in input_topics(realm):
        last = max((r.offset for r in before[name]), default=-1)
        whole[name] = before[name] + [r for r in now[name] if r.offset > last]
        assert [r.offset for r in whole[name]] == sorted({r.offset for r in whole[name]})  # (transaction markers
        # take offsets too)
    lines = [export_line(record)[0].encode() for record in interleave(whole.values())]
    result = check_outputs(lines, kafka_settings, [realm])
    bad = [t for t in result.topics if not t.ok]
    assert not bad, f"differences: {bad}"
    assert sum(t.matched for t in result.topics) == sum(t.expected for t in result.topics) > 0
    assert result.pending_at_end == 0
    numbers = [BlockHeader.decode(Envelope.decode(InputRecord.from_json(json.loads(r.value or b"")).value).data).number
               for r in whole[f"{realm}.blocks"]]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))  # the author went on from its last block
    assert len(numbers) > len([r for r in before[f"{realm}.blocks"]]) > 0


def test_the_job_stops_in_one_line_at_a_seam_record_of_a_newer_format(kafka_settings: Settings, tmp_path: Path) -> None:
    """A view a later release's Stage R wrote (format 3, authentic: the job's seam key) is never read by guesswork:
    Stage S's query fails and the job ends with one line naming the format, its version and the release."""
    realm = f"newer{uuid.uuid4().hex[:8]}"
    ensure_realm_topics(kafka_settings, realm)
    seam_key = "s" * 32
    view = RelayView(realm, 2000, 1, b"\x11" * 32, b"\x22" * 32, 5 * 2**20, (), (), (b"\x80",), (), None, True)
    layout = encode_view(view, seam_key.encode())[MAC_BYTES + 2 + len(RELEASE):]
    body = bytes([SEAM_FORMAT + 1, 5]) + b"9.0.0" + layout
    producer = Producer(kafka_settings.kafka_client_config())
    producer.produce(f"{realm}.{VIEWS}", key=b"2000", value=seam_mac(seam_key.encode(), body) + body)
    assert producer.flush(30) == 0
    log = tmp_path / "job.log"
    with log.open("ab") as out:
        command = [sys.executable, "-c", "import sys; from cli.main import main; sys.exit(main())", "job",
                   *job_args(kafka_settings, realm, tmp_path / "checkpoint")[2:]]  # ``pubsub job``
        done = subprocess.run(command,
                              cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT, timeout=900,
                              env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "PUBSUB_SEAM_KEY": seam_key,
                                   "PUBSUB_STAGES": "split"})  # the split job's Stage S reads the seam
    text = log.read_text()
    assert done.returncode != 0, text[-3000:]
    named = [line for line in text.splitlines() if "format version 3, written by release 9.0.0" in line]
    assert len(named) == 1 and "seam record (relay-views)" in named[0], text[-3000:]
    assert "Traceback" not in text


def test_the_author_stops_at_a_genuine_snapshot_of_a_newer_version(kafka_settings: Settings) -> None:
    """A snapshot a later release's author wrote (signed by the author key) stops the author with the version and
    the release; it is not skipped as if forged (the author would then rebuild from the topics)."""
    realm = f"newsnap{uuid.uuid4().hex[:8]}"
    ensure_realm_topics(kafka_settings, realm)
    send(kafka_settings, realm, without_blocks(next(iter(generate(WorkloadSpec(seed=5, blocks=1, realm=realm))))))
    body = {"version": SNAPSHOT_VERSION + 1, "release": "9.0.0", "number": 1}
    record = signer("author").sign(Topic(realm, AUTHOR_STATE, SNAPSHOT_KEY.decode()), 1,
                                   canonical_json(body).encode()).encode()
    producer = Producer(kafka_settings.kafka_client_config())
    producer.produce(f"{realm}.{AUTHOR_STATE}", key=SNAPSHOT_KEY, value=record)
    assert producer.flush(30) == 0
    with pytest.raises(FormatTooNewError) as refused:
        BlockAuthor(kafka_settings, realm, signer("author")).start(genesis_timeout=20)
    assert (refused.value.version, refused.value.release) == (SNAPSHOT_VERSION + 1, "9.0.0")
    assert "\n" not in str(refused.value)
