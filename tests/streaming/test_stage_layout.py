"""Which layout a checkpoint runs: its own when it has one, the setting's for a new one, never the other one."""

from __future__ import annotations

from pathlib import Path

import pytest

from streaming.errors import StagesMismatch
from streaming.stage_layout import (NEW_CHECKPOINT_STAGES, SPLIT_PARTITIONS, layout_of, new_checkpoint_partitions,
                                    resolve_stages)

CHECKPOINT = Path("/srv/pubsub/checkpoint")


@pytest.mark.parametrize(("names", "layout"), [
    ([], None), (["seam.key"], None), (["relay"], "split"), (["subscribers", "seam.key"], "split"),
    (["relay", "subscribers"], "split"), (["fused"], "fused"),
])
def test_a_checkpoint_s_layout_is_read_from_its_folders(names: list[str], layout: str | None) -> None:
    assert layout_of(names) == layout


@pytest.mark.parametrize(("asked", "found", "runs"), [
    ("auto", None, NEW_CHECKPOINT_STAGES), ("fused", None, "fused"), ("split", None, "split"),
    ("auto", "fused", "fused"), ("auto", "split", "split"), ("fused", "fused", "fused"), ("split", "split", "split"),
])
def test_the_checkpoint_s_own_layout_wins_over_auto(asked: str, found: str | None, runs: str) -> None:
    assert resolve_stages(asked, found, CHECKPOINT) == runs


@pytest.mark.parametrize(("asked", "found"), [("fused", "split"), ("split", "fused")])
def test_the_other_layout_is_refused_naming_both(asked: str, found: str) -> None:
    with pytest.raises(StagesMismatch) as caught:
        resolve_stages(asked, found, CHECKPOINT)
    assert (caught.value.checkpoint, caught.value.found, caught.value.asked) == (CHECKPOINT, found, asked)
    assert str(caught.value).startswith(f"the checkpoint {CHECKPOINT} holds a {found} job's state and cannot run "
                                        f"{asked}: run with --stages {found}")


@pytest.mark.parametrize(("asked", "stages", "realms", "partitions"), [
    (None, "fused", [], 1), (None, "fused", ["polkadot"], 1), (None, "fused", ["kusama", "westend"], 2),
    (None, "split", ["polkadot"], SPLIT_PARTITIONS), (None, "split", [], 2),
    (4, "fused", ["polkadot"], 4), (3, "split", ["polkadot"], 3),
])
def test_a_new_checkpoint_gets_one_partition_per_realm_fused_and_two_split_unless_set(
        asked: int | None, stages: str, realms: list[str], partitions: int) -> None:
    assert new_checkpoint_partitions(asked, stages, realms) == partitions
