"""What Spark allows when a transformWithState processor's state variables change between releases on one checkpoint.

Four runs on one checkpoint, each a fresh Python process and session as a new release would be (the job's session,
``streaming.spark_session.build_spark``), each with one new input file and a processor declaring other ValueState
variables; each variable counts the rows its key has seen:

1. ``pages``, ``extra``;
2. ``pages`` only (``extra`` dropped without ``deleteIfExists``);
3. ``pages``, ``extra``, ``added`` (``extra`` declared again, ``added`` new);
4. ``pages`` only, calling ``handle.deleteIfExists("extra")`` in ``init``.

Run from the repository root (about a minute per encoding on 2 cores):

    .venv/bin/python -m benchmarks.state_variables_probe                     # unsaferow, the job's encoding
    .venv/bin/python -m benchmarks.state_variables_probe --encoding avro

It prints each run's outcome (Spark's error class on a refusal) and the counts each variable held after it, and
writes benchmarks/results/state-variables-<encoding>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from benchmarks.common import write_result
from streaming.processors import StatefulProcessor

VARIANTS = {
    "declare pages, extra": ("pages", "extra"),
    "drop extra": ("pages",),
    "declare extra again, add added": ("pages", "extra", "added"),
    "drop extra with deleteIfExists": ("pages",),
}
ENCODING_CONF = "spark.sql.streaming.stateStore.encodingFormat"


class Probe(StatefulProcessor):
    """Counts the rows of its key in each of the variant's ValueState variables."""

    def __init__(self, variant: str) -> None:
        self.variant = variant

    def init(self, handle: Any) -> None:
        if self.variant == "drop extra with deleteIfExists":
            handle.deleteIfExists("extra")
        self.states = {name: handle.getValueState(name, "c long") for name in VARIANTS[self.variant]}

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        count = sum(len(frame) for frame in rows)
        out = []
        for name, state in self.states.items():
            total = (state.get() or (0,))[0] + count
            state.update((total,))
            out.append((key[0], name, total))
        yield pd.DataFrame(out, columns=["k", "variable", "rows"])

    def close(self) -> None:
        """Nothing to release."""


def run_variant(variant: str, base: Path, encoding: str) -> dict[str, Any]:
    """One run on the checkpoint under ``base`` (this process is the run: called by ``main`` in a subprocess)."""
    from settings.settings import load_settings
    from streaming.spark_session import build_spark

    spark = build_spark(load_settings(), app_name="rfc0160-state-variables-probe", log_file=base / "spark.log")
    spark.conf.set(ENCODING_CONF, encoding)
    inputs = base / "in"
    inputs.mkdir(exist_ok=True)
    (inputs / f"{len(list(inputs.iterdir()))}.json").write_text('{"k": "a"}\n' * 3)
    out = base / "out" / variant.replace(" ", "-")
    try:
        query = (spark.readStream.schema("k string").json(str(inputs)).groupBy("k")
                 .transformWithStateInPandas(Probe(variant), "k string, variable string, rows long", "Update", "None")
                 .writeStream.foreachBatch(lambda frame, _: frame.write.mode("append").json(str(out)))
                 .option("checkpointLocation", str(base / "checkpoint")).trigger(availableNow=True).start())
        query.awaitTermination()
        held = {row["variable"]: row["rows"] for row in spark.read.json(str(out)).collect()}
        return {"variant": variant, "outcome": "ran", "held": held}
    except Exception as exc:  # the refusal is the finding: its first line names Spark's error class
        return {"variant": variant, "outcome": str(exc).splitlines()[0][:300], "held": {}}
    finally:
        spark.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.state_variables_probe", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoding", choices=("unsaferow", "avro"), default="unsaferow")
    parser.add_argument("--run", help=argparse.SUPPRESS)  # one variant, in the subprocess main starts
    parser.add_argument("--base", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run is not None:
        print(json.dumps(run_variant(args.run, args.base, args.encoding)))
        return 0
    results = []
    with tempfile.TemporaryDirectory(prefix="state-variables-") as scratch:
        for variant in VARIANTS:
            done = subprocess.run([sys.executable, "-m", "benchmarks.state_variables_probe", "--encoding",
                                   args.encoding, "--run", variant, "--base", scratch], capture_output=True,
                                  text=True, timeout=600, check=False, env=dict(os.environ))
            lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
            result = json.loads(lines[-1]) if lines else {"variant": variant, "outcome": done.stderr[-300:],
                                                            "held": {}}
            print(f"{variant:32} {result['outcome']:8} {result['held']}", flush=True)
            results.append(result)
    path = write_result(f"state-variables-{args.encoding}", {"encoding": args.encoding, "runs": results},
                        module="benchmarks.state_variables_probe", argv=argv)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
