"""Read every record a topic holds now with the Python client, checked against its schema (docs/api.md).

    python examples/api_read.py polkadot.seals
    python examples/api_read.py polkadot.rejected --limit 10

Each record is printed as a JSON line: topic, partition, offset, key, id and value. A value that does not follow
its topic's schema (docs/schemas.md) is reported on stderr, and the exit code is 1.
"""

from __future__ import annotations

import argparse
import json
import sys

from producers.client import Client
from producers.errors import ProducerError
from producers.schemas import RecordSchemaError, schema_for_topic, validate


def main() -> int:
    parser = argparse.ArgumentParser(description="Print a topic's records as JSON lines, checked against its schema.")
    parser.add_argument("topic")
    parser.add_argument("--limit", type=int, help="at most this many records of each partition")
    args = parser.parse_args()
    schema = schema_for_topic(args.topic)
    invalid = 0
    for record in Client().read(args.topic, limit=args.limit):
        value = record.parsed_value()
        try:
            validate(schema, value)
        except RecordSchemaError as error:
            invalid += 1
            print(f"{record.topic}@{record.partition}:{record.offset}: {error}", file=sys.stderr)
        print(json.dumps({"topic": record.topic, "partition": record.partition, "offset": record.offset,
                          "key": record.key_text, "id": record.id, "value": value}, sort_keys=True))
    return 1 if invalid else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ProducerError as error:  # every error of the client API: one line, no traceback
        sys.exit(f"{sys.argv[0]}: {error}")
