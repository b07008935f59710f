"""kproto's clients over SASL (issue 15, client side, items 1 and 3): PLAIN, SCRAM-SHA-256,
SCRAM-SHA-512 and OAUTHBEARER with Java's ``sasl.jaas.config`` or librdkafka's names or a
token provider, KIP-368 re-authentication, and each refusal's words.

Real sockets (and TLS for SASL_SSL) against minibroker's SASL listeners (one broker for
the module, tests/support/secure_broker.py): PLAIN users from its JAAS config, SCRAM
users made by kproto's own admin client (AlterUserScramCredentials), OAUTHBEARER with
Kafka's default validator of unsecured JWTs. :class:`~tests.support.secure_broker.SaslLog`
counts the broker's SaslHandshake and SaslAuthenticate requests, so "at once, no retry
storm" is checked on the broker's side. Tansu's SCRAM is in test_client_sasl_tansu.py.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from kproto import AdminClient, Consumer, Producer
from kproto.admin import (
    UserScramCredentialDeletion,
)
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
from kproto.protocol import ApiKey
from kproto.protocol.messages import MetadataRequest
from kproto.security.oauthbearer import unsecured_token
from kproto.security.sasl import OAuthBearerToken, client_sasl
from minibroker import Delay, MiniBroker
from tests.support.leaks import nothing_left_behind  # noqa: F401 (autouse)
from tests.support.secure_broker import (
    PLAIN_USERS,
    SaslLog,
    brokers_named,
    make_scram_users,
    secure_config,
)

GENEROUS = 5.0
USERS = PLAIN_USERS  # PLAIN's, and the SCRAM users the module's admin makes with the same passwords
PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="{}";'
SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="{}";'
OAUTH_JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
              'unsecuredLoginStringClaim_sub="carol";')


@pytest.fixture(scope="module")
def broker(pki, tmp_path_factory):
    """minibroker with the SASL listeners of tests/support/secure_broker.py and SCRAM users
    alice and bob (``USERS``)."""
    with MiniBroker(config=secure_config(pki, tmp_path_factory.mktemp("sasl"))) as broker:
        make_scram_users(broker, USERS)
        yield broker


@pytest.fixture
def sasl_log(monkeypatch):
    return SaslLog(monkeypatch)


def _settings(broker, pki, mechanism, tls=True, listener=None, **more):
    protocol = "SASL_SSL" if tls else "SASL_PLAINTEXT"
    settings = {"bootstrap.servers": broker.bootstrap_servers_for(listener or protocol), "security.protocol": protocol,
                "sasl.mechanism": mechanism, **more}
    if tls:
        settings["ssl.ca.location"] = str(pki.ca.cert_path)
    return settings




@pytest.mark.parametrize("tls", [True, False], ids=["SASL_SSL", "SASL_PLAINTEXT"])
@pytest.mark.parametrize("mechanism, credentials, principal", [
    ("PLAIN", {"sasl.jaas.config": PLAIN_JAAS.format("alice-secret")}, "alice"),
    ("PLAIN", {"sasl.username": "alice", "sasl.password": "alice-secret"}, "alice"),
    ("SCRAM-SHA-256", {"sasl.jaas.config": SCRAM_JAAS.format("bob-secret")}, "bob"),
    ("SCRAM-SHA-512", {"sasl.username": "bob", "sasl.password": "bob-secret"}, "bob"),
    ("OAUTHBEARER", {"sasl.jaas.config": OAUTH_JAAS}, "carol"),
], ids=["PLAIN-jaas", "PLAIN-username", "SCRAM-SHA-256-jaas", "SCRAM-SHA-512-username", "OAUTHBEARER-unsecured"])
def test_each_mechanism_authenticates_with_java_or_librdkafka_settings(broker, pki, sasl_log, tls, mechanism,
                                                                       credentials, principal):
    """Issue 15 items 1 and 3: SaslHandshake v1 then SaslAuthenticate, for each mechanism,
    with sasl.jaas.config as Java users write it or librdkafka's sasl.username/password;
    the broker's principal is the user's."""
    assert list(brokers_named(_settings(broker, pki, mechanism, tls, **credentials))) == [0]
    assert sasl_log.authentications == [(mechanism, principal)]
    listener = "SASL_SSL" if tls else "SASL_PLAINTEXT"
    assert sasl_log.requests and set(sasl_log.requests) == {(listener, f"User:{principal}")}


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
def test_oauthbearer_token_provider_in_each_form(broker, pki, sasl_log, provider, principal):
    """Issue 15 item 1: sasl.oauthbearer.token.provider: a callable (sync, run in a
    thread, or async) or an object with token(), answering a str, a (token, expiry)
    tuple or an OAuthBearerToken with SASL extensions."""
    settings = _settings(broker, pki, "OAUTHBEARER", **{"sasl.oauthbearer.token.provider": provider})
    assert list(brokers_named(settings)) == [0]
    assert sasl_log.authentications == [("OAUTHBEARER", principal)]


@pytest.mark.parametrize("mechanism, words", [
    ("PLAIN", "Authentication failed: Invalid username or password"),
    ("SCRAM-SHA-256", "Authentication failed during authentication due to invalid credentials with SASL mechanism "
                      "SCRAM-SHA-256"),
    ("SCRAM-SHA-512", "Authentication failed during authentication due to invalid credentials with SASL mechanism "
                      "SCRAM-SHA-512"),
])
def test_wrong_password_fails_at_once_with_the_brokers_words_and_no_retry(broker, pki, sasl_log, mechanism, words):
    """Issue 15 item 3: a wrong password is a SaslAuthenticationError at once, with
    Kafka's text as the broker sends it, after one exchange (Java's
    AuthenticationException is not retriable): the broker sees one SaslHandshake."""
    started = time.monotonic()
    with pytest.raises(SaslAuthenticationError) as caught:
        brokers_named(_settings(broker, pki, mechanism, **{"sasl.jaas.config": SCRAM_JAAS.format("wrong")}))
    assert time.monotonic() - started < GENEROUS
    assert isinstance(caught.value, SaslAuthenticationFailedError) and isinstance(caught.value, AuthenticationError)
    assert not caught.value.retriable
    text = str(caught.value)
    assert "SASL_AUTHENTICATION_FAILED" in text and f"refused {mechanism} authentication of user 'bob'" in text
    assert words in text
    assert sasl_log.handshakes == [mechanism] and sasl_log.failures == 1 and sasl_log.authentications == []
    # PLAIN: one message; SCRAM: client-first answered, client-final refused
    assert sasl_log.authenticates == (1 if mechanism == "PLAIN" else 2)


def test_every_client_fails_promptly_with_the_sasl_error_and_does_not_storm_the_broker(broker, pki, sasl_log):
    """Issue 15 item 3: producer, consumer and admin calls fail with SaslAuthenticationError
    at once; calls in a row do one exchange each, spaced by the reconnect backoff."""
    settings = _settings(broker, pki, "PLAIN", **{"sasl.username": "alice", "sasl.password": "wrong",
                                                  "reconnect.backoff.ms": 200, "reconnect.backoff.max.ms": 200})
    started = time.monotonic()
    with AdminClient(settings) as admin:
        for _ in range(3):
            with pytest.raises(SaslAuthenticationError, match="Invalid username or password"):
                admin.list_topics()
    assert len(sasl_log.handshakes) == 3 and sasl_log.authenticates == 3
    assert time.monotonic() - started >= 2 * 0.2 * 0.8  # two backoffs, less KIP-580's jitter
    with Producer(settings) as producer, pytest.raises(SaslAuthenticationError):
        producer.send("t", b"v").result(30)
    with Consumer(settings, group_id="g") as consumer, pytest.raises(SaslAuthenticationError):
        consumer.subscribe(["t"])
        consumer.poll(30)
    assert time.monotonic() - started < 3 * GENEROUS
    # one exchange per connection attempt: as many SaslAuthenticate requests as handshakes
    assert sasl_log.authenticates == len(sasl_log.handshakes) == sasl_log.failures
    assert len(sasl_log.handshakes) <= 8


def test_unsupported_mechanism_names_the_brokers_mechanisms(broker, pki, sasl_log):
    """Issue 15 item 3: UNSUPPORTED_SASL_MECHANISM says what the broker has enabled; the
    exchange stops at the handshake."""
    with pytest.raises(UnsupportedSaslMechanismError,
                       match=r"'SCRAM-SHA-256' not enabled in the server, enabled mechanisms are \[PLAIN, SCRAM-SHA-512\]"):
        brokers_named(_settings(broker, pki, "SCRAM-SHA-256", False, "LIMITED",
                            **{"sasl.username": "bob", "sasl.password": "bob-secret"}))
    assert sasl_log.handshakes == ["SCRAM-SHA-256"] and sasl_log.authenticates == 0


def test_expired_token_is_refused_with_the_brokers_status_and_the_expiry(broker, pki, sasl_log):
    """Issue 15 item 3: the broker answers OAUTHBEARER's JSON error, the client its
    ``\\x01``, and the failure names the token's expiry; one exchange."""
    an_hour_ago = time.time() - 3600

    def expired():
        return unsecured_token("dave", int(an_hour_ago * 1000), lifetime_seconds=60), an_hour_ago + 60

    with pytest.raises(SaslAuthenticationError) as caught:
        brokers_named(_settings(broker, pki, "OAUTHBEARER", **{"sasl.oauthbearer.token.provider": expired}))
    text = str(caught.value)
    assert "invalid_token" in text and "the token expired at" in text
    # the token, then the client's \\x01 after the broker's JSON error; no second attempt
    assert sasl_log.handshakes == ["OAUTHBEARER"] and sasl_log.authenticates == 2 and sasl_log.failures == 1


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


@pytest.fixture
def reauth_broker(pki, tmp_path):
    """``reauth_broker(ms)``: a broker of its own whose SASL sessions last
    ``connections.max.reauth.ms`` (KIP-368), with the SCRAM user bob."""
    made = []

    def make(reauth_ms):
        broker = MiniBroker(config=secure_config(pki, tmp_path / str(len(made)),
                                                 **{"connections.max.reauth.ms": reauth_ms})).start()
        made.append(broker)
        make_scram_users(broker, {"bob": "bob-secret"})
        return broker

    yield make
    for broker in made:
        broker.stop()


async def _open(broker, pki, **settings):
    config = ClientConfig("admin", _settings(broker, pki, "SCRAM-SHA-512", **{"sasl.username": "bob",
                                                                              "sasl.password": "bob-secret",
                                                                              **settings}))
    cluster = Cluster(config)  # for its TLS context and SASL client
    host, port = config["bootstrap.servers"].rsplit(":", 1)
    conn = cluster._new_connection(host, int(port), 0)
    await conn.open()
    return conn


def test_reauthentication_before_the_session_ends_keeps_requests_in_flight(reauth_broker, pki, sasl_log):
    """Issue 15 item 3, KIP-368: with a session lifetime (the broker's
    connections.max.reauth.ms) the client authenticates again on the same connection
    between 85% and 95% of it, when it next sends; a request already in flight gets its
    answer, a new one goes out after the new session (Java holds it)."""
    broker = reauth_broker(1000)
    before = len(sasl_log.events)  # the admin's that made the SCRAM user

    async def run():
        conn = await _open(broker, pki)
        try:
            opened = time.monotonic()
            first_expiry = conn.session_expires_at
            assert first_expiry is not None and 0.9 < first_expiry - opened <= 1.0
            await conn.request(MetadataRequest(topics=[]))
            broker.requests.control(ApiKey.METADATA, Delay(0.5), times=1)
            await asyncio.sleep(max(0.0, opened + 0.5 - time.monotonic()))
            in_flight = asyncio.ensure_future(conn.request(MetadataRequest(topics=[])))
            await asyncio.sleep(max(0.0, opened + 0.96 - time.monotonic()))  # past 95%
            after = asyncio.ensure_future(conn.request(MetadataRequest(topics=[])))
            await asyncio.gather(in_flight, after)
            assert not conn.closed and conn.session_expires_at > first_expiry
        finally:
            await conn.close()

    asyncio.run(run())
    assert sasl_log.events[before:] == ["authenticated", "Metadata", "Metadata", "authenticated", "Metadata"]
    assert len(sasl_log.authenticators) == 1 and sasl_log.reauthentications == 1
    assert sasl_log.handshakes == ["SCRAM-SHA-512"] * 2


def test_a_reauthentication_behind_a_slow_request_is_not_timed_by_it(reauth_broker, pki):
    """Issue 15 review (KIP-368): the broker answers in order, so a re-authentication waits
    for the answers already due; that wait is the requests' own (request.timeout.ms), not
    the SASL exchange's: a request slower than socket.connection.setup.timeout.ms but within
    its own timeout gets its answer, and so does the one that re-authenticated first."""
    broker = reauth_broker(1000)

    async def run():
        conn = await _open(broker, pki, **{"socket.connection.setup.timeout.ms": 500})
        try:
            opened = time.monotonic()
            broker.requests.control(ApiKey.METADATA, Delay(1.5), times=1)
            slow = asyncio.ensure_future(conn.request(MetadataRequest(topics=[])))
            await asyncio.sleep(max(0.0, opened + 0.96 - time.monotonic()))  # past 95%: renews first
            after = await conn.request(MetadataRequest(topics=[]))
            assert (await slow).brokers and after.brokers and not conn.closed
        finally:
            await conn.close()

    asyncio.run(run())


def test_failed_reauthentication_fails_the_connection_with_the_sasl_error(reauth_broker, pki):
    """Issue 15 item 3, KIP-368: a re-authentication refused (the user's credential was
    deleted meanwhile, by kproto's admin client) fails the request that waited for it and
    closes the connection."""
    broker = reauth_broker(1000)

    async def run():
        conn = await _open(broker, pki)
        try:
            opened = time.monotonic()
            with AdminClient(bootstrap_servers=broker.bootstrap_servers_for("PLAINTEXT")) as admin:
                admin.alter_user_scram_credentials([UserScramCredentialDeletion("bob", "SCRAM-SHA-512")])
            await asyncio.sleep(max(0.0, opened + 0.96 - time.monotonic()))
            with pytest.raises(SaslAuthenticationError, match="invalid credentials"):
                await conn.request(MetadataRequest(topics=[]))
            assert conn.closed
        finally:
            await conn.close()

    asyncio.run(run())


def test_no_reauthentication_without_a_session_lifetime(broker, pki, sasl_log):
    """Issue 15 item 3: a broker that answers no session_lifetime_ms (0) keeps the session."""

    async def run():
        conn: Connection = await _open(broker, pki)
        try:
            assert conn.session_expires_at is None
            await conn.request(MetadataRequest(topics=[]))
        finally:
            await conn.close()

    asyncio.run(run())
    assert len(sasl_log.handshakes) == 1


class _JavaShapedToken:
    """What kproto.security.oidc's ClientCredentialsTokenProvider.token() answers
    (Java's OAuthBearerToken: value, lifetimeMs as the expiry, principalName)."""

    def __init__(self, value, lifetime_ms, principal):
        self.value, self.lifetime_ms, self.principal = value, lifetime_ms, principal


def test_oauthbearer_provider_answering_a_java_shaped_token(broker, pki, sasl_log):
    """Issue 15 item 1: a token provider object whose token() answers Java's token shape
    (what the OIDC client-credentials provider gives) plugs in as it is."""

    class OidcLike:
        def token(self):
            now = time.time()
            return _JavaShapedToken(unsecured_token("frank", int(now * 1000)), int(now * 1000) + 3_600_000, "frank")

    assert list(brokers_named(_settings(broker, pki, "OAUTHBEARER", **{"sasl.oauthbearer.token.provider": OidcLike()})))
    assert sasl_log.authentications == [("OAUTHBEARER", "frank")]


@pytest.mark.parametrize("listener", ["PLAINTEXT", "SSL"])
def test_sasl_client_on_a_listener_without_sasl_says_so(broker, pki, listener):
    """Issue 15 item 3: a SASL client on a PLAINTEXT or SSL listener is told at once:
    minibroker, as Kafka, answers its SaslHandshake with ILLEGAL_SASL_STATE."""
    tls = listener == "SSL"
    started = time.monotonic()
    with pytest.raises(IllegalSaslStateError, match="is the listener PLAINTEXT or SSL"):
        brokers_named(_settings(broker, pki, "PLAIN", tls, listener, **{"sasl.username": "a", "sasl.password": "b"}))
    assert time.monotonic() - started < GENEROUS


@pytest.fixture
def before_kafka_1_0(monkeypatch):
    """The broker's ApiVersions as a Kafka 0.10/0.11 broker answers them: SaslHandshake v0
    only and no SaslAuthenticate (minibroker still takes v0's raw tokens, as those did)."""
    negotiate = Connection._negotiate

    async def old_broker(self):
        await negotiate(self)
        self.api_versions[ApiKey.SASL_HANDSHAKE] = (0, 0)
        self.api_versions.pop(ApiKey.SASL_AUTHENTICATE, None)

    monkeypatch.setattr(Connection, "_negotiate", old_broker)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_broker_before_kafka_1_0_takes_raw_tokens(broker, pki, sasl_log, before_kafka_1_0, mechanism):
    """Issue 15 item 3 (SaslHandshake v0/v1): with a broker that has SaslHandshake v0 only,
    the client sends the mechanism's tokens as raw frames (as Java's client does) and logs
    in; a wrong password, which such a broker answers by closing the connection, is a
    SaslAuthenticationError that says so."""
    credentials = {"sasl.username": "alice", "sasl.password": "alice-secret"}
    assert brokers_named(_settings(broker, pki, mechanism, **credentials))
    assert ("SASL_SSL", "User:alice") in sasl_log.requests
    with pytest.raises(SaslAuthenticationError, match=r"closed the connection during .*\(SaslHandshake v0"):
        brokers_named(_settings(broker, pki, mechanism, **{**credentials, "sasl.password": "wrong"}))
