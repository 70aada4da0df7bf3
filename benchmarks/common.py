"""What every benchmark shares: where results go, the record that says what produced them, and the docs sections.

A result is ``benchmarks/results/<name>.json``: the command, the commit, the machine (cores, CPU model, memory)
and the date that produced it, and the benchmark's own figures under ``figures``. ``python -m benchmarks.render``
turns those files into the tables of docs/benchmarks.md, so no benchmark writes prose.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "benchmarks" / "results"
DOC = ROOT / "docs" / "benchmarks.md"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
    return round(pages * size / 2**30, 1)


def machine() -> dict[str, Any]:
    """Cores, CPU model, memory and Python of this machine, with its load average (the machine may be shared)."""
    return {
        "cores": os.cpu_count(),
        "cpu": _cpu_model(),
        "memory_gib": _memory_gib(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def commit() -> str:
    """The commit the benchmark ran at, with ``-dirty`` when its code had changes (so a figure names its code).

    Results and plots, what benchmarks write, and the docs (every Markdown file) do not count as changes."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()

    head = git("rev-parse", "--short=10", "HEAD") or "unknown"
    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!benchmarks/results", ":!docs", ":!*.md")
    return head + ("-dirty" if changed else "")


def command(argv: Sequence[str] | None = None, module: str | None = None) -> str:
    """The command line that ran the benchmark, as a user would type it."""
    args = list(sys.argv[1:] if argv is None else argv)
    name = module or Path(sys.argv[0]).stem
    return "python -m " + " ".join(shlex.quote(part) for part in [name, *args])


def build() -> str:
    """Which build of the protocol this process runs (``compiled`` or ``pure-Python``): CPU figures depend on it."""
    from state.native import build_name

    return build_name()


def write_result(name: str, figures: Any, *, module: str, argv: Sequence[str] | None = None,
                 path: Path | None = None, build_run: str | None = None) -> Path:
    """Write ``figures`` to benchmarks/results/<name>.json (or ``path``) with what produced them (``build_run``:
    the protocol build the figures come from when a worker ran another one than this process)."""
    target = path or RESULTS_DIR / f"{name}.json"
    record = {
        "benchmark": name,
        "command": command(argv, module),
        "commit": commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "machine": machine(),
        "build": build_run or build(),
        "figures": figures,
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(record, indent=1, default=str) + "\n")
    return target


def read_result(name: str, path: Path | None = None) -> dict[str, Any]:
    """The whole record of a result (``figures`` holds the benchmark's own)."""
    record: dict[str, Any] = json.loads((path or RESULTS_DIR / f"{name}.json").read_text())
    return record


def save_plot(fig: Any, path: Path, dpi: int = 100) -> None:
    """Lay out a matplotlib figure, write it to ``path`` (its folder made) and free it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]], align: str | None = None) -> str:
    """A markdown table; ``align`` is one character per column, ``l`` or ``r`` (default: first left, rest right)."""
    align = align or "l" + "r" * (len(header) - 1)
    rule = "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|"
    lines = ["| " + " | ".join(header) + " |", rule]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def update_section(doc: Path, name: str, body: str) -> bool:
    """Replace what stands between ``<!-- BEGIN name -->`` and ``<!-- END name -->`` in ``doc``.

    Everything outside the markers is the doc's own prose and stays. Returns False when the markers are absent.
    """
    text = doc.read_text()
    begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        return False
    doc.write_text(text[: start + len(begin)] + "\n" + body.strip("\n") + "\n" + text[stop:])
    return True


def stop_cleanly_on_sigterm() -> None:
    """SIGTERM (``kill``, a timeout) ends a harness with exit status 143 through its ``finally`` blocks, which stop
    the broker and the parts it started; Python's default would end the process at once and leave them running."""
    signal.signal(signal.SIGTERM, _exit_on_sigterm)


def _exit_on_sigterm(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)
