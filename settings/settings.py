"""One frozen, validated settings object for the job and the producers.

Sources, later ones winning: built-in defaults, a TOML file (``--config`` or ``$PUBSUB_CONFIG``), environment
variables (``PUBSUB_<NAME>``, e.g. ``PUBSUB_KAFKA_BOOTSTRAP``), then command-line flags. Secrets are held in
:class:`Secret`, whose repr and str never show the value, so printing settings is always safe.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from settings.kafka_security import KafkaSecurity, KafkaSecurityError
from pubsub_core.stages.config import Seam
from settings.checkpoint_location import CheckpointLocation, checkpoint_location
from settings.errors import SettingsError
from settings.paths import runtime_dir

__all__ = ["ENV_PREFIX", "JIT_JAVA_OPTIONS", "JIT_MODES", "SECURITY_FLAGS", "SHIP_MODES", "STAGES_MODES", "STATE_REOPEN_MODES", "Secret",
           "Settings", "add_security_arguments", "load_settings", "security_overrides"]

ENV_PREFIX = "PUBSUB_"
_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SEAM_MODES = tuple(mode.value for mode in Seam)
JIT_JAVA_OPTIONS: dict[str, tuple[str, ...]] = {"c1": ("-XX:TieredStopAtLevel=1",), "tiered": ()}
"""The JVM options of each ``spark_jit`` mode (the embedded broker always takes the ``c1`` ones)."""
JIT_MODES = tuple(JIT_JAVA_OPTIONS)
STATE_REOPEN_MODES = ("periodic", "every-commit", "never")
"""How the job bounds its checkpoint (docs/reliability.md, "A checkpoint of bounded size"): every snapshot of an
open RocksDB state store holds the store's whole MANIFEST, which grows by each commit until the store is reopened.
``periodic``: restart both queries on the same checkpoint every ``state_reopen_minutes`` (each store reopens with a
fresh MANIFEST); ``every-commit``: Spark's ``stateStore.unloadOnCommit`` (a reload each batch); ``never``."""
SHIP_MODES = ("auto", "archive", "shared")
"""How the job's Python code reaches the executors (``streaming.shipping``): ``archive``, this venv packed and sent
in ``spark.archives``; ``shared``, executors run the driver's own interpreter (one host, or the same venv at the same
path on every host); ``auto``, ``archive`` for a ``spark://`` master when the project is installed from a wheel."""
STAGES_MODES = ("auto", "fused", "split")
"""How the job runs its two stages (docs/pipeline.md, "Fused or split"): ``fused``, one query keyed by realm whose
batch runs each new block's subscribers too (no seam hop: the lowest latency; a realm's subscribers share its
task); ``split``, Stage R and Stage S as two queries joined by the seam topic (a realm's subscribers spread over
the seam's partitions); ``auto``, what the checkpoint was made with, and ``fused`` for a new one. A checkpoint
keeps the layout it was made with."""
RECONNECT_BACKOFF_MS = 10
"""librdkafka's first reconnect backoff (default 100 ms). A new client's first request, when it comes before the
bootstrap connection's handshake is done, waits out librdkafka's connection throttle, half this backoff: a new
admin client's first ``list_topics`` waits several times longer with the default (docs/benchmarks.md,
"Measured code choices"), and the job makes two before its queries start. Later reconnects still back off
exponentially up to ``reconnect.backoff.max.ms`` (10 s)."""


@dataclass(frozen=True)
class Secret:
    """A value that must never be printed (SASL passwords, signing keys); read it with reveal()."""

    _value: str = field(repr=False)

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:
        return "***"


@dataclass(frozen=True)
class Settings:
    """Everything the job and the producers need to find Kafka and Spark, validated once at load time."""

    kafka_bootstrap: str | None = None
    """host:port[,host:port]; None means the embedded broker (started or reused on demand)."""
    kafka_security_protocol: str = "PLAINTEXT"
    kafka_sasl_mechanism: str | None = None
    kafka_sasl_username: str | None = None
    kafka_sasl_password: Secret | None = None
    """With ``kafka_sasl_mechanism`` ``PLAIN``, ``SCRAM-SHA-256`` or ``SCRAM-SHA-512`` (``SASL_*`` protocols)."""
    kafka_ssl_ca_file: Path | None = None
    """PEM file of the CA that signed the brokers' certificates (``SSL``, ``SASL_SSL``); None: the system's CAs."""
    kafka_ssl_cert_file: Path | None = None
    """PEM file of this client's certificate, for brokers that require mutual TLS (with ``kafka_ssl_key_file``)."""
    kafka_ssl_key_file: Path | None = None
    """PEM file of that certificate's key (PKCS#8: ``BEGIN PRIVATE KEY``, Spark's Java client needs it so)."""
    kafka_ssl_key_password: Secret | None = None
    """The key file's password, if it is encrypted."""
    kafka_ssl_check_hostname: bool = True
    """Whether clients check that a broker's certificate names the host they dialled (off: only that the CA signed
    it, for brokers reached by an address their certificate does not name)."""
    topic_prefix: str = "polkadot."
    """The realm: every topic name starts with it."""
    topic_partitions: int = 2
    spark_master: str = "local[2]"
    shuffle_partitions: int | None = None
    """Shuffle partitions (= state store instances) of a new checkpoint, frozen into it at its first batch; None:
    one per realm the job serves when it starts for the fused layout (at least one), two for split
    (``streaming.stage_layout.new_checkpoint_partitions``; docs/benchmarks.md, "Cuts measured")."""
    trigger_seconds: float = 0.2
    """Micro-batch interval of a continuous run: a block waits for the next trigger, so half of it on average.
    At 0.2 s a block's p99 to its last update stays under half a second, at about twice the job's CPU of a 0.5 s
    trigger (docs/benchmarks.md, "Latency budget", "Cuts measured")."""
    max_offsets_per_trigger: int | None = None
    checkpoint_dir: CheckpointLocation = field(default_factory=lambda: runtime_dir() / "checkpoints" / "pipeline")
    """The job's checkpoints: ``relay/`` (Stage R) and ``subscribers/`` (Stage S) restart independently. A plain
    path or ``file:`` URI is a local folder; ``hdfs://``, ``s3a://``... a folder on that Hadoop file system."""
    realms: str | None = None
    """Comma-separated realms the job serves; None: every realm whose topics exist or appear later."""
    views_partitions: int = 2
    """Partitions of each ``<realm>.relay-views`` topic: Stage S scales with them."""
    seam_key: Secret | None = None
    """Key of the MAC on seam records; None: generated once and kept in the checkpoint folder."""
    protocol_config: Path | None = None
    """JSON protocol settings (docs/simulator.md, "Configuration"), the same file `pubsub simulate --protocol-config` takes."""
    seam: str | None = None
    """What Stage R sends Stage S: ``delta`` (changed nodes) or ``full`` (whole proofs, the checking mode); None:
    the protocol settings' ``seam``. The outputs are the same either way."""
    stages: str = "auto"
    """One of ``STAGES_MODES``: the stages in one query or two."""
    spark_jit: str = "c1"
    """How Spark's JVMs compile: ``c1`` (the quick compiler only) or ``tiered`` (the JVM's default, C1 then C2).
    On two cores C2 took more CPU than the job's own work (docs/benchmarks.md, "The JVM's compiler")."""
    state_reopen: str = "periodic"
    """How the state stores' checkpoint stays bounded: one of ``STATE_REOPEN_MODES``."""
    state_reopen_minutes: float = 30.0
    """With ``state_reopen = "periodic"``: minutes between two restarts of the queries on their checkpoints."""
    standby: bool = False
    """Start Spark, then wait for the job running on the checkpoint on this host to end and take over from it (a
    warm standby: ``streaming.checkpoint_lock``); False: refuse to start while another job runs on it."""
    stuck_batch_seconds: float = 300.0
    """A batch that has run this long while Spark's JVM and its Python workers sat idle ends the job with one line
    (``streaming.stuck``; local mode)."""
    metrics_port: int | None = None
    """TCP port of the job's Prometheus endpoint (``/metrics``: the protocol's gauges); None: no endpoint. With it,
    Spark's UI serves Spark's own metrics too (``/metrics/prometheus``) on ``spark_ui_port``."""
    metrics_host: str = "127.0.0.1"
    """Address the metrics endpoint binds to (Spark's UI stays on loopback, ``SPARK_LOCAL_IP``)."""
    spark_ui_port: int = 4040
    """Spark UI port when ``metrics_port`` is set (Spark takes the next free one if it is busy)."""
    ship: str = "auto"
    """How the project reaches the executors: one of ``SHIP_MODES``."""
    batch_log: Path | None = None
    """A file the job appends one JSON line to per micro-batch that ran: Spark's progress and each operator call's
    spans (``streaming.spans``), for ``benchmarks/latency_budget.py``, kept to ``streaming.job.BATCH_LOG_BYTES`` and
    one older file; None: no such file."""
    spark_class_archive: Path | None = None
    """A class data sharing archive the driver's JVM maps at its start (`pubsub job --write-class-archive` writes
    it); None: the runtime folder's ``jvm/spark-driver.jsa``, if that was built (``streaming.class_archive``)."""

    def __post_init__(self) -> None:
        if not _TOPIC.match(self.topic("x")):
            raise SettingsError("topic_prefix", self.topic_prefix, "settings",
                                "a Kafka topic name is 1-249 of [A-Za-z0-9._-]")
        if self.kafka_security_protocol not in _SECURITY_PROTOCOLS:
            raise SettingsError(
                "kafka_security_protocol", self.kafka_security_protocol, "settings", f"one of {_SECURITY_PROTOCOLS}"
            )
        if self.kafka_security_protocol.startswith("SASL_") and not self.kafka_sasl_mechanism:
            raise SettingsError("kafka_security_protocol", self.kafka_security_protocol, "settings",
                                "SASL needs a mechanism: set PUBSUB_KAFKA_SASL_MECHANISM (e.g. SCRAM-SHA-512)")
        try:
            self.kafka_security().check()
        except KafkaSecurityError as exc:
            name = f"kafka_{exc.setting}"
            raise SettingsError(name, getattr(self, name, None), "settings", exc.reason) from None
        if self.kafka_bootstrap is not None and not all(
            re.match(r"^[^:,\s]+:\d{1,5}$", part) for part in self.kafka_bootstrap.split(",")
        ):
            raise SettingsError("kafka_bootstrap", self.kafka_bootstrap, "settings", "expected host:port[,host:port]")
        for name in ("topic_partitions", "shuffle_partitions", "views_partitions"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise SettingsError(name, getattr(self, name), "settings", "must be at least 1")
        if self.trigger_seconds <= 0:
            raise SettingsError("trigger_seconds", self.trigger_seconds, "settings", "must be positive")
        if self.spark_jit not in JIT_MODES:
            raise SettingsError("spark_jit", self.spark_jit, "settings", f"one of {JIT_MODES}")
        if self.seam is not None and self.seam not in SEAM_MODES:
            raise SettingsError("seam", self.seam, "settings", f"one of {SEAM_MODES}")
        if self.stages not in STAGES_MODES:
            raise SettingsError("stages", self.stages, "settings", f"one of {STAGES_MODES}")
        if self.state_reopen not in STATE_REOPEN_MODES:
            raise SettingsError("state_reopen", self.state_reopen, "settings", f"one of {STATE_REOPEN_MODES}")
        if self.ship not in SHIP_MODES:
            raise SettingsError("ship", self.ship, "settings", f"one of {SHIP_MODES}")
        for name in ("state_reopen_minutes", "stuck_batch_seconds"):
            if getattr(self, name) <= 0:
                raise SettingsError(name, getattr(self, name), "settings", "must be positive")
        for name in ("metrics_port", "spark_ui_port"):
            port = getattr(self, name)
            if port is not None and not 0 < port < 65536:
                raise SettingsError(name, port, "settings", "a TCP port, 1-65535")
        if self.max_offsets_per_trigger is not None and self.max_offsets_per_trigger < 1:
            raise SettingsError("max_offsets_per_trigger", self.max_offsets_per_trigger, "settings", "must be >= 1")

    def topic(self, name: str) -> str:
        """The full topic name in this realm."""
        return f"{self.topic_prefix}{name}"

    def with_bootstrap(self, bootstrap: str) -> Settings:
        """The same settings pointed at a running broker (used once the embedded one is up)."""
        return dataclasses.replace(self, kafka_bootstrap=bootstrap)

    def kafka_security(self) -> KafkaSecurity:
        """The security settings as every client takes them (the secrets revealed there, for the clients only)."""
        return KafkaSecurity(
            self.kafka_security_protocol, self.kafka_sasl_mechanism, self.kafka_sasl_username,
            self.kafka_sasl_password.reveal() if self.kafka_sasl_password else None, self.kafka_ssl_ca_file,
            self.kafka_ssl_cert_file, self.kafka_ssl_key_file,
            self.kafka_ssl_key_password.reveal() if self.kafka_ssl_key_password else None,
            self.kafka_ssl_check_hostname)

    def kafka_client_config(self) -> dict[str, str]:
        """librdkafka properties (secrets revealed here and in ``spark_kafka_options`` only: never print them)."""
        if self.kafka_bootstrap is None:
            raise SettingsError("kafka_bootstrap", None, "settings", "start the embedded broker first")
        return {"bootstrap.servers": self.kafka_bootstrap, "reconnect.backoff.ms": str(RECONNECT_BACKOFF_MS),
                **self.kafka_security().librdkafka()}

    def spark_kafka_options(self) -> dict[str, str]:
        """The same connection as options of Spark's Kafka source and sink (kafka.* pass-through)."""
        if self.kafka_bootstrap is None:
            raise SettingsError("kafka_bootstrap", None, "settings", "start the embedded broker first")
        java = {"bootstrap.servers": self.kafka_bootstrap, **self.kafka_security().java()}
        return {f"kafka.{key}": value for key, value in java.items()}

    def realm_list(self) -> list[str] | None:
        """The realms named by ``realms``, or None for all."""
        if not self.realms:
            return None
        return [r.strip() for r in self.realms.split(",") if r.strip()]

    def describe(self) -> dict[str, str]:
        """A printable view (secrets masked)."""
        return {f.name: str(getattr(self, f.name)) for f in dataclasses.fields(self)}


def _coerce(name: str, raw: Any, source: str) -> Any:
    """Turn a TOML/env/flag value into the type of the Settings field `name`."""
    kind = {f.name: f.type for f in dataclasses.fields(Settings)}[name]
    try:
        if raw is None:
            return None
        if name in ("kafka_sasl_password", "kafka_ssl_key_password", "seam_key"):
            return raw if isinstance(raw, Secret) else Secret(str(raw))
        if name == "checkpoint_dir":
            return checkpoint_location(raw)
        if name in ("protocol_config", "kafka_ssl_ca_file", "kafka_ssl_cert_file",
                    "kafka_ssl_key_file", "batch_log", "spark_class_archive"):
            return Path(raw)
        if "bool" in str(kind):
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(raw)
            return text in ("true", "1", "yes")
        if "int" in str(kind):
            return int(raw)
        if "float" in str(kind):
            return float(raw)
        return str(raw)
    except (TypeError, ValueError) as exc:
        raise SettingsError(name, raw, source, f"not a valid {kind}") from exc


def load_settings(
    overrides: Mapping[str, Any] | None = None,
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    flags: Mapping[str, str] | None = None,
) -> Settings:
    """Defaults < TOML file < PUBSUB_* environment < overrides (flags; None values are ignored). A bad value's
    ``SettingsError`` names where it came from: the file, the environment variable or the flag (``flags`` maps a
    setting to its flag where that is not ``--`` + its name with dashes)."""
    env = os.environ if environ is None else environ
    names = {f.name for f in dataclasses.fields(Settings)}
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    path = config_file or (Path(env["PUBSUB_CONFIG"]) if env.get("PUBSUB_CONFIG") else None)
    if path is not None:
        try:
            table = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise SettingsError("config_file", str(path), "PUBSUB_CONFIG/--config", str(exc)) from exc
        for key, raw in table.get("pubsub", table).items():
            if key not in names:
                raise SettingsError(key, raw, str(path), f"unknown setting; known: {', '.join(sorted(names))}")
            values[key] = _coerce(key, raw, str(path))
            sources[key] = f"file {path}"
    for name in names:
        raw_env = env.get(ENV_PREFIX + name.upper())
        if raw_env not in (None, ""):
            sources[name] = f"environment variable {ENV_PREFIX + name.upper()}"
            values[name] = _coerce(name, raw_env, sources[name])
    for key, raw in (overrides or {}).items():
        if raw is None:
            continue
        if key not in names:
            raise SettingsError(key, raw, "flags", "unknown setting")
        sources[key] = "flag " + (flags or {}).get(key, "--" + key.replace("_", "-"))
        values[key] = _coerce(key, raw, sources[key])
    try:
        return Settings(**values)
    except SettingsError as exc:  # checked on the whole object: name where the offending value came from
        if exc.name in sources:
            raise SettingsError(exc.name, values[exc.name], sources[exc.name], exc.reason) from None
        raise


SECURITY_FLAGS = {"kafka_security_protocol": "--kafka-security-protocol", "kafka_sasl_mechanism": "--kafka-sasl-mechanism",
                  "kafka_sasl_username": "--kafka-sasl-username", "kafka_ssl_ca_file": "--kafka-ssl-ca-file",
                  "kafka_ssl_cert_file": "--kafka-ssl-cert-file", "kafka_ssl_key_file": "--kafka-ssl-key-file"}
"""The security settings a command takes as flags (passwords only from the environment or the file, never a flag:
a flag shows in the process list)."""


def add_security_arguments(parser: argparse.ArgumentParser) -> None:
    """The Kafka security flags (docs/operations.md, "Securing Kafka")."""
    group = parser.add_argument_group("Kafka security (passwords: $PUBSUB_KAFKA_SASL_PASSWORD, "
                                      "$PUBSUB_KAFKA_SSL_KEY_PASSWORD or the settings file)")
    group.add_argument("--kafka-security-protocol", choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"))
    group.add_argument("--kafka-sasl-mechanism", choices=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"))
    group.add_argument("--kafka-sasl-username", metavar="USER")
    group.add_argument("--kafka-ssl-ca-file", type=Path, metavar="PEM", help="CA of the brokers' certificates")
    group.add_argument("--kafka-ssl-cert-file", type=Path, metavar="PEM", help="client certificate (mutual TLS)")
    group.add_argument("--kafka-ssl-key-file", type=Path, metavar="PEM", help="its key (PKCS#8 PEM)")
    group.add_argument("--kafka-ssl-no-check-hostname", dest="kafka_ssl_check_hostname", action="store_const",
                       const=False, default=None, help="do not check that a broker's certificate names its host")


def security_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The security flags' values, as ``load_settings`` overrides (None: not given)."""
    names = (*SECURITY_FLAGS, "kafka_ssl_check_hostname")
    return {name: getattr(args, name, None) for name in names}
