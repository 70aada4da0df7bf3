"""`pubsub job --write-class-archive`: a Spark session on the job's confs whose JVM loads what a restarted job's
JVM loads (the session, query planning, the transformWithState operator, its Python runner and state server, Arrow, the
RocksDB state store), then exits and writes them to the archive (``streaming.class_archive``)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

from settings.paths import runtime_dir
from settings.settings import Settings
from streaming.class_archive import default_archive, dump_options, manifest_of, write_manifest
from streaming.errors import ClassArchiveNotWritten

__all__ = ["OUTPUT_SCHEMA", "RowCount", "build_class_archive"]

OUTPUT_SCHEMA = "k long, n long"


class RowCount(StatefulProcessor):
    """Counts each key's rows in a value state (one read and one write per key and batch, as the stages do)."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.count = handle.getValueState("count", "n long")

    def handleInputRows(self, key: Any, rows: Iterator[pandas.DataFrame],
                        timerValues: Any) -> Iterator[pandas.DataFrame]:
        seen = self.count.get()
        total = sum(len(frame) for frame in rows) + (int(seen[0]) if seen is not None else 0)
        self.count.update((total,))
        yield pandas.DataFrame({"k": [int(key[0])], "n": [total]})

    def close(self) -> None:
        pass


def build_class_archive(settings: Settings, target: Path | None = None, timeout: float = 300.0) -> Path:
    """Start a session with the job's confs, run a batch query and a transformWithState query in pandas (RocksDB
    state store, one trigger, twice: the second loads the first's state), stop the JVM and wait for it to write
    the archive and its manifest; returns its path. The file appears whole or not at all (written beside it, then
    renamed)."""
    from pyspark import SparkContext
    from pyspark.sql import functions

    from streaming.spark_session import build_spark

    target = target or default_archive()
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}")
    partial.unlink(missing_ok=True)
    spark = build_spark(settings, app_name="rfc0160-class-archive", log_file=runtime_dir() / "logs" / "spark.log",
                        driver_options=dump_options(partial), use_archive=False)
    with tempfile.TemporaryDirectory(prefix="pubsub-class-archive-") as scratch:
        spark.range(1000).groupBy((functions.col("id") % 7).alias("k")).count().collect()
        rates = spark.readStream.format("rate").option("rowsPerSecond", 100).load()
        keyed = rates.select((functions.col("value") % 7).alias("k"), "value")
        counts = keyed.groupBy("k").transformWithStateInPandas(
            statefulProcessor=RowCount(), outputStructType=OUTPUT_SCHEMA, outputMode="Update", timeMode="None")
        for _ in range(2):  # the second run loads the state the first committed, as a restarted job does
            query = (counts.writeStream.format("noop").outputMode("update").trigger(once=True)
                     .option("checkpointLocation", str(Path(scratch) / "checkpoint")).start())
            query.awaitTermination(int(timeout))
    gateway = SparkContext._gateway
    spark.stop()
    process = getattr(gateway, "proc", None)
    if process is not None:
        process.stdin.close()  # the JVM's gateway exits on end of input: a normal exit, which writes the archive
        process.wait(timeout)
    if not partial.is_file():
        raise ClassArchiveNotWritten(partial)
    write_manifest(partial, manifest_of(target))  # before the archive: a manifest naming another size is refused
    os.replace(partial, target)
    return target
