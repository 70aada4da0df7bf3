"""How a Kafka client authenticates and encrypts, in one place for every client the project runs: librdkafka's
properties (confluent-kafka: producers, consumers, admin, the author, the workers' writer) and the Java client's
(Spark's Kafka source, ``kafka.``-prefixed).

TLS: the CA that signed the brokers' certificates (``ca_file``), a client certificate and key for mutual TLS
(``cert_file``, ``key_file``, with ``key_password`` if the key is encrypted), and whether the client checks that
the broker's certificate names the host it dialled (``check_hostname``). SASL: ``PLAIN``, ``SCRAM-SHA-256`` or
``SCRAM-SHA-512`` with a user name and password. The files are read where the configuration is made and passed as
PEM text (``ssl.ca.pem``; the Java client's ``ssl.truststore.certificates``), so a Spark executor on another host
needs none of them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from settings.errors import SetupError

__all__ = ["CREDENTIALS_VERSION", "SASL_MECHANISMS", "SECURITY_PROTOCOLS", "KafkaSecurity", "KafkaSecurityError",
           "read_credentials"]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_LOGIN_MODULES = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
                  "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
                  "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule"}


class KafkaSecurityError(SetupError, ValueError):
    """A security setting that cannot work: names the setting (``ssl_ca_file``, ...) and why, never a secret."""

    def __init__(self, setting: str, reason: str) -> None:
        super().__init__(f"Kafka security setting {setting}: {reason}")
        self.setting = setting
        self.reason = reason


@dataclass(frozen=True)
class KafkaSecurity:
    """The security part of a Kafka connection (see the module's docstring)."""

    protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    key_password: str | None = field(default=None, repr=False)
    check_hostname: bool = True

    def check(self) -> None:
        """``KafkaSecurityError`` for a combination that cannot work or a file that cannot be read."""
        if self.protocol not in SECURITY_PROTOCOLS:
            raise KafkaSecurityError("security_protocol", f"{self.protocol!r} is not one of {', '.join(SECURITY_PROTOCOLS)}")
        sasl = self.protocol.startswith("SASL_")
        if sasl and self.sasl_mechanism not in SASL_MECHANISMS:
            raise KafkaSecurityError("sasl_mechanism", f"{self.protocol} needs one of {', '.join(SASL_MECHANISMS)}, "
                                     f"not {self.sasl_mechanism!r}")
        for name, value in (("sasl_username", self.sasl_username), ("sasl_password", self.sasl_password)):
            if value and ('"' in value or "\\" in value):
                raise KafkaSecurityError(name, "must not contain a double quote or a backslash (JAAS quoting)")
        if (self.cert_file is None) != (self.key_file is None):
            raise KafkaSecurityError("ssl_cert_file" if self.cert_file is None else "ssl_key_file",
                                     "a client certificate and its key go together")
        for name in ("ca_file", "cert_file", "key_file"):
            self._pem(name)

    def _pem(self, name: str) -> str | None:
        path: Path | None = getattr(self, name)
        if path is None:
            return None
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise KafkaSecurityError(f"ssl_{name}", f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
        if "-----BEGIN " not in text:
            raise KafkaSecurityError(f"ssl_{name}", f"{path} holds no PEM block")
        return text

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    def librdkafka(self) -> dict[str, str]:
        """confluent-kafka properties (secrets and PEM text in them: never print the result)."""
        config = {"security.protocol": self.protocol}
        if self.protocol.startswith("SASL_") and self.sasl_mechanism:
            config["sasl.mechanism"] = self.sasl_mechanism
            config["sasl.username"] = self.sasl_username or ""
            config["sasl.password"] = self.sasl_password or ""
        if self.tls:
            config["ssl.endpoint.identification.algorithm"] = "https" if self.check_hostname else "none"
            for key, name in (("ssl.ca.pem", "ca_file"), ("ssl.certificate.pem", "cert_file"),
                              ("ssl.key.pem", "key_file")):
                if (pem := self._pem(name)) is not None:
                    config[key] = pem
            if self.key_password:
                config["ssl.key.password"] = self.key_password
        return config

    def java(self) -> dict[str, str]:
        """The Java client's properties (Spark's Kafka source takes each with a ``kafka.`` prefix). A client key
        must be PKCS#8 PEM (``-----BEGIN PRIVATE KEY-----``, or ``ENCRYPTED PRIVATE KEY`` with ``key_password``)."""
        config = {"security.protocol": self.protocol}
        if self.protocol.startswith("SASL_") and self.sasl_mechanism:
            config["sasl.mechanism"] = self.sasl_mechanism
            config["sasl.jaas.config"] = (f'{_LOGIN_MODULES[self.sasl_mechanism]} required '
                                          f'username="{self.sasl_username or ""}" password="{self.sasl_password or ""}";')
        if self.tls:
            config["ssl.endpoint.identification.algorithm"] = "https" if self.check_hostname else ""
            if (ca := self._pem("ca_file")) is not None:
                config["ssl.truststore.type"] = "PEM"
                config["ssl.truststore.certificates"] = ca
            cert, key = self._pem("cert_file"), self._pem("key_file")
            if cert is not None and key is not None:
                config["ssl.keystore.type"] = "PEM"
                config["ssl.keystore.certificate.chain"] = cert
                config["ssl.keystore.key"] = key
                if self.key_password:
                    config["ssl.key.password"] = self.key_password
        return config


CREDENTIALS_VERSION = 1
"""The format of a secured embedded broker's ``credentials.json``: ``{"version": 1, "mechanism", "users": {user:
password}}`` (written by ``supervise.broker_security``)."""


def read_credentials(path: Path) -> dict[str, str]:
    """user -> password of a secured embedded broker; ``KafkaSecurityError`` for another format version."""
    body = json.loads(path.read_text())
    if body.get("version") != CREDENTIALS_VERSION:
        raise KafkaSecurityError("sasl_password", f"{path}: credentials format {body.get('version')!r} is not "
                                                  f"{CREDENTIALS_VERSION}")
    return {str(k): str(v) for k, v in body["users"].items()}
