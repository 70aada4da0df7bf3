"""The `pubsub` command: one entry point whose subcommands live in cli/commands/, one module each.

Each command module exposes ``register(subparsers)``, which adds its parser and sets ``func`` to a
callable taking the parsed arguments and returning an exit code. Errors become one line on stderr and an exit
code here, in one place (``EXIT_CODES``); ``--debug`` shows the traceback as well, with the same exit code.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import sys
import traceback
from collections.abc import Sequence

from confluent_kafka import KafkaError, KafkaException

from cli.errors import CliError, Interrupted
from pubsub_core.errors import PubSubError
from settings.errors import SettingsError
from state.errors import StateError

# Add a command by appending its module here; the order is the order of `pubsub --help`.
COMMAND_MODULES: tuple[str, ...] = (
    "cli.commands.demo",
    "cli.commands.broker",
    "cli.commands.topics",
    "cli.commands.produce",
    "cli.commands.author",
    "cli.commands.job",
    "cli.commands.status",
    "cli.commands.alerts",
    "cli.commands.consume",
    "cli.commands.export",
    "cli.commands.verify",
    "cli.commands.simulate",
    "cli.commands.workload",
)

EXIT_CODES: tuple[tuple[int, str], ...] = (
    (0, "success"),
    (1, "the command failed: a file, Kafka or broker error, bad data with --strict, a check that did not pass"),
    (2, "usage: an unknown option, flags that exclude each other, a bad setting (flag, environment or file)"),
    (130, "interrupted by Ctrl-C (SIGINT); what was done so far is printed, no partial output file is left"),
)


def version() -> str:
    try:
        return importlib.metadata.version("rfc0160-pubsub")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pubsub",
        description=(
            "RFC-0160 publish-subscribe outside a node: produce parachain messages and relay blocks to Kafka, "
            "run the Spark Structured Streaming job, read on_data_updated events, or simulate it all in one process."
        ),
        epilog="exit codes:\n" + "\n".join(f"  {code:<4} {meaning}" for code, meaning in EXIT_CODES)
        + "\n\nExample: pubsub workload -o events.jsonl --seed 7 && pubsub simulate events.jsonl -o out.jsonl\n"
        "Every command has --help with an example; docs/operations.md is the reference.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"pubsub {version()}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error before its one line (the exit code stays the same)")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    for command in subparsers.choices.values():
        # --debug after the command too; SUPPRESS keeps a --debug given before it
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        command.set_defaults(command_parser=command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if not hasattr(args, "func"):
        if unknown:
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        parser.print_help()
        return 2
    if unknown:  # the command's own usage, not the top-level one
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        code: int = args.func(args)
    except (Exception, KeyboardInterrupt) as err:
        line, code = describe(err)
        if line is None:
            raise
        if args.debug:  # the traceback, then the same one line and exit code as without --debug
            traceback.print_exc()
        print(f"pubsub: {line}", file=sys.stderr)
    return code


def describe(err: BaseException) -> tuple[str | None, int]:
    """The one line and exit code of an operational error; (None, 1) for a bug, whose traceback is shown."""
    if isinstance(err, KeyboardInterrupt):
        return "interrupted.", 130
    if isinstance(err, Interrupted):
        return str(err), 130
    if isinstance(err, SettingsError):
        return str(err), 2
    if isinstance(err, CliError):
        return str(err), err.exit_code
    if isinstance(err, (PubSubError, StateError)):  # a typed error explains itself
        return str(err), 1
    if isinstance(err, KafkaException):
        first = err.args[0] if err.args else None
        detail = first.str() if isinstance(first, KafkaError) else str(err)
        return f"Kafka: {detail}", 1
    if isinstance(err, OSError):
        where = f"{err.filename}: " if err.filename is not None else ""
        return f"{where}{err.strerror or err}", 1
    return None, 1


if __name__ == "__main__":
    sys.exit(main())
