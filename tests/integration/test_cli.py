"""The `pubsub` command: every subcommand's help, and a typed error for an unreachable cluster (produce -> consume
through the console script: test_produce_consume.py)."""

from __future__ import annotations

import pytest

from cli.main import COMMAND_MODULES, build_parser, main

MINE = ("demo", "broker", "produce", "job", "consume", "verify")


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


def test_an_unreachable_kafka_is_a_one_line_error_not_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["consume", "--bootstrap", "127.0.0.1:1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pubsub: the configured Kafka cluster at 127.0.0.1:1 does not answer")
    assert "Traceback" not in err
