"""`pubsub author void`: sign and write a void order that unsticks a stalled realm (producers/writers/void.py)."""

from __future__ import annotations

import argparse
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from cli.commands.common import add_kafka_arguments, console, settings_from
from producers.writers.author import NotAnAuthor, read_author_key
from producers.writers.void import plan_void, read_realm, write_void
from settings.protocol import load_protocol_config
from supervise.kafka_broker import ensure_kafka

_POSITION = re.compile(r"(upward|horizontal|extrinsics)/([^/]+)/(\d+)(?:\.\.(\d+))?")


def register(subparsers: Any, key_env: str) -> None:
    parser = subparsers.add_parser(
        "void",
        help="void the positions a stalled block waits for (a signed void order on <realm>.blocks)",
        description=(
            "Find block N on <realm>.blocks and the positions of its manifest that no authentic record on the "
            "input topics fills (or take --position), print them, and with --yes write a void order signed by the "
            "author key: Stage R then applies block N without those positions (a Voided outcome each, a Voided "
            "record on <realm>.health) and refuses any record that comes later at one of them. Writing fences a "
            "running author of the realm (restart it afterwards)."
        ),
        epilog="Example: pubsub author void --realm polkadot --block 3 (prints the positions it would void), then "
               "pubsub author void --realm polkadot --block 3 --yes --key-file author.key; `pubsub status --realm "
               "polkadot` names the stalled block. The procedure, and what to check first: docs/operations.md, "
               "'A stalled realm'.",
    )
    add_kafka_arguments(parser)
    parser.add_argument("--realm", required=True, metavar="NAME", help="the stalled realm")
    parser.add_argument("--block", type=int, required=True, metavar="N",
                        help="the waiting block (the 'block' of its Stalled record on <realm>.health)")
    parser.add_argument("--position", action="append", metavar="STREAM/ORIGIN/FIRST[..LAST]",
                        help="void these positions only (repeatable; default: every position with no authentic "
                             "record on the input topics)")
    parser.add_argument("--key-file", type=Path, metavar="FILE",
                        help=f"file holding the author's 32-byte ed25519 seed as hex (default: ${key_env})")
    parser.add_argument("--protocol-config", type=Path, metavar="FILE",
                        help="the protocol JSON config (admission limits; default: the settings' protocol_config)")
    parser.add_argument("--yes", action="store_true", help="write the order (without it: print what it would void)")
    parser.set_defaults(func=run)


def _positions(texts: list[str] | None) -> list[tuple[str, str, int, int]] | None:
    if texts is None:
        return None
    out = []
    for text in texts:
        match = _POSITION.fullmatch(text)
        if match is None:
            raise argparse.ArgumentTypeError(f"--position {text!r} is not STREAM/ORIGIN/FIRST[..LAST]")
        stream, origin, first, last = match.groups()
        out.append((stream, origin, int(first), int(last if last is not None else first)))
    return out


def run(args: argparse.Namespace) -> int:
    try:
        positions = _positions(args.position)
    except argparse.ArgumentTypeError as exc:
        console.print(f"[red]{exc}[/]")
        return 2
    signer = read_author_key(args.realm, args.key_file)
    settings, _ = ensure_kafka(settings_from(args))
    protocol = load_protocol_config(args.protocol_config or settings.protocol_config)
    registry, blocks, inputs = read_realm(settings, args.realm)
    if signer.public_key not in registry.author_keys:
        raise NotAnAuthor(args.realm, signer.public_key, registry.author_keys)
    plan = plan_void(args.realm, registry, blocks, inputs, args.block, signer.public_key,
                     replace(protocol.admission, realm=args.realm), positions)
    for line in plan.lines():  # the plan on stdout, what was done on stderr
        print(line, flush=True)
    if not args.yes:
        console.print("nothing written: run again with --yes to write this void order")
        return 0
    write_void(settings, args.realm, signer, plan)
    console.print(f"void order written to {args.realm}.blocks; a running author of {args.realm} is fenced: "
                  "restart it", highlight=False)
    return 0
