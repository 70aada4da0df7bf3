"""The `pubsub` command: one entry point (cli.main), one module per subcommand in cli/commands/."""
