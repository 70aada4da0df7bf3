"""`pubsub simulate` and `pubsub workload` through cli.main.main: help, files written, stdout, summaries,
and errors reported with an exit code rather than a traceback."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from cli.main import build_parser, main
from producers.workload import WorkloadSpec, generate
from pubsub_core.simulator import simulate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("command", ["simulate", "workload"])
def test_help_reads_well(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: pubsub " + command)
    assert "(default: None)" not in text
    assert f"    {command} " in build_parser().format_help()


def test_simulate_writes_the_simulators_lines_and_a_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.jsonl"
    assert main(["simulate", str(EXAMPLES / "small.jsonl"), "-o", str(out)]) == 0
    lines = (EXAMPLES / "small.jsonl").read_text().splitlines()
    assert out.read_text().splitlines() == [record.to_line() for record in simulate(lines)]
    summary = " ".join(capsys.readouterr().err.split())  # the console wraps lines
    assert "blocks sealed" in summary and "updates" in summary and "proof bytes" in summary
    assert "BadSignature" in summary or "Duplicate" in summary or "MalformedJson" in summary


def test_simulate_prints_updates_events_and_metering_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(EXAMPLES / "minimal.jsonl"), "--quiet"]) == 0
    captured = capsys.readouterr()
    topics = [json.loads(line)["topic"] for line in captured.out.splitlines()]
    assert {"polkadot.updates", "polkadot.events", "polkadot.pov", "polkadot.seals"} <= set(topics)
    assert captured.err == ""


@pytest.mark.parametrize("how", ["--protocol-config", "--config", "PUBSUB_PROTOCOL_CONFIG"])
def test_simulate_takes_a_protocol_config(how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The protocol JSON by --protocol-config (as `pubsub job` takes it), by the TOML settings file every other
    --config takes, or by the environment, as the settings table says."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"subscriber": {"pov_percent": 0}}))
    out = tmp_path / "out.jsonl"
    args = ["simulate", str(EXAMPLES / "minimal.jsonl"), "-o", str(out), "--quiet"]
    if how == "--config":
        toml = tmp_path / "pubsub.toml"
        toml.write_text(f'protocol_config = "{config}"\n')
        args += ["--config", str(toml)]
    elif how == "--protocol-config":
        args += [how, str(config)]
    else:
        monkeypatch.setenv(how, str(config))
    assert main(args) == 0
    pov = [json.loads(line)["value"] for line in out.read_text().splitlines() if '"polkadot.pov"' in line]
    assert pov and all(p["budget"]["pubsub"] == 0 and p["proof_bytes"] == 0 for p in pov)


def test_simulate_refuses_a_bad_seam_from_the_environment(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PUBSUB_SEAM", "bogus")
    assert main(["simulate", str(EXAMPLES / "minimal.jsonl"), "--quiet"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "seam='bogus' (from environment variable PUBSUB_SEAM)" in captured.err


def test_simulate_reports_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(tmp_path / "missing.jsonl")]) == 1  # a file error (docs/operations.md)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"subscriber": {"no_such_field": 1}}))
    assert main(["simulate", str(EXAMPLES / "minimal.jsonl"), "--protocol-config", str(config)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "no event log" in err and "no_such_field" in err


def test_workload_writes_the_seeded_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "events.jsonl"
    args = ["workload", "-o", str(out), "--seed", "9", "--blocks", "4", "--keys", "3", "--ttl-mix", "0:1,2:1",
            "--bad-records", "0.5", "--max-pov-size", "100000"]
    assert main(args) == 0
    spec = WorkloadSpec(seed=9, blocks=4, keys=3, ttl_mix=((0, 1.0), (2, 1.0)), bad_records=0.5, max_pov_size=100_000)
    assert out.read_text().splitlines() == [line for chunk in generate(spec) for line in chunk]
    err = " ".join(capsys.readouterr().err.split())
    assert "Wrote" in err and "publishes" in err


def test_workload_refuses_an_impossible_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["workload", "-o", str(tmp_path / "x.jsonl"), "--keys", "40", "--value-max", "200"]) == 2
    assert "MaxTotalStorageSize" in " ".join(capsys.readouterr().err.split())
    with pytest.raises(SystemExit):
        main(["workload", "-o", str(tmp_path / "x.jsonl"), "--ttl-mix", "forever"])


def test_simulate_reads_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    stdin = io.TextIOWrapper(io.BytesIO((EXAMPLES / "minimal.jsonl").read_bytes()))
    monkeypatch.setattr("sys.stdin", stdin)
    assert main(["simulate", "-", "--quiet"]) == 0
    lines = (EXAMPLES / "minimal.jsonl").read_text().splitlines()
    assert capsys.readouterr().out.splitlines() == [record.to_line() for record in simulate(lines)]


def test_simulate_seam_flag_changes_the_views_not_the_outputs(tmp_path: Path) -> None:
    """`--seam full` sends whole proofs in every relay view, `--seam delta` only the first view of a subscriber;
    every other output line is the same, and a later view's delta is smaller than the full proof."""
    outs = {}
    for mode in ("delta", "full"):
        out = tmp_path / f"{mode}.jsonl"
        assert main(["simulate", str(EXAMPLES / "small.jsonl"), "--relay-proofs", "--seam", mode, "-o", str(out),
                     "--quiet"]) == 0
        outs[mode] = [json.loads(line) for line in out.read_text().splitlines()]
    views = {mode: {r["id"]: r["value"] for r in lines if r["topic"].endswith(".relay-proofs")}
             for mode, lines in outs.items()}
    others = {mode: [r for r in lines if not r["topic"].endswith(".relay-proofs")] for mode, lines in outs.items()}
    assert others["delta"] == others["full"] and others["full"]
    assert views["delta"].keys() == views["full"].keys()
    assert all(view["full"] for view in views["full"].values())
    later = [i for i, view in views["delta"].items() if not view["full"]]
    assert later and all(len(views["delta"][i]["nodes"]) <= len(views["full"][i]["nodes"]) for i in later)
    assert sum(len(views["delta"][i]["nodes"]) for i in later) < sum(len(views["full"][i]["nodes"]) for i in later)


def test_simulate_refuses_an_unknown_seam(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["simulate", str(EXAMPLES / "small.jsonl"), "--seam", "partial"])
    assert exited.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
