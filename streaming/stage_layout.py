"""Which way a checkpoint runs the two stages: fused (one query) or split (two queries joined by the seam topic).

A checkpoint keeps the layout it was made with: the fused query's state is in ``<checkpoint>/fused`` (the realm's
pages and, beside them, its subscribers'), the split job's in ``<checkpoint>/relay`` and ``<checkpoint>/subscribers``
(Stage S's state spread over the seam's partitions). Moving a deployment from one to the other would mean moving
every subscriber's state between stores, which no release does; the job refuses a layout its checkpoint was not
made with (``StagesMismatch``) instead of starting one side afresh.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from settings.checkpoint_location import FUSED_FOLDER, SPLIT_FOLDERS, CheckpointLocation, HadoopPath
from streaming.checkpoint_files import list_names
from streaming.errors import StagesMismatch

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["FUSED", "NEW_CHECKPOINT_STAGES", "SPLIT", "SPLIT_PARTITIONS", "checkpoint_stages", "layout_of",
           "new_checkpoint_partitions", "resolve_stages"]

FUSED = "fused"
SPLIT = "split"
NEW_CHECKPOINT_STAGES = FUSED
"""What ``stages = "auto"`` runs on a checkpoint that holds neither layout yet: fused, whose blocks reach their
subscribers without the seam's hop (docs/benchmarks.md, "Latency budget")."""

SPLIT_PARTITIONS = 2
"""The split layout's shuffle partitions unless ``shuffle_partitions`` says otherwise: Stage S spreads a realm's
subscribers over them (``streaming.lanes``), one task per core of a two-core machine."""


def layout_of(names: Collection[str]) -> str | None:
    """The layout of a checkpoint folder holding the entries ``names``; None for a new (or empty) one. (The job
    never makes both folders in one checkpoint: it refuses the other layout first.)"""
    if FUSED_FOLDER in names:
        return FUSED
    return SPLIT if any(name in names for name in SPLIT_FOLDERS) else None


def checkpoint_stages(spark: SparkSession, location: CheckpointLocation) -> str | None:
    """``layout_of`` the checkpoint folder, read through the session's Hadoop file system when it is not local."""
    if isinstance(location, HadoopPath):
        return layout_of(list_names(spark, location))
    return layout_of([entry.name for entry in location.iterdir()] if location.is_dir() else [])


def resolve_stages(asked: str, found: str | None, location: CheckpointLocation) -> str:
    """The layout to run: the checkpoint's own (``found``) if it has one, else ``asked`` (``auto``:
    ``NEW_CHECKPOINT_STAGES``); ``StagesMismatch`` when ``asked`` names the other one."""
    if found is None:
        return NEW_CHECKPOINT_STAGES if asked == "auto" else asked
    if asked not in ("auto", found):
        raise StagesMismatch(location, found, asked)
    return found


def new_checkpoint_partitions(asked: int | None, stages: str, realms: Collection[str]) -> int:
    """The shuffle partitions a new checkpoint of layout ``stages`` is made with: ``asked`` if set; else, fused,
    one per realm (at least one), since the fused query groups by realm alone and a partition without a realm
    still costs a task in every batch; else ``SPLIT_PARTITIONS``. Spark keeps a checkpoint's own number at a
    restart, whatever the session says."""
    if asked is not None:
        return asked
    return max(1, len(realms)) if stages == FUSED else SPLIT_PARTITIONS
