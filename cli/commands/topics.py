"""`pubsub topics create|list`: a realm's topics for a user who produces or consumes with their own client (the
brokers this project sets up refuse auto-creation), with the partitions and configs the job and produce use."""

from __future__ import annotations

import argparse
from typing import Any

from rich.table import Table

from cli.commands.common import add_kafka_arguments, console, default_realm, settings_from
from cli.errors import UsageError
from producers.transport.roles import acl_commands
from producers.transport.topics import admin_client, ensure_topics, realm_is_valid, realm_topic_specs
from pubsub_core.stages.topics import OUTPUTS
from supervise.kafka_broker import connect_kafka, ensure_kafka


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "topics",
        help="create a realm's topics, or list the cluster's topics",
        description=(
            "create: the realm's input topics (genesis, upward, horizontal, extrinsics, blocks: one partition "
            f"each, kept forever), output topics ({', '.join(OUTPUTS)}) and seam (relay-views) "
            "with --partitions partitions, all with max.message.bytes 16 MiB; idempotent: an existing topic is "
            "left as it is. The same definition `pubsub produce` and the job use (producers/transport/topics.py). "
            "list: every topic with its partition count, one per line on stdout (starts no broker). "
            "acls: the kafka-acls commands that give each role (collator, governance, author, job, consumer, "
            "operator) its rights on the realm's topics, for an external cluster (talks to no broker)."
        ),
        epilog="Examples: pubsub topics create --realm kusama; pubsub topics list; "
               "pubsub topics list --realm kusama; pubsub topics acls --realm kusama --para 2000. Topic configs: docs/operations.md, 'Topics and limits'.",
    )
    add_kafka_arguments(parser)
    parser.add_argument("action", choices=("create", "list", "acls"), help="what to do")
    parser.add_argument("--realm", metavar="NAME",
                        help="the realm (default: the topic prefix's); list: only its topics")
    parser.add_argument("--para", type=int, action="append", metavar="N",
                        help="acls: a para whose collator gets its ACLs (repeatable; default: collator-PARA to fill in)")
    parser.add_argument("--partitions", type=int, metavar="N",
                        help="partitions of the output and seam topics (default: views_partitions, 2)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.action == "acls":
        if not args.realm or not realm_is_valid(args.realm):
            raise UsageError("`pubsub topics acls` needs --realm NAME (1-249 of [A-Za-z0-9._-])")
        bootstrap = args.bootstrap or "BOOTSTRAP"
        for line in acl_commands(args.realm, tuple(args.para or ()), bootstrap):
            print(line)
        return 0
    if args.partitions is not None and args.action != "create":
        raise UsageError("--partitions goes with `pubsub topics create`")
    if args.action == "list":
        settings = connect_kafka(settings_from(args))
        names = admin_client(settings).list_topics(timeout=30).topics
        prefix = None if args.realm is None else args.realm + "."
        shown = sorted(name for name in names if not name.startswith("__") and (prefix is None or name.startswith(prefix)))
        for name in shown:
            print(f"{name}\t{len(names[name].partitions)}")
        console.print(f"{len(shown)} topic{'' if len(shown) == 1 else 's'}.")
        return 0
    settings, _ = ensure_kafka(settings_from(args))
    realm = args.realm or default_realm(settings)
    if not realm_is_valid(realm):
        raise UsageError(f"realm {realm!r} cannot name Kafka topics: use 1-249 of [A-Za-z0-9._-]")
    partitions = settings.views_partitions if args.partitions is None else args.partitions
    if partitions < 1:
        raise UsageError("--partitions must be at least 1")
    specs = realm_topic_specs(realm, partitions=partitions)
    ensure_topics(settings, specs)
    table = Table(title=f"Topics of {realm}", show_edge=False)
    for column in ("topic", "partitions", "configs"):
        table.add_column(column)
    for spec in specs:
        table.add_row(spec.name, str(spec.partitions), ", ".join(f"{k}={v}" for k, v in sorted(spec.config.items())))
    console.print(table)
    console.print(f"{len(specs)} topics of {realm} exist on {settings.kafka_bootstrap} (existing ones unchanged).")
    return 0
