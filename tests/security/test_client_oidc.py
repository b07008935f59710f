"""kproto's clients with ``sasl.oauthbearer.token.endpoint.url`` (issue 15, client side:
the OIDC client-credentials flow of KIP-768): a real local token endpoint
(tests/security/endpoint.py) issues unsecured JWTs (``alg`` none: the client reads a
token's claims, it does not verify its signature, as Java's ``ClientJwtValidator``), a
kproto producer sends them to minibroker's OAUTHBEARER listener, whose default validator
accepts unsecured JWTs; a refreshed token is the one the next re-authentication sends; a
refusal of the endpoint fails the client at once.
"""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import time
import urllib.parse

import pytest

from kproto import AdminClient, Producer
from kproto.aio import AIOProducer
from kproto.config import ClientConfig
from kproto.errors import ConfigError, SaslAuthenticationError
from kproto.io import Cluster
from kproto.security.oauthbearer import unsecured_token
from kproto.security.oidc import ClientCredentialsTokenProvider, TokenRetrievalError
from minibroker import MiniBroker
from tests.security.endpoint import Reply, http_endpoint
from tests.support.leaks import nothing_left_behind  # noqa: F401 (autouse)
from tests.support.secure_broker import SaslLog, secure_config

GENEROUS = 5.0
HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
        'clientId="kafka-app" clientSecret="app-secret" scope="kafka";')


class _Issuing:
    """A reply of the endpoint that issues a fresh token each time it is given (a Reply
    to http_endpoint), and remembers the tokens it issued."""

    status, delay, headers = 200, 0.0, {}  # the fields of a Reply (tests/security/endpoint.py)

    def __init__(self, lifetime_seconds: int) -> None:
        self.lifetime_seconds = lifetime_seconds
        self.issued: list[str] = []

    @property
    def body(self) -> str:
        token = unsecured_token("app-principal", int(time.time() * 1000), lifetime_seconds=self.lifetime_seconds)
        self.issued.append(token)
        return json.dumps({"access_token": token, "token_type": "Bearer", "expires_in": self.lifetime_seconds})


def _token_reply(subject="app-principal", lifetime_seconds=3600) -> Reply:
    token = unsecured_token(subject, int(time.time() * 1000), lifetime_seconds=lifetime_seconds)
    return Reply(200, json.dumps({"access_token": token, "token_type": "Bearer", "expires_in": lifetime_seconds}))


@pytest.fixture(scope="module")
def broker(pki, tmp_path_factory):
    with MiniBroker(config=secure_config(pki, tmp_path_factory.mktemp("oidc"))) as broker:
        yield broker


@pytest.fixture
def sasl_log(monkeypatch):
    return SaslLog(monkeypatch)


def _settings(broker, url, **more):
    return {"bootstrap.servers": broker.bootstrap_servers_for("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.token.endpoint.url": url, "sasl.jaas.config": JAAS,
            **more}


def test_producer_gets_its_token_from_the_endpoint_and_the_broker_accepts_it(broker, sasl_log):
    """Issue 15 (OIDC): with sasl.oauthbearer.token.endpoint.url the client's provider is
    ClientCredentialsTokenProvider: it POSTs the client-credentials grant (Basic
    authorization from the JAAS clientId/clientSecret, the scope), and the JWT it gets is
    what the broker validates; the principal is the token's subject."""
    with http_endpoint(_token_reply()) as endpoint:
        with Producer(_settings(broker, endpoint.url)) as producer:
            assert producer.send("oidc", b"v", partition=0).result(10).offset == 0
    assert sasl_log.authentications and set(sasl_log.authentications) == {("OAUTHBEARER", "app-principal")}
    assert set(sasl_log.requests) == {("SASL_PLAINTEXT", "User:app-principal")}
    # one fetch for every connection: the provider keeps the token until its refresh time
    assert len(endpoint.requests) == 1
    request = endpoint.requests[0]
    assert request.method == "POST" and request.path == "/token"
    assert request.headers["Authorization"] == "Basic " + base64.b64encode(b"kafka-app:app-secret").decode()
    assert urllib.parse.parse_qs(request.body) == {"grant_type": ["client_credentials"], "scope": ["kafka"]}
    assert len(set(sasl_log.tokens)) == 1


def test_kip_1139_keys_give_the_client_credentials(broker, sasl_log):
    """Issue 15 (OIDC): Kafka 4.1's sasl.oauthbearer.client.credentials.client.id/secret and
    sasl.oauthbearer.scope, without a sasl.jaas.config; and sasl.oauthbearer.sub.claim.name
    names the claim the client reads the principal from."""
    settings = _settings(broker, "", **{"sasl.oauthbearer.client.credentials.client.id": "id-2",
                                        "sasl.oauthbearer.client.credentials.client.secret": "secret-2",
                                        "sasl.oauthbearer.scope": "a b"})
    del settings["sasl.jaas.config"]
    with http_endpoint(_token_reply("k41")) as endpoint:
        settings["sasl.oauthbearer.token.endpoint.url"] = endpoint.url
        with Producer(settings) as producer:
            producer.send("oidc-41", b"v").result(10)
    assert endpoint.requests[0].headers["Authorization"] == "Basic " + base64.b64encode(b"id-2:secret-2").decode()
    assert urllib.parse.parse_qs(endpoint.requests[0].body)["scope"] == ["a b"]
    assert set(sasl_log.authentications) == {("OAUTHBEARER", "k41")}


def test_a_refreshed_token_is_sent_at_the_next_reauthentication(pki, tmp_path, sasl_log):
    """Issue 15 (OIDC, KIP-368): tokens of 3 s refreshed at half their lifetime
    (sasl.login.refresh.*): the broker's session ends with the token, the connection
    authenticates again before that, and with the token fetched anew, never an old one."""
    config = secure_config(pki, tmp_path, **{"connections.max.reauth.ms": 60000})
    issuing = _Issuing(lifetime_seconds=3)
    with MiniBroker(config=config) as reauth_broker, http_endpoint(issuing) as endpoint:
        settings = _settings(reauth_broker, endpoint.url, **{
            "sasl.login.refresh.window.factor": 0.5, "sasl.login.refresh.window.jitter": 0,
            "sasl.login.refresh.min.period.seconds": 0, "sasl.login.refresh.buffer.seconds": 0, "linger.ms": 0})
        with Producer(settings) as producer:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and sasl_log.reauthentications < 1:
                producer.send("refresh", b"v", partition=0).result(10)
                time.sleep(0.05)
    assert sasl_log.reauthentications >= 1 and sasl_log.failures == 0
    # every (re-)authentication of the producing connection sent a token the endpoint issued
    # since the last one: tokens change, and none is sent after a newer one was
    issued = issuing.issued
    assert len(issued) == len(endpoint.requests)
    assert set(sasl_log.tokens) <= set(issued) and len(set(sasl_log.tokens)) >= 2
    order = [issued.index(t) for t in sasl_log.tokens]
    assert order == sorted(order)


def test_a_slow_token_endpoint_does_not_stall_the_event_loop(broker, sasl_log):
    """Issue 15 (OIDC): ClientCredentialsTokenProvider.token() blocks on HTTP; the asyncio
    client runs it in a thread, so the event loop goes on while the endpoint takes 1 s."""
    slow = Reply(**{**vars(_token_reply()), "delay": 1.0})

    async def run():
        ticks = 0

        async def tick():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        ticker = asyncio.ensure_future(tick())
        try:
            async with AIOProducer(_settings(broker, endpoint.url)) as producer:
                await producer.send_and_wait("oidc-slow", b"v")
        finally:
            ticker.cancel()
        return ticks

    with http_endpoint(slow) as endpoint:
        ticks = asyncio.run(run())
    assert ticks >= 5  # 1 s of endpoint at 50 ms a tick: the loop was not blocked
    assert set(sasl_log.authentications) == {("OAUTHBEARER", "app-principal")}


def test_endpoint_refusal_is_a_sasl_error_at_once_without_retries(broker, sasl_log):
    """Issue 15 (OIDC): a 401 of the token endpoint (a wrong client secret) is not
    retriable (Java's UNRETRYABLE_HTTP_CODES): the client fails at once with a
    SaslAuthenticationError naming the status and the endpoint's error; the endpoint is
    asked once and the broker sees no SASL exchange."""
    body = json.dumps({"error": "invalid_client", "error_description": "bad secret"})
    with http_endpoint(Reply(401, body)) as endpoint:
        started = time.monotonic()
        with AdminClient(_settings(broker, endpoint.url)) as admin:
            with pytest.raises(SaslAuthenticationError) as caught:
                admin.list_topics()
        assert time.monotonic() - started < GENEROUS
        assert len(endpoint.requests) == 1  # no retry of a 401
        with Producer(_settings(broker, endpoint.url)) as producer:
            with pytest.raises(SaslAuthenticationError):
                producer.send("oidc", b"v").result(30)
        assert time.monotonic() - started < 2 * GENEROUS
    # the send's metadata wait and the sender's InitProducerId each tried one connection
    # (later ones are paced by the backoffs; Java's constructor would fail instead)
    assert len(endpoint.requests) <= 4
    assert isinstance(caught.value, TokenRetrievalError) and caught.value.status == 401
    assert not caught.value.retriable
    assert 'response code 401 and error response {"invalid_client" - "bad secret"}' in str(caught.value)
    assert sasl_log.handshakes == [] and sasl_log.authenticates == 0


def test_a_java_client_properties_for_oidc_works_as_it_is(broker, sasl_log):
    """Issue 15 (OIDC): Java's clients need sasl.login.callback.handler.class naming
    OAuthBearerLoginCallbackHandler with the endpoint URL; such a configuration works in
    kproto as it is (the URL alone would do)."""
    with http_endpoint(_token_reply()) as endpoint:
        settings = _settings(broker, endpoint.url, **{"sasl.login.callback.handler.class": HANDLER})
        with Producer(settings) as producer:
            producer.send("oidc-java", b"v").result(10)
    assert set(sasl_log.authentications) == {("OAUTHBEARER", "app-principal")}


def test_the_provider_is_the_client_credentials_one_with_the_clients_settings():
    """Issue 15 (OIDC): the keys oidc.py reads go through the client's config table (Kafka's
    names and defaults, checked there) into ClientCredentialsTokenProvider."""
    config = ClientConfig("producer", {
        "bootstrap.servers": "h:1", "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.token.endpoint.url": "http://127.0.0.1:9/token", "sasl.jaas.config": JAAS,
        "sasl.login.connect.timeout.ms": "1500", "sasl.login.read.timeout.ms": 2500,
        "sasl.login.retry.backoff.ms": 50, "sasl.login.retry.backoff.max.ms": 400,
        "sasl.oauthbearer.sub.claim.name": "client_id", "sasl.oauthbearer.scope.claim.name": "scp",
        "sasl.login.refresh.window.factor": "0.6", "sasl.oauthbearer.header.urlencode": "true"})
    provider = Cluster(config)._sasl.token_provider
    assert isinstance(provider, ClientCredentialsTokenProvider)
    assert (provider.connect_timeout_ms, provider.read_timeout_ms) == (1500, 2500)
    assert (provider.retry_backoff_ms, provider.retry_backoff_max_ms) == (50, 400)
    assert (provider.sub_claim, provider.scope_claim) == ("client_id", "scp")
    assert provider.refresh.window_factor == 0.6
    assert "app-secret" not in repr(ClientConfig("producer", {
        "bootstrap.servers": "h:1", "sasl.oauthbearer.client.credentials.client.secret": "app-secret"}))


def test_an_https_endpoints_tls_settings_are_the_jaas_entrys_ssl_options(pki):
    """Issue 15 (OIDC): as Java's JaasOptionsUtils.maybeCreateSslResource, an https token
    endpoint is reached with the ssl.* options of the OAuthBearerLoginModule entry, not the
    client's ssl.* settings (those are the brokers'); without any, the system's CAs."""
    jaas = JAAS.replace(";", f' ssl.truststore.location="{pki.ca.cert_path}" ssl.truststore.type="PEM";')
    base = {"bootstrap.servers": "h:1", "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
            "sasl.oauthbearer.token.endpoint.url": "https://idp.example.com/token"}
    provider = Cluster(ClientConfig("producer", {**base, "sasl.jaas.config": jaas}))._sasl.token_provider
    context = provider._ssl_context
    assert isinstance(context, ssl.SSLContext) and context.check_hostname
    assert [c["subject"] for c in context.get_ca_certs()] == [
        ((("organizationName", "kproto tests"),), (("commonName", "kproto test CA"),))]
    plain = Cluster(ClientConfig("producer", {**base, "sasl.jaas.config": JAAS,
                                              "ssl.ca.location": str(pki.ca.cert_path)}))._sasl.token_provider
    assert plain._ssl_context is None  # http_exchange's default: the system's CAs


@pytest.mark.parametrize("settings, message", [
    ({"sasl.oauthbearer.token.provider": lambda: "t", "sasl.jaas.config": None},
     "token.endpoint.url and sasl.oauthbearer.token.provider both"),
    ({"sasl.mechanism": "PLAIN", "sasl.jaas.config": None, "sasl.username": "a", "sasl.password": "b"},
     "sasl.oauthbearer.token.endpoint.url is for OAUTHBEARER"),
    ({"sasl.jaas.config": None}, "The OAuth configuration option clientId is required"),
    ({"sasl.oauthbearer.token.endpoint.url": "ftp://idp/token"}, "expected an http, https or file URL"),
    ({"sasl.login.refresh.window.factor": 0.2}, "must be between 0.5 and 1"),
    ({"sasl.login.callback.handler.class": "com.example.MyHandler"}, "kproto runs no Java class"),
    ({"sasl.login.callback.handler.class": HANDLER, "sasl.oauthbearer.token.endpoint.url": None},
     "OAuthBearerLoginCallbackHandler needs sasl.oauthbearer.token.endpoint.url"),
    ({"sasl.login.retry.backoff.max.ms": 10, "sasl.login.retry.backoff.ms": 100}, "is less than"),
    ({"sasl.jaas.config": JAAS.replace(";", ' ssl.truststore.type="JKS";'),
      "sasl.oauthbearer.token.endpoint.url": "https://idp/token"}, "token endpoint's TLS settings.*ssl.truststore.type.*PEM only"),
])
def test_bad_token_endpoint_settings_are_config_errors(settings, message):
    """Issue 15 (OIDC): contradictions and bad values are errors when the client is made."""
    config = {"bootstrap.servers": "h:1", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
              "sasl.oauthbearer.token.endpoint.url": "http://127.0.0.1:9/token", "sasl.jaas.config": JAAS}
    config.update(settings)
    config = {k: v for k, v in config.items() if v is not None}
    with pytest.raises(ConfigError, match=message):
        Cluster(ClientConfig("producer", config))
