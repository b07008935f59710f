"""minibroker validating OAUTHBEARER tokens against a JWKS (issue 15, broker item A: KIP-768).

The identity provider is a key pair made by ``cryptography`` whose JWKS a real HTTP server
on 127.0.0.1 serves (tests/security/endpoint.py); the listener takes Kafka's broker keys,
with the listener and mechanism prefix (``listener.name.<l>.oauthbearer.*``) as Kafka's
docs write them. confluent-kafka, with an ``oauth_cb`` giving RS256 tokens, is the oracle:
a good token produces and consumes; a token signed by another key, an expired one and one
for another audience are refused, the client's text and the broker's reason checked.
"""

from __future__ import annotations

import logging
import threading
import time

import pytest

from kproto.protocol import ApiKey
from kproto.protocol.messages import MetadataRequest, SaslAuthenticateRequest, SaslHandshakeRequest
from kproto.security import oauthbearer
from minibroker import MiniBroker
from tests.minibroker.test_security_peers import ck_error, ck_roundtrip, ck_ssl, logged
from tests.security.endpoint import Reply, http_endpoint
from tests.security.test_jwks import Signer, jwks
from tests.support.raw_client import RawClient

ck = pytest.importorskip("confluent_kafka")
pytest.importorskip("cryptography")

VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
ISSUER = "https://idp.example"


@pytest.fixture(scope="module")
def idp_key() -> Signer:
    return Signer("RSA", "idp-1")


@pytest.fixture(scope="module")
def forged_key() -> Signer:
    return Signer("RSA", "idp-1")  # the same kid, another key


def token(key: Signer, *, lifetime: float = 3600, audience: str = "kafka", subject: str = "alice") -> str:
    now = time.time()
    return key.sign({"sub": subject, "iat": int(now) - 5, "exp": int(now + lifetime), "aud": audience,
                     "iss": ISSUER, "scope": "kafka"})


def jwks_config(url: str, **extra) -> dict:
    """A SASL_SSL listener (OAUTHBEARER, signed tokens) and a PLAINTEXT one, Kafka's keys."""
    return {
        "listeners": "SASL_SSL://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
        "advertised.listeners": "SASL_SSL://localhost:0,PLAINTEXT://127.0.0.1:0",
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class": VALIDATOR,
        "listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.jwks.endpoint.url": url,
        "listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.expected.audience": "kafka,other",
        "sasl.oauthbearer.expected.issuer": ISSUER,
        "connection.failed.authentication.delay.ms": 10,
        **extra,
    }


def refresh_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("kproto-jwks-refresh") and t.is_alive()]


@pytest.fixture(scope="module")
def provider(idp_key):
    with http_endpoint(Reply(body=jwks(idp_key)), path="/jwks") as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def secured(provider, pki, tmp_path_factory):
    keystore = tmp_path_factory.mktemp("jwks-keystore") / "server.pem"
    keystore.write_text(pki.server.key_pem + pki.server.cert_pem)
    with MiniBroker(config=jwks_config(provider.url, **{"ssl.keystore.location": str(keystore)})) as broker:
        yield broker


def ck_oauth(pki, make_token) -> dict:
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", **ck_ssl(pki),
            "oauth_cb": lambda _config: (make_token(), time.time() + 3600, "alice", {})}


def test_a_signed_token_produces_and_consumes(secured, provider, pki, idp_key):
    """Issue 15, broker item A: confluent-kafka with RS256 tokens of the provider's key,
    the broker holding the provider's JWKS, fetched once when it started."""
    ck_roundtrip(secured.bootstrap_servers_for("SASL_SSL"), ck_oauth(pki, lambda: token(idp_key)))
    assert [r.path for r in provider.requests][:1] == ["/jwks"]


@pytest.mark.parametrize(("case", "reason"), [
    ("another key", "JWT rejected due to invalid signature"),
    ("expired", "The JWT is no longer valid"),
    ("another audience", "Audience (aud) claim ['billing'] doesn't contain an acceptable identifier"),
])
def test_a_bad_token_is_refused(secured, pki, idp_key, forged_key, caplog, case, reason):
    """Issue 15, broker item A: a token signed by another key, one expired (past the 30 s
    skew) and one for another audience: SASL_AUTHENTICATION_FAILED, which confluent-kafka
    reports as Kafka's invalid_token answer; the broker logs why."""
    make = {"another key": lambda: token(forged_key),
            "expired": lambda: token(idp_key, lifetime=-120),
            "another audience": lambda: token(idp_key, audience="billing")}[case]
    with caplog.at_level(logging.INFO, logger="minibroker"):
        error = ck_error(secured.bootstrap_servers_for("SASL_SSL"), ck_oauth(pki, make))
    assert 'SASL authentication error: {"status":"invalid_token"}' in error, error
    assert logged(caplog, reason)


def test_the_session_lasts_until_the_token_expires(provider, idp_key):
    """Issue 15, broker item A (KIP-368): the session of a signed token ends at its exp:
    SaslAuthenticate v1 says how long, with no connections.max.reauth.ms."""
    config = jwks_config(provider.url, listeners="SASL_PLAINTEXT://127.0.0.1:0",
                         **{"advertised.listeners": "", "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT"})
    config = {k.replace("sasl_ssl", "sasl_plaintext"): v for k, v in config.items()}
    with MiniBroker(config=config) as broker:
        c = RawClient(broker.port)
        try:
            assert c.request(ApiKey.SASL_HANDSHAKE, 1, SaslHandshakeRequest(mechanism="OAUTHBEARER")).error_code == 0
            answer = c.request(ApiKey.SASL_AUTHENTICATE, 1, SaslAuthenticateRequest(
                auth_bytes=oauthbearer.initial_response(token(idp_key, lifetime=120))))
            assert answer.error_code == 0
            assert 100_000 < answer.session_lifetime_ms <= 120_000
            assert c.request(ApiKey.METADATA, 12, MetadataRequest(topics=[])).brokers
        finally:
            c.close()


def test_the_refresh_thread_ends_with_the_broker(provider, idp_key):
    """Issue 15, broker item A: the validator's JWKS refresh thread runs while the broker
    does and is stopped with it (stop, and a restart of the same broker)."""
    before = refresh_threads()
    broker = MiniBroker(config=jwks_config(provider.url, listeners="SASL_PLAINTEXT://127.0.0.1:0",
                                           **{"advertised.listeners": "",
                                              "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT",
                                              "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "OAUTHBEARER",
                                              "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler."
                                              "class": VALIDATOR,
                                              "sasl.oauthbearer.jwks.endpoint.url": provider.url}))
    assert refresh_threads() == before  # made, not started: nothing fetched, no thread
    for _ in range(2):
        with broker:
            assert len(refresh_threads()) == len(before) + 1
        assert refresh_threads() == before


def test_the_validator_settings_are_checked_when_the_broker_is_made(provider):
    """Issue 15, broker item A: Kafka's rules for choosing the validator; a JWKS URL that
    the default (unsecured) validator would ignore is refused, not silently unused."""
    base = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "OAUTHBEARER"}
    handler = "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class"
    with pytest.raises(ValueError, match="needs sasl.oauthbearer.jwks.endpoint.url"):
        MiniBroker(config={**base, handler: VALIDATOR})
    with pytest.raises(ValueError, match="tokens are checked against it only with"):
        MiniBroker(config={**base, "sasl.oauthbearer.jwks.endpoint.url": provider.url})
    with pytest.raises(ValueError, match="minibroker has org.apache.kafka"):
        MiniBroker(config={**base, handler: "com.example.Custom"})
    with pytest.raises(ValueError, match="unknown or not yet supported broker config 'sasl.server.callback"):
        MiniBroker(config={**base, "sasl.server.callback.handler.class": VALIDATOR})  # Kafka: prefixed only
