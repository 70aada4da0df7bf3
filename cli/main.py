"""The `pubsub` command: one entry point whose subcommands live in cli/commands/, one module each.

Each command module exposes ``register(subparsers)``, which adds its parser and sets ``func`` to a
callable taking the parsed arguments and returning an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from pubsub_core.errors import PubSubError
from state.errors import StateError

# Add a command by appending its module here; the order is the order of `pubsub --help`.
COMMAND_MODULES: tuple[str, ...] = (
    "cli.commands.demo",
    "cli.commands.broker",
    "cli.commands.produce",
    "cli.commands.author",
    "cli.commands.job",
    "cli.commands.status",
    "cli.commands.consume",
    "cli.commands.export",
    "cli.commands.verify",
    "cli.commands.simulate",
    "cli.commands.workload",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pubsub",
        description=(
            "RFC-0160 publish-subscribe outside a node: produce parachain messages and relay blocks to Kafka, "
            "run the Spark Structured Streaming job, read on_data_updated events, or simulate it all in one process."
        ),
    )
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return 2
    try:
        code: int = args.func(args)
    except (PubSubError, StateError) as err:  # a typed error explains itself: print it, no traceback
        print(f"pubsub: {err}", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
