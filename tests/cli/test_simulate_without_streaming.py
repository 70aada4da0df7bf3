"""`pubsub simulate` never touches Spark: it runs with the job's package (``streaming``) and pyspark made
unimportable, and writes what it writes with them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BLOCKED = """
import sys
sys.modules["streaming"] = None  # any `import streaming...` now raises ImportError
sys.modules["pyspark"] = None
from cli.main import main
code = main(["simulate", sys.argv[1], "-o", sys.argv[2], "--quiet"])
loaded = sorted(name for name, module in sys.modules.items() if module is not None
                and name.split(".")[0] in ("streaming", "pyspark"))
assert not loaded, loaded
sys.exit(code)
"""


def test_simulate_runs_with_the_streaming_package_blocked(tmp_path: Path) -> None:
    log = ROOT / "examples" / "small.jsonl"
    blocked, free = tmp_path / "blocked.jsonl", tmp_path / "free.jsonl"
    run = subprocess.run([sys.executable, "-c", BLOCKED, str(log), str(blocked)], cwd=ROOT, capture_output=True,
                         text=True, check=False, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    normal = subprocess.run([sys.executable, "-m", "cli.main", "simulate", str(log), "-o", str(free), "--quiet"],
                            cwd=ROOT, capture_output=True, text=True, check=False, timeout=300)
    assert normal.returncode == 0, normal.stderr[-3000:]
    lines = blocked.read_text().splitlines()
    assert any('"topic":"polkadot.seals"' in line for line in lines), lines[:3]
    assert blocked.read_bytes() == free.read_bytes()


def test_the_block_is_real_a_streaming_import_fails_under_it() -> None:
    probe = 'import sys\nsys.modules["streaming"] = None\nimport streaming.job\n'
    run = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=False,
                         timeout=60)
    assert run.returncode != 0 and "ModuleNotFoundError" in run.stderr
