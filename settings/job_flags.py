"""The Spark job's flags (`pubsub job` and `python -m streaming.job` take the same) and the settings they give:
here, beside the settings, so the command parses them without importing the job."""

from __future__ import annotations

import argparse
from pathlib import Path

from settings.settings import (
    JIT_MODES,
    SEAM_MODES,
    SECURITY_FLAGS,
    SHIP_MODES,
    STAGES_MODES,
    STATE_REOPEN_MODES,
    Settings,
    add_security_arguments,
    load_settings,
    security_overrides,
)

__all__ = ["add_job_arguments", "settings_from_args"]


def add_job_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags shared by `pubsub job` and `python -m streaming.job`."""
    parser.add_argument("--config", type=Path, metavar="FILE", help="TOML settings file (default: $PUBSUB_CONFIG)")
    parser.add_argument("--bootstrap", metavar="HOST:PORT", help="Kafka host:port (default: $PUBSUB_KAFKA_BOOTSTRAP; `pubsub job` starts the embedded broker when neither is set)")
    add_security_arguments(parser)
    parser.add_argument("--master", metavar="URL", help="Spark master URL (default: local[2]; $PUBSUB_SPARK_MASTER)")
    parser.add_argument("--realm", action="append", metavar="REALM",
                        help="serve only this realm (repeatable; default: every realm, also those that appear later)")
    parser.add_argument("--protocol-config", type=Path, metavar="FILE",
                        help="protocol settings (JSON, as for `pubsub simulate --protocol-config`)")
    parser.add_argument("--seam", choices=SEAM_MODES,
                        help="what Stage R sends Stage S: delta (changed proof nodes, the default) or full (whole "
                             "proofs, the checking mode); outputs are the same ($PUBSUB_SEAM)")
    parser.add_argument("--stages", choices=STAGES_MODES,
                        help="fused (one query: a block's subscribers in the batch that applies it, the lowest "
                             "latency), split (Stage R and Stage S as two queries joined by the seam topic) or auto "
                             "(the checkpoint's own layout; fused for a new one, the default) ($PUBSUB_STAGES)")
    parser.add_argument("--spark-jit", choices=JIT_MODES,
                        help="how Spark's JVMs compile: c1 (quick compiler only, the default: least CPU on few cores) "
                             "or tiered (the JVM's default, C1 then C2) ($PUBSUB_SPARK_JIT)")
    parser.add_argument("--checkpoint", metavar="DIR|URI", help="checkpoint folder, or a Hadoop URI: hdfs://host:port/path (default: checkpoints/pipeline in the runtime folder: $PUBSUB_RUNTIME_DIR, else ~/.local/share/rfc0160-pubsub)")
    parser.add_argument("--views-partitions", type=int, metavar="N", help="partitions of each relay-views topic (default: 2)")
    parser.add_argument("--trigger-seconds", type=float, metavar="S", help="micro-batch interval in seconds (default: 0.2; 0.5 "
                        "halves the job's CPU for a longer wait: docs/benchmarks.md, 'Latency budget')")
    parser.add_argument("--max-offsets-per-trigger", type=int, metavar="N", help="at most this many records per batch and query")
    parser.add_argument("--state-reopen", choices=STATE_REOPEN_MODES,
                        help="how the checkpoint stays bounded: periodic (restart the queries on their checkpoints "
                             "every --state-reopen-minutes, the default), every-commit (Spark's unloadOnCommit) or "
                             "never ($PUBSUB_STATE_REOPEN)")
    parser.add_argument("--state-reopen-minutes", type=float, metavar="M",
                        help="minutes between two periodic restarts (default: 30; $PUBSUB_STATE_REOPEN_MINUTES)")
    parser.add_argument("--metrics-port", type=int, metavar="PORT",
                        help="serve Prometheus metrics on this port (/metrics; default: none; $PUBSUB_METRICS_PORT)")
    parser.add_argument("--metrics-host", metavar="ADDR",
                        help="address the metrics endpoint binds to (default: 127.0.0.1; $PUBSUB_METRICS_HOST)")
    parser.add_argument("--ship", choices=SHIP_MODES,
                        help="how the project reaches the executors: archive (this venv packed, sent in "
                             "spark.archives), shared (the executors run this interpreter) or auto (archive for a "
                             "spark:// master when installed from a wheel, the default; $PUBSUB_SHIP)")
    parser.add_argument("--standby", action="store_true", default=None,
                        help="start Spark now, then wait for the job running on the same checkpoint on this host "
                             "to end (a crash included) and take over from it: a warm standby that skips Spark's "
                             "start-up (default: refuse while another job runs on it; $PUBSUB_STANDBY)")
    parser.add_argument("--available-now", action="store_true", help="drain every input topic, then stop")
    parser.add_argument("--run-seconds", type=float, metavar="S", help="stop after this many seconds (default: run until stopped)")


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Settings from the flags above over $PUBSUB_* and the TOML file."""
    return load_settings(
        overrides={
            "kafka_bootstrap": args.bootstrap,
            "spark_master": args.master,
            "realms": ",".join(args.realm) if args.realm else None,
            "protocol_config": args.protocol_config,
            "seam": args.seam,
            "stages": args.stages,
            "spark_jit": args.spark_jit,
            "checkpoint_dir": args.checkpoint,
            "views_partitions": args.views_partitions,
            "trigger_seconds": args.trigger_seconds,
            "max_offsets_per_trigger": args.max_offsets_per_trigger,
            "state_reopen": args.state_reopen,
            "state_reopen_minutes": args.state_reopen_minutes,
            "metrics_port": args.metrics_port,
            "metrics_host": args.metrics_host,
            "ship": args.ship,
            "standby": args.standby,
            **security_overrides(args),
        },
        config_file=args.config,
        flags=SECURITY_FLAGS,
    )
