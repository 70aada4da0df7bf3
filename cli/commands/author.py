"""`pubsub author`: the relay block author of one realm (producers/writers/author.py), one block per block time."""

from __future__ import annotations

import argparse
import signal
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any

from cli.commands import author_void
from cli.commands.common import add_kafka_arguments, console, count, settings_from
from cli.errors import UsageError
from producers.writers.author import AUTHOR_KEY_ENV, DEFAULT_MAX_POV_SIZE, AuthorLimits, BlockAuthor, read_author_key
from settings.protocol import load_protocol_config
from supervise.kafka_broker import ensure_kafka


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "author",
        help="write a realm's relay blocks every block time (the block author)",
        description=(
            "Every block time, take the records that arrived on <realm>.upward, .horizontal and .extrinsics since "
            "the last block, keep those Stage R buffers on arrival (decodable, authenticated against the realm's "
            "genesis registry, a fresh seqno, a free position), and write the next block to <realm>.blocks: per "
            "stream and origin, the contiguous run of such positions after the last included one, within the "
            "block limits, signed with the author key. Resumes from its snapshot on <realm>.author-state (written "
            "with every block), reading only what came after it; a newer author of the realm fences this one (Kafka transactional.id pubsub-author-<realm>). One line per block on "
            "stdout; Ctrl-C stops after the current block."
        ),
        epilog="Examples: pubsub author --realm polkadot --once; "
               "pubsub author --realm polkadot --key-file author.key --block-time 2 --blocks 100. "
               "Key handling, fencing and resume: docs/operations.md, 'The block author'.",
        allow_abbrev=False,  # `pubsub author void --block N`: not an abbreviation of --block-time or --blocks
    )
    add_kafka_arguments(parser)
    parser.add_argument("--realm", metavar="NAME", help="the realm whose blocks to write (required)")
    parser.add_argument("--block-time", type=float, default=6.0, metavar="SECONDS", help="time between blocks (default: 6)")
    parser.add_argument("--key-file", type=Path, metavar="FILE",
                        help=f"file holding the author's 32-byte ed25519 seed as hex (default: ${AUTHOR_KEY_ENV})")
    limits = AuthorLimits()
    parser.add_argument("--max-records-per-block", type=int, default=None, metavar="N",
                        help=f"records per block, all streams (default: the relay's max_messages_per_block, "
                             f"{limits.max_records})")
    parser.add_argument("--max-bytes-per-block", type=int, default=None, metavar="BYTES",
                        help=f"envelope bytes per block (default: {limits.max_bytes}, the 5 MiB PoV)")
    parser.add_argument("--max-pov-size", type=int, default=DEFAULT_MAX_POV_SIZE, metavar="BYTES",
                        help=f"the blocks' max_pov_size (default: {DEFAULT_MAX_POV_SIZE})")
    parser.add_argument("--session-index", type=int, default=0, metavar="N", help="session index (default: 0)")
    parser.add_argument("--session-every", type=int, metavar="N",
                        help="advance the session index every N block numbers (default: never)")
    parser.add_argument("--protocol-config", type=Path, metavar="FILE",
                        help="the protocol JSON config of `pubsub simulate --protocol-config` (admission and router limits, "
                             "trusted_genesis; default: the settings' protocol_config, else the defaults)")
    parser.add_argument("--genesis-timeout", type=float, default=60.0, metavar="SECONDS",
                        help="how long to wait for the realm's genesis record (default: 60)")
    parser.add_argument("--full-replay", action="store_true",
                        help="ignore the snapshot and rebuild the author's state from the topics' whole history "
                             "(they must still hold it)")
    parser.add_argument("--accept-input-loss", action="store_true",
                        help="when retention deleted input records the author never read, resume at the earliest "
                             "record kept instead of stopping (those positions are never included)")
    stop = parser.add_mutually_exclusive_group()
    stop.add_argument("--once", action="store_true", help="write a single block, then exit")
    stop.add_argument("--blocks", type=int, metavar="N", help="stop after N blocks")
    parser.set_defaults(func=run)
    author_void.register(parser.add_subparsers(title="commands", metavar="{void}"), AUTHOR_KEY_ENV)


def run(args: argparse.Namespace) -> int:
    if args.realm is None:
        console.print("[red]pubsub author: --realm is required.[/]")
        return 2
    if args.block_time < 0 or (args.blocks is not None and args.blocks < 1):
        raise UsageError("--block-time cannot be negative and --blocks must be at least 1")
    signer = read_author_key(args.realm, args.key_file)
    settings, _ = ensure_kafka(settings_from(args))
    protocol = load_protocol_config(args.protocol_config or settings.protocol_config)
    admission = replace(protocol.admission, realm=args.realm)
    try:
        limits = AuthorLimits.from_relay(admission, protocol.router, max_records=args.max_records_per_block,
                                         max_bytes=args.max_bytes_per_block)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    author = BlockAuthor(settings, args.realm, signer, limits=limits, admission=admission,
                         max_pov_size=args.max_pov_size, session_index=args.session_index,
                         session_every=args.session_every, trusted_genesis=protocol.trusted_genesis.get(args.realm),
                         use_snapshot=not args.full_replay, accept_input_loss=args.accept_input_loss)
    stopping: list[int] = []

    def stop(signum: int, _frame: FrameType | None) -> None:
        stopping.append(signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        chain = author.start(args.genesis_timeout)
        after = "genesis" if chain.number is None else f"block {chain.number} (0x{chain.hash.hex()[:8]})"
        source = "the topics' whole history" if author.resumed_from is None else "its snapshot"
        console.print(f"author of {args.realm}: key 0x{signer.public_key.hex()[:16]}..., resuming after {after} "
                      f"from {source}")
        limit = 1 if args.once else args.blocks
        written = 0
        while limit is None or written < limit:
            report = author.step(args.block_time, lambda: bool(stopping))
            if report is None:
                break
            written += 1
            print(report.line(), flush=True)
            if stopping:
                break
    finally:
        author.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if stopping:
        console.print(f"author of {args.realm}: stopped after {count(written, 'block')}")
    return 0
