"""The `pubsub` command: every subcommand's help, and a typed error for an unreachable cluster (produce -> consume
through the console script: test_produce_consume.py)."""

from __future__ import annotations

import json

import pytest

from cli.main import COMMAND_MODULES, build_parser, main

MINE = ("demo", "broker", "produce", "job", "consume", "verify", "status")


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


@pytest.mark.slow
def test_an_unreachable_kafka_is_a_one_line_error_not_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["consume", "--bootstrap", "127.0.0.1:1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pubsub: the configured Kafka cluster at 127.0.0.1:1 does not answer")
    assert "Traceback" not in err


def _update(subscriber: int, block: int, seq: int, kind: str = "set", value: str = "68656c6c6f") -> dict[str, object]:
    return {"subscriber": subscriber, "relay_block_number": block, "seq": seq, "publisher": 1000,
            "key": "ab" * 32, "kind": kind, "value": value if kind == "set" else ""}


def test_the_demo_tables_cap_rows_and_show_results() -> None:
    from rich.console import Console

    from cli.commands.demo import _by_topic, _pov_table, _rejections_table, _updates_table

    lines = [json.dumps({"id": f"3000-{b}-u0", "key": "3000", "topic": "demo.updates", "value": _update(3000, b, 0)})
             for b in range(1, 6)]
    lines.append(lines[0])  # an at-least-once duplicate is shown once
    lines.append(json.dumps({"id": "3001-2-u0", "key": "3001", "topic": "demo.updates",
                             "value": _update(3001, 2, 0, kind="expired")}))
    updates = _by_topic(lines)["demo.updates"]
    assert len(updates) == 6
    pov = [{"value": {"relay_block_number": 4, "subscriber": 3000, "proof_bytes": 675, "budget": {"pubsub": 2263},
                      "result": "incomplete"}}]
    rejected = [{"value": {"reason": "BadSignature", "status": "rejected", "detail": "[red]ed25519 failed"}}]
    console = Console(record=True, width=100)
    for table in (_updates_table(updates, rows=3), _pov_table(pov), _rejections_table(rejected)):
        console.print(table)
    text = console.export_text()
    assert "… 2 more" in text and "5 set" in text  # capped at 3 rows of 5 for subscriber 3000
    assert "'hello'" in text and "(expired)" in text
    assert "675/2263 incomplete" in text
    assert "BadSignature" in text and "[red]ed25519 failed" in text  # data is not markup
