"""kproto's clients over TLS (issue 15, client side, items 1-2): Kafka's and librdkafka's
``ssl.*`` names in PEM form, ``ssl_context=``, mutual TLS, and each failure's words.

Real sockets and real TLS against minibroker's TLS listeners (one broker for the module,
tests/support/secure_broker.py: SSL, MTLS requiring client certificates, WRONGHOST and
EXPIRED with a wrong certificate on purpose, PLAINTEXT), with the session's test
certificates (``pki``). Tansu over TLS is in test_client_tls_tansu.py.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import socket
import ssl
import time

import pytest

from kproto import AdminClient, Consumer, Producer
from kproto.config import ClientConfig
from kproto.errors import ConfigError, KafkaTimeoutError, SslAuthenticationError
from kproto.io import Cluster, Connection
from kproto.security.tls import client_context
from minibroker import MiniBroker
from tests.support.certs import CertificateAuthority
from tests.support.leaks import nothing_left_behind  # noqa: F401 (autouse)
from tests.support.secure_broker import SaslLog, brokers_named, secure_config

GENEROUS = 5.0  # seconds: "at once" under a loaded machine
EXPIRED_AT = dt.datetime.now(dt.UTC) - dt.timedelta(days=2)  # the EXPIRED listener's notAfter


@pytest.fixture(scope="module")
def broker(pki, tmp_path_factory):
    """minibroker with the TLS listeners of tests/support/secure_broker.py."""
    with MiniBroker(config=secure_config(pki, tmp_path_factory.mktemp("tls"), expired_at=EXPIRED_AT)) as broker:
        yield broker


@pytest.fixture
def sasl_log(monkeypatch):
    return SaslLog(monkeypatch)




def _ssl(broker, listener="SSL", **settings):
    return {"bootstrap.servers": broker.bootstrap_servers_for(listener), "security.protocol": "SSL", **settings}


@pytest.mark.parametrize("spelling", ["ssl.truststore.location", "ssl.truststore.certificates", "ssl.ca.location"])
def test_ssl_connects_with_each_spelling_of_the_trusted_ca(broker, pki, spelling):
    """Issue 15 item 1: KIP-651's truststore file or inline PEM, or librdkafka's
    ssl.ca.location, all verify the broker's certificate."""
    value = pki.ca.cert_path.read_text() if spelling.endswith("certificates") else str(pki.ca.cert_path)
    settings = _ssl(broker, **{spelling: value})
    if spelling.startswith("ssl.truststore"):
        settings["ssl.truststore.type"] = "PEM"
    assert list(brokers_named(settings)) == [0]


def test_ssl_context_is_used_as_given_and_wins_over_the_other_settings(broker, pki):
    """Issue 15 item 1: ``ssl_context=`` for Python users; ssl.ca.location (a file that
    does not exist) is then not read."""
    context = ssl.create_default_context(cafile=str(pki.ca.cert_path))
    settings = _ssl(broker, **{"ssl.context": context, "ssl.ca.location": "/nonexistent/ca.pem"})
    assert client_context(ClientConfig("admin", settings)) is context
    assert list(brokers_named(settings)) == [0]


def test_hostname_mismatch_names_the_host_and_the_certificates_names(broker, pki):
    """Issue 15 item 2: hostname verification is on by default (Java's
    ssl.endpoint.identification.algorithm=https); the error says which host against
    which names, and which certificate."""
    started = time.monotonic()
    with pytest.raises(SslAuthenticationError) as caught:
        brokers_named(_ssl(broker, "WRONGHOST", **{"ssl.ca.location": str(pki.ca.cert_path)}))
    text = str(caught.value)
    assert "hostname verification failed" in text
    assert "'127.0.0.1'" in text and "kafka.example.com" in text
    assert "CN=wrong-host" in text and "CN=kproto test CA" in text
    assert time.monotonic() - started < GENEROUS
    # Java: an empty algorithm turns the host check off (the chain is still checked)
    settings = _ssl(broker, "WRONGHOST", **{"ssl.ca.location": str(pki.ca.cert_path),
                                            "ssl.endpoint.identification.algorithm": ""})
    assert list(brokers_named(settings)) == [0]


def test_untrusted_ca_names_the_certificate_and_the_settings_to_check(broker, pki, tmp_path):
    """Issue 15 item 2: a broker certificate from a CA the client does not trust."""
    other = CertificateAuthority.create(tmp_path / "other", "another CA")
    with pytest.raises(SslAuthenticationError) as caught:
        brokers_named(_ssl(broker, **{"ssl.ca.location": str(other.cert_path)}))
    text = str(caught.value)
    assert "not signed by a trusted CA" in text and "CN=localhost" in text and "ssl.ca.location" in text


def test_expired_certificate_says_so_with_its_not_after(broker, pki):
    """Issue 15 item 2: an expired broker certificate names its notAfter."""
    past = EXPIRED_AT
    with pytest.raises(SslAuthenticationError) as caught:
        brokers_named(_ssl(broker, "EXPIRED", **{"ssl.ca.location": str(pki.ca.cert_path)}))
    text = str(caught.value)
    assert "has expired" in text and f"notAfter {past:%b}" in text and str(past.year) in text


def test_plaintext_client_on_a_tls_listener_fails_at_once_saying_so(broker):
    """Issue 15 item 2: not a hang and not a retried disconnection: the listener speaks
    TLS, so security.protocol is wrong."""
    started = time.monotonic()
    with pytest.raises(SslAuthenticationError, match="the listener is SSL or SASL_SSL"):
        brokers_named({"bootstrap.servers": broker.bootstrap_servers_for("SSL")})
    assert time.monotonic() - started < GENEROUS


def test_tls_client_on_a_plaintext_listener_fails_at_once_saying_so(broker, pki):
    """Issue 15 item 2: the reverse."""
    started = time.monotonic()
    with pytest.raises(SslAuthenticationError, match="is the listener PLAINTEXT"):
        brokers_named(_ssl(broker, "PLAINTEXT", **{"ssl.ca.location": str(pki.ca.cert_path)}))
    assert time.monotonic() - started < GENEROUS


def test_tls_handshake_is_bounded_by_the_connection_setup_timeout(pki):
    """Issue 15 item 2: a peer that accepts and never answers the ClientHello costs
    socket.connection.setup.timeout.ms, not forever."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        context = ssl.create_default_context(cafile=str(pki.ca.cert_path))
        started = time.monotonic()
        with pytest.raises(KafkaTimeoutError, match="TLS handshake with 127.0.0.1.* took over 0.3 s"):
            asyncio.run(Connection("127.0.0.1", port, connect_timeout_ms=300, ssl_context=context).open())
        assert time.monotonic() - started < GENEROUS


def _combined(tmp_path, issued):
    path = tmp_path / "keystore.pem"
    path.write_text(issued.key_pem + issued.cert_pem)
    return str(path)


@pytest.mark.parametrize("spelling", ["keystore.location", "inline", "librdkafka", "encrypted"])
def test_mutual_tls_presents_the_client_certificate_in_each_spelling(broker, pki, tmp_path, sasl_log, spelling):
    """Issue 15 item 1: mutual TLS with KIP-651's keystore file (key and chain in one PEM)
    or inline chain and key, librdkafka's certificate and key files, and an encrypted key
    with ssl.key.password."""
    settings = _ssl(broker, "MTLS", **{"ssl.ca.location": str(pki.ca.cert_path)})
    client = pki.client
    if spelling == "keystore.location":
        settings.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": _combined(tmp_path, client)})
    elif spelling == "inline":
        settings.update({"ssl.keystore.certificate.chain": client.cert_pem, "ssl.keystore.key": client.key_pem})
    elif spelling == "librdkafka":
        settings.update({"ssl.certificate.location": str(client.cert_path), "ssl.key.location": str(client.key_path)})
    else:
        locked = pki.ca.issue("locked-client", client=True, key_password="s3cret")
        settings.update({"ssl.certificate.location": str(locked.cert_path), "ssl.key.location": str(locked.key_path),
                         "ssl.key.password": "s3cret"})
    assert list(brokers_named(settings)) == [0]
    # the broker's principal is the certificate's subject (Kafka's RFC 2253 form)
    common_name = "locked-client" if spelling == "encrypted" else "client"
    assert set(sasl_log.requests) == {("MTLS", f"User:CN={common_name},O=kproto tests")}


def test_mutual_tls_without_a_client_certificate_is_refused_clearly(broker, pki):
    """Issue 15 item 2: the broker refuses a client without a certificate (TLS 1.3 says so
    after the handshake, on the first read)."""
    with pytest.raises(SslAuthenticationError, match="client certificate|CERTIFICATE"):
        brokers_named(_ssl(broker, "MTLS", **{"ssl.ca.location": str(pki.ca.cert_path)}))


@pytest.mark.parametrize("settings, message", [
    ({"ssl.truststore.type": "JKS"}, "kproto reads PEM only"),
    ({"ssl.keystore.type": "PKCS12"}, "convert the PKCS12 store to PEM"),
    ({"ssl.truststore.location": "a.pem", "ssl.ca.location": "b.pem"}, "ssl.truststore.location and ssl.ca.location"),
    ({"ssl.keystore.location": "k.pem", "ssl.certificate.location": "c.pem", "ssl.key.location": "k.pem"},
     "give one spelling"),
    ({"ssl.keystore.certificate.chain": "-----BEGIN CERTIFICATE-----"}, "needs ssl.keystore.key"),
    ({"ssl.certificate.location": "c.pem"}, "needs ssl.key.location"),
    ({"ssl.truststore.password": "x"}, "cannot be specified for PEM"),
    ({"ssl.keystore.password": "x"}, "only key password may be specified"),
    ({"ssl.ca.location": "/nonexistent/ca.pem"}, "no such file"),
    ({"ssl.enabled.protocols": "TLSv1.1"}, "kproto speaks TLSv1.2 and TLSv1.3"),
    ({"ssl.endpoint.identification.algorithm": "ldaps"}, "expected https"),
    ({"ssl.context": "not a context"}, "ssl.SSLContext"),
])
def test_bad_tls_settings_are_config_errors_naming_the_keys(settings, message):
    """Issue 15 item 1: JKS/PKCS12 say to use PEM; two spellings of one thing, a store
    password with PEM (Java's rule) and a missing file are errors when the client is made."""
    with pytest.raises(ConfigError, match=message):
        Cluster(ClientConfig("admin", {"bootstrap.servers": "127.0.0.1:9", "security.protocol": "SSL", **settings}))


def test_wrong_key_password_is_a_config_error(pki):
    """Issue 15 item 1: an encrypted key with a wrong ssl.key.password."""
    locked = pki.ca.issue("locked-client-2", client=True, key_password="right")
    with pytest.raises(ConfigError, match="ssl.key.password"):
        client_context(ClientConfig("admin", {
            "bootstrap.servers": "127.0.0.1:9", "security.protocol": "SSL", "ssl.key.password": "wrong",
            "ssl.certificate.location": str(locked.cert_path), "ssl.key.location": str(locked.key_path)}))


def test_ssl_protocol_tlsv12_caps_the_version(pki):
    """Issue 15 item 1: ssl.enabled.protocols bounds the versions; ssl.protocol=TLSv1.2
    keeps to TLSv1.2 (Java's SslConfigs doc)."""
    base = {"bootstrap.servers": "127.0.0.1:9", "security.protocol": "SSL", "ssl.ca.location": str(pki.ca.cert_path)}
    default = client_context(ClientConfig("admin", base))
    assert (default.minimum_version, default.maximum_version) == (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3)
    capped = client_context(ClientConfig("admin", {**base, "ssl.protocol": "TLSv1.2"}))
    assert capped.maximum_version == ssl.TLSVersion.TLSv1_2
    only13 = client_context(ClientConfig("admin", {**base, "ssl.enabled.protocols": "TLSv1.3"}))
    assert only13.minimum_version == ssl.TLSVersion.TLSv1_3
    assert default.check_hostname and default.verify_mode == ssl.CERT_REQUIRED


def test_ssl_settings_with_plaintext_are_ignored_with_a_warning(caplog):
    """Issue 15 item 1: as Java's clients, which ignore them and log them unused."""
    with caplog.at_level(logging.WARNING, logger="kproto.cluster"):
        Cluster(ClientConfig("admin", {"bootstrap.servers": "127.0.0.1:9", "ssl.ca.location": "/nonexistent",
                                       "sasl.mechanism": "PLAIN"}))
    assert "does not use the settings sasl.mechanism, ssl.ca.location" in caplog.text


def _handshakes_failed(caplog, listener: str) -> int:
    """The broker's count of TLS handshakes that failed on ``listener`` (one INFO line each)."""
    return sum(f"on listener {listener}: TLS handshake failed" in r.getMessage() for r in caplog.records)


def test_every_client_fails_promptly_with_the_certificate_error(broker, pki, tmp_path, caplog):
    """Issue 15 item 2: producer, consumer and admin calls fail with the
    SslAuthenticationError at once (not retried until max.block.ms / the API timeout:
    Java's SslAuthenticationException is not retriable); the broker sees one failed
    handshake per call, not a storm."""
    settings = _ssl(broker, "WRONGHOST", **{"ssl.ca.location": str(pki.ca.cert_path)})
    started = time.monotonic()
    with caplog.at_level(logging.INFO, logger="minibroker"):
        with AdminClient(settings) as admin:
            for _ in range(3):
                with pytest.raises(SslAuthenticationError, match="hostname verification"):
                    admin.list_topics()
        deadline = time.monotonic() + GENEROUS  # the broker logs once its side has closed
        while _handshakes_failed(caplog, "WRONGHOST") < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        assert _handshakes_failed(caplog, "WRONGHOST") == 3
    with Producer(settings) as producer, pytest.raises(SslAuthenticationError, match="hostname verification"):
        producer.send("t", b"v").result(30)
    with Consumer(settings, group_id="g") as consumer, pytest.raises(SslAuthenticationError):
        consumer.subscribe(["t"])
        consumer.poll(30)
    assert time.monotonic() - started < 3 * GENEROUS


def test_encrypted_key_without_a_password_is_a_config_error_not_a_terminal_prompt(pki):
    """Issue 15 item 1: OpenSSL would ask for the password on the terminal (a hang in a
    service); the client says to set ssl.key.password instead."""
    locked = pki.ca.issue("locked-client-3", client=True, key_password="right")
    with pytest.raises(ConfigError, match="encrypted: set ssl.key.password"):
        client_context(ClientConfig("admin", {
            "bootstrap.servers": "127.0.0.1:9", "security.protocol": "SSL",
            "ssl.keystore.certificate.chain": locked.cert_pem, "ssl.keystore.key": locked.key_pem}))


def test_a_config_copied_with_its_defaults_warns_of_nothing(caplog):
    """Issue 15 item 1: ``dict(ClientConfig(...))`` fed back (as Spark's planning does)
    names every key, at its default: no warning for those."""
    copied = dict(ClientConfig("admin", {"bootstrap.servers": "127.0.0.1:9"}))
    with caplog.at_level(logging.WARNING, logger="kproto.cluster"):
        Cluster(ClientConfig("admin", copied))
    assert "does not use" not in caplog.text
