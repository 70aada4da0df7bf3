"""Publish data for one's own parachain with the Python client: sign an upward message of XCM Publish
instructions and produce it (docs/api.md).

    python examples/api_publish.py polkadot 1000 <seed: 64 hex digits> temperature=21.5 humidity=40

Each NAME=VALUE is one Publish: key Blake2-256 of NAME, value the UTF-8 bytes of VALUE, TTL --ttl blocks (0:
never expires). The seed's ed25519 key must be one the realm's genesis lists for the para. Prints where the
message went (topic, key, position, seqno) as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys

from producers.client import Client, Publish
from producers.errors import ProducerError
from pubsub_core.hashing import blake2_256


def main() -> int:
    parser = argparse.ArgumentParser(description="Sign and produce one upward message of Publish instructions.")
    parser.add_argument("realm")
    parser.add_argument("para", type=int)
    parser.add_argument("seed", type=bytes.fromhex, help="the collator key's 32-byte ed25519 seed, in hex")
    parser.add_argument("items", nargs="+", metavar="NAME=VALUE")
    parser.add_argument("--ttl", type=int, default=0, help="blocks until the values expire (default: 0, never)")
    args = parser.parse_args()
    items = []
    for item in args.items:
        name, _, value = item.partition("=")
        items.append(Publish(blake2_256(name.encode()), value.encode(), args.ttl))
    published = Client().publisher(args.realm, args.para, args.seed).publish(items)
    print(json.dumps({"topic": published.topic, "key": published.key, "position": published.position,
                      "seqno": published.seqno}, sort_keys=True))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ProducerError as error:  # every error of the client API: one line, no traceback
        sys.exit(f"{sys.argv[0]}: {error}")
