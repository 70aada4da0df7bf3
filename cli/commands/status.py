"""`pubsub status`: a realm's stall (if any), relay height, blocks waiting, lag, records out and PoV use, for a person."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cli.commands.common import add_kafka_arguments, console, default_realm, settings_from
from supervise.errors import StatusUnavailable


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "status",
        help="print a realm's stall, relay height, blocks waiting, lag and PoV use",
        description=(
            "Print one realm's facts, one a line: first, if the realm is stalled, STALLED with the waiting block, "
            "the positions it misses, since when, and the `pubsub author void` command that undoes it; relay height (the newest block Stage R sealed), author height "
            "(the newest block on <realm>.blocks), blocks waiting between them, lag per input partition, records "
            "out per output topic, PoV used against budget per subscriber, and from a running job its batch time, "
            "state memory and checkpoint size. From the running job's metrics endpoint when one answers (--metrics-url, "
            "or metrics_host and metrics_port from the settings), else from the realm's topics and the job's "
            "checkpoint folder (lag). It only reads: it never starts a broker or the job."
        ),
        epilog="Example: pubsub status --realm polkadot --metrics-url http://127.0.0.1:9464/metrics",
    )
    add_kafka_arguments(parser)
    parser.add_argument("--realm", metavar="NAME", help="the realm (default: the topic prefix's realm)")
    parser.add_argument("--metrics-url", metavar="URL",
                        help="a running job's endpoint (default: http://METRICS_HOST:METRICS_PORT/metrics when "
                             "$PUBSUB_METRICS_PORT or the settings file sets the port)")
    parser.add_argument("--checkpoint", metavar="DIR",
                        help="the job's checkpoint folder (local), for the lag without a running job "
                             "(default: the settings' checkpoint_dir)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from supervise.kafka_broker import EmbeddedKafka
    from supervise.status import from_metrics, from_topics, render

    settings = settings_from(args, checkpoint_dir=args.checkpoint)
    realm = args.realm or default_realm(settings)
    url = args.metrics_url
    if url is None and settings.metrics_port is not None:
        url = f"http://{settings.metrics_host}:{settings.metrics_port}/metrics"
    status = None
    if url is not None:
        try:
            status = from_metrics(url, realm)
        except StatusUnavailable as err:
            console.print(f"{err}; reading the topics instead")
    if status is None:
        if settings.kafka_bootstrap is None:
            running = EmbeddedKafka().status()
            if running is None:
                raise StatusUnavailable("Kafka", "no --bootstrap given and no embedded broker is running "
                                                 "(start one with `pubsub broker start`)")
            settings = settings.with_bootstrap(running.bootstrap)
        checkpoint = settings.checkpoint_dir
        if not isinstance(checkpoint, Path):
            console.print(f"the checkpoint {checkpoint} is not local: `pubsub status` reads a local one only "
                          "(the running job's --metrics-url has the lag); no lag shown")
        status = from_topics(settings, realm, checkpoint if isinstance(checkpoint, Path) and checkpoint.exists()
                             else None)
    for line in render(status, args.bootstrap):
        print(line)
    return 0
