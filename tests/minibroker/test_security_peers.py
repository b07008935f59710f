"""minibroker over TLS and SASL, with the peer clients as oracles (issue 15, items 2-5).

One broker for the module with one listener per case: PLAINTEXT (for the admin that makes
the SCRAM users), SSL (server authentication; client certificates requested), MTLS (an SSL
listener requiring client certificates), SASL_PLAINTEXT and SASL_SSL (PLAIN, SCRAM-SHA-256,
SCRAM-SHA-512, OAUTHBEARER), and SSL listeners whose certificate is wrong on purpose
(another host name, expired), set per listener with Kafka's ``listener.name.`` prefix.
confluent-kafka, kafka-python and aiokafka produce and consume on each; the negative cases
check the peer's error text.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import re
import socket
import ssl
import time
import uuid

import pytest

from kproto.protocol import ApiKey
from kproto.security.oauthbearer import unsecured_token
from minibroker import MiniBroker
from minibroker.handlers import HANDLERS
from tests.support.certs import CertificateAuthority

ck = pytest.importorskip("confluent_kafka")

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'user_alice="alice-secret" user_bob="bob-secret";')
MECHANISMS = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"


@pytest.fixture(scope="module")
def secure(pki, tmp_path_factory):
    """The module's broker (see the module docstring) and its SCRAM users alice (both
    mechanisms, made through confluent-kafka's AdminClient: AlterUserScramCredentials)."""
    now = dt.datetime.now(dt.UTC)
    wrong_host = pki.ca.issue("elsewhere.example", hosts=("elsewhere.example",))
    expired = pki.ca.issue("localhost", hosts=("localhost", "127.0.0.1"), not_before=now - dt.timedelta(days=10),
                           not_after=now - dt.timedelta(days=1))
    names = ["PLAINTEXT", "SSL", "MTLS", "SASL_PLAINTEXT", "SASL_SSL", "WRONGHOST", "EXPIRED"]
    config = {
        "listeners": ",".join(f"{n}://127.0.0.1:0" for n in names),
        "advertised.listeners": ",".join(f"{n}://localhost:0" for n in names),
        "listener.security.protocol.map": ("PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                                           "SASL_SSL:SASL_SSL,WRONGHOST:SSL,EXPIRED:SSL"),
        "ssl.keystore.location": str(tmp_path_factory.mktemp("keystore") / "server.pem"),
        "ssl.truststore.location": str(pki.ca.cert_path),
        "ssl.client.auth": "requested",
        "listener.name.mtls.ssl.client.auth": "required",
        # the MTLS listener's key and chain inline (KIP-651), the location cleared for it
        "listener.name.mtls.ssl.keystore.location": "",
        "listener.name.mtls.ssl.keystore.certificate.chain": pki.server.cert_pem,
        "listener.name.mtls.ssl.keystore.key": pki.server.key_pem,
        "listener.name.wronghost.ssl.keystore.location": str(wrong_host.key_path.with_suffix(".pem")),
        "listener.name.expired.ssl.keystore.location": str(expired.key_path.with_suffix(".pem")),
        "sasl.enabled.mechanisms": MECHANISMS,
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "plain.sasl.jaas.config": PLAIN_JAAS,
        "connection.failed.authentication.delay.ms": 10,
    }
    # ssl.keystore.location: one PEM file with the key and the chain (KIP-651)
    for issued, path in ((pki.server, config["ssl.keystore.location"]), (wrong_host, wrong_host.key_path.with_suffix(".pem")),
                         (expired, expired.key_path.with_suffix(".pem"))):
        with open(path, "w") as f:
            f.write(issued.key_pem + issued.cert_pem)
    with MiniBroker(config=config) as broker:
        from confluent_kafka.admin import (
            AdminClient,
            ScramCredentialInfo,
            ScramMechanism,
            UserScramCredentialUpsertion,
        )

        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers_for("PLAINTEXT")})
        for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):
            # one request per mechanism: Kafka refuses a user altered twice in one request
            upsert = UserScramCredentialUpsertion("alice", ScramCredentialInfo(mechanism, 4096), b"alice-scram")
            admin.alter_user_scram_credentials([upsert])["alice"].result(10)
        yield broker


@pytest.fixture
def principals(monkeypatch):
    """(listener, principal) of every Metadata request the broker handles meanwhile: the
    RequestContext the handlers see."""
    seen = []
    low, high, handler = HANDLERS[ApiKey.METADATA]

    async def recording(state, ctx, request):
        seen.append((ctx.listener_name, ctx.principal))
        return await handler(state, ctx, request)

    monkeypatch.setitem(HANDLERS, ApiKey.METADATA, (low, high, recording))
    return seen


def _topic() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


# -- the three peers' round trips ---------------------------------------------------------


def ck_roundtrip(bootstrap: str, conf: dict) -> None:
    topic = _topic()
    producer = ck.Producer({"bootstrap.servers": bootstrap, **conf})
    producer.produce(topic, value=b"hello", partition=0)
    assert producer.flush(15) == 0
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "enable.auto.commit": False, **conf})
    try:
        consumer.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
        deadline, message = time.monotonic() + 15, None
        while message is None and time.monotonic() < deadline:
            message = consumer.poll(0.5)
        assert message is not None and message.error() is None and message.value() == b"hello"
    finally:
        consumer.close()


def kp_roundtrip(bootstrap: str, conf: dict) -> None:
    kafka = pytest.importorskip("kafka")
    topic = _topic()
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=10000, max_block_ms=10000, **conf)
    try:
        assert producer.send(topic, value=b"hello", partition=0).get(10).offset == 0
    finally:
        producer.close(5)
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=10000,
                                   request_timeout_ms=10000, **conf)
    try:
        consumer.assign([kafka.TopicPartition(topic, 0)])
        assert [m.value for _, m in zip(range(1), consumer)] == [b"hello"]
    finally:
        consumer.close()


def aio_roundtrip(bootstrap: str, conf: dict) -> None:
    aiokafka = pytest.importorskip("aiokafka")

    async def run():
        topic = _topic()
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=10000, **conf)
        await producer.start()
        try:
            assert (await producer.send_and_wait(topic, b"hello", partition=0)).offset == 0
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", **conf)
        await consumer.start()
        try:
            consumer.assign([aiokafka.TopicPartition(topic, 0)])
            message = await asyncio.wait_for(consumer.getone(), 15)
            assert message.value == b"hello"
        finally:
            await consumer.stop()

    asyncio.run(run())


def ck_ssl(pki, client_cert=False) -> dict:
    conf = {"ssl.ca.location": str(pki.ca.cert_path)}
    if client_cert:
        conf.update({"ssl.certificate.location": str(pki.client.cert_path), "ssl.key.location": str(pki.client.key_path)})
    return conf


def kp_ssl(pki, client_cert=False) -> dict:
    conf = {"ssl_cafile": str(pki.ca.cert_path)}
    if client_cert:
        conf.update({"ssl_certfile": str(pki.client.cert_path), "ssl_keyfile": str(pki.client.key_path)})
    return conf


def aio_ssl(pki, client_cert=False) -> dict:
    from aiokafka.helpers import create_ssl_context

    if client_cert:
        return {"ssl_context": create_ssl_context(cafile=str(pki.ca.cert_path), certfile=str(pki.client.cert_path),
                                                  keyfile=str(pki.client.key_path))}
    return {"ssl_context": create_ssl_context(cafile=str(pki.ca.cert_path))}


def _jwt(subject="alice", lifetime_seconds=3600) -> str:
    return unsecured_token(subject, int(time.time() * 1000), lifetime_seconds=lifetime_seconds)


# -- TLS ----------------------------------------------------------------------------------


@pytest.mark.parametrize("client_cert", [False, True], ids=["server-auth", "mutual"])
def test_confluent_kafka_over_ssl(secure, pki, principals, client_cert):
    """Issue 15, items 2 and 5: SSL with server authentication, and mutual TLS whose
    principal is the client certificate's subject in RFC 2253 form (Kafka's default)."""
    listener = "MTLS" if client_cert else "SSL"
    ck_roundtrip(secure.bootstrap_servers_for(listener), {"security.protocol": "SSL", **ck_ssl(pki, client_cert)})
    expected = "User:CN=client,O=kproto tests" if client_cert else "User:ANONYMOUS"
    assert {p for name, p in principals if name == listener} == {expected}


@pytest.mark.parametrize("client_cert", [False, True], ids=["server-auth", "mutual"])
def test_kafka_python_over_ssl(secure, pki, principals, client_cert):
    """Issue 15, items 2 and 5: kafka-python over SSL and mutual TLS."""
    listener = "MTLS" if client_cert else "SSL"
    kp_roundtrip(secure.bootstrap_servers_for(listener), {"security_protocol": "SSL", **kp_ssl(pki, client_cert)})
    expected = "User:CN=client,O=kproto tests" if client_cert else "User:ANONYMOUS"
    assert {p for name, p in principals if name == listener} == {expected}


@pytest.mark.parametrize("client_cert", [False, True], ids=["server-auth", "mutual"])
def test_aiokafka_over_ssl(secure, pki, client_cert):
    """Issue 15, items 2 and 5: aiokafka over SSL and mutual TLS."""
    listener = "MTLS" if client_cert else "SSL"
    aio_roundtrip(secure.bootstrap_servers_for(listener), {"security_protocol": "SSL", **aio_ssl(pki, client_cert)})


class _Lines(logging.Handler):
    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def ck_error(bootstrap: str, conf: dict, timeout: float = 10) -> str:
    """What confluent-kafka says when it cannot connect: its error_cb errors and its log's
    FAIL lines (where librdkafka puts the reason of a disconnection)."""
    errors: list[str] = []
    logger = logging.getLogger(f"tests.rdkafka.{uuid.uuid4().hex}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    logger.addHandler(_Lines(errors))
    producer = ck.Producer({"bootstrap.servers": bootstrap, "error_cb": lambda e: errors.append(str(e)),
                            "logger": logger, "reconnect.backoff.ms": 1000, **conf})
    deadline = time.monotonic() + timeout
    while not any("brokers are down" not in e for e in errors) and time.monotonic() < deadline:
        producer.poll(0.2)
    producer.flush(0)
    del producer
    assert errors, "the client reported no error"
    return " | ".join(errors)


def logged(caplog, text: str, timeout: float = 5) -> bool:
    """Whether the broker logged ``text``, waiting for it: a failed TLS handshake closes the
    connection (asyncio's transport) before the broker's coroutine logs it."""
    deadline = time.monotonic() + timeout
    while not any(text in r.getMessage() for r in caplog.records):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_mutual_tls_refuses_a_client_without_a_certificate(secure, pki, caplog):
    """Issue 15, item 2: ssl.client.auth=required fails the TLS handshake of a client
    without a certificate; the broker logs it at info, no traceback."""
    with caplog.at_level(logging.INFO):
        error = ck_error(secure.bootstrap_servers_for("MTLS"), {"security.protocol": "SSL", **ck_ssl(pki)})
    # TLS 1.3: the client's side of the handshake is done before the server refuses it; a
    # client that already sent its ApiVersions then sees the close as a reset (unread data)
    assert re.search("SSL connection closed by peer|certificate required|SSL handshake failed|"
                     "connection reset by peer", error), error
    assert logged(caplog, "on listener MTLS: TLS handshake failed")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith(("minibroker", "asyncio"))]


@pytest.mark.parametrize(("listener", "trust", "reason"), [
    ("WRONGHOST", "ca", "Hostname mismatch, certificate is not valid for 'localhost'"),
    ("EXPIRED", "ca", "certificate has expired"),
    ("SSL", "other-ca", "self-signed certificate in certificate chain"),  # untrusted CA (the chain ends at ours)
])
def test_certificate_problems_name_the_failed_check(secure, pki, tmp_path, listener, trust, reason):
    """Issue 15, items 4 and 5: a server certificate for another host, an expired one, one
    of a CA the client does not trust: confluent-kafka fails the handshake ("certificate
    verify failed"), and Python's ssl client names the check."""
    ca = pki.ca.cert_path if trust == "ca" else CertificateAuthority.create(tmp_path / "other", "other CA").cert_path
    error = ck_error(secure.bootstrap_servers_for(listener), {"security.protocol": "SSL", "ssl.ca.location": str(ca)})
    assert "certificate verify failed" in error
    host, port = secure.bootstrap_servers_for(listener).rsplit(":", 1)
    context = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        with pytest.raises(ssl.SSLCertVerificationError, match=reason):
            context.wrap_socket(sock, server_hostname=host)


def test_plaintext_client_on_a_tls_listener_and_the_reverse(secure, pki, caplog):
    """Issue 15, item 4: a plaintext client on an SSL listener and an SSL client on a
    PLAINTEXT one both fail cleanly: the client says so, the broker logs one info line."""
    with caplog.at_level(logging.INFO):
        plain_on_tls = ck_error(secure.bootstrap_servers_for("SSL"), {})
        tls_on_plain = ck_error(secure.bootstrap_servers_for("PLAINTEXT"), {"security.protocol": "SSL", **ck_ssl(pki)})
    assert "Disconnected" in plain_on_tls and "APIVERSION_QUERY" in plain_on_tls  # its first request got no answer
    assert re.search("SSL handshake failed|in state SSL_HANDSHAKE", tls_on_plain), tls_on_plain  # the broker hung up
    assert logged(caplog, "on listener SSL: TLS handshake failed")
    assert logged(caplog, "on listener PLAINTEXT: frame size")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith(("minibroker", "asyncio"))]


# -- SASL ---------------------------------------------------------------------------------


def _ck_sasl(pki, listener, mechanism, user="alice", password=None) -> dict:
    conf = {"security.protocol": listener, "sasl.mechanism": mechanism}
    if listener == "SASL_SSL":
        conf.update(ck_ssl(pki))
    if mechanism == "OAUTHBEARER":
        conf.update({"enable.sasl.oauthbearer.unsecure.jwt": True, "sasl.oauthbearer.config": f"principal={user}"})
    else:
        default = "alice-secret" if mechanism == "PLAIN" else "alice-scram"
        conf.update({"sasl.username": user, "sasl.password": password or default})
    return conf


@pytest.mark.parametrize(("listener", "mechanism"), [
    ("SASL_PLAINTEXT", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-256"),  # the two this listener enables
    ("SASL_SSL", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-256"), ("SASL_SSL", "SCRAM-SHA-512"), ("SASL_SSL", "OAUTHBEARER"),
])
def test_confluent_kafka_over_sasl(secure, pki, principals, listener, mechanism):
    """Issue 15, items 3 and 5: PLAIN users from the JAAS config, SCRAM users made by
    AlterUserScramCredentials, OAUTHBEARER with an unsecured JWT; the principal is the
    user's."""
    ck_roundtrip(secure.bootstrap_servers_for(listener), _ck_sasl(pki, listener, mechanism))
    assert {p for name, p in principals if name == listener} == {"User:alice"}


class _KafkaPythonTokens:
    def __init__(self, token):
        self._token = token

    def token(self):
        return self._token

    def extensions(self):
        return {}


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"])
def test_kafka_python_over_sasl_ssl(secure, pki, principals, mechanism):
    """Issue 15, items 3 and 5: kafka-python over SASL_SSL (OAUTHBEARER with a token
    provider)."""
    from kafka.net.sasl.oauth import AbstractTokenProvider

    conf = {"security_protocol": "SASL_SSL", "sasl_mechanism": mechanism, **kp_ssl(pki)}
    if mechanism == "OAUTHBEARER":
        provider = type("Tokens", (_KafkaPythonTokens, AbstractTokenProvider), {})(_jwt())
        conf["sasl_oauth_token_provider"] = provider
    else:
        conf.update({"sasl_plain_username": "alice",
                     "sasl_plain_password": "alice-secret" if mechanism == "PLAIN" else "alice-scram"})
    kp_roundtrip(secure.bootstrap_servers_for("SASL_SSL"), conf)
    assert {p for name, p in principals if name == "SASL_SSL"} == {"User:alice"}


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"])
def test_aiokafka_over_sasl_ssl(secure, pki, mechanism):
    """Issue 15, items 3 and 5: aiokafka over SASL_SSL (OAUTHBEARER with a token provider)."""
    from aiokafka.abc import AbstractTokenProvider

    class Tokens(AbstractTokenProvider):
        async def token(self):
            return _jwt()

    conf = {"security_protocol": "SASL_SSL", "sasl_mechanism": mechanism, **aio_ssl(pki)}
    if mechanism == "OAUTHBEARER":
        conf["sasl_oauth_token_provider"] = Tokens()
    else:
        conf.update({"sasl_plain_username": "alice",
                     "sasl_plain_password": "alice-secret" if mechanism == "PLAIN" else "alice-scram"})
    aio_roundtrip(secure.bootstrap_servers_for("SASL_SSL"), conf)


@pytest.mark.parametrize(("mechanism", "text"), [
    ("PLAIN", "Authentication failed: Invalid username or password"),
    ("SCRAM-SHA-256", "Authentication failed during authentication due to invalid credentials with SASL mechanism "
                      "SCRAM-SHA-256"),
    ("SCRAM-SHA-512", "Authentication failed during authentication due to invalid credentials with SASL mechanism "
                      "SCRAM-SHA-512"),
])
def test_wrong_password_gives_kafkas_text(secure, pki, mechanism, text):
    """Issue 15, item 4: a wrong password is SASL_AUTHENTICATION_FAILED with Kafka's text."""
    error = ck_error(secure.bootstrap_servers_for("SASL_SSL"), _ck_sasl(pki, "SASL_SSL", mechanism, password="wrong"))
    assert text in error


def test_unknown_mechanism_is_refused_with_the_list(secure, pki):
    """Issue 15, items 3 and 4: a mechanism the listener does not enable is
    UNSUPPORTED_SASL_MECHANISM, and the answer lists the enabled ones."""
    error = ck_error(secure.bootstrap_servers_for("SASL_PLAINTEXT"), _ck_sasl(pki, "SASL_PLAINTEXT", "SCRAM-SHA-512"))
    assert "SCRAM-SHA-512" in error and "PLAIN,SCRAM-SHA-256" in error


def test_an_expired_token_is_refused(secure, pki):
    """Issue 15, items 4 and 5: an expired unsecured JWT (its token callback says it is
    still good, so the client sends it) is refused: the server's invalid_token JSON is
    confluent-kafka's SASL error."""
    now_ms = int(time.time() * 1000)
    expired = unsecured_token("alice", now_ms - 7_200_000, lifetime_seconds=60)
    conf = {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", **ck_ssl(pki),
            "oauth_cb": lambda _config: (expired, time.time() + 3600, "alice", {})}
    error = ck_error(secure.bootstrap_servers_for("SASL_SSL"), conf)
    assert 'SASL authentication error: {"status":"invalid_token"}' in error


def test_plaintext_client_on_a_sasl_listener_is_closed(secure, caplog):
    """Issue 15, item 3: on a SASL listener nothing but ApiVersions and SASL passes before
    authentication: a client that skips SASL is disconnected, logged at info."""
    with caplog.at_level(logging.INFO, logger="minibroker"):
        error = ck_error(secure.bootstrap_servers_for("SASL_PLAINTEXT"), {})
    assert "Disconnected" in error
    assert logged(caplog, "on listener SASL_PLAINTEXT: Unexpected Kafka request of type METADATA during SASL handshake.")


def test_reauthentication_keeps_the_connection(pki):
    """Issue 15, items 3 and 5 (KIP-368): under a short connections.max.reauth.ms,
    confluent-kafka re-authenticates on the same connection and keeps producing across
    several session lifetimes; no session expires (an expired one would close its
    connection and fail its authenticator)."""
    from minibroker.sasl import SaslState

    config = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
              "plain.sasl.jaas.config": PLAIN_JAAS, "connections.max.reauth.ms": 2500}
    with MiniBroker(config=config) as broker:
        channels = []
        open_channel = broker._server._open_channel

        async def recording(listener, writer):
            channel = await open_channel(listener, writer)
            channels.append(channel)
            return channel

        broker._server._open_channel = recording
        producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, **_ck_sasl(pki, "SASL_PLAINTEXT", "PLAIN")})
        delivered = []
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and max((c.authenticator.reauthentications for c in channels), default=0) < 2:
            producer.produce("reauth", value=b"v", partition=0, on_delivery=lambda err, msg: delivered.append(err))
            producer.poll(0.1)
        assert producer.flush(15) == 0
    assert max(c.authenticator.reauthentications for c in channels) >= 2  # two lifetimes on one connection
    assert not [c for c in channels if c.authenticator.state is SaslState.FAILED]
    assert len(delivered) > 20 and all(err is None for err in delivered)


def test_confluent_kafkas_admin_describes_and_deletes_scram_users(secure):
    """Issue 15, item 3: DescribeUserScramCredentials and a deletion through
    confluent-kafka's AdminClient, and RESOURCE_NOT_FOUND as its error."""
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": secure.bootstrap_servers_for("PLAINTEXT")})
    described = admin.describe_user_scram_credentials(["alice"])["alice"].result(10)
    assert sorted((i.mechanism, i.iterations) for i in described.scram_credential_infos) == [
        (ScramMechanism.SCRAM_SHA_256, 4096), (ScramMechanism.SCRAM_SHA_512, 4096)]
    upsert = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"pw")
    admin.alter_user_scram_credentials([upsert])["carol"].result(10)
    admin.alter_user_scram_credentials([UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_512)])[
        "carol"].result(10)
    with pytest.raises(ck.KafkaException, match="Attempt to describe a user credential that does not exist"):
        admin.describe_user_scram_credentials(["carol"])["carol"].result(10)
