"""Follow a realm's updates with the Python client, each one once, printed as JSON lines (docs/api.md).

    python examples/api_follow.py polkadot                 # until Ctrl-C
    python examples/api_follow.py polkadot --idle 5        # stop after 5 s without a record
    python examples/api_follow.py polkadot --subscriber 3000

Kafka: $PUBSUB_KAFKA_BOOTSTRAP, else the embedded broker `pubsub broker start` runs.
"""

from __future__ import annotations

import argparse
import json
import sys

from producers.client import Client, InvalidRecordError
from producers.errors import ProducerError


def skipped(error: InvalidRecordError) -> None:
    """Anyone may write to a topic: say what was not an update, and go on."""
    print(f"skipped: {error}", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description="Print a realm's updates, each once, as JSON lines.")
    parser.add_argument("realm")
    parser.add_argument("--subscriber", type=int, help="only this subscriber's updates")
    parser.add_argument("--idle", type=float, help="stop after this many seconds without a record")
    args = parser.parse_args()
    client = Client()
    try:
        for update in client.follow_updates(args.realm, subscriber=args.subscriber, idle_seconds=args.idle,
                                            on_invalid=skipped):
            print(json.dumps(update.to_json(), sort_keys=True), flush=True)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ProducerError as error:  # every error of the client API: one line, no traceback
        sys.exit(f"{sys.argv[0]}: {error}")
