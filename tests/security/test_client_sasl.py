"""kproto's clients over SASL (issue 15, client side, items 1 and 3): PLAIN, SCRAM-SHA-256,
SCRAM-SHA-512 and OAUTHBEARER with Java's ``sasl.jaas.config`` or librdkafka's names or a
token provider, KIP-368 re-authentication, and each refusal's words.

Real sockets (and TLS for SASL_SSL) against the test broker of
tests/support/secure_broker.py, whose server side is kproto.security's ScramServer,
plain.check and OAuthBearerServer (the ``make_broker`` fixture: minibroker's SASL
listeners can take its place). Tansu's SCRAM is in test_client_sasl_tansu.py.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from kproto import AdminClient, Consumer, Producer
from kproto.config import ClientConfig
from kproto.errors import (
    AuthenticationError,
    ConfigError,
    IllegalSaslStateError,
    SaslAuthenticationError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
)
from kproto.io import Cluster, Connection
from kproto.protocol.messages import MetadataRequest
from kproto.security.oauthbearer import unsecured_token
from kproto.security.sasl import OAuthBearerToken, client_sasl
from tests.support.leaks import nothing_left_behind  # noqa: F401 (autouse)
from tests.support.secure_broker import SecureBroker, server_context

GENEROUS = 5.0
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="{}";'
SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="{}";'
OAUTH_JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
              'unsecuredLoginStringClaim_sub="carol";')


@pytest.fixture
def make_broker(pki):
    """A SASL broker factory: ``make_broker(tls=True, **SecureBroker's arguments)``, with
    PLAIN and SCRAM users ``USERS`` and unsecured OAUTHBEARER unless told otherwise."""
    made = []

    def make(*, tls=True, **kwargs):
        kwargs.setdefault("plain_users", USERS)
        kwargs.setdefault("scram_users", USERS)
        kwargs.setdefault("oauthbearer", True)
        context = server_context(pki.server.cert_path, pki.server.key_path) if tls else None
        broker = SecureBroker(ssl_context=context, **kwargs).__enter__()
        made.append(broker)
        return broker

    yield make
    for broker in made:
        broker.close()


def _settings(broker, pki, mechanism, tls=True, **more):
    settings = {"bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SASL_SSL" if tls else
                "SASL_PLAINTEXT", "sasl.mechanism": mechanism, **more}
    if tls:
        settings["ssl.ca.location"] = str(pki.ca.cert_path)
    return settings


def _metadata(settings: dict) -> dict:
    async def run():
        cluster = Cluster(ClientConfig("admin", settings))
        try:
            await cluster.refresh(all_topics=True)
            return dict(cluster.brokers)
        finally:
            await cluster.close()
    return asyncio.run(run())


@pytest.mark.parametrize("tls", [True, False], ids=["SASL_SSL", "SASL_PLAINTEXT"])
@pytest.mark.parametrize("mechanism, credentials, principal", [
    ("PLAIN", {"sasl.jaas.config": PLAIN_JAAS.format("alice-secret")}, "alice"),
    ("PLAIN", {"sasl.username": "alice", "sasl.password": "alice-secret"}, "alice"),
    ("SCRAM-SHA-256", {"sasl.jaas.config": SCRAM_JAAS.format("bob-secret")}, "bob"),
    ("SCRAM-SHA-512", {"sasl.username": "bob", "sasl.password": "bob-secret"}, "bob"),
    ("OAUTHBEARER", {"sasl.jaas.config": OAUTH_JAAS}, "carol"),
], ids=["PLAIN-jaas", "PLAIN-username", "SCRAM-SHA-256-jaas", "SCRAM-SHA-512-username", "OAUTHBEARER-unsecured"])
def test_each_mechanism_authenticates_with_java_or_librdkafka_settings(make_broker, pki, tls, mechanism,
                                                                       credentials, principal):
    """Issue 15 items 1 and 3: SaslHandshake v1 then SaslAuthenticate, for each mechanism,
    with sasl.jaas.config as Java users write it or librdkafka's sasl.username/password."""
    broker = make_broker(tls=tls)
    assert list(_metadata(_settings(broker, pki, mechanism, tls, **credentials))) == [0]
    assert broker.authentications == [(mechanism, principal)]
    assert broker.requests and all(p == principal for _, p in broker.requests)


async def _async_provider():
    return unsecured_token("dave", int(time.time() * 1000))


class _Provider:
    """A provider object (what an OIDC client-credentials provider looks like)."""

    def __init__(self):
        self.calls = 0

    def token(self):
        self.calls += 1
        now = time.time()
        return OAuthBearerToken(unsecured_token("erin", int(now * 1000)), now + 3600, "erin",
                                {"logicalCluster": "lkc-1"})


@pytest.mark.parametrize("provider, principal", [
    (lambda: unsecured_token("dave", int(time.time() * 1000)), "dave"),
    (lambda: (unsecured_token("dave", int(time.time() * 1000)), time.time() + 3600), "dave"),
    (_async_provider, "dave"),
    (_Provider(), "erin"),
], ids=["str", "tuple", "async", "object-with-token"])
def test_oauthbearer_token_provider_in_each_form(make_broker, pki, provider, principal):
    """Issue 15 item 1: sasl.oauthbearer.token.provider: a callable (sync, run in a
    thread, or async) or an object with token(), answering a str, a (token, expiry)
    tuple or an OAuthBearerToken with SASL extensions."""
    broker = make_broker()
    settings = _settings(broker, pki, "OAUTHBEARER", **{"sasl.oauthbearer.token.provider": provider})
    assert list(_metadata(settings)) == [0]
    assert broker.authentications == [("OAUTHBEARER", principal)]


def test_wrong_password_fails_at_once_with_the_brokers_words_and_no_retry(make_broker, pki):
    """Issue 15 item 3: a wrong password is a SaslAuthenticationError at once, after one
    exchange (Java's AuthenticationException is not retriable)."""
    broker = make_broker()
    started = time.monotonic()
    with pytest.raises(SaslAuthenticationError) as caught:
        _metadata(_settings(broker, pki, "SCRAM-SHA-256", **{"sasl.jaas.config": SCRAM_JAAS.format("wrong")}))
    assert time.monotonic() - started < GENEROUS
    assert isinstance(caught.value, SaslAuthenticationFailedError) and isinstance(caught.value, AuthenticationError)
    assert not caught.value.retriable
    text = str(caught.value)
    assert "SASL_AUTHENTICATION_FAILED" in text and "SCRAM-SHA-256" in text and "'bob'" in text
    assert "invalid credentials" in text
    assert broker.handshakes == 1 and broker.authentications == []


def test_every_client_fails_promptly_with_the_sasl_error_and_does_not_storm_the_broker(make_broker, pki):
    """Issue 15 item 3: producer, consumer and admin calls fail with SaslAuthenticationError
    at once; calls in a row do one exchange each, spaced by the reconnect backoff."""
    broker = make_broker()
    settings = _settings(broker, pki, "PLAIN", **{"sasl.username": "alice", "sasl.password": "wrong",
                                                  "reconnect.backoff.ms": 200, "reconnect.backoff.max.ms": 200})
    started = time.monotonic()
    with AdminClient(settings) as admin:
        for _ in range(3):
            with pytest.raises(SaslAuthenticationError, match="Invalid username or password"):
                admin.list_topics()
    assert broker.handshakes == 3
    assert time.monotonic() - started >= 2 * 0.2 * 0.8  # two backoffs, less KIP-580's jitter
    with Producer(settings) as producer, pytest.raises(SaslAuthenticationError):
        producer.send("t", b"v").result(30)
    with Consumer(settings, group_id="g") as consumer, pytest.raises(SaslAuthenticationError):
        consumer.subscribe(["t"])
        consumer.poll(30)
    assert time.monotonic() - started < 3 * GENEROUS


def test_unsupported_mechanism_names_the_brokers_mechanisms(make_broker, pki):
    """Issue 15 item 3: UNSUPPORTED_SASL_MECHANISM says what the broker has enabled."""
    broker = make_broker(mechanisms=("PLAIN", "SCRAM-SHA-512"))
    with pytest.raises(UnsupportedSaslMechanismError,
                       match=r"'SCRAM-SHA-256' not enabled in the server, enabled mechanisms are \[PLAIN, SCRAM-SHA-512\]"):
        _metadata(_settings(broker, pki, "SCRAM-SHA-256", **{"sasl.username": "bob", "sasl.password": "bob-secret"}))


def test_expired_token_is_refused_with_the_brokers_status_and_the_expiry(make_broker, pki):
    """Issue 15 item 3: the broker answers OAUTHBEARER's JSON error, the client its
    ``\\x01``, and the failure names the token's expiry."""
    broker = make_broker()
    an_hour_ago = time.time() - 3600

    def expired():
        return unsecured_token("dave", int(an_hour_ago * 1000), lifetime_seconds=60), an_hour_ago + 60

    with pytest.raises(SaslAuthenticationError) as caught:
        _metadata(_settings(broker, pki, "OAUTHBEARER", **{"sasl.oauthbearer.token.provider": expired}))
    text = str(caught.value)
    assert "invalid_token" in text and "the token expired at" in text


@pytest.mark.parametrize("settings, message", [
    ({}, "sasl.mechanism=GSSAPI is not supported by kproto"),
    ({"sasl.mechanism": "PLAIN"}, "needs sasl.username and sasl.password"),
    ({"sasl.mechanism": "PLAIN", "sasl.username": "a"}, "needs sasl.username and sasl.password"),
    ({"sasl.mechanism": "PLAIN", "sasl.username": "a", "sasl.password": "b", "sasl.jaas.config": PLAIN_JAAS},
     "sasl.jaas.config and sasl.username both give the credentials"),
    ({"sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": OAUTH_JAAS}, "needs .*ScramLoginModule"),
    ({"sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": PLAIN_JAAS}, "needs .*OAuthBearerLoginModule"),
    ({"sasl.mechanism": "OAUTHBEARER"}, "needs sasl.oauthbearer.token.provider or sasl.jaas.config"),
    ({"sasl.mechanism": "OAUTHBEARER", "sasl.username": "a", "sasl.password": "b"}, "are for PLAIN and SCRAM"),
    ({"sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config":
      "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"}, "No principal name"),
    ({"sasl.mechanism": "PLAIN", "sasl.oauthbearer.token.provider": lambda: "t"}, "is for OAUTHBEARER"),
    ({"sasl.mechanism": "PLAIN", "sasl.jaas.config": "PlainLoginModule required"}, "semi-colon"),
    ({"sasl.mechanism": "DIGEST-MD5"}, "expected one of"),
    ({"sasl.oauthbearer.token.provider": 42}, "expected a callable"),
])
def test_bad_sasl_settings_are_config_errors_naming_the_keys(settings, message):
    """Issue 15 item 1: Java's default mechanism GSSAPI is not spoken; missing or doubled
    credentials and a login module of another mechanism are errors when the client is made."""
    with pytest.raises(ConfigError, match=message):
        Cluster(ClientConfig("admin", {"bootstrap.servers": "127.0.0.1:9", "security.protocol": "SASL_SSL",
                                       **settings}))


def test_plain_and_scram_login_modules_serve_either_mechanism():
    """Issue 15 item 1: as in Java, whose PlainLoginModule and ScramLoginModule both just
    hand over the user name and password."""
    sasl = client_sasl(ClientConfig("admin", {"bootstrap.servers": "h:1", "security.protocol": "SASL_PLAINTEXT",
                                              "sasl.mechanism": "SCRAM-SHA-512",
                                              "sasl.jaas.config": PLAIN_JAAS.format("pw")}))
    assert (sasl.mechanism, sasl.username, sasl.password) == ("SCRAM-SHA-512", "alice", "pw")
    assert "pw" not in repr(sasl)


async def _open(broker, pki, **settings):
    config = ClientConfig("admin", _settings(broker, pki, "SCRAM-SHA-512", **{"sasl.username": "bob",
                                                                              "sasl.password": "bob-secret",
                                                                              **settings}))
    cluster = Cluster(config)  # for its TLS context and SASL client
    conn = cluster._new_connection("127.0.0.1", broker.port, 0)
    await conn.open()
    return conn


def test_reauthentication_before_the_session_ends_keeps_requests_in_flight(make_broker, pki):
    """Issue 15 item 3, KIP-368: with a session lifetime the client authenticates again on
    the same connection between 85% and 95% of it, when it next sends; a request already
    in flight gets its answer, a new one goes out after the new session (Java holds it)."""
    broker = make_broker(session_lifetime_ms=1000)

    async def run():
        conn = await _open(broker, pki)
        try:
            opened = time.monotonic()
            first_expiry = conn.session_expires_at
            assert first_expiry is not None and 0.9 < first_expiry - opened <= 1.0
            await conn.request(MetadataRequest(topics=[]))
            broker.metadata_delay = 0.5
            await asyncio.sleep(max(0.0, opened + 0.5 - time.monotonic()))
            in_flight = asyncio.ensure_future(conn.request(MetadataRequest(topics=[])))
            await asyncio.sleep(max(0.0, opened + 0.96 - time.monotonic()))  # past 95%
            after = asyncio.ensure_future(conn.request(MetadataRequest(topics=[])))
            await asyncio.gather(in_flight, after)
            assert not conn.closed and conn.session_expires_at > first_expiry
        finally:
            await conn.close()

    asyncio.run(run())
    assert broker.events == ["authenticated", "Metadata", "Metadata", "authenticated", "Metadata"]
    assert broker.connections == 1 and broker.handshakes == 2


def test_failed_reauthentication_fails_the_connection_with_the_sasl_error(make_broker, pki):
    """Issue 15 item 3, KIP-368: a re-authentication refused (the password changed) fails
    the request that waited for it and closes the connection."""
    broker = make_broker(session_lifetime_ms=300)

    async def run():
        conn = await _open(broker, pki)
        try:
            broker._scram.clear()  # the user is gone
            await asyncio.sleep(0.3)
            with pytest.raises(SaslAuthenticationError):
                await conn.request(MetadataRequest(topics=[]))
            assert conn.closed
        finally:
            await conn.close()

    asyncio.run(run())


def test_no_reauthentication_without_a_session_lifetime(make_broker, pki):
    """Issue 15 item 3: a broker that answers no session_lifetime_ms (0) keeps the session."""
    broker = make_broker()

    async def run():
        conn: Connection = await _open(broker, pki)
        try:
            assert conn.session_expires_at is None
            await conn.request(MetadataRequest(topics=[]))
        finally:
            await conn.close()

    asyncio.run(run())
    assert broker.handshakes == 1


class _JavaShapedToken:
    """What kproto.security.oidc's ClientCredentialsTokenProvider.token() answers
    (Java's OAuthBearerToken: value, lifetimeMs as the expiry, principalName)."""

    def __init__(self, value, lifetime_ms, principal):
        self.value, self.lifetime_ms, self.principal = value, lifetime_ms, principal


def test_oauthbearer_provider_answering_a_java_shaped_token(make_broker, pki):
    """Issue 15 item 1: a token provider object whose token() answers Java's token shape
    (what the OIDC client-credentials provider gives) plugs in as it is."""
    broker = make_broker()

    class OidcLike:
        def token(self):
            now = time.time()
            return _JavaShapedToken(unsecured_token("frank", int(now * 1000)), int(now * 1000) + 3_600_000, "frank")

    assert list(_metadata(_settings(broker, pki, "OAUTHBEARER", **{"sasl.oauthbearer.token.provider": OidcLike()})))
    assert broker.authentications == [("OAUTHBEARER", "frank")]


def test_sasl_client_on_a_broker_without_sasl_says_so(kafka_broker):
    """Issue 15 item 3: a SASL_PLAINTEXT client on a PLAINTEXT listener is told at once:
    the broker answers its SaslHandshake ILLEGAL_SASL_STATE, as Kafka's KafkaApis does."""
    with pytest.raises(IllegalSaslStateError, match="is the listener PLAINTEXT or SSL"):
        _metadata({"bootstrap.servers": kafka_broker.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                   "sasl.mechanism": "PLAIN", "sasl.username": "a", "sasl.password": "b"})
