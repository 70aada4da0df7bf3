"""Helpers shared by the command modules: settings flags, the console, and Kafka set-up."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from cli.errors import CliError
from settings.settings import SECURITY_FLAGS, Settings, add_security_arguments, load_settings, security_overrides

__all__ = ["add_kafka_arguments", "console", "count", "default_realm", "require_event_log", "settings_from"]

console = Console(stderr=True, highlight=False, soft_wrap=not sys.stderr.isatty())
"""Progress and logs go to stderr, so stdout carries only data (e.g. `pubsub consume` JSON lines). Not wrapped at
80 columns when stderr is not a terminal, so an error stays one line in a log."""


def add_kafka_arguments(parser: argparse.ArgumentParser) -> None:
    """--config, --bootstrap, --topic-prefix and the security flags, which every Kafka-facing command takes."""
    parser.add_argument("--config", type=Path, metavar="FILE", help="TOML settings file (default: $PUBSUB_CONFIG)")
    parser.add_argument(
        "--bootstrap", metavar="HOST:PORT", help="external Kafka host:port (default: $PUBSUB_KAFKA_BOOTSTRAP, else the embedded broker)"
    )
    parser.add_argument("--topic-prefix", metavar="PREFIX", help="realm prefix of every topic (default: polkadot.)")
    add_security_arguments(parser)


def settings_from(args: argparse.Namespace, **overrides: Any) -> Settings:
    """Settings from the common flags plus command-specific overrides."""
    values = {"kafka_bootstrap": getattr(args, "bootstrap", None), "topic_prefix": getattr(args, "topic_prefix", None),
              **security_overrides(args)}
    values.update(overrides)
    return load_settings(overrides=values, config_file=getattr(args, "config", None), flags=FLAGS)


FLAGS = {"kafka_bootstrap": "--bootstrap", **SECURITY_FLAGS}
"""Settings whose flag is not ``--`` + the setting's name with dashes, for errors that name the flag."""


def default_realm(settings: Settings) -> str:
    """The realm the topic prefix names (``polkadot.`` -> ``polkadot``)."""
    return settings.topic_prefix.rstrip(".")


def count(number: int, noun: str) -> str:
    """``1 record``, ``2 records``: a number with its noun, plural by adding s."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def require_event_log(path: Path) -> None:
    """An input event log must be a file (or ``-``, stdin): a missing one or a folder is a file error (exit 1,
    docs/operations.md, "Outputs, errors and exit codes"), said in one line before any work."""
    if str(path) == "-" or path.is_file():
        return
    if path.is_dir():
        raise CliError(f"{path} is a folder, not an event log: give the JSON-lines file inside it")
    raise CliError(f"no event log at {path}: no such file" if not path.exists()
                   else f"{path} is not a regular file, not an event log")
