"""The live acceptance test: a 30-second live run on a real broker with the continuous Spark job (local mode),
then the realm's input topics exported and replayed through the simulator, which must give the job's outputs.

The live producer (20 publishes/s), the block author (a block a second), the job and a following consumer run
as subprocesses under supervise.live_run.LiveRun, exactly as `pubsub demo --live` runs them. After 30 seconds of
traffic the producer stops, the author includes the rest and stops, the job drains and stops. Then
`pubsub export` writes the input topics as an event log and supervise.verify.check_outputs compares every output
topic with the simulator over that log. The author writes blocks in Kafka transactions, so commit markers take
offsets on <realm>.blocks and an exported line's index differs from its Kafka offset there; only the id of a
refused block would show it, and a clean run refuses none, so all five output topics must match exactly.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from cli.main import main
from producers.workload import WorkloadSpec
from settings.settings import Settings
from supervise.live_run import LivePlan, LiveRun
from supervise.verify import check_outputs

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

TRAFFIC_SECONDS = 30.0


def test_a_live_run_equals_the_simulator_over_its_export(kafka_settings: Settings, tmp_path: Path) -> None:
    realm = f"liverun{uuid.uuid4().hex[:8]}"
    workload = WorkloadSpec(seed=5, publishers=2, system_publishers=1, subscribers=3, keys=16, subscribed_keys=6,
                            realm=realm)
    plan = LivePlan(realm, workload, rate=20.0, block_time=1.0, checkpoint=tmp_path / "checkpoint",
                    logs=tmp_path / "logs", trigger_seconds=0.5)
    with LiveRun(kafka_settings, plan) as run:
        run.start()
        steady = run.warm_up()
        run.start_traffic()
        traffic_end = time.monotonic() + TRAFFIC_SECONDS
        run.wait(lambda _: time.monotonic() >= traffic_end, TRAFFIC_SECONDS + 60, "live traffic")
        last = run.drain()
        followed = run.followed()
        parts = run.supervisor.parts
        assert not any(run.supervisor.running(name) for name in parts)
    assert set(parts) == {"job", "follow", "setup", "author", "producer"}

    # What ran: ~30 blocks of traffic, every subscriber served at the last block, each update shown once.
    assert last.head >= steady + 25
    assert last.upward >= 0.8 * 20 * TRAFFIC_SECONDS  # one publish per message at this rate
    assert last.updates and followed == len(last.updates)
    assert all(served == last.head for served in last.served().values()) and len(last.served()) == 3
    latency = last.latency(steady)
    assert latency.count > 0 and latency.unmatched == 0 and latency.p50 > 0

    exported = tmp_path / "events.jsonl"
    assert main(["export", "--bootstrap", str(kafka_settings.kafka_bootstrap), "--realm", realm,
                 "-o", str(exported)]) == 0
    lines = [line.encode() for line in exported.read_text().splitlines()]
    assert sum(f'"topic":"{realm}.blocks"' in line.decode() for line in lines) == last.head

    result = check_outputs(lines, kafka_settings, [realm])
    by_kind = {t.topic.rpartition(".")[2]: t for t in result.topics}
    assert all(t.ok for t in result.topics), [(t.topic, t.examples) for t in result.topics if not t.ok]
    for kind in ("updates", "events", "pov", "seals"):
        assert by_kind[kind].matched == by_kind[kind].expected > 0, kind
    assert by_kind["updates"].expected == len(last.updates)
    assert by_kind["seals"].expected == last.head
    assert by_kind["rejected"].expected == 0  # nothing refused in a clean run: no offset-bearing ids to differ
    assert result.pending_at_end == 0  # the author included every record the producer sent before it stopped
