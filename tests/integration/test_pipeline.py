"""The protocol job on real Kafka and real Spark equals the simulator, record for record.

Every example log and six seeded workloads go through `verify_log` (produce to fresh topics, run the job
available-now from a fresh checkpoint, read every output topic, compare by id with the simulator), with
several maxOffsetsPerTrigger settings; then a SIGKILLed and restarted job, the views topic in 4 partitions,
and a realm whose topics appear while the job runs.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from producers.transport.kafka_io import produce, wait_for_sizes
from producers.workload import WorkloadSpec, generate
from pubsub_core.simulator import Simulator
from tests.support.paths import REPO_ROOT
from settings.checkpoint_location import CheckpointLocation
from settings.protocol import load_protocol_config
from settings.settings import Settings
from streaming.job import BATCH_LINE, run_job
from supervise.verify import VerifyResult, check_outputs, expected_outputs, fresh_topics, produce_log, verify_log

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

EXAMPLES = REPO_ROOT / "examples"


def expected_sizes(lines: Sequence[bytes], settings: Settings) -> Counter[str]:
    """How many records the job writes to each output topic for ``lines``: the simulator's, less its end-of-input
    rejections (a stream never ends)."""
    expected, _ = expected_outputs(lines, Simulator(load_protocol_config(settings.protocol_config)))
    return Counter(record.topic for record in expected)


def workload(**fields: object) -> list[bytes]:
    spec = WorkloadSpec(**fields)  # type: ignore[arg-type]
    return [line.encode() for block in generate(spec) for line in block]


WORKLOADS: dict[str, dict[str, object]] = {
    "bad-records": {"seed": 21, "blocks": 10, "bad_records": 0.3},
    "ttl-expiry": {"seed": 22, "blocks": 14, "ttl_mix": ((2, 0.6), (0, 0.4)), "quiet_blocks": 6},
    "tight-budget": {"seed": 23, "blocks": 8, "keys": 6, "subscribed_keys": 8, "value_min": 100, "value_max": 200,
                     "update_rate": 0.8, "max_pov_size": 4500, "quiet_blocks": 8},
    "dmp-hrmp": {"seed": 24, "blocks": 10, "dmp_rate": 0.9, "subscribers": 3},
    "resubscribe": {"seed": 25, "blocks": 12, "subscribers": 3, "subscribed_keys": 5},
}


def two_realms() -> list[bytes]:
    """Two realms' logs interleaved line by line."""
    a = workload(seed=26, blocks=6, realm="kusama")
    b = workload(seed=27, blocks=6, realm="westend")
    merged = [line for pair in zip(a, b) for line in pair]
    return merged + a[len(b):] + b[len(a):]


def assert_equal(result: VerifyResult) -> None:
    bad = [t for t in result.topics if not t.ok]
    assert not bad, f"differences: {bad}"
    assert sum(t.matched for t in result.topics) == sum(t.expected for t in result.topics) > 0


@pytest.mark.parametrize(
    ("name", "max_offsets"),
    [("minimal.jsonl", 1), ("minimal.jsonl", None), ("small.jsonl", 7), ("small.jsonl", None),
     ("tight.jsonl", 7), ("busy.jsonl", None)],
)
def test_examples_equal_the_simulator(kafka_settings: Settings, tmp_path: Path, name: str,
                                      max_offsets: int | None) -> None:
    lines = (EXAMPLES / name).read_bytes().splitlines()
    settings = dataclasses.replace(kafka_settings, max_offsets_per_trigger=max_offsets)
    assert_equal(verify_log(lines, settings, reset_topics=True, checkpoint=tmp_path / "checkpoint"))


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workloads_equal_the_simulator(kafka_settings: Settings, tmp_path: Path, name: str) -> None:
    lines = workload(**WORKLOADS[name])
    settings = dataclasses.replace(kafka_settings, max_offsets_per_trigger=7 if name == "bad-records" else None)
    assert_equal(verify_log(lines, settings, reset_topics=True, checkpoint=tmp_path / "checkpoint"))


def test_two_realms_interleaved_equal_the_simulator(kafka_settings: Settings, tmp_path: Path) -> None:
    lines = two_realms()
    result = verify_log(lines, kafka_settings, reset_topics=True, checkpoint=tmp_path / "checkpoint")
    assert_equal(result)
    assert {t.topic.split(".")[0] for t in result.topics} == {"kusama", "westend"}


def test_views_in_four_partitions_equal_the_simulator(kafka_settings: Settings, tmp_path: Path) -> None:
    lines = (EXAMPLES / "small.jsonl").read_bytes().splitlines()
    settings = dataclasses.replace(kafka_settings, views_partitions=4, max_offsets_per_trigger=20, stages="split")
    assert_equal(verify_log(lines, settings, reset_topics=True, checkpoint=tmp_path / "checkpoint"))


def _job(settings: Settings, checkpoint: CheckpointLocation, log: Path, *extra: str) -> subprocess.Popen[bytes]:
    """`python -m streaming.job` in its own process group (so a SIGKILL takes its JVM too)."""
    args = [sys.executable, "-m", "streaming.job", "--bootstrap", str(settings.kafka_bootstrap), "--checkpoint",
            str(checkpoint), "--trigger-seconds", "0.5", "--max-offsets-per-trigger", "8", *extra]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.Popen(args, cwd=REPO_ROOT, stdout=log.open("ab"), stderr=subprocess.STDOUT,
                            start_new_session=True, env=env)


def _wait_for_batches(log: Path, count: int, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        if sum(line["query"] == "relay" for line in BATCH_LINE.finditer(text)) >= count:
            return
        time.sleep(0.5)
    raise AssertionError(f"the job wrote fewer than {count} batch lines in {timeout}s:\n{log.read_text()[-2000:]}")


def test_sigkill_twice_mid_stream_then_restart_gives_the_same_records(kafka_settings: Settings, tmp_path: Path) -> None:
    lines = (EXAMPLES / "small.jsonl").read_bytes().splitlines()
    realms = produce_log(lines, kafka_settings, reset_topics=True)
    checkpoint, log = tmp_path / "checkpoint", tmp_path / "job.log"
    realm_flags = [flag for realm in realms for flag in ("--realm", realm)]
    for kill in (1, 2):
        job = _job(kafka_settings, checkpoint, log, *realm_flags)
        try:
            _wait_for_batches(log, 2 * kill)
        finally:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait(30)
    finisher = _job(kafka_settings, checkpoint, log, "--available-now", *realm_flags)
    assert finisher.wait(600) == 0, log.read_text()[-3000:]
    result = check_outputs(lines, kafka_settings, realms)
    assert_equal(result)  # duplicates, if any, are byte-identical copies: `compare` counts any other as differing


def test_a_realm_that_appears_later_is_picked_up(kafka_settings: Settings, tmp_path: Path) -> None:
    first = workload(seed=31, blocks=3, realm="early")
    later = workload(seed=32, blocks=3, realm="late")
    produce_log(first, kafka_settings, reset_topics=True)
    checkpoint, log = tmp_path / "checkpoint", tmp_path / "job.log"
    job = _job(kafka_settings, checkpoint, log, "--realm", "early", "--realm", "late")  # "late" has no topics yet
    try:
        _wait_for_batches(log, 1)
        produce_log(later, kafka_settings, reset_topics=True)
        results = {}
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            results = {name: check_outputs(log_lines, kafka_settings, [name])
                       for name, log_lines in (("early", first), ("late", later))}
            if all(r.ok for r in results.values()):
                break
            time.sleep(2)
    finally:
        os.killpg(job.pid, signal.SIGTERM)
        job.wait(60)
    for result in results.values():
        assert_equal(result)


LARGE_VIEW_KEYS = 1000


def large_view_log() -> list[bytes]:
    """Two system paras publish 1,000 keys of 980 bytes each and one subscriber follows all of them: its full views
    carry more than 1 MiB of trie nodes, past Kafka's 1 MB default."""
    from producers.workload import LogBuilder, published_key, signer
    from pubsub_core.envelope import KeyRegistry
    from pubsub_core.relay import Genesis
    from pubsub_core.subscriber import SetSubscriptions

    log = LogBuilder("bigviews")
    publishers = {p: signer(f"big/{p}") for p in (1000, 1001)}
    subscriber = signer("big/3000")
    keys = {p: frozenset({s.public_key}) for p, s in publishers.items()} | {3000: frozenset({subscriber.public_key})}
    log.genesis(KeyRegistry(para_keys=keys, author_keys=frozenset({log.author.public_key})), Genesis())
    followed = {p: tuple(sorted(published_key(p, i) for i in range(LARGE_VIEW_KEYS))) for p in publishers}
    log.signed(subscriber, "extrinsics", "para:3000", SetSubscriptions(tuple(sorted(followed.items()))).encode())
    log.block()
    starts = list(range(0, LARGE_VIEW_KEYS, 16))
    for block in range(0, len(starts), 16):  # at most 16 upward messages per para and block (the router's limit)
        for para, key in publishers.items():
            for start in starts[block:block + 16]:
                log.publish(para, key, [(published_key(para, i), bytes([i % 251]) * 980, 0)
                                        for i in range(start, min(start + 16, LARGE_VIEW_KEYS))])
        log.block()
    log.block()
    return [line.encode() for line in log.lines]


def test_a_view_over_one_megabyte_goes_through(kafka_settings: Settings, tmp_path: Path) -> None:
    config = tmp_path / "protocol.json"
    # full proofs on the seam (the checking mode): a delta view of this log stays under 1 MB
    config.write_text('{"seam": "full", "broadcaster": {"max_stored_keys": 2000, "max_total_storage_size": 4000000}}')
    settings = dataclasses.replace(kafka_settings, protocol_config=config, stages="split")  # views cross the seam
    lines = large_view_log()
    result = verify_log(lines, settings, reset_topics=True, checkpoint=tmp_path / "checkpoint")
    assert_equal(result)
    from producers.transport.kafka_io import read_topic

    views = read_topic(kafka_settings, "bigviews.relay-views")
    assert max(len(v.value or b"") for v in views) > 1024 * 1024
    updates = [t for t in result.topics if t.topic == "bigviews.updates"][0]
    assert updates.matched == 2 * LARGE_VIEW_KEYS


def test_the_live_job_in_process_serves_a_log_that_arrives_while_it_runs_and_stops_when_asked(
        kafka_settings: Settings, tmp_path: Path) -> None:
    lines = (EXAMPLES / "small.jsonl").read_bytes().splitlines()
    records, realms = fresh_topics(lines, kafka_settings, reset_topics=True)
    settings = dataclasses.replace(kafka_settings, checkpoint_dir=tmp_path / "checkpoint", realms=",".join(realms),
                                   trigger_seconds=0.5)
    stop = threading.Event()
    served: list[bool] = []

    def feed() -> None:
        try:
            time.sleep(5)  # the queries are up and idle on empty topics
            produce(kafka_settings, records)
            served.append(wait_for_sizes(kafka_settings, expected_sizes(lines, kafka_settings), timeout=240))
        finally:
            stop.set()

    feeder = threading.Thread(target=feed)
    feeder.start()
    started = time.monotonic()
    summary = run_job(settings, available_now=False, run_seconds=600, stop=stop)
    feeder.join()
    assert served == [True]
    assert time.monotonic() - started < 300  # the event ended the run, not run_seconds
    result = check_outputs(lines, kafka_settings, realms, summary)
    assert result.ok, [(t.topic, t.examples) for t in result.topics if not t.ok]
    assert summary.records_out.get("updates", 0) > 0
