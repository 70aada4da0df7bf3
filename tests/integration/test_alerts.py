"""The shipped alert rules in a real Prometheus server (Debian's package, on 127.0.0.1, scraping and evaluating
every second) against the live job's metrics endpoint.

One job serves two realms. First it starts behind a written log of the standard workload and catches up ten
records a batch (``--max-offsets-per-trigger 10``): no rule fires, no ``STALLED`` line, no WARNING, no ``Stalled``
record. Then ``examples/stalled.jsonl`` stalls the other realm: ``PubsubRealmStalled`` is firing within its
``for`` of the job declaring the stall; the author's void order (`pubsub author void --yes`) unsticks it and the
alert resolves. No other rule fires at any point.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.pipeline_bench import STANDARD
from producers.transport.kafka_io import produce, read_topic
from producers.workload import generate
from pubsub_core.codec.hexjson import unhex_0x
from pubsub_core.envelope import Envelope
from pubsub_core.hashing import blake2_256
from pubsub_core.relay import is_void
from supervise.alerts import RULES_FILE, rules_text
from tests.support.paths import REPO_ROOT
from tests.support.prometheus import alerts, prometheus_server, query
from settings.settings import Settings
from supervise.kafka_broker import free_ports
from supervise.verify import fresh_topics

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

STALLED_LOG = REPO_ROOT / "examples" / "stalled.jsonl"
STALL_FOR_SECONDS = 60.0
"""``PubsubRealmStalled``'s ``for``."""


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[tuple[int, int]]:
    """A Prometheus server with the shipped rules, scraping the job's endpoint; yields (its port, the job's)."""
    (job_port,) = free_ports(1)
    with prometheus_server(tmp_path, {"pubsub": ("/metrics", job_port)}, rules=(RULES_FILE, rules_text())) as port:
        yield port, job_port


class Watch:
    """Polls Prometheus every second while waiting: fails at once if a rule other than ``allowed`` fires, or the
    job exits."""

    def __init__(self, port: int, job: subprocess.Popen[bytes], log: Path) -> None:
        self.port, self.job, self.log = port, job, log
        self.allowed: set[str] = set()

    def until(self, check: Callable[[], bool], seconds: float, what: str) -> float:
        """Seconds it took until ``check``."""
        start = time.monotonic()
        while True:
            firing = [a for a in alerts(self.port) if a["state"] == "firing"]
            wrong = [a for a in firing if a["labels"]["alertname"] not in self.allowed]
            assert not wrong, f"a rule fired: {wrong}"
            if check():
                return time.monotonic() - start
            if self.job.poll() is not None:
                pytest.fail(f"the job exited ({self.job.returncode}) before {what}:\n{self.log.read_text()[-3000:]}")
            if time.monotonic() - start > seconds:
                pytest.fail(f"not within {seconds:.0f}s: {what}\n{self.log.read_text()[-3000:]}")
            time.sleep(1)


def _value(port: int, promql: str) -> float | None:
    result = query(port, promql)
    return float(result[0]["value"][1]) if result else None


def _parsed(line: bytes) -> dict[str, Any]:
    """An event-log line's JSON ({} for the workload's deliberately broken lines)."""
    try:
        body = json.loads(line)
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _void_line(line: bytes) -> bool:
    """Whether an event-log line is a ``blocks`` record carrying a void order."""
    body = json.loads(line)
    return body["topic"] == "polkadot.blocks" and is_void(Envelope.decode(unhex_0x(body["value"]["value"])).data)


def test_the_rules_fire_on_a_stall_and_stay_quiet_while_the_job_catches_up(
        kafka_settings: Settings, tmp_path: Path, prometheus: tuple[int, int]) -> None:
    port, job_port = prometheus
    standard = [line.encode() for block in generate(dataclasses.replace(STANDARD, realm="standard"))
                for line in block]
    records, _ = fresh_topics(standard, kafka_settings, reset_topics=True)
    produce(kafka_settings, records)
    last_block = max(int(body["value"]["position"]) for body in map(_parsed, standard)
                     if body.get("topic") == "standard.blocks") + 1  # the author writes block n at position n - 1
    stalled = STALLED_LOG.read_bytes().splitlines()
    stalled_records, _ = fresh_topics(stalled, kafka_settings, reset_topics=True)  # empty, before the job starts
    log = tmp_path / "job.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PUBSUB_RUNTIME_DIR": str(tmp_path / "runtime")}
    with open(log, "wb") as out:
        job = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "job", "--bootstrap", str(kafka_settings.kafka_bootstrap),
             "--realm", "standard", "--realm", "polkadot", "--checkpoint", str(tmp_path / "checkpoint"),
             "--trigger-seconds", "0.5", "--max-offsets-per-trigger", "10", "--metrics-port", str(job_port)],
            stdout=out, stderr=subprocess.STDOUT, cwd=REPO_ROOT, env=env, start_new_session=True)
    watch = Watch(port, job, log)
    try:
        # 1. catching up on the standard workload, ten records a batch: nothing fires
        watch.until(lambda: _value(port, 'pubsub_relay_height{realm="standard"}') == last_block, 900,
                    f"the job catches up to block {last_block}")
        behind = _value(port, 'max(max_over_time(pubsub_input_lag_records{query="relay",topic=~"standard[.].*"}[30m]))')
        assert behind is not None and behind > 100  # it did start behind
        assert query(port, 'ALERTS{alertstate="firing"}') == []
        text = log.read_text()
        assert "STALLED" not in text and "WARNING" not in text, text[-3000:]
        assert not [r for r in read_topic(kafka_settings, "standard.health")
                    if json.loads(r.value or b"")["kind"] == "Stalled"]

        # 2. a stall: declared, then the alert fires within its `for`
        cut = next(i for i, line in enumerate(stalled) if _void_line(line))
        produce(kafka_settings, stalled_records[:cut])
        stalled_query = 'pubsub_realm_stalled{realm="polkadot"}'
        watch.until(lambda: _value(port, stalled_query) == 1, 300, "the job declares polkadot stalled")
        watch.allowed = {"PubsubRealmStalled"}
        firing = 'ALERTS{alertname="PubsubRealmStalled",alertstate="firing",realm="polkadot",severity="critical"}'
        took = watch.until(lambda: bool(query(port, firing)), STALL_FOR_SECONDS + 30, "PubsubRealmStalled fires")
        assert took <= STALL_FOR_SECONDS + 15

        # 3. the void order: the realm moves, the alert resolves
        key = tmp_path / "author.key"
        key.write_text(blake2_256(b"rfc0160/workload/author").hex())  # producers.workload.signer("author")
        void = subprocess.run(
            [sys.executable, "-m", "cli.main", "author", "void", "--bootstrap", str(kafka_settings.kafka_bootstrap),
             "--realm", "polkadot", "--block", "3", "--key-file", str(key), "--yes"],
            capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=120)
        assert void.returncode == 0, void.stderr
        produce(kafka_settings, stalled_records[cut + 1:])
        watch.until(lambda: _value(port, stalled_query) == 0 and not query(port, firing), 300,
                    "the realm moves and PubsubRealmStalled resolves")
        watch.allowed = set()
        watch.until(lambda: _value(port, 'pubsub_relay_height{realm="polkadot"}') == 7, 120, "polkadot seals block 7")
        fired = query(port, 'max_over_time(ALERTS{alertstate="firing"}[1h])')
        assert {a["metric"]["alertname"] for a in fired} == {"PubsubRealmStalled"}
    finally:
        job.send_signal(signal.SIGTERM)
        try:
            job.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
