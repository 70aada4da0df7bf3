"""The settings object: sources in order (defaults < TOML < environment < flags), validation, secrets never shown."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from settings.errors import SettingsError
from settings.settings import Secret, load_settings
from streaming.spark_session import CHECKPOINT_FILE_MANAGER

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def test_later_sources_win(tmp_path: Path) -> None:
    config = tmp_path / "pubsub.toml"
    config.write_text('[pubsub]\ntopic_prefix = "kusama."\ntopic_partitions = 4\nspark_master = "local[1]"\n')
    env = {"PUBSUB_CONFIG": str(config), "PUBSUB_SPARK_MASTER": "spark://127.0.0.1:7077"}
    settings = load_settings(overrides={"topic_partitions": 3, "kafka_bootstrap": None}, environ=env)
    assert settings.topic_prefix == "kusama."  # file
    assert settings.spark_master == "spark://127.0.0.1:7077"  # environment over file
    assert settings.topic_partitions == 3  # flag over file
    assert settings.kafka_bootstrap is None  # a None flag is "not given"
    assert settings.topic("updates") == "kusama.updates"


def test_the_password_is_never_printed() -> None:
    settings = load_settings(
        overrides={"kafka_bootstrap": "broker:9092", "kafka_security_protocol": "SASL_SSL",
                   "kafka_sasl_mechanism": "PLAIN", "kafka_sasl_username": "u"},
        environ={"PUBSUB_KAFKA_SASL_PASSWORD": "hunter2"},
    )
    assert isinstance(settings.kafka_sasl_password, Secret)
    for shown in (repr(settings), str(settings), str(settings.describe())):
        assert "hunter2" not in shown
    assert settings.kafka_client_config()["sasl.password"] == "hunter2"
    assert 'password="hunter2"' in settings.spark_kafka_options()["kafka.sasl.jaas.config"]


@pytest.mark.parametrize(
    ("overrides", "name"),
    [
        ({"kafka_bootstrap": "no-port"}, "kafka_bootstrap"),
        ({"topic_prefix": "bad prefix "}, "topic_prefix"),
        ({"shuffle_partitions": 0}, "shuffle_partitions"),
        ({"trigger_seconds": "soon"}, "trigger_seconds"),
        ({"kafka_security_protocol": "TLS"}, "kafka_security_protocol"),
        ({"spark_jit": "c2"}, "spark_jit"),
        ({"no_such_setting": 1}, "no_such_setting"),
    ],
)
def test_bad_values_are_typed_errors_naming_the_setting(overrides: dict[str, object], name: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings(overrides=overrides, environ={})
    assert caught.value.name == name


def test_an_unknown_key_in_the_file_names_the_file(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("typo_setting = 1\n")
    with pytest.raises(SettingsError, match="bad.toml"):
        load_settings(config_file=config, environ={})


def test_the_seam_comes_from_the_environment_or_a_flag_and_overrides_the_protocol_file(tmp_path: Path) -> None:
    from pubsub_core.stages.config import Seam
    from settings.protocol import load_protocol_config

    protocol = tmp_path / "protocol.json"
    protocol.write_text('{"seam": "full"}')
    assert load_settings(environ={}).seam is None
    assert load_protocol_config(protocol, None).seam is Seam.FULL  # no setting: the file's
    from_env = load_settings(environ={"PUBSUB_SEAM": "delta"})
    assert load_protocol_config(protocol, from_env.seam).seam is Seam.DELTA
    assert load_settings(overrides={"seam": "full"}, environ={"PUBSUB_SEAM": "delta"}).seam == "full"
    with pytest.raises(SettingsError) as refused:
        load_settings(environ={"PUBSUB_SEAM": "partial"})
    assert refused.value.name == "seam" and "delta" in refused.value.reason


def test_the_jvm_compiler_setting_reaches_the_driver_and_the_executors() -> None:
    from streaming.spark_session import spark_conf

    assert load_settings(environ={}).spark_jit == "c1"
    quick = spark_conf(load_settings(environ={}), "test")
    tiered = spark_conf(load_settings(environ={"PUBSUB_SPARK_JIT": "tiered"}), "test")
    for side in ("driver", "executor"):
        options = quick[f"spark.{side}.extraJavaOptions"].split()
        assert "-XX:TieredStopAtLevel=1" in options and any(o.startswith("-Dlog4j2.configurationFile=") for o in options)
        assert not any(o.startswith("-XX:TieredStopAtLevel") for o in tiered[f"spark.{side}.extraJavaOptions"].split())
    assert load_settings(overrides={"spark_jit": "c1"}, environ={"PUBSUB_SPARK_JIT": "tiered"}).spark_jit == "c1"


@pytest.mark.spark
def test_the_running_jvm_compiles_with_c1_only(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert "-XX:TieredStopAtLevel=1" in arguments


def test_the_kafka_source_bounds_the_brokers_fetch_hold() -> None:
    """Spark's pooled consumers met, at every batch, a fetch the broker held at the log end for Kafka's default
    500 ms; the source asks for a short hold (streaming/pipeline.py says what it measured)."""
    from streaming.pipeline import KAFKA_SOURCE_OPTIONS as source

    assert int(source["kafka.fetch.max.wait.ms"]) <= 50
    assert source["kafka.isolation.level"] == "read_committed"


def test_the_stages_writers_batch_a_partition_s_records_up_to_a_mebibyte() -> None:
    """A view filled Kafka's default 16 KiB batch alone, one LZ4 frame, request and broker validation each; the
    stages' writers batch up to 1 MiB per partition (streaming/record_writer.py says what it measured), within a
    request, on the Java client's partitioner, keep each partition's order through retries, and hold a bounded
    buffer of unsent records. A record waits at most 25 ms for others to share its request: the end of each task's
    writing flushes at once, so only records written while the task still runs wait at all."""
    from pubsub_core.stages.limits import MAX_OUTPUT_BYTES
    from streaming.record_writer import writer_config

    config = writer_config(load_settings(overrides={"kafka_bootstrap": "127.0.0.1:9"}, environ={}))
    assert int(config["batch.size"]) >= 1024 * 1024
    assert int(config["batch.size"]) <= int(config["message.max.bytes"])
    assert 5 <= int(config["linger.ms"]) <= 25
    assert config["partitioner"] == "murmur2_random"
    assert config["enable.idempotence"] == "true" and config["acks"] == "all"
    assert int(config["queue.buffering.max.kbytes"]) * 1024 <= 64 * 1024 * 1024  # a worker's unsent records bounded
    assert int(config["queue.buffering.max.kbytes"]) * 1024 >= 2 * MAX_OUTPUT_BYTES  # two of the largest records
    assert config["bootstrap.servers"] == "127.0.0.1:9"


def test_every_client_reconnects_with_a_short_first_backoff() -> None:
    """librdkafka throttles a new client's first connections by half its reconnect backoff (settings/settings.py);
    every client of the project (admin, producers, consumers, the stages' writers) takes the settings' 10 ms, and
    librdkafka accepts it for each kind."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient

    from producers.transport.topics import consumer_config, producer_config
    from streaming.record_writer import writer_config

    settings = load_settings(overrides={"kafka_bootstrap": "127.0.0.1:9"}, environ={})
    configs = {"admin": settings.kafka_client_config(), "producer": producer_config(settings),
               "consumer": consumer_config(settings, "group"), "writer": writer_config(settings)}
    assert {name: config["reconnect.backoff.ms"] for name, config in configs.items()} == dict.fromkeys(configs, "10")
    AdminClient({**configs["admin"]})
    Producer(configs["producer"]).flush(0)
    Producer(configs["writer"]).flush(0)
    Consumer(configs["consumer"]).close()


@pytest.mark.spark
def test_checkpoint_files_go_through_the_file_system_api(spark: SparkSession, tmp_path: Path) -> None:
    """The manager Spark resolves for a checkpoint folder (offset and commit logs, state changelogs) is the
    FileSystem-based one: FileContext's local rename starts a readlink process per path it checks."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    hadoop_conf = spark._jsparkSession.sessionState().newHadoopConf()
    path = jvm.org.apache.hadoop.fs.Path(tmp_path.as_uri())
    manager = jvm.org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.create(path, hadoop_conf)
    assert manager.getClass().getName() == CHECKPOINT_FILE_MANAGER


@pytest.mark.spark
def test_local_files_get_their_permissions_through_the_projects_file_system(spark: SparkSession, tmp_path: Path) -> None:
    """Spark's file: paths go through the project's local file system (jvm/local-fs), which sets the mode Hadoop
    asks for with a system call; a mode java.nio cannot set (the sticky bit) still goes through Hadoop's chmod."""
    import stat

    from streaming.spark_session import LOCAL_FILE_SYSTEM

    jvm = spark.sparkContext._jvm
    assert jvm is not None
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI(tmp_path.as_uri()),
                                                 spark._jsparkSession.sessionState().newHadoopConf())
    assert fs.getClass().getName() == LOCAL_FILE_SYSTEM
    hadoop = jvm.org.apache.hadoop.fs

    def path(name: str) -> object:
        return hadoop.Path((tmp_path / name).as_uri())

    for mode in (0o600, 0o640, 0o755, 0o777, 0o000):
        fs.create(path(f"file-{mode:o}"), True).close()
        fs.setPermission(path(f"file-{mode:o}"), hadoop.permission.FsPermission(mode))
        assert stat.S_IMODE((tmp_path / f"file-{mode:o}").stat().st_mode) == mode
    assert fs.mkdirs(path("a/b/c"), hadoop.permission.FsPermission(0o750))
    assert stat.S_IMODE((tmp_path / "a" / "b" / "c").stat().st_mode) == 0o750
    fs.setPermission(path("a"), hadoop.permission.FsPermission(0o1777))
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o1777


def test_spark_home_links_the_package_without_its_python_zips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SPARK_HOME/python/lib/pyspark.zip goes first on every Python worker's path; the home the project sets has
    the package's launcher, jars and daemon scripts and no python/, and a link left by another venv is replaced."""
    from streaming.spark_session import SPARK_HOME_PARTS, pyspark_package_dir, worker_spark_home

    monkeypatch.setenv("PUBSUB_RUNTIME_DIR", str(tmp_path))
    package = pyspark_package_dir()
    assert (package / "python" / "lib" / "pyspark.zip").exists()  # what the home leaves out is really there
    (tmp_path / "spark-home").mkdir()
    (tmp_path / "spark-home" / "jars").symlink_to(tmp_path)
    home = worker_spark_home()
    assert home == tmp_path / "spark-home" and worker_spark_home() == home
    assert sorted(p.name for p in home.iterdir()) == sorted(SPARK_HOME_PARTS)
    for part in SPARK_HOME_PARTS:
        assert (home / part).resolve() == package / part
    assert (home / "bin" / "spark-submit").exists() and not (home / "python").exists()


@pytest.mark.parametrize("given", [None, "package", "/opt/another-spark"])
def test_prepare_environment_sets_the_worker_home_unless_another_spark_is_named(
        given: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from streaming.spark_session import prepare_environment, pyspark_package_dir

    monkeypatch.setenv("PUBSUB_RUNTIME_DIR", str(tmp_path))
    for name in ("SPARK_LOCAL_IP", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH"):
        monkeypatch.setenv(name, os.environ.get(name, ""))  # restored after the test, whatever prepare_environment sets
    if given is None:
        monkeypatch.delenv("SPARK_HOME", raising=False)
    else:
        monkeypatch.setenv("SPARK_HOME", str(pyspark_package_dir()) if given == "package" else given)
    prepare_environment()
    expected = "/opt/another-spark" if given == "/opt/another-spark" else str(tmp_path / "spark-home")
    assert os.environ["SPARK_HOME"] == expected


@pytest.mark.spark
def test_python_workers_import_pyspark_compiled_from_site_packages(spark: SparkSession) -> None:
    """Not from SPARK_HOME's pyspark.zip, whose modules Python compiles from source in every fresh worker."""
    from streaming.spark_session import pyspark_package_dir

    files = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("pyspark").__file__).collect()
    assert files == [str(pyspark_package_dir() / "__init__.py")]
