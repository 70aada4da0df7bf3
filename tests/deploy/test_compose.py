"""docker-compose.yml cannot run here (no Docker engine): check that every `pubsub ...` command it runs exists in
the CLI with those flags, and that the live services (author, producer, follower) and the job agree on the realm
and the broker."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cli.main import build_parser

COMPOSE = Path(__file__).resolve().parents[2] / "docker-compose.yml"


def _services() -> dict[str, list[str]]:
    """Service name -> its ``command:`` (the file writes each as a flow list of double-quoted strings; [] when it
    has none, e.g. kafka's image runs its own)."""
    text = COMPOSE.read_text()
    blocks = re.split(r"^  (?=[A-Za-z][\w-]*:\s*$)", text.split("\nservices:\n", 1)[1].split("\nvolumes:", 1)[0],
                      flags=re.MULTILINE)
    services = {}
    for block in blocks:
        name = block.split(":", 1)[0].strip()
        command = re.search(r"^\s+command:\s*\[(.*?)\]", block, flags=re.MULTILINE | re.DOTALL)
        if name:
            services[name] = re.findall(r'"([^"]*)"', command.group(1)) if command else []
    return services


def _pubsub_commands() -> dict[str, list[str]]:
    return {name: argv for name, argv in _services().items() if argv and argv[0] == "pubsub"}


def test_the_compose_file_runs_the_job_and_the_live_services() -> None:
    commands = _pubsub_commands()
    assert {name: argv[1] for name, argv in commands.items()} == {
        "job": "job", "author": "author", "producer": "workload", "follow": "consume"}
    assert set(_services()) == {"kafka", "spark-master", "spark-worker", *commands}


@pytest.mark.parametrize("service", sorted(_pubsub_commands()))
def test_each_pubsub_command_parses_with_the_cli(service: str) -> None:
    argv = _pubsub_commands()[service][1:]
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse exits on an unknown command or flag, or a bad value
        pytest.fail(f"service {service}: `pubsub {' '.join(argv)}` is refused by the CLI ({exc})")
    assert callable(args.func)
    assert args.bootstrap == "kafka:9092"


def test_the_live_services_share_the_realm_and_block_time() -> None:
    parser = build_parser()
    parsed = {name: parser.parse_args(argv[1:]) for name, argv in _pubsub_commands().items()}
    assert parsed["producer"].live and parsed["follow"].follow
    assert parsed["author"].realm == parsed["producer"].realm == parsed["follow"].realm == "polkadot"
    assert parsed["author"].block_time == parsed["producer"].block_time  # the producer's per-para cap needs it
    assert parsed["job"].realm is None or "polkadot" in parsed["job"].realm


def test_the_author_key_defaults_to_the_key_the_live_genesis_admits() -> None:
    from supervise.live_run import WORKLOAD_AUTHOR_SEED

    default = re.search(r"PUBSUB_AUTHOR_KEY:\s*\$\{PUBSUB_AUTHOR_KEY:-([0-9a-f]{64})\}", COMPOSE.read_text())
    assert default is not None and bytes.fromhex(default.group(1)) == WORKLOAD_AUTHOR_SEED
