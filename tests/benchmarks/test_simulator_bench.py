"""The simulator bench's instruction-count mode (``--instructions``): the callgrind command, the count it reads,
and that the compiled symbols it collects inside still exist (a renamed stage method would count nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.simulator_bench import ROOT, STAGE_CALLS, callgrind_command, collected_instructions

CALLGRIND_STDERR = """==4242== Callgrind, a call-graph generating cache profiler
==4242== For interactive control, run 'callgrind_control -h'.
==4242==
==4242== Events    : Ir
==4242== Collected : 13700295085
==4242==
==4242== I   refs:      13,700,295,085
"""


def test_the_count_is_read_from_callgrinds_summary() -> None:
    assert collected_instructions(CALLGRIND_STDERR) == 13_700_295_085
    with pytest.raises(ValueError):
        collected_instructions("==1== Callgrind, a call-graph generating cache profiler\n")


def test_the_worker_runs_under_callgrind_collecting_only_inside_the_stage_calls(tmp_path: Path) -> None:
    command = callgrind_command(tmp_path / "w.jsonl", tmp_path / "out")
    assert command[:2] == ["valgrind", "--tool=callgrind"]
    assert "--collect-atstart=no" in command and f"--callgrind-out-file={tmp_path / 'out'}" in command
    assert [arg.partition("=")[2] for arg in command if arg.startswith("--toggle-collect=")] == list(STAGE_CALLS)
    assert command[-2:] == ["--worker", str(tmp_path / "w.jsonl")]


def test_every_collected_symbol_is_in_the_compiled_protocol() -> None:
    built = sorted(ROOT.glob("pubsub_native__mypyc*.so"))
    if not built:
        pytest.skip("no compiled build in this checkout (make native): nothing to count instructions in")
    symbols = built[0].read_bytes()
    missing = [symbol for symbol in STAGE_CALLS if symbol.encode() + b"\x00" not in symbols]
    assert not missing, f"not in {built[0].name}: {missing}"
