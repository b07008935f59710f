"""The OIDC client-credentials flow (KIP-768) against a real token endpoint on 127.0.0.1
(issue 15, item B): the request Java's HttpAccessTokenRetriever sends, retries of 5xx and
timeouts, no retry of 4xx, the token's expiry and principal, and the refresh time."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
import urllib.parse

import pytest

from kproto.errors import ConfigError, SaslAuthenticationFailedError
from kproto.security.oidc import (
    AccessToken,
    ClientCredentialsTokenProvider,
    RefreshConfig,
    TokenRetrievalError,
    parse_access_token,
    refresh_at_ms,
)
from tests.security.endpoint import Reply, http_endpoint
from tests.support.leaks import no_thread_left  # noqa: F401  (a fixture)

NOW = 1_700_000_000  # seconds
JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
        'clientId="kafka-app" clientSecret="s3cret" scope="kafka produce";')


def b64url(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def jwt(claims: dict) -> str:
    """A JWT as an IdP issues it (the client does not check the signature)."""
    return f"{b64url({'alg': 'RS256', 'kid': 'k1'})}.{b64url(claims)}.c2lnbmF0dXJl"


def token_body(claims: dict | None = None, **extra) -> str:
    claims = {"sub": "kafka-app", "iat": NOW, "exp": NOW + 3600, "scope": "kafka produce"} if claims is None else claims
    return json.dumps({"access_token": jwt(claims), "token_type": "Bearer", **extra})


def provider(url: str, **settings) -> ClientCredentialsTokenProvider:
    config = {"sasl.oauthbearer.token.endpoint.url": url, "sasl.jaas.config": JAAS,
              "sasl.login.retry.backoff.ms": "10", "sasl.login.retry.backoff.max.ms": "500", **settings}
    return ClientCredentialsTokenProvider(config)


pytestmark = pytest.mark.usefixtures("no_thread_left")  # the fetchers' threads end with each test


def test_a_token_by_the_client_credentials_grant():
    """issue 15, B: POST grant_type=client_credentials with the scope, Basic auth of the
    client id and secret; the token's expiry, issue time, subject and scope from the JWT."""
    with http_endpoint(Reply(200, token_body())) as endpoint:
        token = provider(endpoint.url).token()
    assert token == AccessToken(jwt({"sub": "kafka-app", "iat": NOW, "exp": NOW + 3600, "scope": "kafka produce"}),
                                lifetime_ms=(NOW + 3600) * 1000, principal="kafka-app",
                                scope=frozenset({"kafka produce"}), start_time_ms=NOW * 1000)
    [request] = endpoint.requests
    assert (request.method, request.path) == ("POST", "/token")
    assert request.headers["Authorization"] == "Basic " + base64.b64encode(b"kafka-app:s3cret").decode()
    assert request.headers["Accept"] == "application/json" and request.headers["Cache-Control"] == "no-cache"
    assert request.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert request.body == "grant_type=client_credentials&scope=kafka+produce"
    assert urllib.parse.parse_qs(request.body) == {"grant_type": ["client_credentials"], "scope": ["kafka produce"]}


def test_the_header_urlencode_option_encodes_id_and_secret_first():
    """issue 15, B: sasl.oauthbearer.header.urlencode=true (KIP-1025): the id and secret are
    form-encoded before base64, as RFC 6749 section 2.3.1 says; the standard base64 alphabet."""
    jaas = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
            'clientId=" my app " clientSecret="p@ss:w/rd~?";')
    with http_endpoint(Reply(200, token_body())) as endpoint:
        provider(endpoint.url, **{"sasl.jaas.config": jaas, "sasl.oauthbearer.header.urlencode": "true"}).fetch()
        provider(endpoint.url, **{"sasl.jaas.config": jaas}).fetch()
    encoded, plain = (r.headers["Authorization"] for r in endpoint.requests)
    assert base64.b64decode(encoded.removeprefix("Basic ")) == b"my+app:p%40ss%3Aw%2Frd%7E%3F"
    assert base64.b64decode(plain.removeprefix("Basic ")) == b"my app:p@ss:w/rd~?"
    assert endpoint.requests[0].body == "grant_type=client_credentials"  # no scope option, no scope


def test_a_refusal_is_not_retried_and_shows_the_endpoints_error():
    """issue 15, B: 401 fails at once (no retry storm) with the endpoint's RFC 6749 error."""
    refusal = json.dumps({"error": "invalid_client", "error_description": "Bad client credentials"})
    with http_endpoint(Reply(401, refusal)) as endpoint:
        with pytest.raises(TokenRetrievalError) as caught:
            provider(endpoint.url).token()
    assert len(endpoint.requests) == 1
    error = caught.value
    assert isinstance(error, SaslAuthenticationFailedError)
    assert (error.status, error.retriable) == (401, False)
    assert str(error) == ('[SASL_AUTHENTICATION_FAILED] The response code 401 and error response '
                          '{"invalid_client" - "Bad client credentials"} was encountered reading the token endpoint '
                          'response; will not attempt further retries')


@pytest.mark.parametrize(("body", "shown"), [
    ('{"errorCode":"invalid_client","errorSummary":"Okta says no"}', '{"invalid_client" - "Okta says no"}'),
    ("not json", "{not json}"),
    ("", "{}"),
])
def test_error_bodies_as_java_formats_them(body, shown):
    with http_endpoint(Reply(403, body)) as endpoint:
        with pytest.raises(TokenRetrievalError, match=f"error response {shown} was encountered"):
            provider(endpoint.url).fetch()


def test_a_server_error_is_retried_with_backoff():
    """issue 15, B: 503, then 500, then a token: three requests, the token returned."""
    with http_endpoint(Reply(503, '{"error":"temporarily_unavailable"}'), Reply(500), Reply(200, token_body())) as ep:
        token = provider(ep.url).token()
    assert token.principal == "kafka-app" and len(ep.requests) == 3


def test_server_errors_past_the_retry_window_raise_the_first():
    """issue 15, B: Kafka's Retry: attempts within sasl.login.retry.backoff.max.ms, then the
    first error, retriable."""
    started = time.monotonic()
    with http_endpoint(Reply(502, "first"), Reply(503, "later")) as endpoint:
        with pytest.raises(TokenRetrievalError) as caught:
            provider(endpoint.url, **{"sasl.login.retry.backoff.max.ms": "300"}).fetch()
    assert time.monotonic() - started < 5
    assert 2 <= len(endpoint.requests) <= 7  # 10, 20, 40, 80, 160 ms waits fit in 300 ms
    assert (caught.value.status, caught.value.retriable) == (502, True)
    assert "unexpected response code 502 and error message {first}" in str(caught.value)


def test_a_silent_endpoint_times_out_and_is_retried():
    """issue 15, B: sasl.login.read.timeout.ms bounds each attempt; timeouts are retried
    within the window, and the error says it timed out."""
    started = time.monotonic()
    with http_endpoint(Reply(200, token_body(), delay=10)) as endpoint:
        with pytest.raises(TokenRetrievalError, match="timed out") as caught:
            provider(endpoint.url, **{"sasl.login.read.timeout.ms": "200", "sasl.login.connect.timeout.ms": "1000",
                                      "sasl.login.retry.backoff.max.ms": "300"}).fetch()
    assert time.monotonic() - started < 5
    assert len(endpoint.requests) >= 1 and caught.value.retriable and caught.value.status is None


def test_an_unreachable_endpoint():
    with http_endpoint() as endpoint:
        url = endpoint.url
    with pytest.raises(TokenRetrievalError, match="failed") as caught:
        provider(url, **{"sasl.login.retry.backoff.max.ms": "50"}).fetch()
    assert caught.value.retriable


@pytest.mark.parametrize(("body", "message"), [
    ('{"token_type":"Bearer"}', "did not contain an access_token value"),
    ('{"access_token":"opaque-token"}', "expected three sections"),
    (token_body({"exp": NOW + 60}), "sub value must be a non-empty string"),
    (token_body({"sub": "x"}), "exp value must be non-null"),
])
def test_unusable_tokens(body, message):
    with http_endpoint(Reply(200, body)) as endpoint:
        with pytest.raises(TokenRetrievalError, match=message) as caught:
            provider(endpoint.url).fetch()
    assert not caught.value.retriable and len(endpoint.requests) == 1


def test_expires_in_when_the_jwt_has_no_exp_and_the_claim_names():
    """issue 15, B: the response's expires_in stands in for a missing exp;
    sasl.oauthbearer.sub.claim.name and scope.claim.name pick the claims."""
    claims = {"client_id": "svc-1", "scp": ["read", "write"]}
    with http_endpoint(Reply(200, token_body(claims, expires_in=300))) as endpoint:
        before = int(time.time() * 1000)
        token = provider(endpoint.url, **{"sasl.oauthbearer.sub.claim.name": "client_id",
                                          "sasl.oauthbearer.scope.claim.name": "scp"}).fetch()
    assert token.principal == "svc-1" and token.scope == {"read", "write"}
    assert before + 300_000 <= token.lifetime_ms <= int(time.time() * 1000) + 300_000


def test_a_file_token_endpoint(tmp_path):
    """issue 15, B: a file:// URL names a file holding the token (Java's FileTokenRetriever);
    no sasl.jaas.config needed."""
    path = tmp_path / "token.jwt"
    path.write_text(jwt({"sub": "from-file", "exp": NOW + 60}) + "\n")
    token = ClientCredentialsTokenProvider({"sasl.oauthbearer.token.endpoint.url": path.as_uri()}).token()
    assert (token.principal, token.lifetime_ms) == ("from-file", (NOW + 60) * 1000)
    path.unlink()
    with pytest.raises(TokenRetrievalError, match="could not read the token file"):
        ClientCredentialsTokenProvider({"sasl.oauthbearer.token.endpoint.url": path.as_uri()}).fetch()


@pytest.mark.parametrize(("config", "message"), [
    ({}, "sasl.oauthbearer.token.endpoint.url is required"),
    ({"sasl.oauthbearer.token.endpoint.url": "ftp://idp/token", "sasl.jaas.config": JAAS}, "expected an http"),
    ({"sasl.oauthbearer.token.endpoint.url": "http://idp/token"}, "option clientId is required"),
    ({"sasl.oauthbearer.token.endpoint.url": "http://idp/token", "sasl.jaas.config":
      'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="a";'},
     "option clientSecret is required"),
    ({"sasl.oauthbearer.token.endpoint.url": "http://idp/token", "sasl.jaas.config": JAAS,
      "sasl.login.retry.backoff.ms": "500", "sasl.login.retry.backoff.max.ms": "100"}, "is less than"),
    ({"sasl.oauthbearer.token.endpoint.url": "http://idp/token", "sasl.jaas.config": JAAS,
      "sasl.login.refresh.window.factor": "0.3"}, "between 0.5 and 1"),
])
def test_bad_settings(config, message):
    with pytest.raises(ConfigError, match=message):
        ClientCredentialsTokenProvider(config)


def test_the_kip_1139_settings_win_over_the_jaas_options():
    """issue 15, B: sasl.oauthbearer.client.credentials.client.id/.secret and
    sasl.oauthbearer.scope (Kafka 4.1) stand in for clientId/clientSecret/scope, and win."""
    with http_endpoint(Reply(200, token_body())) as endpoint:
        provider(endpoint.url, **{"sasl.oauthbearer.client.credentials.client.id": "config-app",
                                  "sasl.oauthbearer.scope": "admin"}).fetch()
        ClientCredentialsTokenProvider({"sasl.oauthbearer.token.endpoint.url": endpoint.url,
                                        "sasl.oauthbearer.client.credentials.client.id": "only-config",
                                        "sasl.oauthbearer.client.credentials.client.secret": "pw"}).fetch()
    both, config_only = endpoint.requests
    assert base64.b64decode(both.headers["Authorization"].removeprefix("Basic ")) == b"config-app:s3cret"
    assert both.body == "grant_type=client_credentials&scope=admin"
    assert base64.b64decode(config_only.headers["Authorization"].removeprefix("Basic ")) == b"only-config:pw"
    assert config_only.body == "grant_type=client_credentials"


# -- refresh: ExpiringCredentialRefreshingLogin.refreshMs, sans-I/O ---------------------------


def token_at(start_s: float | None, expiry_s: float) -> AccessToken:
    return AccessToken("t", int(expiry_s * 1000), "p", start_time_ms=None if start_s is None else int(start_s * 1000))


@pytest.mark.parametrize(("token", "now_s", "draw", "expected_s"), [
    (token_at(0, 3600), 0, 0.0, 0.8 * 3600),  # the window factor
    (token_at(0, 3600), 0, 1.0, 0.85 * 3600),  # plus the largest jitter
    (token_at(None, 3600), 0, 0.5, 0.825 * 3600),  # no iat: from now
    (token_at(0, 1000), 0, 0.0, 700),  # 800 s would be inside the last 300 s
    (token_at(-3000, 400), 0, 0.0, 100),  # from now, not from iat: 320 s is inside the last 300 s
    (token_at(-3300, 300), 0, 0.0, 240),  # issue 15 item 1: an old token, 0.8 of what is left
    (token_at(0, 3600), 3500, 0.0, 3580),  # shorter than both buffers from now: the window alone
    (token_at(0, 300), 0, 0.0, 240),  # shorter than both buffers: the window alone
    (token_at(0, 100), 200, 0.0, 210),  # expired: try again in 10 s
])
def test_refresh_time(token, now_s, draw, expected_s):
    assert refresh_at_ms(token, int(now_s * 1000), RefreshConfig(), lambda: draw) == int(expected_s * 1000)


def test_refresh_settings_from_the_config():
    config = {"sasl.login.refresh.window.factor": "0.5", "sasl.login.refresh.window.jitter": "0",
              "sasl.login.refresh.min.period.seconds": "0", "sasl.login.refresh.buffer.seconds": "0"}
    refresh = RefreshConfig.from_config(config)
    assert refresh == RefreshConfig(0.5, 0.0, 0, 0)
    assert refresh_at_ms(token_at(0, 1000), 0, refresh) == 500_000


def refreshed(tokens: ClientCredentialsTokenProvider, refresh_at_ms: int) -> None:
    """Wait for the background refresh to set the next refresh time."""
    deadline = time.monotonic() + 5
    while tokens.refresh_at_ms != refresh_at_ms:
        assert time.monotonic() < deadline, f"refresh_at_ms is {tokens.refresh_at_ms}, not {refresh_at_ms}"
        time.sleep(0.01)


def test_the_provider_caches_refreshes_and_keeps_a_valid_token_when_a_refresh_fails():
    """issue 15, B: token() answers the cached token until its refresh time, then fetches
    in the background while the cached token serves (review item 2: Kafka's connections
    never wait on the IdP); a failed refresh keeps the still-valid token and tries again
    10 s later; once the token has expired, the failure is raised."""
    clock = [float(NOW)]
    first = token_body({"sub": "a", "iat": NOW, "exp": NOW + 3600})
    second = token_body({"sub": "b", "iat": NOW + 3000, "exp": NOW + 7200})
    refusal = Reply(401, '{"error":"invalid_client"}')
    with http_endpoint(Reply(200, first), Reply(503), refusal, Reply(200, second), refusal) as endpoint:
        tokens = ClientCredentialsTokenProvider(
            {"sasl.oauthbearer.token.endpoint.url": endpoint.url, "sasl.jaas.config": JAAS,
             "sasl.login.refresh.window.jitter": "0", "sasl.login.retry.backoff.ms": "0",
             "sasl.login.retry.backoff.max.ms": "0"}, clock=lambda: clock[0])
        assert tokens.token().principal == "a" and tokens.refresh_at_ms == (NOW + 2880) * 1000
        clock[0] = NOW + 2879
        assert tokens.token().principal == "a" and len(endpoint.requests) == 1  # cached
        clock[0] = NOW + 2880
        assert tokens.token().principal == "a"  # at once: the refresh runs in the background
        refreshed(tokens, (NOW + 2890) * 1000)  # 503: kept, tried again 10 s later
        assert tokens.token().principal == "a" and len(endpoint.requests) == 2
        clock[0] = NOW + 2890
        assert tokens.token().principal == "a"
        refreshed(tokens, (NOW + 2900) * 1000)  # 401: kept too
        assert len(endpoint.requests) == 3
        clock[0] = NOW + 3000
        assert tokens.token().principal == "a"
        refreshed(tokens, (NOW + 3000 + int(0.8 * 4200)) * 1000)
        assert tokens.token().principal == "b" and len(endpoint.requests) == 4
        clock[0] = NOW + 7200
        with pytest.raises(TokenRetrievalError, match="401"):
            tokens.token()


def test_parse_access_token_reads_scope_strings_and_lists():
    assert parse_access_token(jwt({"sub": " u ", "exp": 10, "scope": ["a", "b "]})).scope == {"a", "b"}
    assert parse_access_token(jwt({"sub": " u ", "exp": 10, "scope": "a b"})).scope == {"a b"}
    assert parse_access_token(jwt({"sub": "u", "exp": 10.9})).lifetime_ms == 10_000  # Number.longValue()


# -- issue 15 review: refresh from now, one fetch at a time, TLS from the JAAS options --------


def test_an_old_token_is_not_fetched_again_at_every_call():
    """issue 15, review item 1: a token issued 55 min ago with 5 min left (an IdP that hands
    back its cached token) is due at 0.8 of the time left from now (Kafka's refreshMs), not
    at once: 20 token() calls make one POST."""
    now = int(time.time())
    body = token_body({"sub": "app", "iat": now - 3300, "exp": now + 300})
    with http_endpoint(Reply(200, body)) as endpoint:
        tokens = provider(endpoint.url)
        for _ in range(20):
            assert tokens.token().principal == "app"
    assert len(endpoint.requests) == 1
    assert now * 1000 + 0.8 * 300_000 <= tokens.refresh_at_ms <= (now + 300) * 1000


def test_a_silent_endpoint_holds_one_thread_and_leaves_the_loops_executor_free():
    """issue 15, review item 2: an endpoint that accepts and never answers, token() run by
    asyncio.to_thread as the SASL client does, each connection attempt giving up after
    0.3 s: the fetch is one, in the provider's thread, and each caller waits a bounded time
    (one attempt's connect + read timeouts), so the loop's default executor stays free for
    getaddrinfo."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    async def attempts(tokens: ClientCredentialsTokenProvider) -> float:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(max_workers=4))
        for _ in range(8):  # connection attempts, each bounded as Connection.open bounds them
            with pytest.raises((asyncio.TimeoutError, TokenRetrievalError)):  # gave up, or was told at once
                await asyncio.wait_for(asyncio.to_thread(tokens.token), 0.3)
        started = time.monotonic()
        await asyncio.wait_for(loop.getaddrinfo("127.0.0.1", 9092), 30)
        return time.monotonic() - started

    with http_endpoint(Reply(200, token_body(), delay=60)) as endpoint:
        # one attempt is bounded (0.5 s), the retries of a fetch go on for 8 s
        tokens = provider(endpoint.url, **{"sasl.login.connect.timeout.ms": "100", "sasl.login.read.timeout.ms": "400",
                                           "sasl.login.retry.backoff.max.ms": "8000"})
        try:
            waited = asyncio.run(attempts(tokens))
            assert waited < 2.5, f"getaddrinfo waited {waited:.1f} s for the executor"
            assert tokens.wait_ms == 500
            started = time.monotonic()
            with pytest.raises(TokenRetrievalError) as caught:
                tokens.token(timeout_ms=200)
            assert caught.value.retriable and time.monotonic() - started < 5
            assert len(endpoint.requests) <= 8  # the attempts of one fetch, not one fetch per caller
        finally:
            getattr(tokens, "close", lambda: None)()  # the fetch's retries end


def test_callers_at_once_share_one_fetch():
    """issue 15, review item 2: connections set up at once wait for the one fetch in flight
    and all get its token."""
    with http_endpoint(Reply(200, token_body(), delay=0.3)) as endpoint:
        tokens = provider(endpoint.url)
        results: list[AccessToken] = []
        callers = [threading.Thread(target=lambda: results.append(tokens.token())) for _ in range(6)]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join(10)
    assert len(results) == 6 and {t.principal for t in results} == {"kafka-app"}
    assert len(endpoint.requests) == 1


def test_the_jaas_ssl_truststore_options_are_trusted_for_an_https_endpoint(tmp_path):
    """issue 15, review item 3: ssl.truststore.* inside the OAuthBearerLoginModule options
    (Java's JaasOptionsUtils.createSSLSocketFactory) verify an https token endpoint signed
    by a private CA; without them the system's CAs do not."""
    import ssl

    from tests.support.certs import CertificateAuthority

    ca = CertificateAuthority.create(tmp_path)
    cert = ca.issue("localhost", hosts=("localhost", "127.0.0.1"))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert.cert_path, cert.key_path)
    trusting = JAAS.rstrip(";") + f' ssl.truststore.type="PEM" ssl.truststore.location="{ca.cert_path}";'
    with http_endpoint(Reply(200, token_body()), tls=server, host="localhost") as endpoint:
        assert provider(endpoint.url, **{"sasl.jaas.config": trusting}).token().principal == "kafka-app"
        with pytest.raises(TokenRetrievalError, match="CERTIFICATE_VERIFY_FAILED"):
            provider(endpoint.url, **{"sasl.login.retry.backoff.max.ms": "10"}).token()
    with pytest.raises(ConfigError, match="ssl.truststore.location"):
        provider("https://localhost:1/token", **{"sasl.jaas.config": JAAS.rstrip(";") +
                                                   ' ssl.truststore.location="/nonexistent/ca.pem";'})
    with pytest.raises(ConfigError, match="PEM only"):
        provider("https://localhost:1/token", **{"sasl.jaas.config": JAAS.rstrip(";") + ' ssl.truststore.type="JKS";'})


@pytest.mark.parametrize(("claims", "message"), [
    ({"sub": "a", "exp": NOW + 60, "scope": ["kafka", "kafka"]}, "scope value must not contain duplicates"),
    ({"sub": "a", "exp": NOW + 60, "scope": ["kafka", " "]}, "scope value must not contain null or blank"),
    ({"sub": "a", "exp": NOW + 60, "iat": -5}, "iat value must be non-negative"),
])
def test_the_client_checks_scope_and_iat_as_kafka(claims, message):
    """issue 15, review items 5 and 7: ClientJwtValidator's ClaimValidationUtils checks,
    shared with the broker's validator."""
    with pytest.raises(TokenRetrievalError, match=message):
        parse_access_token(jwt(claims))


def test_a_non_finite_exp_is_not_json():
    """issue 15, review item 5: NaN and Infinity are not JSON (Jackson refuses them)."""
    payload = base64.urlsafe_b64encode(b'{"sub": "a", "exp": Infinity}').rstrip(b"=").decode()
    with pytest.raises(TokenRetrievalError, match="malformed JSON"):
        parse_access_token(f"{b64url({'alg': 'none'})}.{payload}.c2ln")


def test_a_refresh_from_a_silent_endpoint_holds_no_one_up():
    """issue 15, review item 2: while the cached token is valid, its refresh runs in the
    provider's thread and token() answers the cached token at once, even when the
    endpoint does not answer (Kafka's connections never wait on the IdP)."""
    clock = [float(NOW)]
    with http_endpoint(Reply(200, token_body()), Reply(200, token_body(), delay=60)) as endpoint:
        tokens = ClientCredentialsTokenProvider(
            {"sasl.oauthbearer.token.endpoint.url": endpoint.url, "sasl.jaas.config": JAAS,
             "sasl.login.refresh.window.jitter": "0"}, clock=lambda: clock[0])
        try:
            first = tokens.token()
            clock[0] = NOW + 2880  # due for refresh, valid until NOW + 3600
            answered: list[AccessToken] = []
            caller = threading.Thread(target=lambda: answered.extend(tokens.token() for _ in range(5)))
            caller.start()
            caller.join(3)
            assert answered == [first] * 5
            deadline = time.monotonic() + 5
            while len(endpoint.requests) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.1)
            assert len(endpoint.requests) == 2  # one refresh in flight, not one per call
        finally:
            getattr(tokens, "close", lambda: None)()


@pytest.mark.parametrize("given", ["token_async", "the provider"])
def test_token_async_waits_on_the_loop_and_holds_no_thread(given):
    """issue 15, review item 2: from asyncio, ``provider.token_async`` (a coroutine
    function, which SaslClient awaits) or the provider itself (its call is token_async)
    waits for the fetch on the event loop: connection attempts that give up hold no
    executor thread, and the fetch's token serves the next."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from kproto.security.sasl import SaslClient

    async def attempts(tokens: ClientCredentialsTokenProvider) -> tuple[float, str]:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(max_workers=1))
        sasl = SaslClient("OAUTHBEARER", token_provider=tokens.token_async if given == "token_async" else tokens)
        for _ in range(4):
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(sasl.token(), 0.2)
        started = time.monotonic()
        await asyncio.wait_for(loop.getaddrinfo("127.0.0.1", 9092), 30)
        waited = time.monotonic() - started
        return waited, (await asyncio.wait_for(sasl.token(), 10)).value

    with http_endpoint(Reply(200, token_body(), delay=2.5)) as endpoint:
        tokens = provider(endpoint.url)
        waited, value = asyncio.run(attempts(tokens))
    assert waited < 1.0 and value == jwt({"sub": "kafka-app", "iat": NOW, "exp": NOW + 3600, "scope": "kafka produce"})
    assert len(endpoint.requests) == 1


def test_an_authentication_after_the_refresh_time_gets_the_new_token():
    """issue 15 (KIP-368 with OIDC): Kafka's refresher thread has replaced a token by its
    refresh time, so a (re-)authentication then sends the new one; kproto's provider, asked
    as a SASL token provider (its async call) past the refresh time, waits for the refresh
    instead of answering the old token, whose session the broker would end at once; a plain
    token() still answers the valid old token without waiting."""
    now = int(time.time())  # valid tokens: the old one could still serve
    valid = token_body({"sub": "kafka-app", "iat": now, "exp": now + 3600})
    with http_endpoint(Reply(200, valid), Reply(200, valid)) as endpoint:
        tokens = ClientCredentialsTokenProvider(
            {"sasl.oauthbearer.token.endpoint.url": endpoint.url, "sasl.jaas.config": JAAS})
        try:
            first = tokens.token()
            tokens._refresh_at_ms = 0  # the refresh time has come
            assert tokens.token() is first  # a plain call: the valid token at once
            assert asyncio.run(tokens()) is not first and len(endpoint.requests) == 2
        finally:
            tokens.close()
