"""TLS and SCRAM settings reach every Kafka client the same way: librdkafka's properties (confluent-kafka: the
producers, consumers, admin, author and the workers' writer) and the Java client's as Spark's ``kafka.`` options;
the files are read into PEM text (nothing for an executor to find on its disk); secrets never printed; a missing
file or a half client certificate is a ``SettingsError`` naming the setting and where it came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from producers.client import Connection, ConnectionSettingsError
from settings.errors import SettingsError
from settings.settings import load_settings

CA = "-----BEGIN CERTIFICATE-----\nQ0E=\n-----END CERTIFICATE-----\n"
CERT = "-----BEGIN CERTIFICATE-----\nQ0VSVA==\n-----END CERTIFICATE-----\n"
KEY = "-----BEGIN PRIVATE KEY-----\nS0VZ\n-----END PRIVATE KEY-----\n"


@pytest.fixture
def pems(tmp_path: Path) -> dict[str, str]:
    for name, text in (("ca.pem", CA), ("cert.pem", CERT), ("key.pem", KEY)):
        (tmp_path / name).write_text(text)
    return {"PUBSUB_KAFKA_BOOTSTRAP": "broker:9094", "PUBSUB_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
            "PUBSUB_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512", "PUBSUB_KAFKA_SASL_USERNAME": "job",
            "PUBSUB_KAFKA_SASL_PASSWORD": "pw-of-job", "PUBSUB_KAFKA_SSL_CA_FILE": str(tmp_path / "ca.pem"),
            "PUBSUB_KAFKA_SSL_CERT_FILE": str(tmp_path / "cert.pem"),
            "PUBSUB_KAFKA_SSL_KEY_FILE": str(tmp_path / "key.pem"), "PUBSUB_KAFKA_SSL_KEY_PASSWORD": "pw-of-key"}


def test_scram_over_tls_with_a_client_certificate_reaches_librdkafka_and_spark(pems: dict[str, str]) -> None:
    settings = load_settings(environ=pems)
    assert settings.kafka_client_config() == {
        "bootstrap.servers": "broker:9094", "reconnect.backoff.ms": "10", "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "job", "sasl.password": "pw-of-job",
        "ssl.endpoint.identification.algorithm": "https", "ssl.ca.pem": CA, "ssl.certificate.pem": CERT,
        "ssl.key.pem": KEY, "ssl.key.password": "pw-of-key"}
    assert settings.spark_kafka_options() == {
        "kafka.bootstrap.servers": "broker:9094", "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                  'username="job" password="pw-of-job";',
        "kafka.ssl.endpoint.identification.algorithm": "https", "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.certificates": CA, "kafka.ssl.keystore.type": "PEM",
        "kafka.ssl.keystore.certificate.chain": CERT, "kafka.ssl.keystore.key": KEY,
        "kafka.ssl.key.password": "pw-of-key"}
    shown = repr(settings) + str(settings.describe())
    assert "pw-of-job" not in shown and "pw-of-key" not in shown


def test_the_hostname_check_can_be_turned_off(pems: dict[str, str]) -> None:
    settings = load_settings(environ={**pems, "PUBSUB_KAFKA_SSL_CHECK_HOSTNAME": "false"})
    assert settings.kafka_client_config()["ssl.endpoint.identification.algorithm"] == "none"
    assert settings.spark_kafka_options()["kafka.ssl.endpoint.identification.algorithm"] == ""
    with pytest.raises(SettingsError, match="PUBSUB_KAFKA_SSL_CHECK_HOSTNAME"):
        load_settings(environ={**pems, "PUBSUB_KAFKA_SSL_CHECK_HOSTNAME": "maybe"})


def test_plaintext_sends_no_tls_or_sasl_property() -> None:
    settings = load_settings(environ={"PUBSUB_KAFKA_BOOTSTRAP": "h:1"})
    assert settings.kafka_client_config() == {"bootstrap.servers": "h:1", "reconnect.backoff.ms": "10",
                                              "security.protocol": "PLAINTEXT"}
    assert settings.spark_kafka_options() == {"kafka.bootstrap.servers": "h:1", "kafka.security.protocol": "PLAINTEXT"}


@pytest.mark.parametrize(("change", "message"), [
    ({"PUBSUB_KAFKA_SSL_CA_FILE": "/nonexistent/ca.pem"},
     "setting kafka_ssl_ca_file='/nonexistent/ca.pem' (from environment variable PUBSUB_KAFKA_SSL_CA_FILE) is "
     "invalid: cannot read /nonexistent/ca.pem: No such file or directory"),
    ({"PUBSUB_KAFKA_SSL_KEY_FILE": ""}, "kafka_ssl_key_file=None (from settings) is invalid: a client certificate "
                                       "and its key go together"),
    ({"PUBSUB_KAFKA_SASL_MECHANISM": "SCRAM-SHA-1"}, "needs one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512"),
])
def test_a_setting_that_cannot_work_is_named(pems: dict[str, str], change: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        load_settings(environ={**pems, **change})
    assert message in str(raised.value) and "pw-of" not in str(raised.value)


def test_a_file_that_holds_no_pem_is_named(pems: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text("not a certificate")
    with pytest.raises(SettingsError, match="kafka_ssl_ca_file.*holds no PEM block"):
        load_settings(environ=pems)


def test_the_client_api_connection_takes_the_same_settings(pems: dict[str, str], tmp_path: Path) -> None:
    connection = Connection.from_environment(environ=pems)
    assert connection.ssl_ca_file == tmp_path / "ca.pem"
    config = connection.kafka_client_config()
    assert config["sasl.mechanism"] == "SCRAM-SHA-512" and config["ssl.ca.pem"] == CA
    assert config["ssl.key.pem"] == KEY and "pw-of" not in repr(connection)
    with pytest.raises(ConnectionSettingsError, match="ssl_ca_file.*cannot read"):
        Connection("h:1", "SSL", ssl_ca_file=tmp_path / "missing.pem")
