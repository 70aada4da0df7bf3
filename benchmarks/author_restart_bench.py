"""Block author restart time against the realm's age: full replay of the topics against the snapshot.

For each age N: a fresh realm on a broker of its own gets a genesis and N blocks, each including one upward
Publish (LogBuilder-signed, produced in bulk: what an author and a collator would have written over N blocks).
Then, on that realm: ``BlockAuthor.start`` with ``use_snapshot=False`` (the full replay of the blocks topic and
every input topic, what an author without a snapshot does), one block (which writes the first snapshot), and
``--repeat`` starts from the snapshot. Each start is timed from the constructor to ``start`` returning (genesis,
fencing, snapshot, replay, catch-up), and the records it read are counted; a 100-block realm measured first is
left out (the fresh broker warming up). Writes benchmarks/results/author_restart.json.

    python -m benchmarks.author_restart_bench                      # 1,000, 10,000 and 100,000 blocks
    python -m benchmarks.author_restart_bench --ages 1000 10000 --repeat 5
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

from benchmarks.common import stop_cleanly_on_sigterm, write_result
from producers.transport.kafka_io import produce, route_event_log
from producers.transport.topics import ensure_realm_topics
from producers.workload import LogBuilder, signer
from producers.writers.author import BlockAuthor
from pubsub_core.envelope import KeyRegistry
from pubsub_core.relay import Genesis
from pubsub_core.stages import LineParser
from settings.settings import Settings, load_settings
from supervise.kafka_broker import EmbeddedKafka

AUTHOR = signer("author")
COLLATOR = signer("collator/1000")
WARM_UP_BLOCKS = 100
"""A realm measured first and left out: on a fresh broker the first transactional starts wait on its transaction
coordinator (0.67 s against 0.15 s afterwards, whatever the realm's age)."""
CHUNK = 5_000
"""Blocks generated and produced at a time (bounded memory whatever the age)."""


def history(realm: str, blocks: int) -> Iterator[list[str]]:
    """The realm's event log in chunks: the genesis, then per block one upward Publish and the block."""
    log = LogBuilder(realm)
    log.genesis(KeyRegistry(para_keys={1000: frozenset({COLLATOR.public_key})},
                            author_keys=frozenset({AUTHOR.public_key})), Genesis())
    for number in range(1, blocks + 1):
        log.publish(1000, COLLATOR, [(number.to_bytes(32, "big"), number.to_bytes(8, "big"), 0)])
        log.block()
        if number % CHUNK == 0 or number == blocks:
            yield log.lines
            log.lines = []


def populate(settings: Settings, realm: str, blocks: int) -> float:
    """Write the realm's history; returns the seconds it took."""
    began = time.perf_counter()
    ensure_realm_topics(settings, realm, outputs=False, seam=False)
    router = LineParser(realm)
    for lines in history(realm, blocks):
        produce(settings, [item[0] for item in route_event_log((line.encode() for line in lines), router)
                           if isinstance(item, tuple)])
    return time.perf_counter() - began


def timed_start(settings: Settings, realm: str, *, use_snapshot: bool, write: bool) -> dict[str, object]:
    """One author start (and a block when ``write``): seconds to start, what it resumed from."""
    began = time.perf_counter()
    author = BlockAuthor(settings, realm, AUTHOR, use_snapshot=use_snapshot)
    chain = author.start(genesis_timeout=30)
    seconds = time.perf_counter() - began
    resumed = author.resumed_from
    if write:
        author.write_block()
    author.close()
    return {"seconds": round(seconds, 3), "head": chain.number,
            "from": "snapshot" if resumed is not None else "full replay",
            "input_offsets_skipped": dict(resumed.offsets) if resumed is not None else {}}


def measure(settings: Settings, blocks: int, repeat: int) -> dict[str, object]:
    realm = f"restart{blocks}-{uuid.uuid4().hex[:6]}"
    populate_s = populate(settings, realm, blocks)
    full = timed_start(settings, realm, use_snapshot=False, write=True)
    snapshots = [timed_start(settings, realm, use_snapshot=True, write=False) for _ in range(repeat)]
    times = [float(str(s["seconds"])) for s in snapshots]
    result = {"blocks": blocks, "input_records": blocks, "populate_s": round(populate_s, 1),
              "full_replay_s": full["seconds"], "snapshot_s": {"runs": times, "median": statistics.median(times),
                                                               "min": min(times), "max": max(times)},
              "snapshot_resumed_after_block": snapshots[0]["head"]}
    print(json.dumps(result), flush=True)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks.author_restart_bench",
                                     formatter_class=argparse.RawDescriptionHelpFormatter, description=__doc__)
    parser.add_argument("--ages", type=int, nargs="+", default=[1_000, 10_000, 100_000], metavar="BLOCKS",
                        help="the realm ages to measure, in blocks (default: 1000 10000 100000)")
    parser.add_argument("--repeat", type=int, default=5, help="snapshot restarts per age (default: 5)")
    parser.add_argument("--json", type=Path, default=None,
                        help="results file (default: benchmarks/results/author_restart.json)")
    args = parser.parse_args(argv)
    stop_cleanly_on_sigterm()
    scratch = Path(tempfile.mkdtemp(prefix="pubsub-author-restart-"))
    broker = EmbeddedKafka(home=scratch / "kafka")
    try:
        settings = load_settings(overrides={"kafka_bootstrap": broker.start().bootstrap})
        measure(settings, WARM_UP_BLOCKS, args.repeat)  # not recorded: the fresh broker's own first seconds
        results = [measure(settings, blocks, args.repeat) for blocks in args.ages]
    finally:
        broker.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    path = write_result("author_restart", results, module="benchmarks.author_restart_bench", argv=argv, path=args.json)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
