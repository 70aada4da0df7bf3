"""Stage S's lanes: a grouping column that spreads a realm's subscribers evenly over Stage S's partitions.

Spark places each (realm, subscriber) group by a hash of its grouping key, so a handful of subscribers share the
partitions by luck: the standard workload's six hash 5 to 1 over two, and Stage S's batch waits for the worker that
holds five. Stage S groups by (realm, subscriber, lane) instead, where the lane is the first small number that
makes Spark's hash send subscriber ``n`` (its para id) to partition ``n mod P``: consecutive para ids land on every
partition in turn, other ids no worse than the hash alone. The lane is a pure function of the realm, the
subscriber and ``P``, so each subscriber keeps one state key for the life of the checkpoint; ``P`` is the one
the checkpoint recorded (Spark keeps it whatever the session says later).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from settings.checkpoint_location import CheckpointLocation, HadoopPath
from streaming.checkpoint_files import list_names, read_text
from streaming.errors import CheckpointUnreadable

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession

__all__ = ["LANE_SEARCH_PER_PARTITION", "SHUFFLE_PARTITIONS", "lane_column", "recorded_partitions",
           "stateful_partitions"]

SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"

LANE_SEARCH_PER_PARTITION = 16
"""Lanes tried per partition: a lane hits the wanted partition with probability 1/P, so 16 P tries all miss with
probability about e^-16; then the lane is -1 and the subscriber goes where the hash puts it."""


def lane_column(partitions: int) -> Column:
    """The lane of each row from its ``realm`` and ``subscriber`` columns, for ``partitions`` partitions: the
    smallest ``salt`` with ``pmod(hash(realm, subscriber, salt), partitions)`` (Spark's hash partitioning of the
    grouping key, Murmur3 with seed 42) equal to the para id mod ``partitions``; -1 for a subscriber that is not a
    number or when no salt is found."""
    from pyspark.sql import functions as F

    wanted = f"pmod(try_cast(subscriber AS BIGINT), {partitions})"
    search = LANE_SEARCH_PER_PARTITION * partitions
    hits = f"transform(sequence(0, {search - 1}), salt -> pmod(hash(realm, subscriber, salt), {partitions}) = {wanted})"
    return F.expr(f"array_position({hits}, true) - 1").cast("int")


def recorded_partitions(checkpoint: CheckpointLocation, spark: SparkSession | None = None) -> int | None:
    """The shuffle partitions a query's checkpoint recorded in its newest offset log entry; None before its first
    batch (no checkpoint, or no entry yet). A checkpoint on a Hadoop file system is read through ``spark``'s."""
    offsets = checkpoint / "offsets"
    if isinstance(offsets, Path):
        names = [p.name for p in offsets.iterdir()] if offsets.is_dir() else []
    else:
        names = list_names(_session(spark, offsets), offsets)
    batches = [int(name) for name in names if name.isdigit()]
    if not batches:
        return None
    path = offsets / str(max(batches))
    try:
        text = path.read_text() if isinstance(path, Path) else read_text(_session(spark, path), path) or ""
        metadata = json.loads(text.splitlines()[1])
        return int(metadata["conf"][SHUFFLE_PARTITIONS])
    except (OSError, IndexError, ValueError, TypeError, KeyError) as exc:
        raise CheckpointUnreadable(path, f"no {SHUFFLE_PARTITIONS} in its metadata: {type(exc).__name__}") from exc


def _session(spark: SparkSession | None, location: HadoopPath) -> SparkSession:
    if spark is None:
        raise CheckpointUnreadable(location, "a checkpoint on a Hadoop file system is read through a Spark session")
    return spark


def stateful_partitions(spark: SparkSession, checkpoint: CheckpointLocation) -> int:
    """The partitions of a query's state: the checkpoint's (``recorded_partitions``), else the session's."""
    recorded = recorded_partitions(checkpoint, spark)
    return recorded if recorded is not None else int(spark.conf.get(SHUFFLE_PARTITIONS) or 200)
