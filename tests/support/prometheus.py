"""A real Prometheus server for the metric and alert tests: Debian's ``prometheus`` binary on 127.0.0.1, scraping and
evaluating every second, in the test's own folder; and the two HTTP API reads those tests make."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from supervise.kafka_broker import free_ports

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"


@contextmanager
def prometheus_server(folder: Path, targets: Mapping[str, tuple[str, int]],
                      rules: tuple[str, str] | None = None) -> Iterator[int]:
    """Prometheus scraping each ``targets`` job (name -> (metrics path, port on 127.0.0.1)), with the rule file
    ``rules`` (file name, text) if given; yields its port and stops it afterwards."""
    if not os.path.exists(PROMETHEUS):
        pytest.fail("prometheus is not installed: `make setup` installs it (Debian package prometheus)")
    (port,) = free_ports(1)
    config = ["global: {scrape_interval: 1s, evaluation_interval: 1s}"]
    if rules is not None:
        (folder / rules[0]).write_text(rules[1])
        config.append(f"rule_files: [{rules[0]}]")
    config.append("scrape_configs:")
    for job, (path, target) in targets.items():
        config.append(f"  - job_name: {job}\n    metrics_path: {path}\n"
                      f"    static_configs: [{{targets: ['127.0.0.1:{target}']}}]")
    (folder / "prometheus.yml").write_text("\n".join(config) + "\n")
    with open(folder / "prometheus.log", "wb") as log:
        server = subprocess.Popen(
            [PROMETHEUS, f"--config.file={folder / 'prometheus.yml'}", f"--storage.tsdb.path={folder / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            yield port
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def query(port: int, promql: str) -> list[dict[str, Any]]:
    """An instant query's result vector, from /api/v1/query."""
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=5) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def alerts(port: int) -> list[dict[str, Any]]:
    """Prometheus' alerts now (pending and firing), from /api/v1/alerts."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/alerts", timeout=5) as response:
        body = json.load(response)
    found: list[dict[str, Any]] = body["data"]["alerts"]
    return found
