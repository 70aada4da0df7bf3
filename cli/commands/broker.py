"""`pubsub broker start|stop|status`: the embedded single-node Kafka broker (KRaft) on 127.0.0.1."""

from __future__ import annotations

import argparse
from typing import Any

from cli.commands.common import console
from cli.errors import UsageError
from supervise.kafka_broker import EmbeddedKafka


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "broker",
        help="start, stop or inspect the embedded Kafka broker",
        description=(
            "Manage the embedded Kafka broker: a single-node KRaft broker run from the package's Maven jars, bound to "
            "a free 127.0.0.1 port, with its data in kafka/ of the runtime folder ($PUBSUB_RUNTIME_DIR, else "
            "~/.local/share/rfc0160-pubsub; the checkout's make and tests use .runtime/). Other commands reuse a "
            "running one. "
            "A start after a stop (or a crash) restarts on the data and ports the last broker left: topics and "
            "records are kept unless --fresh."
        ),
        epilog="Examples: pubsub broker start; pubsub broker status; pubsub broker stop; "
               "pubsub broker start --fresh (a new, empty broker: deletes every topic of the old one).",
    )
    parser.add_argument("action", choices=("start", "stop", "status"), help="what to do")
    parser.add_argument("--fresh", action="store_true",
                        help="with start: wipe the data a stopped broker left and start empty, on new ports")
    parser.add_argument("--secure", action="store_true",
                        help="with a fresh start: a SASL_SSL listener (a CA and certificate made in its folder), SCRAM "
                             "users per role and ACLs (docs/operations.md, 'Securing Kafka'); commands then log in as "
                             "operator, or as $PUBSUB_KAFKA_SASL_USERNAME")
    parser.add_argument("--realm", action="append", metavar="NAME",
                        help="with --secure: a realm whose topics get the roles' ACLs (repeatable; default: polkadot)")
    parser.add_argument("--para", type=int, action="append", metavar="N",
                        help="with --secure: a para whose collator gets a user, collator-N (repeatable)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    broker = EmbeddedKafka(secure=args.secure, realms=tuple(args.realm or ("polkadot",)), paras=tuple(args.para or ()))
    if args.fresh and args.action != "start":
        raise UsageError("--fresh goes with `pubsub broker start`")
    if (args.secure or args.realm or args.para) and args.action != "start":
        raise UsageError("--secure, --realm and --para go with `pubsub broker start`")
    if args.action == "start":
        if args.fresh and broker.status() is not None:
            raise UsageError("--fresh wipes a stopped broker's data: run `pubsub broker stop` first")
        info = broker.start(keep_data=not args.fresh)
        verb = "started" if broker.started_here else "already running"
        if args.secure and not info.secure:
            raise UsageError("the embedded broker's data is a plaintext broker's: `pubsub broker start --fresh --secure` "
                             "makes a secured one (after `pubsub broker stop`)")
        console.print(f"Kafka broker {verb}: bootstrap [bold]{info.bootstrap}[/] (pid {info.pid}, data {info.data_dir})")
        if info.secure:
            console.print(f"Secured: SASL_SSL with SCRAM-SHA-512; CA {broker.home / 'tls' / 'ca.pem'}, users and "
                          f"passwords in {broker.home / 'credentials.json'} (mode 0600)")
        console.print(f"Point other shells at it with: export PUBSUB_KAFKA_BOOTSTRAP={info.bootstrap}")
        print(info.bootstrap)
        return 0
    if args.action == "stop":
        stopped = broker.stop()
        console.print("Kafka broker stopped." if stopped else "No embedded Kafka broker was running.")
        return 0
    status = broker.status()
    if status is None:
        console.print("No embedded Kafka broker is running.")
        return 1
    console.print(f"Kafka broker running: bootstrap {status.bootstrap} (pid {status.pid})")
    print(status.bootstrap)
    return 0
