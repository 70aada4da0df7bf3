"""The checkpoint setting takes a plain path (a local folder, as it always did), a ``file:`` URI (the same) or a
Hadoop file system's URI, kept whole (``hdfs://host:port/path`` must not become ``hdfs:/host:port/path``)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from settings.checkpoint_location import HadoopPath, checkpoint_location
from settings.errors import SettingsError
from settings.job_flags import add_job_arguments, settings_from_args
from settings.settings import load_settings


@pytest.mark.parametrize(("raw", "expected"), [
    ("/srv/pubsub/checkpoints", Path("/srv/pubsub/checkpoints")),
    ("checkpoints/pipeline", Path("checkpoints/pipeline")),
    ("a:b", Path("a:b")),
    ("runs:2024/ck", Path("runs:2024/ck")),
    ("c:/x", Path("c:/x")),
    ("file:///srv/pubsub/check%20points", Path("/srv/pubsub/check points")),
    ("file://localhost/srv/ck", Path("/srv/ck")),
    ("file:/srv/ck", Path("/srv/ck")),
])
def test_a_local_location_is_a_path(raw: str, expected: Path) -> None:
    assert checkpoint_location(raw) == expected


@pytest.mark.parametrize("raw", ["hdfs://127.0.0.1:9000/pubsub/ck", "s3a://bucket/pubsub/ck", "hdfs:///pubsub/ck"])
def test_a_hadoop_uri_is_kept_whole(raw: str) -> None:
    location = checkpoint_location(raw)
    assert location == HadoopPath(raw)
    assert str(location / "subscribers" / "offsets") == raw + "/subscribers/offsets"


def test_joining_does_not_double_a_trailing_slash() -> None:
    assert str(HadoopPath("hdfs://nn:8020/ck/") / "seam.key") == "hdfs://nn:8020/ck/seam.key"


@pytest.mark.parametrize("raw", ["hdfs://nn:8020", "hdfs://nn:8020/", "file://otherhost/ck"])
def test_a_uri_without_a_folder_or_naming_another_host_is_refused(raw: str) -> None:
    with pytest.raises(SettingsError, match="checkpoint_dir"):
        load_settings(overrides={"checkpoint_dir": raw}, environ={})


def test_the_flag_the_environment_and_the_file_keep_the_uri(tmp_path: Path) -> None:
    uri = "hdfs://127.0.0.1:9000/pubsub/ck"
    parser = argparse.ArgumentParser()
    add_job_arguments(parser)
    assert settings_from_args(parser.parse_args(["--checkpoint", uri])).checkpoint_dir == HadoopPath(uri)
    assert load_settings(environ={"PUBSUB_CHECKPOINT_DIR": uri}).checkpoint_dir == HadoopPath(uri)
    config = tmp_path / "pubsub.toml"
    config.write_text(f'checkpoint_dir = "{uri}"\n')
    assert load_settings(config_file=config, environ={}).checkpoint_dir == HadoopPath(uri)
    assert settings_from_args(parser.parse_args(["--checkpoint", "ck"])).checkpoint_dir == Path("ck")
