"""Which shuffle partitions Stage S's lanes follow: the checkpoint's newest offset log entry, read without Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streaming.errors import CheckpointUnreadable
from streaming.lanes import SHUFFLE_PARTITIONS, recorded_partitions


def _entry(folder: Path, batch: int, partitions: str | None) -> Path:
    """An offset log entry as Spark writes it: version, metadata (with the session confs it keeps), offsets."""
    conf = {"spark.sql.streaming.stateStore.providerClass": "RocksDBStateStoreProvider"}
    if partitions is not None:
        conf[SHUFFLE_PARTITIONS] = partitions
    metadata = {"batchWatermarkMs": 0, "batchTimestampMs": 1795684097717, "conf": conf}
    path = folder / "offsets" / str(batch)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("v1\n" + json.dumps(metadata) + '\n{"polkadot.relay-views":{"0":309,"1":309}}')
    return path


def test_no_checkpoint_or_no_batch_yet_records_nothing(tmp_path: Path) -> None:
    assert recorded_partitions(tmp_path / "absent") is None
    (tmp_path / "offsets").mkdir()
    (tmp_path / "offsets" / ".0.tmp").write_text("v1\n")
    assert recorded_partitions(tmp_path) is None


def test_the_newest_entry_gives_the_partitions(tmp_path: Path) -> None:
    _entry(tmp_path, 9, "3")
    _entry(tmp_path, 10, "5")
    _entry(tmp_path, 2, "7")
    assert recorded_partitions(tmp_path) == 5


@pytest.mark.parametrize("partitions", [None, "many"])
def test_an_entry_without_a_number_of_partitions_is_a_typed_error(tmp_path: Path, partitions: str | None) -> None:
    path = _entry(tmp_path, 4, partitions)
    with pytest.raises(CheckpointUnreadable) as caught:
        recorded_partitions(tmp_path)
    assert caught.value.path == path
    assert SHUFFLE_PARTITIONS in str(caught.value)


def test_a_truncated_entry_is_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "offsets" / "0"
    path.parent.mkdir()
    path.write_text("v1\n")
    with pytest.raises(CheckpointUnreadable) as caught:
        recorded_partitions(tmp_path)
    assert caught.value.path == path
