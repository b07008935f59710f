"""SASL for kproto's clients: what a client's settings say about authenticating, and each
mechanism's conversation as a generator that :class:`~kproto.io.Connection` drives.

:func:`client_sasl` reads ``security.protocol``, ``sasl.mechanism``, ``sasl.jaas.config``
(as Java users write it, :mod:`kproto.security.jaas`), librdkafka's ``sasl.username`` /
``sasl.password``, ``sasl.oauthbearer.token.provider`` and
``sasl.oauthbearer.token.endpoint.url`` (with the ``sasl.login.*`` and
``sasl.oauthbearer.*`` keys :mod:`kproto.security.oidc` reads) once, checks them together
(:class:`~kproto.errors.ConfigError` naming the keys) and answers a :class:`SaslClient`,
or None for a protocol without SASL.

Theory of operation. :meth:`SaslClient.conversation` is a generator: it yields each
message for the broker and is sent the broker's answer (the ``auth_bytes`` of a
SaslAuthenticate response), as httpx's ``Auth.auth_flow`` does; it returns when the
exchange is complete and raises :class:`~kproto.errors.SaslAuthenticationFailedError`
when the broker's answer does not check out (a SCRAM server signature). The connection
sends SaslHandshake v1 and the messages in SaslAuthenticate requests (KIP-152), and a
broker's error code becomes the error (Java's ``SaslClientAuthenticator``). Nothing here
does I/O, except that an OAUTHBEARER token comes from a provider: see
:class:`OAuthBearerToken` and :meth:`SaslClient.token`.

Java's rules kept: the default ``sasl.mechanism`` is GSSAPI, which kproto does not speak
(an error saying so); a PlainLoginModule or ScramLoginModule entry serves PLAIN and both
SCRAMs (Java's login modules just hand over the user name and password); OAUTHBEARER takes
OAuthBearerLoginModule's unsecured-token options (Kafka's default login callback handler,
for development), a token provider, or ``sasl.oauthbearer.token.endpoint.url``: then the
provider is :class:`~kproto.security.oidc.ClientCredentialsTokenProvider` (Java's
``OAuthBearerLoginCallbackHandler``, KIP-768), whose ``token()`` blocks on HTTP and so
runs in a thread; it keeps its token until the refresh time (``sasl.login.refresh.*``),
so each authentication, a KIP-368 re-authentication included, sends the current token.
An https endpoint's TLS settings are the ``ssl.*`` options of the OAuthBearerLoginModule
entry, as Java reads them (``JaasOptionsUtils``), not the client's. ``sasl.*`` settings
with a protocol without SASL are ignored, as Java ignores them (and logs them unused).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kproto.errors import ConfigError, SaslAuthenticationFailedError
from kproto.security import jaas, oauthbearer, oidc, plain, scram
from kproto.security.tls import client_context

__all__ = ["MECHANISMS", "SASL_PROTOCOLS", "OAuthBearerToken", "SaslClient", "TokenProvider", "client_sasl"]

SASL_PROTOCOLS = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})
#: The mechanisms kproto's clients speak.
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
_USER_MODULES = (jaas.LOGIN_MODULES["PLAIN"], jaas.LOGIN_MODULES["SCRAM-SHA-256"])
# sasl.login.callback.handler.class values that name the OAuth client-credentials flow
# (KIP-768; the "secured" package is the name before Kafka 3.4)
_OIDC_HANDLERS = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
                  "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler")


@dataclass(frozen=True)
class OAuthBearerToken:
    """An OAUTHBEARER token as a provider answers it (Java's ``OAuthBearerToken``).

    Attributes:
        value: the token (a JWT, as the broker expects it).
        expires_at: its expiry, epoch seconds, if known (for logs and errors; the broker
            decides how long the session lasts, KIP-368).
        principal: its principal name, if known (for logs).
        extensions: SASL extensions sent with it (KIP-342), e.g. Confluent Cloud's
            ``logicalCluster`` and ``identityPoolId``.
    """

    value: str = field(repr=False)  # a bearer credential: never in a log
    expires_at: float | None = None
    principal: str | None = None
    extensions: Mapping[str, str] = field(default_factory=dict)


#: ``sasl.oauthbearer.token.provider``: a callable taking no argument (or an object whose
#: ``token()`` method is one), sync or async, answering a str, a ``(token, expires_at)``
#: or ``(token, expires_at, principal)`` tuple, an :class:`OAuthBearerToken`, or an object
#: shaped as Java's ``OAuthBearerToken`` (``value``, ``lifetime_ms`` the expiry in epoch
#: ms, ``principal``), such as :mod:`kproto.security.oidc`'s ``AccessToken``.
TokenProvider = Callable[[], Any]


#: :func:`kproto.config.ssl_settings`'s shape: ``ssl.*`` options as written -> parsed settings.
SslSettings = Callable[[Mapping[str, str]], Mapping[str, Any]]


def _as_token(answer: Any) -> OAuthBearerToken:
    if isinstance(answer, OAuthBearerToken):
        return answer
    if isinstance(answer, str):
        return OAuthBearerToken(answer)
    if isinstance(answer, tuple) and 2 <= len(answer) <= 3 and isinstance(answer[0], str):
        return OAuthBearerToken(answer[0], None if answer[1] is None else float(answer[1]),
                                answer[2] if len(answer) == 3 else None)
    if isinstance(getattr(answer, "value", None), str) and hasattr(answer, "lifetime_ms"):
        # Java's OAuthBearerToken shape (value, lifetimeMs = the expiry, principalName), as
        # kproto.security.oidc's AccessToken has it
        return OAuthBearerToken(answer.value, answer.lifetime_ms / 1000, getattr(answer, "principal", None))
    raise SaslAuthenticationFailedError(
        f"sasl.oauthbearer.token.provider answered {type(answer).__name__}; expected a token str, "
        "a (token, expiry epoch seconds[, principal]) tuple or an OAuthBearerToken")


class _UnsecuredLogin:
    """OAuthBearerLoginModule's unsecured tokens (Kafka's default login callback handler):
    a fresh token per authentication, from the ``unsecuredLogin...`` options."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self._options = dict(options)
        self.token(time.time() * 1000)  # a bad option is a config error now, not at connect time

    def token(self, now_ms: float | None = None) -> OAuthBearerToken:
        now_ms = time.time() * 1000 if now_ms is None else now_ms
        value, extensions = oauthbearer.unsecured_login(self._options, int(now_ms))
        try:  # its expiry and principal, for logs; the broker judges the token
            parsed = oauthbearer.validate_unsecured(value, int(now_ms))
        except oauthbearer.TokenValidationError:
            return OAuthBearerToken(value, None, None, extensions)
        return OAuthBearerToken(value, parsed.lifetime_ms / 1000, parsed.principal, extensions)


@dataclass(frozen=True)
class SaslClient:
    """How a client authenticates: its mechanism and credentials, from :func:`client_sasl`."""

    mechanism: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    token_provider: Any = field(default=None, repr=False)
    token_auth: bool = False  # SCRAM with a delegation token (ScramLoginModule tokenauth=true)

    async def token(self) -> OAuthBearerToken:
        """An OAUTHBEARER token from the provider: an async one is awaited, a sync one runs
        in a thread (it may fetch over the network; the event loop goes on meanwhile)."""
        provider = self.token_provider
        fn = provider.token if isinstance(provider, _UnsecuredLogin) or not callable(provider) else provider
        if isinstance(provider, _UnsecuredLogin):
            answer: Any = fn()  # no I/O: some JSON
        elif inspect.iscoroutinefunction(fn):
            answer = await fn()
        else:
            answer = await asyncio.to_thread(fn)
        if inspect.isawaitable(answer):  # an object whose __call__ is async
            answer = await answer
        return _as_token(answer)

    def conversation(self, token: OAuthBearerToken | None = None) -> Generator[bytes, bytes, None]:
        """The client's messages, each answered by the broker's; returns when complete.

        Raises:
            SaslAuthenticationFailedError: the broker's answer does not check out.
        """
        if self.mechanism == "PLAIN":
            yield plain.initial_response(self.username or "", self.password or "")
        elif self.mechanism in scram.MECHANISMS:
            client = scram.ScramClient(self.mechanism, self.username or "", self.password or "",
                                       token_auth=self.token_auth)
            server_first = yield client.first_message()
            server_final = yield client.final_message(server_first)
            client.verify(server_final)
        elif self.mechanism == "OAUTHBEARER":
            assert token is not None, "OAUTHBEARER needs the token (SaslClient.token)"
            bearer = oauthbearer.OAuthBearerClient(token.value, dict(token.extensions))
            answer = yield bearer.first_message()
            reply = bearer.receive(answer)
            if reply is not None:  # the broker's JSON error; it fails the exchange after this
                yield reply
                raise SaslAuthenticationFailedError(f"the broker refused the token: {bearer.error}")
        else:  # client_sasl lets no other through
            raise AssertionError(self.mechanism)


def _jaas_entry(text: str, mechanism: str) -> jaas.JaasEntry:
    entry = jaas.parse(text)
    wanted = _USER_MODULES if mechanism != "OAUTHBEARER" else (jaas.LOGIN_MODULES["OAUTHBEARER"],)
    if entry.login_module not in wanted:
        raise ConfigError(f"sasl.jaas.config has {entry.login_module}; sasl.mechanism={mechanism} needs "
                          f"{' or '.join(wanted)}")
    return entry


def _token_endpoint(config: Mapping[str, Any], text: str | None,
                    ssl_settings: SslSettings | None) -> oidc.ClientCredentialsTokenProvider:
    """``sasl.oauthbearer.token.endpoint.url``'s provider (KIP-768), as Java's
    ``OAuthBearerLoginCallbackHandler``: the client id, secret and scope from the config's
    KIP-1139 keys or the OAuthBearerLoginModule options; for an https endpoint, the TLS
    settings are the ``ssl.*`` options of that JAAS entry, not the client's own (Java's
    ``JaasOptionsUtils.maybeCreateSslResource`` reads the JAAS options), and without any,
    the system's CAs with the host name checked."""
    options: Mapping[str, str] = {}
    if text is not None:
        options = _jaas_entry(text, "OAUTHBEARER").options
    context = None
    tls_options = {k: v for k, v in options.items() if k.startswith("ssl.")}
    if tls_options and str(config["sasl.oauthbearer.token.endpoint.url"]).lower().startswith("https:"):
        if ssl_settings is None:
            raise ConfigError("the token endpoint's ssl.* options in sasl.jaas.config need the client's settings "
                              "table: make the client (or a kproto.io.Cluster) rather than calling client_sasl")
        try:
            context = client_context({**ssl_settings(tls_options), "security.protocol": "SSL"})
        except ConfigError as exc:
            raise ConfigError(f"the token endpoint's TLS settings in sasl.jaas.config: {exc}") from None
    return oidc.ClientCredentialsTokenProvider(config, ssl_context=context)


def client_sasl(config: Mapping[str, Any], *, ssl_settings: SslSettings | None = None) -> SaslClient | None:
    """The client's SASL settings checked together, or None when ``security.protocol`` has
    no SASL.

    Args:
        config: the client's settings (Kafka's names, parsed).
        ssl_settings: :func:`kproto.config.ssl_settings`, which parses the ``ssl.*``
            options of an OAuth token endpoint's JAAS entry (passed in: this layer does
            not import the settings table).

    Raises:
        ConfigError: GSSAPI, missing or doubled credentials, a JAAS entry of another
            mechanism, a bad OAuthBearerLoginModule option, or token endpoint settings
            that :class:`~kproto.security.oidc.ClientCredentialsTokenProvider` refuses.
    """
    if config["security.protocol"] not in SASL_PROTOCOLS:
        return None
    mechanism = config["sasl.mechanism"]
    protocol = config["security.protocol"]
    if mechanism not in MECHANISMS:
        raise ConfigError(f"sasl.mechanism={mechanism} is not supported by kproto (Kerberos); set sasl.mechanism to "
                          f"one of {', '.join(MECHANISMS)} (Java's default is GSSAPI)")
    text = config.get("sasl.jaas.config")
    user, password = config.get("sasl.username"), config.get("sasl.password")
    provider = config.get("sasl.oauthbearer.token.provider")
    url = config.get("sasl.oauthbearer.token.endpoint.url") or None
    handler = (config.get("sasl.login.callback.handler.class") or "").strip() or None
    if handler is not None and handler not in _OIDC_HANDLERS:
        raise ConfigError(f"sasl.login.callback.handler.class={handler}: kproto runs no Java class; it knows "
                          f"{_OIDC_HANDLERS[0]} (the OAuth flow of sasl.oauthbearer.token.endpoint.url); for "
                          "another token source, give sasl.oauthbearer.token.provider")
    if handler is not None and url is None:
        raise ConfigError(f"sasl.login.callback.handler.class={handler} needs sasl.oauthbearer.token.endpoint.url")
    spellings = [n for n, v in (("sasl.jaas.config", text), ("sasl.username", user),
                                ("sasl.oauthbearer.token.provider", provider)) if v is not None]
    if len(spellings) > 1:
        raise ConfigError(f"{' and '.join(spellings)} both give the credentials: give one")
    if mechanism == "OAUTHBEARER":
        if user is not None or password is not None:
            raise ConfigError("sasl.username/sasl.password are for PLAIN and SCRAM; OAUTHBEARER takes "
                              "sasl.oauthbearer.token.provider or an OAuthBearerLoginModule sasl.jaas.config")
        if url is not None and provider is not None:
            raise ConfigError("sasl.oauthbearer.token.endpoint.url and sasl.oauthbearer.token.provider both give the "
                              "tokens: give one")
        if provider is not None:
            return SaslClient(mechanism, token_provider=provider)
        if url is not None:
            return SaslClient(mechanism, token_provider=_token_endpoint(config, text, ssl_settings))
        if text is None:
            raise ConfigError(f"security.protocol={protocol} with sasl.mechanism=OAUTHBEARER needs "
                              "sasl.oauthbearer.token.provider or sasl.jaas.config (OAuthBearerLoginModule)")
        entry = _jaas_entry(text, mechanism)
        try:
            return SaslClient(mechanism, token_provider=_UnsecuredLogin(entry.options))
        except ValueError as exc:
            raise ConfigError(f"sasl.jaas.config: {exc}") from None
    for name, value in (("sasl.oauthbearer.token.provider", provider), ("sasl.oauthbearer.token.endpoint.url", url)):
        if value is not None:
            raise ConfigError(f"{name} is for OAUTHBEARER, not sasl.mechanism={mechanism}")
    token_auth = False
    if text is not None:
        entry = _jaas_entry(text, mechanism)
        user, password = entry.options.get("username"), entry.options.get("password")
        token_auth = entry.options.get("tokenauth", "false").lower() == "true"
        where = "sasl.jaas.config's username and password options"
    else:
        where = "sasl.username and sasl.password"
    if user is None or password is None:
        raise ConfigError(f"security.protocol={protocol} with sasl.mechanism={mechanism} needs {where} "
                          "(or sasl.jaas.config with PlainLoginModule/ScramLoginModule username=\"...\" "
                          "password=\"...\")")
    return SaslClient(mechanism, user, password, token_auth=token_auth and mechanism in scram.MECHANISMS)
