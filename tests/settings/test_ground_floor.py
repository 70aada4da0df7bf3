"""The settings package is the ground floor: loading every module of it imports neither the job (``streaming``),
nor Spark, nor a Kafka client, so any command can read its settings without them."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import settings

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import importlib, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
loaded = sorted({name.split(".")[0] for name, module in sys.modules.items() if module is not None}
                & {"streaming", "pyspark", "confluent_kafka", "producers", "supervise", "cli"})
print(",".join(loaded))
"""


def test_every_settings_module_loads_without_the_job_spark_or_kafka() -> None:
    modules = [f"settings.{info.name}" for info in pkgutil.iter_modules(settings.__path__)]
    assert {"settings.settings", "settings.paths", "settings.protocol", "settings.errors"} <= set(modules)
    run = subprocess.run([sys.executable, "-c", PROBE, *modules], cwd=ROOT, capture_output=True, text=True,
                         check=False, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == ""
