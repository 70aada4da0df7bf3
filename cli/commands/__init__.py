"""Subcommands of `pubsub`, one module each (see cli/main.py)."""
