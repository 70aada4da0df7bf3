"""Resource bounds, what can be tested here:

- the driver JVM's sockets stay flat however many batches run (pyspark 4.2.0 left one socket per stateful task
  in CLOSE-WAIT, and a job at a 0.5 s trigger ran out of file descriptors within the hour);
- a subscriber that fell behind: the job --available-now runs Stage R to the end of the input first, then Stage S
  starts with every view of the log behind it (the case of a Stage S query stopped while Stage R ran, then
  resumed); with maxOffsetsPerTrigger it catches up in batches of at most that many views and equals the
  simulator;
- the disk holding the checkpoint fills up (a 20 MB tmpfs mounted as root, filled but for a few hundred KB): the
  job stops with an error naming the full disk; once space is freed, a restart on the same checkpoint finishes
  and the outputs equal the simulator (duplicates only byte-identical).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from producers.workload import WorkloadSpec, generate
from tests.support.paths import REPO_ROOT
from settings.settings import Settings
from streaming.job import BatchReport, run_job
from streaming.spark_session import build_spark, jvm_pid
from supervise.verify import check_outputs, produce_log

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def _log(realm: str, blocks: int, seed: int) -> list[bytes]:
    spec = WorkloadSpec(seed=seed, blocks=blocks, subscribers=3, keys=8, subscribed_keys=5, update_rate=0.5,
                        bad_records=0.0, quiet_blocks=2, realm=realm)
    return [line.encode() for block in generate(spec) for line in block]


def _close_wait_sockets(pid: int) -> int:
    """Sockets process ``pid`` holds whose peer has closed its end (TCP state CLOSE-WAIT): a leaked connection."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            count += fields[3] == "08" and fields[9] in inodes
    return count


def test_a_subscriber_far_behind_catches_up_in_bounded_batches(kafka_settings: Settings, tmp_path: Path) -> None:
    lines = _log("behind", blocks=120, seed=41)
    realms = produce_log(lines, kafka_settings, reset_topics=True)
    cap = 60
    settings = dataclasses.replace(kafka_settings, checkpoint_dir=tmp_path / "checkpoint", stages="split",
                                   max_offsets_per_trigger=cap, realms=",".join(realms))  # Stage S behind the seam
    jvm = jvm_pid(build_spark(settings))
    leaked_before = _close_wait_sockets(jvm)
    reports: list[BatchReport] = []
    run_job(settings, available_now=True, on_batch=reports.append)
    stateful_tasks = sum(1 for r in reports if r.rows_in)
    assert stateful_tasks >= 10
    # every stateful batch runs at least one task of a Python stateful operator; none may leave its socket behind
    assert _close_wait_sockets(jvm) - leaked_before < 5, f"after {stateful_tasks} stateful batches"
    relay = [r for r in reports if r.query == "relay" and r.rows_in]
    subscribers = [r for r in reports if r.query == "subscribers" and r.rows_in]
    views = sum(r.records_out.get("relay-views", 0) for r in relay)
    assert views >= 3 * 120  # one view per subscriber per block: Stage S started this many views behind
    assert all(r.rows_in <= cap for r in relay + subscribers)
    assert len(subscribers) >= views // cap  # it caught up batch by batch, never all at once
    result = check_outputs(lines, kafka_settings, realms)
    assert all(t.ok for t in result.topics), [(t.topic, t.examples) for t in result.topics if not t.ok]


def _mount_tmpfs(path: Path, size: str) -> bool:
    if os.geteuid() != 0:
        return False
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    return done.returncode == 0


def test_a_full_checkpoint_disk_fails_clearly_and_a_restart_after_freeing_it_is_exact(
        kafka_settings: Settings, tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, "20m"):
        pytest.skip("mounting a tmpfs needs root (CAP_SYS_ADMIN)")
    try:
        lines = (REPO_ROOT / "examples" / "small.jsonl").read_bytes().splitlines()
        realms = produce_log(lines, kafka_settings, reset_topics=True)
        stat = os.statvfs(disk)
        filler = disk / "filler"
        with open(filler, "wb") as handle:
            handle.write(bytes(stat.f_bavail * stat.f_frsize - FREE_BYTES))
        command = [sys.executable, "-m", "cli.main", "job", "--bootstrap", str(kafka_settings.kafka_bootstrap),
                   "--checkpoint", str(disk / "checkpoint"), "--available-now", "--max-offsets-per-trigger", "7",
                   *[arg for realm in realms for arg in ("--realm", realm)]]
        env = {**os.environ, "PUBSUB_RUNTIME_DIR": str(tmp_path / "runtime")}
        full = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=900)
        said = full.stdout + full.stderr
        assert full.returncode != 0, said[-3000:]
        assert "No space left on device" in said and "checkpoint" in said, said[-3000:]
        filler.unlink()
        again = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=900)
        assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
        result = check_outputs(lines, kafka_settings, realms)
        assert all(t.ok for t in result.topics), [(t.topic, t.examples) for t in result.topics if not t.ok]
        assert sum(t.matched for t in result.topics) == sum(t.expected for t in result.topics) > 0
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


FREE_BYTES = 400_000
"""What the filler leaves free on the 20 MB tmpfs: room for the seam key and a few batches, not for the run."""


DESCRIPTOR_LIMIT = 400
"""Below what the split job needs here (about 330 descriptors open once its two queries start, jars mostly, then the
state stores' files and sockets): the WARNING comes first, then a query fails. (The fused job's one query needs
fewer, and drained busy.jsonl within this limit.)"""


def test_running_out_of_descriptors_is_warned_of_then_fails_in_one_line(kafka_settings: Settings,
                                                                        tmp_path: Path) -> None:
    import resource

    lines = (REPO_ROOT / "examples" / "busy.jsonl").read_bytes().splitlines()
    realms = produce_log(lines, kafka_settings, reset_topics=True)

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (DESCRIPTOR_LIMIT, DESCRIPTOR_LIMIT))

    command = [sys.executable, "-m", "cli.main", "job", "--bootstrap", str(kafka_settings.kafka_bootstrap),
               "--checkpoint", str(tmp_path / "checkpoint"), "--available-now", "--stages", "split",
               *[arg for realm in realms for arg in ("--realm", realm)]]
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT, timeout=900, preexec_fn=low_limit,
                          env={**os.environ, "PUBSUB_RUNTIME_DIR": str(tmp_path / "runtime")})
    said = done.stdout + done.stderr
    assert f"open file descriptors of its limit of {DESCRIPTOR_LIMIT}" in said, said[-3000:]
    assert done.returncode == 1, said[-3000:]
    assert "Traceback" not in said, said[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("pubsub: a streaming query failed: ") and "Too many open files" in last, last
