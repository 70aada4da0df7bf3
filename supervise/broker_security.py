"""What a secured embedded broker needs, made in its runtime folder: a CA and the broker's certificate, SCRAM
users with their passwords, the listener and authorizer settings, and the ACLs of ``producers.transport.roles``.

Certificates come from the ``cryptography`` package (pinned): no JVM start per step as with ``keytool`` (each about
a second here), and the PEM text goes straight into the broker's inline PEM settings (``ssl.keystore.key``, never a
key file Java would have to decrypt). Files: ``tls/ca.pem`` (what clients trust), ``tls/ca.key``, ``tls/broker.pem``,
``tls/broker.key`` and ``credentials.json`` (user -> password), all mode 0600 but ``ca.pem``. The controller
listener uses mutual TLS with the broker's certificate (SCRAM is not for controllers); the client listener
SASL_SSL with SCRAM-SHA-512; ``StandardAuthorizer`` refuses what no ACL allows.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from producers.transport.roles import ROLES, Role, bindings
from settings.kafka_security import CREDENTIALS_VERSION, read_credentials

__all__ = ["BROKER_CN", "MECHANISM", "SecureFiles", "acl_bindings", "make_secure_files", "role_users", "scram_arguments",
           "server_properties"]

MECHANISM = "SCRAM-SHA-512"
BROKER_CN = "pubsub-broker"


@dataclass(frozen=True)
class SecureFiles:
    """Where a secured broker's material is."""

    home: Path

    @property
    def ca(self) -> Path:
        return self.home / "tls" / "ca.pem"

    @property
    def credentials(self) -> Path:
        return self.home / "credentials.json"

    def passwords(self) -> dict[str, str]:
        """user -> password (``credentials.json``)."""
        return read_credentials(self.credentials)

    def pem(self, name: str) -> str:
        return (self.home / "tls" / name).read_text()


def _private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def _cert(subject: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name | None,
          signer: ec.EllipticCurvePrivateKey, ca: bool, host: str = "127.0.0.1") -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer or name).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=3650))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if not ca:
        names: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
        if host != "127.0.0.1":
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        builder = builder.add_extension(x509.ExtendedKeyUsage(
            [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    return builder.sign(signer, hashes.SHA256())


def make_secure_files(home: Path, users: list[str], host: str = "127.0.0.1") -> SecureFiles:
    """A fresh CA, the broker's certificate (127.0.0.1, localhost and ``host``) and a random password per user (and
    the broker's own)."""
    files = SecureFiles(home)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("pubsub embedded broker CA", ca_key, None, ca_key, ca=True)
    broker_key = ec.generate_private_key(ec.SECP256R1())
    broker = _cert(BROKER_CN, broker_key, ca.subject, ca_key, ca=False, host=host)
    tls = home / "tls"
    tls.mkdir(parents=True, exist_ok=True)
    files.ca.write_text(ca.public_bytes(serialization.Encoding.PEM).decode())
    _private(tls / "ca.key", _key_pem(ca_key))
    _private(tls / "broker.pem", broker.public_bytes(serialization.Encoding.PEM).decode())
    _private(tls / "broker.key", _key_pem(broker_key))
    passwords = {user: secrets.token_urlsafe(24) for user in ["broker", *users]}
    _private(files.credentials, json.dumps({"version": CREDENTIALS_VERSION, "mechanism": MECHANISM,
                                            "users": passwords}, indent=1) + "\n")
    return files


def _inline(pem: str) -> str:
    """A PEM block as one java.util.Properties value (line breaks escaped)."""
    return pem.strip().replace("\n", "\\n")


def server_properties(files: SecureFiles, host: str, port: int, controller_port: int) -> dict[str, str]:
    """The broker's listener (on ``host``), TLS, SASL and authorizer settings."""
    broker_password = files.passwords()["broker"]
    return {
        "listeners": f"SASL_SSL://{host}:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"SASL_SSL://{host}:{port}",
        "inter.broker.listener.name": "SASL_SSL",
        "listener.security.protocol.map": "CONTROLLER:SSL,SASL_SSL:SASL_SSL",
        "sasl.enabled.mechanisms": MECHANISM,
        "sasl.mechanism.inter.broker.protocol": MECHANISM,
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config":
            f'org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" '
            f'password="{broker_password}";',
        "listener.name.controller.ssl.client.auth": "required",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": _inline(files.pem("broker.pem")),
        "ssl.keystore.key": _inline(files.pem("broker.key")),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": _inline(files.pem("ca.pem")),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"User:broker;User:operator;User:CN={BROKER_CN}",
        "allow.everyone.if.no.acl.found": "false",
    }


def scram_arguments(files: SecureFiles) -> list[str]:
    """``kafka-storage format`` arguments that create every user (KIP-900)."""
    args: list[str] = []
    for user, password in files.passwords().items():
        args += ["--add-scram", f"{MECHANISM}=[name={user},password={password}]"]
    return args


def role_users(paras: tuple[int, ...]) -> list[tuple[Role, int | None]]:
    """Every role's user: one collator per para, one of each other role."""
    out: list[tuple[Role, int | None]] = []
    for role in ROLES:
        out += [(role, para) for para in paras] if "{para}" in role.principal else [(role, None)]
    return out


def acl_bindings(realms: tuple[str, ...], paras: tuple[int, ...]) -> list[tuple[str, str, bool, str, str]]:
    """Every ACL of every role's user on each realm."""
    return [b for realm in realms for role, para in role_users(paras) for b in bindings(realm, role, para)]
