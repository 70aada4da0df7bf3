"""Subcommands of `pubsub`, one module each (see producers/cli.py)."""
