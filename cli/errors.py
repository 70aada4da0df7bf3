"""Errors of the `pubsub` command itself, each with the exit code `cli.main` gives it."""

from __future__ import annotations

from pubsub_core.errors import PubSubError

__all__ = ["CliError", "Interrupted", "UsageError"]


class CliError(PubSubError):
    """A command cannot do what it was asked (exit 1); the message is the one line printed."""

    exit_code = 1


class UsageError(CliError):
    """The command line itself is wrong: flags that exclude each other, a value out of range (exit 2)."""

    exit_code = 2


class Interrupted(CliError):
    """Ctrl-C stopped a command; the message says what it had done (exit 130)."""

    exit_code = 130
