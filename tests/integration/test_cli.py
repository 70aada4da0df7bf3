"""The `pubsub` command: every subcommand's help, and produce -> consume through the real console script."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cli.main import COMMAND_MODULES, build_parser, main
from streaming.settings import Settings

MINE = ("demo", "broker", "produce", "job", "consume")


@pytest.mark.parametrize("command", MINE)
def test_each_subcommand_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    assert exited.value.code == 0
    assert "usage: pubsub " + command in capsys.readouterr().out


def test_the_top_level_help_lists_every_command() -> None:
    listed = build_parser().format_help()
    assert all(f"    {command} " in listed for command in MINE)
    assert all(module.startswith("cli.commands.") for module in COMMAND_MODULES)


@pytest.mark.kafka
def test_produce_then_consume_on_the_command_line(kafka_settings: Settings) -> None:
    common = ["--bootstrap", str(kafka_settings.kafka_bootstrap), "--topic-prefix", "cli."]
    run = [sys.executable, "-m", "cli.main"]
    produced = subprocess.run([*run, "produce", *common, "--input-topic", "events", "--count", "30", "--keys", "3"],
                              capture_output=True, text=True, timeout=120)
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run([*run, "consume", *common, "--topic", "events"], capture_output=True, text=True,
                              timeout=120)
    assert consumed.returncode == 0, consumed.stderr
    lines = [json.loads(line) for line in consumed.stdout.splitlines()]
    assert sorted(line["value"]["n"] for line in lines) == list(range(30))
    assert {line["key"] for line in lines} == {"key-0", "key-1", "key-2"}


def test_an_unreachable_kafka_is_a_one_line_error_not_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["consume", "--bootstrap", "127.0.0.1:1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pubsub: the configured Kafka cluster at 127.0.0.1:1 does not answer")
    assert "Traceback" not in err
