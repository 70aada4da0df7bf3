"""The job's two layouts on real Kafka and real Spark: the split job (Stage R and Stage S joined by the seam topic)
equals the simulator record for record as the fused one, the default, does (tests/integration/test_pipeline.py);
the fused job resumes after SIGKILLs; a checkpoint keeps the layout it was made with, the other one refused in one
line.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from producers.transport.kafka_io import scan_topic
from settings.settings import Settings
from streaming.lanes import recorded_partitions
from streaming.spark_session import SCRATCH_FOLDER
from supervise.verify import check_outputs, produce_log, verify_log
from tests.integration.test_pipeline import EXAMPLES, _wait_for_batches, assert_equal, two_realms, workload
from tests.support.paths import REPO_ROOT

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


@pytest.mark.parametrize(("name", "max_offsets"), [("small.jsonl", 7), ("busy.jsonl", None), ("tight-budget", None)])
def test_the_split_job_equals_the_simulator(kafka_settings: Settings, tmp_path: Path, name: str,
                                            max_offsets: int | None) -> None:
    lines = (workload(seed=23, blocks=8, keys=6, subscribed_keys=8, value_min=100, value_max=200, update_rate=0.8,
                      max_pov_size=4500, quiet_blocks=8) if name == "tight-budget"
             else (EXAMPLES / name).read_bytes().splitlines())
    settings = dataclasses.replace(kafka_settings, stages="split", max_offsets_per_trigger=max_offsets)
    checkpoint = tmp_path / "checkpoint"
    result = verify_log(lines, settings, reset_topics=True, checkpoint=checkpoint)
    assert_equal(result)
    assert sorted(entry.name for entry in checkpoint.iterdir() if entry.is_dir()) == ["relay", "subscribers"]
    realm = result.topics[0].topic.split(".")[0]
    assert list(scan_topic(settings, f"{realm}.relay-views", timeout=10))  # the views crossed the seam


def test_a_new_checkpoint_runs_fused_and_nothing_crosses_the_seam(kafka_settings: Settings, tmp_path: Path) -> None:
    settings = dataclasses.replace(kafka_settings, max_offsets_per_trigger=11)
    checkpoint = tmp_path / "checkpoint"
    result = verify_log(two_realms(), settings, reset_topics=True, checkpoint=checkpoint)
    assert_equal(result)
    assert sorted(entry.name for entry in checkpoint.iterdir() if entry.is_dir()) == ["fused"]
    assert recorded_partitions(checkpoint / "fused") == 2  # one per realm: the fused query groups by realm
    assert not list(scan_topic(settings, "kusama.relay-views", timeout=10))
    assert {t.topic.split(".")[0] for t in result.topics} == {"kusama", "westend"}


def _cli_job(settings: Settings, checkpoint: Path, log: Path, *extra: str,
             env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """`pubsub job` in its own process group (so a SIGKILL takes its JVM and workers too)."""
    args = [sys.executable, "-m", "cli.main", "job", "--bootstrap", str(settings.kafka_bootstrap), "--checkpoint",
            str(checkpoint), "--trigger-seconds", "0.5", "--max-offsets-per-trigger", "8", *extra]
    return subprocess.Popen(args, cwd=REPO_ROOT, stdout=log.open("ab"), stderr=subprocess.STDOUT,
                            start_new_session=True, env=env or {**os.environ, "PYTHONPATH": str(REPO_ROOT)})


def test_a_fused_job_killed_twice_resumes_as_fused_and_refuses_to_run_split(kafka_settings: Settings,
                                                                           tmp_path: Path) -> None:
    lines = (EXAMPLES / "small.jsonl").read_bytes().splitlines()
    realms = produce_log(lines, kafka_settings, reset_topics=True)
    checkpoint, log = tmp_path / "checkpoint", tmp_path / "job.log"
    realm_flags = [flag for realm in realms for flag in ("--realm", realm)]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PUBSUB_RUNTIME_DIR": str(tmp_path / "runtime")}
    scratch = tmp_path / "runtime" / SCRATCH_FOLDER
    killed: list[Path] = []
    for kill in (1, 2):
        job = _cli_job(kafka_settings, checkpoint, log, *realm_flags, env=env)  # auto: fused for a new checkpoint
        try:
            _wait_for_batches(log, 2 * kill)
        finally:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait(30)
        # the killed job's state store copies stay (Spark's shutdown hook never ran); the one killed before is gone,
        # swept by this job's start
        folders = [folder for folder in scratch.iterdir() if folder.is_dir()]
        assert len(folders) == 1 and folders[0] not in killed, folders
        assert list(folders[0].glob("spark-*/StateStoreId*")), list(folders[0].rglob("*"))[:20]
        killed.append(folders[0])
    split = subprocess.run(
        [sys.executable, "-m", "cli.main", "job", "--bootstrap", str(kafka_settings.kafka_bootstrap), "--checkpoint",
         str(checkpoint), "--stages", "split", "--available-now", *realm_flags],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, check=False, env=env)
    assert split.returncode == 1, split.stdout[-2000:] + split.stderr[-2000:]
    assert split.stderr.strip().splitlines()[-1] == (
        f"pubsub: the checkpoint {checkpoint} holds a fused job's state and cannot run split: run with --stages "
        "fused (or auto), or start a new checkpoint (docs/pipeline.md, \"Fused or split\")"), split.stderr
    assert "Traceback" not in split.stdout + split.stderr
    assert sorted(entry.name for entry in checkpoint.iterdir() if entry.is_dir()) == ["fused"]  # nothing made
    finisher = _cli_job(kafka_settings, checkpoint, log, "--available-now", *realm_flags, env=env)  # the checkpoint's
    assert finisher.wait(600) == 0, log.read_text()[-3000:]
    left = [folder for folder in scratch.iterdir() if folder.is_dir()]
    assert len(left) == 1 and left[0] not in killed, left  # each start swept the ended jobs' folders; its own is next
    said = log.read_text()
    assert len(realms) == 1 and recorded_partitions(checkpoint / "fused") == 1, said[-3000:]
    assert said.count("stages fused: one query, subscribers in the relay batch, state in 1 shuffle partition ") == 3
    assert_equal(check_outputs(lines, kafka_settings, realms))


def test_a_split_checkpoint_is_not_run_fused(kafka_settings: Settings, tmp_path: Path) -> None:
    lines = (EXAMPLES / "minimal.jsonl").read_bytes().splitlines()
    checkpoint = tmp_path / "checkpoint"
    split = dataclasses.replace(kafka_settings, stages="split")
    assert_equal(verify_log(lines, split, reset_topics=True, checkpoint=checkpoint))
    assert sorted(entry.name for entry in checkpoint.iterdir() if entry.is_dir()) == ["relay", "subscribers"]
    fused = subprocess.run(
        [sys.executable, "-m", "cli.main", "job", "--bootstrap", str(kafka_settings.kafka_bootstrap), "--checkpoint",
         str(checkpoint), "--available-now"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "PUBSUB_STAGES": "fused"})
    assert fused.returncode == 1, fused.stdout[-2000:] + fused.stderr[-2000:]
    assert fused.stderr.strip().splitlines()[-1].startswith(
        f"pubsub: the checkpoint {checkpoint} holds a split job's state and cannot run fused"), fused.stderr
    assert "fused" not in {entry.name for entry in checkpoint.iterdir()}
