"""`pubsub alerts`: print the Prometheus alert rules shipped with the job (docs/operations.md, "Alerts")."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "alerts",
        help="print the Prometheus alert rules for the job's metrics",
        description="Print the alert rules (a Prometheus rule file) for the metrics `pubsub job --metrics-port` "
                    "serves: a stalled realm, blocks waiting and input lag growing, descriptors near the limit, a "
                    "growing checkpoint, no batch, the author behind. Each has a runbook in docs/operations.md.",
        epilog="Example: pubsub alerts > pubsub.rules.yml (then rule_files: [pubsub.rules.yml] in prometheus.yml).",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from supervise.alerts import rules_text

    sys.stdout.write(rules_text())
    return 0
