"""OAUTHBEARER tokens from an OAuth 2 / OIDC provider: the client-credentials flow of
KIP-768, as Kafka's ``OAuthBearerLoginCallbackHandler`` runs it.

A client configured as Java's::

    sasl.mechanism=OAUTHBEARER
    sasl.oauthbearer.token.endpoint.url=https://idp.example.com/oauth2/token
    sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule \\
        required clientId="kafka-app" clientSecret="..." scope="kafka";

gets its token from :class:`ClientCredentialsTokenProvider`: ``provider.token()`` answers an
:class:`AccessToken` (the JWT, its expiry, its principal) to put in the OAUTHBEARER initial
response (:func:`kproto.security.oauthbearer.initial_response`), fetching a new one when the
current one is due for refresh. Kafka 4.1's ``sasl.oauthbearer.client.credentials.client.id``,
``sasl.oauthbearer.client.credentials.client.secret`` and ``sasl.oauthbearer.scope``
(KIP-1139) may stand in for the three JAAS options, and win over them.

Theory of operation.

- **The request** (``HttpAccessTokenRetriever``): ``POST`` to
  ``sasl.oauthbearer.token.endpoint.url`` with the body
  ``grant_type=client_credentials[&scope=<scope>]`` (URL-encoded), headers
  ``Authorization: Basic base64(<clientId>:<clientSecret>)`` (the id and secret trimmed,
  URL-encoded first only with ``sasl.oauthbearer.header.urlencode=true``, KIP-1025),
  ``Accept: application/json``, ``Cache-Control: no-cache``. Connect and read are bounded by
  ``sasl.login.connect.timeout.ms`` and ``sasl.login.read.timeout.ms`` (no bound by
  default, as Java's); the fetch runs in a thread of the provider's, one at a time (Java's
  login thread): a connection with a valid token never waits for it, one without waits a
  bounded time, on the event loop with :meth:`~ClientCredentialsTokenProvider.token_async`
  (or the provider's own call), in its thread with ``token()``. A ``file://`` URL names a
  file that holds the token itself (``FileTokenRetriever``), read at each fetch. An
  ``https://`` endpoint is trusted by the ``ssl.*`` options of ``OAuthBearerLoginModule``
  in ``sasl.jaas.config`` (``JaasOptionsUtils``, :func:`jaas_ssl_context`), else by the
  system's CAs.
- **Retries** (Kafka's ``Retry``): an I/O error, a timeout or an unexpected status (5xx,
  408, 429...) is retried after ``sasl.login.retry.backoff.ms`` (100), doubling, while the
  time since the first attempt stays within ``sasl.login.retry.backoff.max.ms`` (10000);
  then the *first* error is raised. Statuses that a retry cannot change (400, 401, 403,
  404 ... Java's ``UNRETRYABLE_HTTP_CODES``) fail at once, with the endpoint's error text
  (RFC 6749 section 5.2 ``error`` and ``error_description``, or Okta's ``errorCode`` and
  ``errorSummary``).
- **The token** (``ClientJwtValidator``: the client parses, it does not verify): the
  response's ``access_token`` must be a JWT whose payload has ``exp``, the principal in
  ``sasl.oauthbearer.sub.claim.name`` (``sub``) and, optionally, ``iat`` and the scope in
  ``sasl.oauthbearer.scope.claim.name`` (``scope``: a string or a list), checked as
  ``ClaimValidationUtils`` checks them (:func:`token_from_claims`, shared with the
  broker's :mod:`kproto.security.jwks`). Java requires ``exp``; kproto also takes the
  response's ``expires_in`` when the JWT has none.
- **Refresh** (``ExpiringCredentialRefreshingLogin``, sans-I/O in :func:`refresh_at_ms`):
  at ``sasl.login.refresh.window.factor`` (0.8) of the time from the fetch to the
  token's expiry (not from its ``iat``) plus a random
  share up to ``sasl.login.refresh.window.jitter`` (0.05), but no later than
  ``sasl.login.refresh.buffer.seconds`` (300) before expiry and no sooner than
  ``sasl.login.refresh.min.period.seconds`` (60) from now; both buffers are ignored when
  the remaining lifetime is shorter than their sum. The current token serves while the
  refresh runs; a refresh that fails while it is still valid keeps it and tries again
  10 s later, as Java's refresh thread does.

Errors: a bad setting is a :class:`~kproto.errors.ConfigError`; a token that cannot be had
is a :class:`TokenRetrievalError`, an authentication failure
(:class:`~kproto.errors.SaslAuthenticationFailedError`) whose ``retriable`` says whether
trying later may help (an unreachable or failing endpoint) or not (refused credentials, a
malformed token).
"""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import logging
import math
import random
import ssl
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from kproto._loop import wait_for
from kproto.errors import ConfigError, SaslAuthenticationFailedError
from kproto.security import jaas
from kproto.security.oauthbearer import TokenValidationError, b64url_json
from kproto.security.tls import client_context

__all__ = [
    "AccessToken",
    "ClientCredentialsTokenProvider",
    "RefreshConfig",
    "Retriable",
    "TokenRetrievalError",
    "file_url_path",
    "http_exchange",
    "jaas_options",
    "jaas_ssl_context",
    "parse_access_token",
    "refresh_at_ms",
    "retry",
    "token_from_claims",
]

log = logging.getLogger(__name__)

# HttpAccessTokenRetriever.UNRETRYABLE_HTTP_CODES: a retry cannot change these answers
_UNRETRYABLE = frozenset({400, 401, 402, 403, 404, 405, 406, 407, 409, 410, 411, 412, 413, 414, 415, 501, 505})
_MAX_RESPONSE_SNIPPET = 1000  # HttpAccessTokenRetriever.MAX_RESPONSE_BODY_LENGTH
_RELOGIN_RETRY_MS = 10_000  # ExpiringCredentialRefreshingLogin.DELAY_SECONDS_BEFORE_NEXT_RETRY_WHEN_RELOGIN_FAILS
_DEFAULT_WAIT_MS = 10_000  # socket.connection.setup.timeout.ms' default: a connection's own bound
_URLENCODER_SAFE = "*"  # java.net.URLEncoder leaves letters, digits and "-_.*" as they are


class TokenRetrievalError(SaslAuthenticationFailedError):
    """No token could be had from the token endpoint (Java: the ``LoginException`` of
    ``OAuthBearerLoginModule``).

    Attributes:
        status: the endpoint's HTTP status, None when there was no answer.
        retriable: whether trying later may succeed (the endpoint was unreachable, slow or
            failing), as opposed to a refusal or a malformed token.
    """

    def __init__(self, message: str, *, status: int | None = None, retriable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.retriable = retriable


@dataclass(frozen=True, slots=True)
class AccessToken:
    """A token for OAUTHBEARER (Kafka's ``BasicOAuthBearerToken``).

    Attributes:
        value: the compact JWT, sent as is.
        lifetime_ms: when it expires, ms since the epoch.
        principal: its subject (``sasl.oauthbearer.sub.claim.name``).
        scope: its scope (``sasl.oauthbearer.scope.claim.name``).
        start_time_ms: when it was issued (``iat``), if it says.
    """

    value: str
    lifetime_ms: int
    principal: str
    scope: frozenset[str] = frozenset()
    start_time_ms: int | None = None

    def __repr__(self) -> str:  # the token is a credential: never in logs
        return (f"AccessToken(principal={self.principal!r}, lifetime_ms={self.lifetime_ms}, "
                f"scope={sorted(self.scope)!r}, start_time_ms={self.start_time_ms})")


def _ms(config: Mapping[str, Any], name: str, default: int | None) -> int | None:
    """A non-negative integer setting (ms, s), ``default`` when absent (None: no value)."""
    value = config.get(name, default)
    if value is None:
        return None
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name}={value!r}: expected an integer") from None
    if n < 0:
        raise ConfigError(f"{name}={value!r}: must be >= 0")
    return n


def _number(config: Mapping[str, Any], name: str, default: float, low: float, high: float) -> float:
    value = config.get(name, default)
    try:
        n = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name}={value!r}: expected a number") from None
    if not low <= n <= high:  # SaslConfigs' ranges
        raise ConfigError(f"{name}={value!r}: must be between {low:g} and {high:g}")
    return n


@dataclass(frozen=True, slots=True)
class RefreshConfig:
    """``sasl.login.refresh.*`` (Kafka's ``ExpiringCredentialRefreshConfig``), with Java's
    defaults and ranges."""

    window_factor: float = 0.8
    window_jitter: float = 0.05
    min_period_seconds: int = 60
    buffer_seconds: int = 300

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> RefreshConfig:
        """Read the four keys from a client config (Kafka's names).

        Raises:
            ConfigError: a value out of Kafka's range.
        """
        return cls(
            window_factor=_number(config, "sasl.login.refresh.window.factor", 0.8, 0.5, 1.0),
            window_jitter=_number(config, "sasl.login.refresh.window.jitter", 0.05, 0.0, 0.25),
            min_period_seconds=int(_number(config, "sasl.login.refresh.min.period.seconds", 60, 0, 900)),
            buffer_seconds=int(_number(config, "sasl.login.refresh.buffer.seconds", 300, 0, 3600)),
        )


def refresh_at_ms(token: AccessToken, now_ms: int, refresh: RefreshConfig = RefreshConfig(),
                  rng: Callable[[], float] = random.random) -> int:
    """When to fetch the next token (``ExpiringCredentialRefreshingLogin.refreshMs``).

    The window is ``sasl.login.refresh.window.factor`` (plus jitter) of the time from
    ``now_ms`` to the token's expiry, whatever its ``iat`` says.

    Args:
        token: the current token.
        now_ms: the time now (the time the token was fetched, for a new one).
        refresh: the ``sasl.login.refresh.*`` settings.
        rng: a uniform draw in [0, 1) for the jitter.

    Returns:
        ms since the epoch; 10 s from now if the token has already expired.
    """
    expiry = token.lifetime_ms
    if now_ms > expiry:
        return now_ms + _RELOGIN_RETRY_MS
    # Kafka measures the window from now (refreshMs' relativeToMs), not from the token's iat:
    # a token issued long ago (an IdP that hands back its cached token) is not due at once
    pct = refresh.window_factor + refresh.window_jitter * rng()
    proposed = now_ms + int((expiry - now_ms) * pct)
    if now_ms + 1000 * (refresh.min_period_seconds + refresh.buffer_seconds) > expiry:
        return proposed  # too short-lived for both buffers: the window alone decides
    buffer_begins = expiry - 1000 * refresh.buffer_seconds
    if proposed > buffer_begins:
        return buffer_begins
    return max(proposed, now_ms + 1000 * refresh.min_period_seconds)


def parse_access_token(value: str, *, expires_in_ms: int | None = None, sub_claim: str = "sub",
                       scope_claim: str = "scope") -> AccessToken:
    """The token a client received, read as Kafka's ``ClientJwtValidator`` reads it: the
    JWT's payload is parsed, not verified (the broker verifies it).

    Args:
        value: the compact JWT.
        expires_in_ms: its expiry from elsewhere (the response's ``expires_in``), used when
            the JWT has no ``exp``.
        sub_claim: ``sasl.oauthbearer.sub.claim.name``.
        scope_claim: ``sasl.oauthbearer.scope.claim.name``.

    Raises:
        TokenRetrievalError: not a JWT, or no expiry or subject in it.
    """
    parts = value.split(".")
    if len(parts) != 3:  # SerializedJwt
        raise TokenRetrievalError("Malformed JWT provided; expected three sections (header, payload, and signature)")
    try:  # ClientJwtValidator reads the payload with OAuthBearerUnsecuredJws.toMap
        return token_from_claims(value, b64url_json(parts[1]), sub_claim=sub_claim, scope_claim=scope_claim,
                                 expiry_ms=expires_in_ms)
    except TokenValidationError as exc:
        raise TokenRetrievalError(f"Could not validate the access token: {exc}") from None


def _numeric_date(claims: Mapping[str, Any], name: str) -> int | None:
    """A NumericDate claim in ms (seconds, ``Number.longValue()``), None when absent."""
    value = claims.get(name)
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise TokenValidationError(f"Could not extract the '{name}' claim from the access token: {value!r} is "
                                   "not a number")
    return int(value) * 1000


def token_from_claims(value: str, claims: Mapping[str, Any], *, sub_claim: str = "sub",
                      scope_claim: str = "scope", expiry_ms: int | None = None) -> AccessToken:
    """The :class:`AccessToken` of a JWT's claims, checked as Kafka's
    ``ClaimValidationUtils`` checks them for both the client (``ClientJwtValidator``) and
    the broker (``BrokerJwtValidator``).

    - ``exp`` (``validateExpiration``): a number, not negative; ``expiry_ms`` stands in
      when the claims have none (kproto's use of a token response's ``expires_in``);
    - ``sub_claim`` (``validateSubject``): a string, not blank; trimmed;
    - ``scope_claim`` (``validateScopes``): a string (one scope) or a list of strings, each
      not blank, trimmed, no duplicates;
    - ``iat`` (``validateIssuedAt``): optional; a number, not negative.

    Raises:
        TokenValidationError: a claim that is missing or wrong, named.
    """
    lifetime_ms = _numeric_date(claims, "exp")
    if lifetime_ms is None:
        lifetime_ms = expiry_ms
    if lifetime_ms is None:
        raise TokenValidationError("exp value must be non-null")
    if lifetime_ms < 0:
        raise TokenValidationError(f"exp value must be non-negative; value: {claims.get('exp', lifetime_ms)}")
    sub = claims.get(sub_claim)
    if not isinstance(sub, str) or not sub.strip():
        raise TokenValidationError(f"{sub_claim} value must be a non-empty string")
    raw_scope = claims.get(scope_claim)
    if raw_scope is None:
        raw_scope = []
    elif isinstance(raw_scope, str):
        raw_scope = [raw_scope]
    elif not isinstance(raw_scope, list):
        raise TokenValidationError(f"{scope_claim} value must be a string or a list of strings")
    scope: list[str] = []
    for item in raw_scope:
        if not isinstance(item, str) or not item.strip():
            raise TokenValidationError(f"{scope_claim} value must not contain null or blank values: {raw_scope}")
        scope.append(item.strip())
    if len(set(scope)) != len(scope):
        raise TokenValidationError(f"{scope_claim} value must not contain duplicates: {raw_scope}")
    start_ms = _numeric_date(claims, "iat")
    if start_ms is not None and start_ms < 0:
        raise TokenValidationError(f"iat value must be non-negative; value: {claims['iat']}")
    return AccessToken(value, lifetime_ms, sub.strip(), frozenset(scope), start_ms)


def jaas_options(config: Mapping[str, Any]) -> dict[str, str]:
    """The options of ``sasl.jaas.config`` (empty when it is not set)."""
    text = config.get("sasl.jaas.config")
    return dict(jaas.parse(str(text)).options) if text else {}


def jaas_ssl_context(options: Mapping[str, str]) -> ssl.SSLContext | None:
    """The TLS context for an ``https://`` token or JWKS endpoint from the ``ssl.*``
    options of ``OAuthBearerLoginModule`` in ``sasl.jaas.config`` (Kafka's
    ``JaasOptionsUtils.createSSLSocketFactory``: the options read as a client's SSL
    settings, with their defaults), built by :func:`kproto.security.tls.client_context`.

    Returns:
        None when there is no ``ssl.*`` option (the system's CAs, hostname checked).

    Raises:
        ConfigError: an option kproto does not know or cannot use (a JKS store...).
    """
    given = {name: value for name, value in options.items() if name.startswith("ssl.")}
    if not given:
        return None
    # kproto.config parses a client's ssl.* settings, but this layer (shared with the broker)
    # does not import it: the few that client_context takes parsed are read here, with
    # SslConfigs' defaults; the others (locations, inline PEM, the key password) are text
    if "ssl.context" in given:
        raise ConfigError("sasl.jaas.config: ssl.context is not a JAAS option; pass ssl_context= instead")
    for name in ("ssl.truststore.type", "ssl.keystore.type"):
        if name in given and given[name].strip().upper() != "PEM":
            raise ConfigError(f"sasl.jaas.config option {name}={given[name]!r}: kproto reads PEM only (KIP-651)")
    protocols = tuple(p.strip() for p in given.get("ssl.enabled.protocols", "TLSv1.2,TLSv1.3").split(",")
                      if p.strip())
    if not protocols or not set(protocols) <= {"TLSv1.2", "TLSv1.3"}:
        raise ConfigError(f"sasl.jaas.config option ssl.enabled.protocols={given['ssl.enabled.protocols']!r}: "
                          "kproto speaks TLSv1.2 and TLSv1.3")
    identification = given.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
    if identification not in ("https", ""):
        raise ConfigError(f"sasl.jaas.config option ssl.endpoint.identification.algorithm={identification!r}: "
                          "expected https or empty")
    settings: dict[str, Any] = {**given, "security.protocol": "SSL", "ssl.enabled.protocols": protocols,
                                "ssl.protocol": given.get("ssl.protocol", "TLSv1.3").strip(),
                                "ssl.endpoint.identification.algorithm": identification}
    return client_context(settings)


def file_url_path(url: str) -> str:
    """The local path of a ``file://`` URL."""
    return urllib.request.url2pathname(urllib.parse.urlsplit(url).path)


# KIP-1139 (Kafka 4.1): a config key, or the older sasl.jaas.config option (ConfigOrJaas)
_CLIENT_ID = ("sasl.oauthbearer.client.credentials.client.id", "clientId")
_CLIENT_SECRET = ("sasl.oauthbearer.client.credentials.client.secret", "clientSecret")
_SCOPE = ("sasl.oauthbearer.scope", "scope")


def _config_or_jaas(config: Mapping[str, Any], jaas_options: Mapping[str, str], names: tuple[str, str],
                    required: bool) -> str | None:
    """``ConfigOrJaas.getValue``: the config key wins over the JAAS option; trimmed, and
    not empty when required (``HttpAccessTokenRetriever.sanitizeString``)."""
    key, option = names
    value = config.get(key)
    if value is None:
        value = jaas_options.get(option)
    text = None if value is None else str(value).strip()
    if required and not text:
        raise ConfigError(f"The OAuth configuration option {option} is required: set {key}, or {option} in the "
                          "OAuthBearerLoginModule of sasl.jaas.config")
    return text or None


def _url_encode(text: str) -> str:
    """``java.net.URLEncoder.encode(text, UTF_8)``: form encoding, spaces as ``+``."""
    return urllib.parse.quote_plus(text, safe=_URLENCODER_SAFE).replace("~", "%7E")


def _error_text(body: str) -> str:
    """The endpoint's error as ``HttpAccessTokenRetriever.formatErrorMessage`` shows it."""
    if not body.strip():
        return "{}"
    try:
        parsed = json.loads(body)
    except ValueError:
        return f"{{{body}}}"
    if isinstance(parsed, dict):
        for code, text in (("error", "error_description"), ("errorCode", "errorSummary")):
            if code in parsed:
                detail = json.dumps(parsed[text]) if text in parsed else ""
                return f"{{{json.dumps(parsed[code])} - {detail}}}"
    return body


class Retriable(Exception):
    """Raised by a call that :func:`retry` runs: this attempt failed in a way another attempt
    may not (Kafka's ``ExecutionException``); ``args[0]`` is the error to raise if none
    succeeds."""


_T = TypeVar("_T")


def retry(call: Callable[[], _T], backoff_ms: int, backoff_max_ms: int,
          clock: Callable[[], float] = time.time, sleep: Callable[[float], object] = time.sleep) -> _T:
    """Kafka's ``Retry.execute``: run ``call`` until it succeeds or raises anything but
    :class:`Retriable` (raised as is); after a :class:`Retriable`, wait ``backoff_ms``,
    doubling, while the time since the start stays within ``backoff_max_ms``; then raise
    the first error (``args[0]`` of the first :class:`Retriable`). The first attempt always
    runs."""
    end_ms = int(clock() * 1000) + backoff_max_ms
    first: BaseException | None = None
    attempt = 0
    while True:
        attempt += 1
        try:
            return call()
        except Retriable as exc:
            error: BaseException = exc.args[0]
            log.warning("attempt %d: %s", attempt, error)
            first = first or error
            wait_ms = min(backoff_ms * 2 ** (attempt - 1), end_ms - int(clock() * 1000))
            if wait_ms <= 0:
                raise first from None
            sleep(wait_ms / 1000)


_REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 20  # java.net.HttpURLConnection's http.maxRedirects default


def http_exchange(url: str, method: str, *, body: bytes | None = None, headers: Mapping[str, str] | None = None,
                  connect_timeout_ms: int | None = None, read_timeout_ms: int | None = None,
                  ssl_context: ssl.SSLContext | None = None, max_redirects: int = 0) -> tuple[int, str]:
    """One HTTP(S) exchange with an OAuth provider (the token or the JWKS endpoint):
    connecting bounded by ``connect_timeout_ms``, each read by ``read_timeout_ms`` (None:
    unbounded, as Java's ``HttpURLConnection``); ``https`` checks the certificate and the
    host name with ``ssl_context`` (default: the system's CAs).

    With ``max_redirects``, a redirect (301, 302, 303, 307, 308) to a URL of the same
    scheme is followed, up to that many times, as Java's ``HttpURLConnection`` follows
    them (``setFollowRedirects`` is on by default; never from http to https or back,
    whose 3xx is then the answer).

    Returns:
        the status and the body (UTF-8, undecodable bytes replaced).

    Raises:
        OSError: could not connect, reset, timed out (:class:`TimeoutError`), TLS failed.
        http.client.HTTPException: not an HTTP answer, or more than ``max_redirects``
            redirects.
    """
    for _ in range(max_redirects + 1):
        status, text, location = _exchange(url, method, body, headers, connect_timeout_ms, read_timeout_ms,
                                           ssl_context)
        if status not in _REDIRECTS or not location or max_redirects == 0:
            return status, text
        target = urllib.parse.urljoin(url, location)
        if urllib.parse.urlsplit(target).scheme != urllib.parse.urlsplit(url).scheme:
            return status, text
        url = target
    raise http.client.HTTPException(f"Server redirected too many times ({max_redirects})")


def _exchange(url: str, method: str, body: bytes | None, headers: Mapping[str, str] | None,
              connect_timeout_ms: int | None, read_timeout_ms: int | None,
              ssl_context: ssl.SSLContext | None) -> tuple[int, str, str | None]:
    """One request and its answer: the status, the body and the Location header."""
    parts = urllib.parse.urlsplit(url)
    timeout = None if connect_timeout_ms is None else connect_timeout_ms / 1000
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(parts.hostname or "", parts.port, timeout=timeout,
                                           context=ssl_context or ssl.create_default_context())
    else:
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        conn.connect()
        if conn.sock is not None:
            conn.sock.settimeout(None if read_timeout_ms is None else read_timeout_ms / 1000)
        conn.request(method, target, body=body, headers=dict(headers or {}))
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace"), response.getheader("Location")
    finally:
        conn.close()


class ClientCredentialsTokenProvider:
    """Tokens from ``sasl.oauthbearer.token.endpoint.url`` by the client-credentials grant
    (KIP-768), cached until their refresh time; see the module docstring.

    Args:
        config: the client's settings with Kafka's names: ``sasl.oauthbearer.token.endpoint.url``
            (required; ``https://``, ``http://`` or ``file://``), the client id, secret and
            scope (optional) as ``sasl.oauthbearer.client.credentials.client.id``,
            ``...client.secret`` and ``sasl.oauthbearer.scope`` (KIP-1139), or as the
            ``clientId``, ``clientSecret`` and ``scope`` options of ``OAuthBearerLoginModule``
            in ``sasl.jaas.config`` (the config keys win; neither is needed for ``file://``),
            ``sasl.oauthbearer.scope.claim.name``, ``sasl.oauthbearer.sub.claim.name``,
            ``sasl.oauthbearer.header.urlencode``, ``sasl.login.connect.timeout.ms``,
            ``sasl.login.read.timeout.ms``, ``sasl.login.retry.backoff.ms``,
            ``sasl.login.retry.backoff.max.ms``, ``sasl.login.refresh.*``; other keys are
            ignored (the client's own config checks them).
        ssl_context: for an ``https://`` endpoint (default: from the ``ssl.*`` options of
            ``OAuthBearerLoginModule`` in ``sasl.jaas.config``, as Java's
            ``JaasOptionsUtils``, see :func:`jaas_ssl_context`; without them the system's
            trusted CAs, hostname checked).
        clock: seconds since the epoch (``time.time``); tests pass their own.
        sleep: waits between retries (default: a wait that :meth:`close` cuts short).

    Raises:
        ConfigError: a missing or bad setting.

    Thread-safe: connections being set up at once share one fetch, made in a thread of the
    provider's own; a refresh runs while the current token serves. Blocking for a bounded
    time when there is no valid token: from asyncio, call it in a thread (``await
    asyncio.to_thread(provider.token)``). A caller waits for the fetch at most ``timeout_ms``;
    by default until ``sasl.login.connect.timeout.ms`` + ``sasl.login.read.timeout.ms`` (the
    bounds of one attempt; the retries go on in the background) after the fetch began, or
    10 s (``socket.connection.setup.timeout.ms``' default: a connection gives up then
    anyway) when neither is set. So an endpoint that never answers holds one thread, not
    one per connection attempt, and each waiting caller for a bounded time. From asyncio,
    :meth:`token_async` waits on the event loop and holds no thread at all.
    """

    def __init__(self, config: Mapping[str, Any], *, ssl_context: ssl.SSLContext | None = None,
                 clock: Callable[[], float] = time.time, sleep: Callable[[float], object] | None = None) -> None:
        url = config.get("sasl.oauthbearer.token.endpoint.url")
        if not url:
            raise ConfigError("sasl.oauthbearer.token.endpoint.url is required for the OAuth client credentials flow")
        self.url = str(url)
        self._parts = urllib.parse.urlsplit(self.url)
        if self._parts.scheme not in ("http", "https", "file"):
            raise ConfigError(f"sasl.oauthbearer.token.endpoint.url={self.url!r}: expected an http, https or "
                              "file URL")
        self.sub_claim = str(config.get("sasl.oauthbearer.sub.claim.name") or "sub").strip()
        self.scope_claim = str(config.get("sasl.oauthbearer.scope.claim.name") or "scope").strip()
        self.connect_timeout_ms = _ms(config, "sasl.login.connect.timeout.ms", None)
        self.read_timeout_ms = _ms(config, "sasl.login.read.timeout.ms", None)
        self.retry_backoff_ms = _ms(config, "sasl.login.retry.backoff.ms", 100) or 0
        self.retry_backoff_max_ms = _ms(config, "sasl.login.retry.backoff.max.ms", 10000) or 0
        if self.retry_backoff_max_ms < self.retry_backoff_ms:  # Retry's constructor
            raise ConfigError(f"sasl.login.retry.backoff.max.ms ({self.retry_backoff_max_ms}) is less than "
                              f"sasl.login.retry.backoff.ms ({self.retry_backoff_ms})")
        self.refresh = RefreshConfig.from_config(config)
        self._clock = clock
        self._closed = threading.Event()
        self._sleep = sleep if sleep is not None else self._closed.wait
        self._authorization = self._body = ""
        if self._parts.scheme != "file":
            options = jaas_options(config)
            if ssl_context is None and self._parts.scheme == "https":
                ssl_context = jaas_ssl_context(options)
            client_id = _config_or_jaas(config, options, _CLIENT_ID, required=True) or ""
            client_secret = _config_or_jaas(config, options, _CLIENT_SECRET, required=True) or ""
            if str(config.get("sasl.oauthbearer.header.urlencode", "false")).lower() == "true":
                client_id, client_secret = _url_encode(client_id), _url_encode(client_secret)
            # RFC 7617: the standard base64 alphabet, not the URL-safe one (KAFKA-14496)
            credentials = base64.b64encode(f"{client_id}:{client_secret}".encode()).decode("ascii")
            self._authorization = f"Basic {credentials}"
            self._body = "grant_type=client_credentials"
            scope = _config_or_jaas(config, options, _SCOPE, required=False)
            if scope:
                self._body += f"&scope={_url_encode(scope)}"
        self._ssl_context = ssl_context
        waits = [t for t in (self.connect_timeout_ms, self.read_timeout_ms) if t is not None]
        #: how long token() waits for a fetch by default (see the class docstring)
        self.wait_ms = sum(waits) if waits else _DEFAULT_WAIT_MS
        self._lock = threading.Lock()
        self._token: AccessToken | None = None
        self._refresh_at_ms = 0
        self._fetching: threading.Event | None = None  # set when the fetch in flight ends
        self._deadline = 0.0  # time.monotonic() when the default wait for that fetch ends
        self._error: TokenRetrievalError | None = None  # the last fetch's failure
        self._waiters: list[Callable[[], object]] = []  # token_async callers to wake when the fetch ends

    @property
    def refresh_at_ms(self) -> int:
        """When the cached token is due for refresh (0: no token yet)."""
        return self._refresh_at_ms

    def token(self, timeout_ms: int | None = None) -> AccessToken:
        """The current token; a new one is fetched when there is none or its refresh time
        has come.

        The fetch runs in a thread of the provider's own, one at a time. While the cached
        token is still valid its refresh does not hold anyone up: the cached token is
        answered at once, and the new one serves the calls after the fetch (a failed
        refresh keeps the cached token and is tried again 10 s later, as Java's refresh
        thread does). Without a valid token, callers wait for the fetch in flight, never
        start another one, and wait at most ``timeout_ms`` (see the class docstring for the
        default); the fetch goes on after they gave up, and its token serves the next call.

        Args:
            timeout_ms: how long to wait for a fetch (the caller's own bound, e.g. the
                time left to set up a connection).

        Raises:
            TokenRetrievalError: no valid token could be had (``retriable`` when the wait
                ran out or the endpoint was unreachable or failing).
        """
        begun = self._begin(timeout_ms)
        if isinstance(begun, AccessToken):
            return begun
        fetching, deadline = begun
        # No valid token: wait for the fetch, bounded (a caller here is often a worker of
        # asyncio's shared executor); callers that come after the fetch's default wait ran
        # out do not wait again
        return self._outcome(fetching.wait(max(0.0, deadline - time.monotonic())), timeout_ms)

    async def token_async(self, timeout_ms: int | None = None, *, fresh: bool = False) -> AccessToken:
        """:meth:`token` for asyncio: the wait for the fetch is on the event loop, so no
        thread is held while the endpoint is slow, and cancelling the caller (a connection
        attempt that timed out) ends its wait; the fetch itself still runs in the
        provider's thread. ``SaslClient`` awaits it when given ``provider.token_async`` as
        its token provider.

        ``fresh``: when the cached token's refresh time has come, wait (up to ``timeout_ms``)
        for the refresh rather than answer the old token at once: what a (re-)authentication
        asks, since Kafka's refresher thread would have replaced the token by then, and a
        broker ends the session of an old token with that token, too soon to renew it
        (KafkaChannel: at most one re-authentication a second).

        Raises:
            TokenRetrievalError: as :meth:`token`.
        """
        begun = self._begin(timeout_ms, fresh=fresh)
        if isinstance(begun, AccessToken):
            return begun
        fetching, deadline = begun
        loop = asyncio.get_running_loop()
        ended = loop.create_future()

        def wake() -> None:
            if not ended.done():
                ended.set_result(None)

        with self._lock:
            if fetching.is_set():
                wake()
            else:
                self._waiters.append(lambda: loop.call_soon_threadsafe(wake))
        try:
            await wait_for(ended, max(0.0, deadline - time.monotonic()))
            finished = True
        except TimeoutError:
            finished = False
        return self._outcome(finished, timeout_ms)

    async def __call__(self) -> AccessToken:
        """:meth:`token_async`: the provider as an async ``sasl.oauthbearer.token.provider``
        (``SaslClient`` awaits what a provider's call answers, so passing the provider
        itself holds no executor thread while the endpoint is slow). It is called at each
        (re-)authentication, so it asks for a ``fresh`` token."""
        return await self.token_async(fresh=True)

    def _begin(self, timeout_ms: int | None, *, fresh: bool = False) -> AccessToken | tuple[threading.Event, float]:
        """The token to answer at once, or the fetch to wait for (started if none is in
        flight) and when the wait ends (``time.monotonic()``); ``fresh``: see :meth:`token_async`."""
        with self._lock:
            now_ms = int(self._clock() * 1000)
            current = self._token
            if current is not None and now_ms < self._refresh_at_ms:
                return current
            fetching = self._fetching
            if fetching is None:
                fetching = self._fetching = threading.Event()
                self._deadline = time.monotonic() + self.wait_ms / 1000
                threading.Thread(target=self._fetch_in_background, args=(fetching,), daemon=True,
                                 name=f"kproto-oauth-token {self.url}").start()
            if current is not None and now_ms < current.lifetime_ms and not fresh:
                return current  # Kafka's refresh thread fetches; connections go on with the current token
            return fetching, self._deadline if timeout_ms is None else time.monotonic() + timeout_ms / 1000

    def _outcome(self, finished: bool, timeout_ms: int | None) -> AccessToken:
        """After waiting for a fetch: its token, a still valid one, or the reason there is none."""
        with self._lock:
            now_ms = int(self._clock() * 1000)
            token, error = self._token, self._error
        if finished and error is None and token is not None:
            return token  # the fetched token, as Java's login takes it (its expiry is the broker's to judge)
        if token is not None and now_ms < token.lifetime_ms:
            return token  # the refresh failed or is still on its way: the current token serves
        if finished and error is not None:
            raise TokenRetrievalError(error.args[0], status=error.status, retriable=error.retriable)
        waited = self.wait_ms if timeout_ms is None else timeout_ms
        raise TokenRetrievalError(f"The token endpoint {self.url} did not answer within {waited} ms; the request "
                                  "goes on in the background and its token serves the next connection",
                                  retriable=True)

    def _fetch_in_background(self, done: threading.Event) -> None:
        """The one fetch in flight: its token (or its failure) for every caller."""
        try:
            token = self.fetch()
        except TokenRetrievalError as exc:
            with self._lock:
                self._error = exc
                now_ms = int(self._clock() * 1000)
                if self._token is not None and now_ms < self._token.lifetime_ms:
                    log.warning("OAuth token refresh failed, keeping the current token until %d: %s",
                                self._token.lifetime_ms, exc)
                    self._refresh_at_ms = now_ms + _RELOGIN_RETRY_MS
        except BaseException as exc:  # a bug: the waiters must still be told
            with self._lock:
                self._error = TokenRetrievalError(f"the token fetch from {self.url} failed: {exc!r}")
            raise
        else:
            with self._lock:
                fetched_ms = int(self._clock() * 1000)
                self._token, self._error = token, None
                self._refresh_at_ms = refresh_at_ms(token, fetched_ms, self.refresh)
        finally:
            with self._lock:
                self._fetching = None
                waiters, self._waiters = self._waiters, []
                done.set()
            for wake in waiters:
                try:
                    wake()
                except RuntimeError:  # that caller's event loop has closed
                    pass

    def fetch(self) -> AccessToken:
        """A new token from the endpoint (or the file), with the retries of the module
        docstring; the cache is left alone.

        Raises:
            TokenRetrievalError: the endpoint refused, failed past the retry window, or
                answered something that is not a usable token.
        """
        if self._parts.scheme == "file":
            return self._from_file()
        body = retry(self._post, self.retry_backoff_ms, self.retry_backoff_max_ms, self._clock, self._sleep)
        return self._parse_response(body)

    def _from_file(self) -> AccessToken:
        path = file_url_path(self.url)
        try:
            with open(path, encoding="utf-8") as f:
                value = f.read().strip()
        except OSError as exc:
            raise TokenRetrievalError(f"could not read the token file {path}: {exc}", retriable=True) from None
        if not value:
            raise TokenRetrievalError(f"the token file {path} is empty")
        return parse_access_token(value, sub_claim=self.sub_claim, scope_claim=self.scope_claim)

    def close(self) -> None:
        """Stop a fetch in flight from trying again (idempotent; Java's ``logout``): its
        waits between retries end, and it fails before its next attempt. An attempt on the
        wire still ends by its own timeouts. The provider answers no new token after."""
        self._closed.set()

    def _post(self) -> str:
        """One attempt (``HttpAccessTokenRetriever.post``): the response body on 200/201;
        :class:`Retriable` for what another attempt may change, else
        :class:`TokenRetrievalError`."""
        if self._closed.is_set():
            raise TokenRetrievalError(f"the token provider of {self.url} is closed")
        headers = {"Authorization": self._authorization, "Accept": "application/json", "Cache-Control": "no-cache",
                   "Content-Type": "application/x-www-form-urlencoded"}
        try:
            status, body = http_exchange(self.url, "POST", body=self._body.encode(), headers=headers,
                                         connect_timeout_ms=self.connect_timeout_ms,
                                         read_timeout_ms=self.read_timeout_ms, ssl_context=self._ssl_context)
        except (OSError, http.client.HTTPException) as exc:  # refused, reset, timed out, TLS...
            what = "timed out" if isinstance(exc, TimeoutError) else "failed"
            raise Retriable(TokenRetrievalError(
                f"The request to the token endpoint {self.url} {what}: {exc}", retriable=True)) from None
        if status in (200, 201):
            if not body:
                raise Retriable(TokenRetrievalError(
                    f"The token endpoint response was unexpectedly empty despite response code {status} from "
                    f"{self.url}", status=status, retriable=True))
            return body
        if status in _UNRETRYABLE:
            raise TokenRetrievalError(
                f"The response code {status} and error response {_error_text(body)} was encountered reading the "
                "token endpoint response; will not attempt further retries", status=status)
        raise Retriable(TokenRetrievalError(
            f"The unexpected response code {status} and error message {_error_text(body)} was encountered "
            "reading the token endpoint response", status=status, retriable=True))

    def _parse_response(self, body: str) -> AccessToken:
        """``HttpAccessTokenRetriever.parseAccessToken``, then the token read."""
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        value = parsed.get("access_token") if isinstance(parsed, dict) else None
        if not isinstance(value, str) or not value.strip():
            snippet = body if len(body) <= _MAX_RESPONSE_SNIPPET else (
                f"{body[:_MAX_RESPONSE_SNIPPET]} (trimmed to first {_MAX_RESPONSE_SNIPPET} characters out of "
                f"{len(body)} total)")
            raise TokenRetrievalError(
                f"The token endpoint response did not contain an access_token value. Response: ({snippet})")
        expires_in = parsed.get("expires_in")
        expires_in_ms = None
        if isinstance(expires_in, int | float) and not isinstance(expires_in, bool):
            expires_in_ms = int(self._clock() * 1000) + int(expires_in * 1000)
        return parse_access_token(value.strip(), expires_in_ms=expires_in_ms, sub_claim=self.sub_claim,
                                  scope_claim=self.scope_claim)
