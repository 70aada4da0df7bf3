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

__all__ = ["FUSED", "NEW_CHECKPOINT_STAGES", "SPLIT", "checkpoint_stages", "layout_of", "resolve_stages"]

FUSED = "fused"
SPLIT = "split"
NEW_CHECKPOINT_STAGES = FUSED
"""What ``stages = "auto"`` runs on a checkpoint that holds neither layout yet: fused, whose blocks reach their
subscribers without the seam's hop (docs/benchmarks.md, "Latency budget")."""


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
