"""The one Spark session factory of the job and the tests, and the confs a spark-submit passes for the same setup.

What it fixes, and why (Spark's Structured Streaming guide, "transformWithState" and "State Store"; docs/operations.md,
"The Spark job"):
- RocksDB state store: transformWithState refuses the default HDFS-backed provider. Changelog checkpointing is on:
  without it every commit uploads a RocksDB snapshot whose MANIFEST grows with each batch, so the checkpoint
  folder grew without bound (docs/benchmarks.md, "Measured defaults"). With it, a put that cannot be written (a full
  checkpoint disk) kills pyspark 4.2's Python state server thread without an answer and the batch waits forever;
  `streaming.job` watches for that stall (``_StallWatch``) and fails the job with ``CheckpointDiskFull``.
- spark.jars: the Kafka connector from jvm/lib/spark-kafka, so nothing is downloaded at run time.
- executors on this Python (sys.executable), so they have protobuf, pyarrow and the project installed.
- 127.0.0.1 everywhere: a session never binds to another interface.
- the shuffle partitions (= state store instances) ``shuffle_partitions`` names, else the split layout's two (the job
  sets a new fused checkpoint's own number before it starts: ``stage_layout.new_checkpoint_partitions``); UTC
  session time zone for determinism.
- the JVMs compile with C1 only unless ``spark_jit = "tiered"``: on 2 cores the C2 compiler threads took more CPU
  than the job's own work; without them Spark's JVM used less CPU and live latency fell over the first minute,
  though not over three (docs/benchmarks.md, "Measured defaults", "The JVM's compiler").
- checkpoint files through Hadoop's FileSystem API, not FileContext: the checkpoint folder is usually a local path
  (``checkpoint_dir``), and FileContext's rename on the local file system starts a ``readlink`` process for
  each path it checks, four per checkpoint file written with its .crc (every offset, commit and state changelog
  file): with ``chmod`` for each file created, the Spark JVM started several processes per file, a few dozen a
  second in a live job (docs/benchmarks.md, "Measured code choices"). FileSystem's rename is one POSIX rename here,
  atomic as the checkpoint needs; the ``chmod`` stays (Hadoop sets a file's mode through a process when its native
  library is absent). On HDFS (an ``hdfs://`` checkpoint) FileSystem's rename is the NameNode's, atomic too.
- the driver's JVM maps a class data sharing archive of Spark's classes when `pubsub job --write-class-archive`
  built one (``streaming.class_archive``): a restarted job's session starts sooner (docs/benchmarks.md,
  "Recovery after a crash").
- Spark's local files (``spark.local.dir``) and the driver JVM's temporary ones (``java.io.tmpdir``) in a folder of
  the process's own under the runtime folder, swept when the process has ended however it ended (``streaming.scratch``):
  Spark's shutdown hook, which deletes them from /tmp otherwise, does not run after a SIGKILL.
- SPARK_HOME is a folder of links to the pyspark package's bin/, jars/ and sbin/ without its python/lib/ zips
  (``worker_spark_home``), so Python workers import pyspark compiled from site-packages, not from source in a zip.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from settings.errors import JarsMissingError
from settings.paths import jvm_lib_dir, runtime_dir
from settings.settings import JIT_JAVA_OPTIONS, Settings
from streaming.class_archive import archive_in_use, use_options
from streaming.shipping import EXECUTOR_PYTHON, driver_folder, pack_environment, shipping_conf, wants_archive
from streaming.scratch import process_folder
from streaming.stage_layout import SPLIT_PARTITIONS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession as SparkSession  # re-exported: benchmarks reach Spark's types through here

__all__ = ["SCRATCH_FOLDER", "SPARK_PROMETHEUS_PATH", "build_spark", "connector_jars", "jit_seconds", "jvm_pid", "jvm_start_times", "local_file_system_jar",
           "prepare_environment", "prometheus_conf", "pyspark_package_dir", "pyspark_version", "spark_conf",
           "worker_spark_home"]

LOG4J2_CONF = Path(__file__).resolve().parent / "conf" / "log4j2.properties"
"""Spark's quiet log configuration, package data of ``streaming``."""
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
CHECKPOINT_FILE_MANAGER = "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
LOCAL_FILE_SYSTEM = "io.rfc0160.pubsub.fs.NioLocalFileSystem"
"""Hadoop's local file system with permissions set by a system call, not a ``chmod`` process per file and folder
(jvm/local-fs: 77 processes per available-now run of the standard workload, 7-8 ms each): ``file:`` checkpoints."""


def connector_jars() -> list[str]:
    """The Spark Kafka connector jars fetched by `make setup`, sorted (raises if they are missing)."""
    folder = jvm_lib_dir("spark-kafka")
    jars = sorted(str(path) for path in folder.glob("*.jar"))
    if not any("spark-sql-kafka" in jar for jar in jars):
        raise JarsMissingError(folder)
    return jars


def local_file_system_jar() -> str:
    """The jar of ``LOCAL_FILE_SYSTEM``, built by `make setup` (raises if it is missing)."""
    folder = jvm_lib_dir("local-fs")
    jar = folder / "pubsub-local-fs.jar"
    if not jar.exists():
        raise JarsMissingError(folder)
    return str(jar)


def pyspark_package_dir() -> Path:
    """The installed pyspark package folder: pyspark's default SPARK_HOME (bin/, jars/, sbin/, python/lib/)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def pyspark_version() -> str:
    """The installed pyspark's version (benchmarks record it beside their figures)."""
    import pyspark

    return str(pyspark.__version__)


def jit_seconds() -> float | None:
    """Seconds the active Spark session's JVM has spent compiling so far (its CompilationMXBean; None without a
    session): a run that adds much to it ran on a JVM still warming up, which a job running for hours is not."""
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    if spark is None:
        return None
    bean = spark._jvm.java.lang.management.ManagementFactory.getCompilationMXBean()  # type: ignore[union-attr]
    return float(bean.getTotalCompilationTime()) / 1000


def jvm_start_times(spark: SparkSession) -> tuple[float, float]:
    """When the session's JVM process started and when its SparkContext began, in seconds since the epoch (the
    start-up log's split of a session's start: spark-submit's launcher, the JVM, the context)."""
    runtime = spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()  # type: ignore[union-attr]
    return int(runtime.getStartTime()) / 1000, int(spark.sparkContext.startTime) / 1000


def jvm_pid(spark: SparkSession) -> int:
    """The process id of the session's JVM (the driver's; in local mode the executor's too)."""
    return int(spark._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[union-attr]


SPARK_HOME_PARTS = ("bin", "jars", "sbin")
"""What Spark's launcher scripts, the standalone daemons and the JVM read from SPARK_HOME here."""


def worker_spark_home() -> Path:
    """A SPARK_HOME of links to the pyspark package's ``SPARK_HOME_PARTS``, without its python/lib/ (made once).

    Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` first on every Python worker's path, and Python compiles a
    zip's modules from source at each import (a zip gets no .pyc written), so every fresh worker compiled pyspark
    again, a worker started at every query start. Without the zip, workers import the same pyspark (this
    interpreter's) from site-packages, about twice as fast (docs/benchmarks.md, "Measured defaults")."""
    package = pyspark_package_dir()
    home = runtime_dir() / "spark-home"
    home.mkdir(parents=True, exist_ok=True)
    for part in SPARK_HOME_PARTS:
        link = home / part
        if link.is_symlink() and Path(os.readlink(link)) == package / part:
            continue
        spare = home / f".{part}.{os.getpid()}"
        spare.unlink(missing_ok=True)
        spare.symlink_to(package / part, target_is_directory=True)
        os.replace(spare, link)  # atomic: another process starting Spark beside this one sees one link or the other
    return home


def prepare_environment() -> None:
    """Environment that Spark's launcher scripts and Python workers read: loopback, this Python (which has the
    project installed) for the workers, and ``worker_spark_home`` as SPARK_HOME unless one of another Spark is set."""
    current = os.environ.get("SPARK_HOME")
    if not current or Path(current).resolve() == pyspark_package_dir():
        os.environ["SPARK_HOME"] = str(worker_spark_home())
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable


SCRATCH_FOLDER = "scratch"
"""The runtime folder's folder of the drivers' local files (``streaming.scratch``)."""

REDACTION_REGEX = r"(?i)secret|password|token|access[.]?key|keystore[.]key|jaas"
"""Conf and option names Spark redacts (``spark.redaction.regex``)."""


def spark_conf(settings: Settings, app_name: str, ui: bool = False, driver_options: Sequence[str] = (),
               use_archive: bool = True) -> dict[str, str]:
    """Every conf the project sets, as a dict (for the session builder and for spark-submit --conf). The driver's
    JVM maps the class archive if there is one (``class_archive.archive_in_use``; not with ``use_archive`` False)
    and takes ``driver_options`` too."""
    java_options = " ".join((f"-Dlog4j2.configurationFile={LOG4J2_CONF}", *JIT_JAVA_OPTIONS[settings.spark_jit]))
    archive = archive_in_use(settings) if use_archive else None
    driver_java = " ".join((java_options, *(use_options(archive) if archive is not None else ()), *driver_options))
    local_fs = local_file_system_jar()
    conf = {
        "spark.app.name": app_name,
        "spark.master": settings.spark_master,
        "spark.jars": ",".join([*connector_jars(), local_fs]),
        # on the JVMs' own class path too: spark-submit opens file: paths before it loads spark.jars
        "spark.driver.extraClassPath": local_fs,
        "spark.executor.extraClassPath": local_fs,
        "spark.hadoop.fs.file.impl": LOCAL_FILE_SYSTEM,
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        # Loopback unless the executors run elsewhere (docker-compose, a real cluster): then name a reachable host.
        "spark.driver.host": os.environ.get("PUBSUB_SPARK_DRIVER_HOST", "127.0.0.1"),
        "spark.driver.bindAddress": os.environ.get("PUBSUB_SPARK_DRIVER_BIND_ADDRESS", "127.0.0.1"),
        "spark.ui.enabled": "true" if ui or settings.metrics_port is not None else "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(settings.shuffle_partitions or SPLIT_PARTITIONS),
        "spark.default.parallelism": str(settings.shuffle_partitions or SPLIT_PARTITIONS),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.sql.streaming.checkpointFileManagerClass": CHECKPOINT_FILE_MANAGER,
        "spark.sql.streaming.stopGracefullyOnShutdown": "true",
        "spark.driver.extraJavaOptions": driver_java,
        "spark.executor.extraJavaOptions": java_options,
        # Spark masks options whose name matches this in its UI, logs and event log: its default (secret, password,
        # token, access key) and the Kafka client key the source takes inline (kafka.ssl.keystore.key)
        "spark.redaction.regex": REDACTION_REGEX,
    }
    if settings.state_reopen == "every-commit":
        conf["spark.sql.streaming.stateStore.unloadOnCommit"] = "true"
    if settings.metrics_port is not None:
        conf.update(prometheus_conf(settings))
    if wants_archive(settings.ship, settings.spark_master):
        conf.update(shipping_conf(pack_environment()))
    if not settings.spark_master.startswith("local"):
        conf["spark.cores.max"] = os.environ.get("PUBSUB_SPARK_CORES_MAX", "2")
        conf["spark.executor.memory"] = os.environ.get("PUBSUB_SPARK_EXECUTOR_MEMORY", "1g")
    return conf


SPARK_PROMETHEUS_PATH = "/metrics/prometheus"
"""Where Spark's UI serves the driver's metrics system in Prometheus text (``PrometheusServlet``); the executors'
are at ``/metrics/executors/prometheus``."""


def prometheus_conf(settings: Settings) -> dict[str, str]:
    """Spark's own metrics in Prometheus text on its UI (``spark_ui_port``, on ``SPARK_LOCAL_IP``: loopback), with
    the streaming queries' gauges (input and processing rates, latency, state rows and bytes) among them."""
    return {
        "spark.ui.port": str(settings.spark_ui_port),
        "spark.ui.prometheus.enabled": "true",
        "spark.metrics.conf.*.sink.prometheusServlet.class": "org.apache.spark.metrics.sink.PrometheusServlet",
        "spark.metrics.conf.*.sink.prometheusServlet.path": SPARK_PROMETHEUS_PATH,
        "spark.metrics.namespace": "pubsub",
        "spark.sql.streaming.metricsEnabled": "true",
    }


@contextlib.contextmanager
def _output_to(log_file: Path | None) -> Iterator[None]:
    """While the JVM starts, point this process's stdout and stderr at ``log_file``: the JVM (and the Python
    workers it starts, whose per-UDF lines are plain prints) inherit it, while our own output stays on the
    console once the descriptors are restored."""
    if log_file is None:
        yield
        return
    log_file.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(log_file, "ab") as target:
        os.dup2(target.fileno(), 1)
        os.dup2(target.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)


@contextlib.contextmanager
def _working_folder(folder: Path | None) -> Iterator[None]:
    """While the JVM starts, this process's working folder is ``folder`` (the JVM keeps it; ours comes back)."""
    if folder is None:
        yield
        return
    saved = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(saved)


def build_spark(
    settings: Settings, app_name: str = "rfc0160-pubsub", ui: bool = False, log_file: Path | None = None,
    driver_options: Sequence[str] = (), use_archive: bool = True,
) -> SparkSession:
    """A session configured as above (or the active one, whose static confs then cannot change); with
    ``log_file``, Spark's and its Python workers' console output goes to that file. ``driver_options`` and
    ``use_archive``: as for ``spark_conf``. Spark's local files and the driver JVM's temporary files go to this
    process's folder under the runtime folder's ``scratch/`` (``streaming.scratch``)."""
    prepare_environment()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    scratch = process_folder(runtime_dir() / SCRATCH_FOLDER)
    conf = spark_conf(settings, app_name, ui, (*driver_options, f"-Djava.io.tmpdir={scratch}"), use_archive)
    conf["spark.local.dir"] = str(scratch)
    for key, value in conf.items():
        builder = builder.config(key, value)
    shipped = conf["spark.pyspark.python"] == EXECUTOR_PYTHON
    if shipped:  # pyspark sends this interpreter path with every Python function (streaming.shipping)
        os.environ["PYSPARK_PYTHON"] = EXECUTOR_PYTHON
    with _output_to(log_file), _working_folder(driver_folder() if shipped else None):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("PUBSUB_SPARK_LOG_LEVEL", "WARN"))
    return spark
