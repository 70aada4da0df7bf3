"""An embedded single-node Apache Kafka broker (KRaft), run from the Maven jars in jvm/lib/kafka.

`EmbeddedKafka.start()` reuses a broker recorded in its runtime folder if that one still serves; otherwise it
starts `kafka.Kafka` on the data and ports a stopped broker left (``keep_data=True``) or on free 127.0.0.1 ports
and a freshly formatted data directory, then waits until an AdminClient gets metadata. Commands that write call
`ensure_kafka(settings)`: it honours an external cluster ($PUBSUB_KAFKA_BOOTSTRAP or settings) and only falls back
to the embedded broker, on its kept data, when none is configured. Commands that only read call
`connect_kafka(settings)`, which never starts one.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from producers.transport.topics import create_topics as generic_topics
from producers.transport.topics import admin_client, is_serving, principal
from settings.errors import JarsMissingError
from settings.paths import jvm_lib_dir, runtime_dir
from settings.settings import JIT_JAVA_OPTIONS, Secret, Settings
from supervise.broker_security import (
    MECHANISM,
    SecureFiles,
    acl_bindings,
    make_secure_files,
    role_users,
    scram_arguments,
    server_properties,
)
from supervise.errors import BrokerError, BrokerStartError, tail

__all__ = ["BrokerInfo", "EmbeddedKafka", "connect_kafka", "create_topics", "delete_topics", "embedded_settings",
           "ensure_kafka", "free_port", "free_ports"]

LOG4J2_PROPERTIES = """\
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.file.ref = FILE
logger.kafka.name = kafka.server.KafkaRaftServer
logger.kafka.level = info
"""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the OS picks it)."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports free on 127.0.0.1 right now: the sockets stay bound until all are picked, so
    the OS cannot hand out one port twice (two calls of ``free_port`` in a row can get the same one)."""
    with ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _wait_gone(pid: int, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for ``pid`` to exit (reaping it if it is our child); whether it did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            waited, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            waited = 0
        if waited == pid or not _pid_alive(pid):
            return True
        time.sleep(0.1)
    return False


@dataclass(frozen=True)
class BrokerInfo:
    """A running embedded broker, as recorded in its runtime folder so another process can reuse it."""

    pid: int
    port: int
    controller_port: int
    data_dir: str
    host: str = "127.0.0.1"
    """The address the broker listens on and advertises."""
    secure: bool = False
    """A SASL_SSL listener with SCRAM users and ACLs (``pubsub broker start --secure``); its CA and credentials
    are in the broker's folder (``supervise.broker_security``)."""

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"


def embedded_settings(settings: Settings, info: BrokerInfo, home: Path) -> Settings:
    """``settings`` pointed at the embedded broker ``info``; for a secured one, with its CA and SCRAM login: the
    user ``settings`` name (``kafka_sasl_username``, e.g. ``job``, ``author``, ``collator-2000``; default
    ``operator``) and, unless given, its password from the broker's credentials."""
    settings = settings.with_bootstrap(info.bootstrap)
    if not info.secure:
        return settings
    files = SecureFiles(home)
    user = settings.kafka_sasl_username or "operator"
    password = settings.kafka_sasl_password
    if password is None:
        known = files.passwords()
        if user not in known:
            raise BrokerError(f"the secured embedded broker has no user {user!r} (it has {', '.join(sorted(known))})")
        password = Secret(known[user])
    return dataclasses.replace(settings, kafka_security_protocol="SASL_SSL", kafka_sasl_mechanism=MECHANISM,
                               kafka_sasl_username=user, kafka_sasl_password=password,
                               kafka_ssl_ca_file=files.ca)


class EmbeddedKafka:
    """Start, reuse, inspect and stop one KRaft broker + controller bound to 127.0.0.1 (the broker's listener to
    ``host`` instead when given: an address of this machine that other hosts, e.g. a network namespace, reach)."""

    def __init__(self, home: Path | None = None, heap: str = "512m", start_timeout: float = 90.0,
                 host: str = "127.0.0.1", secure: bool = False, realms: tuple[str, ...] = ("polkadot",),
                 paras: tuple[int, ...] = ()) -> None:
        self.home = home or runtime_dir() / "kafka"
        self.host = host
        self.heap = heap
        self.start_timeout = start_timeout
        self.secure = secure
        """Start a secured broker (SASL_SSL, SCRAM, ACLs for the roles on ``realms``, collators of ``paras``)."""
        self.realms = realms
        self.paras = paras
        self.started_here = False
        """True when start() launched a new process (rather than reusing a running broker)."""

    @property
    def _state_file(self) -> Path:
        return self.home / "broker.json"

    @property
    def log_path(self) -> Path:
        return self.home / "broker.log"

    def status(self) -> BrokerInfo | None:
        """The recorded broker if its process is alive and it serves; None otherwise."""
        try:
            info = BrokerInfo(**json.loads(self._state_file.read_text()))
        except (OSError, ValueError, TypeError):
            return None
        if _pid_alive(info.pid) and is_serving(info.bootstrap, extra=self._client(info)):
            return info
        return None

    def _client(self, info: BrokerInfo) -> dict[str, str]:
        """The operator's client properties for ``info`` (nothing for a plaintext broker)."""
        if not info.secure:
            return {}
        config = embedded_settings(Settings(), info, self.home).kafka_client_config()
        config.pop("bootstrap.servers")
        return config

    def start(self, keep_data: bool = False) -> BrokerInfo:
        """Reuse the recorded broker if it serves, else start a new one on free ports and wait until it serves.

        ``keep_data``: restart on the data a previous broker of this folder left (after ``stop`` or ``kill``), on
        the same ports, so clients reconnect to the same bootstrap; a folder never formatted starts afresh."""
        running = self.status()
        if running is not None:
            self.started_here = False
            return running
        classpath = self._classpath()
        self._stop_recorded()
        data_dir = self.home / "data"
        config = self.home / "server.properties"
        java = shutil.which("java") or "java"
        base = [java, "-Xms" + self.heap, "-Xmx" + self.heap, "-Djava.awt.headless=true",
                f"-Dlog4j2.configurationFile={self.home / 'log4j2.properties'}", "-cp", classpath]
        fresh = not (keep_data and (data_dir / "meta.properties").exists() and config.exists())
        if not fresh:
            port, controller_port = self._recorded_ports(config)
            secure = "SASL_SSL://" in config.read_text()
        else:
            secure = self.secure
            port, controller_port = free_ports(2)
            shutil.rmtree(data_dir, ignore_errors=True)
            data_dir.mkdir(parents=True)
            extra: dict[str, str] = {}
            scram: list[str] = []
            if secure:
                users = sorted({role.user(para) for role, para in role_users(self.paras)})
                files = make_secure_files(self.home, users, self.host)
                extra = server_properties(files, self.host, port, controller_port)
                scram = scram_arguments(files)
            config = self._write_config(port, controller_port, data_dir, extra)
            cluster_id = self._random_uuid(base)
            formatted = subprocess.run(
                [*base, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(config),
                 "--ignore-formatted", *scram],
                capture_output=True, text=True, check=False,
            )
            if formatted.returncode != 0:
                raise BrokerStartError("StorageTool format failed", config, formatted.stdout + formatted.stderr)
        with open(self.home / "broker.out", "ab") as out:
            process = subprocess.Popen(
                # C1 only, whatever the job's spark_jit: this broker's C2 threads take CPU from the job beside it
                # on 2 cores (docs/benchmarks.md, "Measured defaults", "The JVM's compiler").
                [*base, "-XX:+UseG1GC", *JIT_JAVA_OPTIONS["c1"], "kafka.Kafka", str(config)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )
        info = BrokerInfo(pid=process.pid, port=port, controller_port=controller_port, data_dir=str(data_dir),
                          host=self.host, secure=secure)
        self._state_file.write_text(json.dumps(info.__dict__))
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise BrokerStartError(
                    f"the broker process exited with code {process.returncode}",
                    self.home / "broker.out", tail(self.home / "broker.out") + "\n" + tail(self.log_path),
                )
            if is_serving(info.bootstrap, timeout=2.0, extra=self._client(info)):
                self.started_here = True
                if secure and fresh:
                    self._grant(info)
                return info
            time.sleep(0.5)
        self._terminate(process.pid)
        raise BrokerStartError(f"no metadata after {self.start_timeout:.0f}s", self.log_path, tail(self.log_path))

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop the recorded broker (SIGTERM, then SIGKILL after `timeout`); False if none was running."""
        return self._stop_recorded(timeout)

    def kill(self) -> bool:
        """SIGKILL the recorded broker (a crash: no controlled shutdown) and wait until it is gone; its data and
        config stay, so ``start(keep_data=True)`` restarts it on them. False if none was running."""
        try:
            pid = int(json.loads(self._state_file.read_text())["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return False
        if not _pid_alive(pid):
            return False
        os.kill(pid, signal.SIGKILL)
        _wait_gone(pid, 30.0)
        return True

    # -- internals ----------------------------------------------------------------------------
    def _grant(self, info: BrokerInfo) -> None:
        """Create the roles' ACLs on the realms (as the operator, a super user)."""
        from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

        kinds = {"topic": ResourceType.TOPIC, "group": ResourceType.GROUP,
                 "transactional-id": ResourceType.TRANSACTIONAL_ID, "cluster": ResourceType.BROKER}
        operations = {"Read": AclOperation.READ, "Write": AclOperation.WRITE, "Describe": AclOperation.DESCRIBE,
                      "Create": AclOperation.CREATE, "DescribeConfigs": AclOperation.DESCRIBE_CONFIGS,
                      "All": AclOperation.ALL}
        acls = [AclBinding(kinds[resource], name, ResourcePatternType.PREFIXED if prefixed else ResourcePatternType.LITERAL,
                           principal, "*", operations[operation], AclPermissionType.ALLOW)
                for resource, name, prefixed, principal, operation in acl_bindings(self.realms, self.paras)]
        admin = admin_client(embedded_settings(Settings(), info, self.home))
        for future in admin.create_acls(acls, request_timeout=30).values():
            future.result()

    @staticmethod
    def _recorded_ports(config: Path) -> tuple[int, int]:
        """The (broker, controller) ports of a written server.properties."""
        props = dict(line.split("=", 1) for line in config.read_text().splitlines() if "=" in line)
        listeners = dict(item.split("://", 1) for item in props["listeners"].split(","))
        client = listeners.get("PLAINTEXT") or listeners["SASL_SSL"]
        return int(client.rsplit(":", 1)[1]), int(listeners["CONTROLLER"].rsplit(":", 1)[1])

    def _classpath(self) -> str:
        folder = jvm_lib_dir("kafka")
        if not any(folder.glob("kafka_2.13-*.jar")):
            raise JarsMissingError(folder)
        return str(folder / "*")

    def _random_uuid(self, base: list[str]) -> str:
        done = subprocess.run([*base, "kafka.tools.StorageTool", "random-uuid"], capture_output=True, text=True)
        if done.returncode != 0:
            raise BrokerStartError("StorageTool random-uuid failed", self.log_path, done.stderr)
        return done.stdout.strip().splitlines()[-1]

    def _write_config(self, port: int, controller_port: int, data_dir: Path, extra: dict[str, str]) -> Path:
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "log4j2.properties").write_text(LOG4J2_PROPERTIES.format(log=self.log_path))
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
            "listeners": f"PLAINTEXT://{self.host}:{port},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.host}:{port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(data_dir),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
            "log.retention.hours": "-1",
            "log.retention.check.interval.ms": "5000",  # a topic given a short retention.ms expires within seconds
            **extra,
        }
        path = self.home / "server.properties"
        path.write_text("".join(f"{key}={value}\n" for key, value in props.items()))
        return path

    def _stop_recorded(self, timeout: float = 30.0) -> bool:
        try:
            pid = int(json.loads(self._state_file.read_text())["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return False
        stopped = self._terminate(pid, timeout)
        self._state_file.unlink(missing_ok=True)
        return stopped

    @staticmethod
    def _terminate(pid: int, timeout: float = 30.0) -> bool:
        if not _pid_alive(pid):
            return False
        os.kill(pid, signal.SIGTERM)
        if not _wait_gone(pid, timeout):
            os.kill(pid, signal.SIGKILL)
        return True


def ensure_kafka(settings: Settings, broker: EmbeddedKafka | None = None) -> tuple[Settings, EmbeddedKafka | None]:
    """Settings pointing at a serving cluster: the configured one, else the (reused or started) embedded one, which
    restarts on the data a stopped broker left (``pubsub broker start --fresh`` is the way to wipe it).

    Returns the embedded broker too (None for an external cluster) so the caller can stop it if it started it.
    """
    if settings.kafka_bootstrap is not None:
        return connect_kafka(settings), None
    broker = broker or EmbeddedKafka()
    info = broker.start(keep_data=True)
    return embedded_settings(settings, info, broker.home), broker


def connect_kafka(settings: Settings, broker: EmbeddedKafka | None = None) -> Settings:
    """Settings pointing at a cluster that serves now, never starting one: what read-only commands call. A
    ``BrokerError`` says what to run when neither the configured cluster nor an embedded broker answers."""
    if settings.kafka_bootstrap is not None:
        config = settings.kafka_client_config()
        if not is_serving(settings.kafka_bootstrap, timeout=10.0, extra=config):
            raise BrokerError(f"the configured Kafka cluster at {settings.kafka_bootstrap} does not answer "
                              f"{principal(config)} over {config['security.protocol']} (a broker that wants TLS or "
                              "a login refuses such a client: see docs/operations.md, \"Securing Kafka\")")
        return settings
    broker = broker or EmbeddedKafka()
    info = broker.status()
    if info is None:
        raise BrokerError("no Kafka broker is running: start one with `pubsub broker start` "
                          "(or name a cluster with --bootstrap or PUBSUB_KAFKA_BOOTSTRAP)")
    return embedded_settings(settings, info, broker.home)


def create_topics(settings: Settings, topics: Iterable[str], partitions: int | None = None) -> None:
    """Create the topics that do not exist yet (idempotent) with `partitions` (default: the settings'), and wait
    until they have leaders. Generic topics; a realm's topics come from producers.transport.topics.ensure_realm_topics."""
    generic_topics(settings, topics, partitions or settings.topic_partitions)


def delete_topics(settings: Settings, topics: Iterable[str]) -> None:
    """Delete the topics that exist and wait until they are gone (used to start a demo afresh)."""
    admin = admin_client(settings)
    present = [t for t in topics if t in admin.list_topics(timeout=10).topics]
    if not present:
        return
    for future in admin.delete_topics(present).values():
        future.result(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if not set(present) & set(admin.list_topics(timeout=10).topics):
            return
        time.sleep(0.2)
    raise BrokerError(f"topics {present} still exist 30s after deletion")


