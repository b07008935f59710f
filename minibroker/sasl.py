"""SASL on a listener: each connection's authenticator, as Kafka's ``SaslServerAuthenticator``.

Theory of operation. A connection on a SASL_PLAINTEXT or SASL_SSL listener gets an
:class:`Authenticator`, a sans-I/O state machine that the server feeds every frame before
the handlers see it (:meth:`Authenticator.receive`); it answers a :class:`Step`: a reply
to send, whether the request goes on to the handlers, and whether to close. Kafka's
states and rules (``SaslServerAuthenticator``, ``KafkaChannel``, ``SocketServer``):

- ``INITIAL_REQUEST`` / ``HANDSHAKE_OR_VERSIONS_REQUEST``: one ApiVersions (answered by
  the handlers; one of an unknown version gets its v0 error and another may follow), then
  SaslHandshake. Any other request closes the connection with no answer ("Unexpected Kafka
  request of type X during SASL handshake."); bytes that are no Kafka request close it
  too (a client with the wrong security protocol).
- SaslHandshake: a mechanism of ``sasl.enabled.mechanisms`` is answered with the list and
  starts ``AUTHENTICATE``; another is answered UNSUPPORTED_SASL_MECHANISM with the list,
  and the connection closes. v0 means the tokens that follow are raw size-prefixed frames,
  not SaslAuthenticate requests (KIP-152); a failure then closes with no answer.
- ``AUTHENTICATE``: SaslAuthenticate requests carry the mechanism's tokens. A refused
  exchange is answered SASL_AUTHENTICATION_FAILED with Kafka's text
  (:meth:`kproto.security.SaslServerError.client_message`) and closes the connection; any
  other request is answered ILLEGAL_SASL_STATE in its own response and closes it. Failure
  answers wait ``connection.failed.authentication.delay.ms`` first (the server does), so
  that a client with a wrong password cannot spin.
- ``COMPLETE``: requests go to the handlers as the principal ``User:<authorization id>``.

Until then a frame may not exceed ``sasl.server.max.receive.size`` (the server's frame
reader enforces it), so that an unauthenticated peer cannot make the broker hold large
requests.

Sessions (KIP-368). On success the session lasts ``connections.max.reauth.ms`` (0: no
limit), or less if the credential ends sooner (an OAUTHBEARER token's ``exp``), and
SaslAuthenticate v1+ tells the client (``session_lifetime_ms``). A request after the end
closes the connection, unless it is a SaslHandshake: that starts re-authentication on the
same connection, with the same mechanism ("SASL mechanism 'X' requested by client is not
supported for re-authentication of mechanism 'Y'" closes it otherwise) and the same
principal ("Cannot change principals during re-authentication from ..."). Without a
session end, or within a second of the last re-authentication's start (Kafka's
``KafkaChannel`` limit), a SaslHandshake goes to the handlers, which answer
ILLEGAL_SASL_STATE as Kafka's ``KafkaApis`` does (:mod:`minibroker.handlers.sasl`).

Mechanisms are the sans-I/O owners in :mod:`kproto.security`: PLAIN against the
``user_<name>="<password>"`` options of the listener's ``plain.sasl.jaas.config``
(PlainLoginModule), SCRAM-SHA-256/512 against the broker's SCRAM users
(:mod:`minibroker.scram_credentials`), OAUTHBEARER with Kafka's unsecured-JWT validator and
the ``unsecuredValidator*`` options of ``oauthbearer.sasl.jaas.config``, or with signed tokens
checked against a JWKS (KIP-768, :class:`JwksTokenValidator`) when the listener's
``listener.name.<name>.oauthbearer.sasl.server.callback.handler.class`` is Kafka's
``OAuthBearerValidatorCallbackHandler``. That validator fetches the keys and keeps a refresh
thread: the server opens it when it starts and closes it when it stops
(:meth:`SaslSettings.open`, :meth:`SaslSettings.close`).
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kproto.errors import (
    ConfigError,
    IllegalSaslStateError,
    KafkaCodeError,
    ProtocolError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
)
from kproto.protocol import ApiKey, UnsupportedApiVersionError, decode_request, encode_response
from kproto.protocol.messages import SaslAuthenticateResponse, SaslHandshakeResponse
from kproto.security import SaslServerError, jaas, oauthbearer, plain
from kproto.security.jwks import JwksValidator
from kproto.security.scram import MECHANISMS as SCRAM_MECHANISMS
from kproto.security.scram import ScramCredential, ScramServer, ScramState
from minibroker.config import (
    OAUTHBEARER_KEYS,
    SASL_MECHANISMS,
    SERVER_CALLBACK_HANDLER,
    BrokerConfig,
)
from minibroker.faults import error_response

__all__ = ["JWT_VALIDATOR_HANDLERS", "TRANSITIONS", "UNSECURED_VALIDATOR_HANDLER", "Authenticator",
           "JwksTokenValidator", "SaslSettings", "SaslState", "Step", "oauthbearer_validator"]

#: ``(token, now_ms) -> (principal name, credential expiry in ms since the epoch)``.
TokenValidator = Callable[[str, int], tuple[str, int]]
#: ``(user, mechanism) -> credential``: the broker's SCRAM users.
ScramLookup = Callable[[str, str], ScramCredential | None]


class SaslState(enum.Enum):
    """Kafka's SaslServerAuthenticator.SaslState (those minibroker goes through)."""

    INITIAL_REQUEST = "INITIAL_REQUEST"
    HANDSHAKE_OR_VERSIONS_REQUEST = "HANDSHAKE_OR_VERSIONS_REQUEST"
    HANDSHAKE_REQUEST = "HANDSHAKE_REQUEST"
    AUTHENTICATE = "AUTHENTICATE"
    REAUTH_BAD_MECHANISM = "REAUTH_BAD_MECHANISM"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


def _jaas_options(config: BrokerConfig, listener: str, mechanism: str) -> dict[str, str]:
    """The options of the listener's ``<mechanism>.sasl.jaas.config`` (Kafka's
    JaasContext.loadServerContext); empty when none is given."""
    text = config.for_listener(listener, f"{mechanism.lower()}.sasl.jaas.config")
    if not text:
        return {}
    try:
        entries = jaas.parse_entries(text)
    except ConfigError as exc:
        raise ValueError(f"listener {listener}: {mechanism.lower()}.sasl.jaas.config: {exc}") from None
    options: dict[str, str] = {}
    for entry in entries:
        options.update(entry.options)
    return options


#: Kafka's validator of signed tokens (KIP-768), by its class names: since 3.4, and the
#: deprecated ``secured`` package name of 3.1-3.3.
JWT_VALIDATOR_HANDLERS = frozenset({
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler",
})
#: Kafka's default OAUTHBEARER validator, of unsecured JWTs.
UNSECURED_VALIDATOR_HANDLER = ("org.apache.kafka.common.security.oauthbearer.internals.unsecured."
                               "OAuthBearerUnsecuredValidatorCallbackHandler")


class JwksTokenValidator:
    """A listener's validator of signed OAUTHBEARER tokens: a
    :class:`~kproto.security.jwks.JwksValidator` made by :meth:`open` (it fetches the JWKS and
    starts its refresh thread) and stopped by :meth:`close`; a :data:`TokenValidator`.

    Args:
        settings: the listener's ``sasl.oauthbearer.*`` values, by Kafka's names.
    """

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.settings = dict(settings)
        self._validator: JwksValidator | None = None

    def open(self) -> None:
        """Fetch the keys (blocking, with Kafka's retries) and start the refresh thread.

        Raises:
            kproto.errors.ConfigError: a bad setting; OSError or ValueError: no JWKS.
        """
        if self._validator is None:
            self._validator = JwksValidator(self.settings)

    def close(self) -> None:
        """Stop the refresh thread (idempotent); :meth:`open` may start again."""
        validator, self._validator = self._validator, None
        if validator is not None:
            validator.close()

    def __call__(self, token: str, now_ms: int) -> tuple[str, int]:
        if self._validator is None:  # a connection outliving the server's stop
            raise oauthbearer.TokenValidationError("the broker's JWKS validator is closed")
        checked = self._validator.validate(token, now_ms)
        return checked.principal, checked.lifetime_ms  # exp: the session's end (KIP-368)


def oauthbearer_validator(config: BrokerConfig, listener: str) -> TokenValidator:
    """The OAUTHBEARER token validator of a listener, chosen as Kafka's SaslChannelBuilder
    does by ``listener.name.<name>.oauthbearer.sasl.server.callback.handler.class``:
    ``OAuthBearerValidatorCallbackHandler`` validates signed tokens against the JWKS of
    ``sasl.oauthbearer.jwks.endpoint.url`` (:class:`JwksTokenValidator`, KIP-768, with the
    ``sasl.oauthbearer.*`` keys, each also as ``listener.name.<name>.oauthbearer.<key>``);
    unset (or ``OAuthBearerUnsecuredValidatorCallbackHandler``), Kafka's default
    validator of unsecured JWTs, with the ``unsecuredValidator*`` options of its JAAS config.

    Raises:
        ValueError: another handler class; the JWT validator without a JWKS URL (Kafka's
            "sasl.oauthbearer.jwks.endpoint.url ... required"); a JWKS URL without the JWT
            validator, which Kafka would ignore while accepting unsecured tokens.
    """
    handler = config.for_listener(listener, SERVER_CALLBACK_HANDLER, mechanism="OAUTHBEARER")
    url = config.for_listener(listener, "sasl.oauthbearer.jwks.endpoint.url", mechanism="OAUTHBEARER")
    key = f"listener.name.{listener.lower()}.oauthbearer.{SERVER_CALLBACK_HANDLER}"
    if handler in JWT_VALIDATOR_HANDLERS:
        if not url:
            raise ValueError(f"listener {listener}: {key}={handler} needs sasl.oauthbearer.jwks.endpoint.url")
        return JwksTokenValidator({name: config.for_listener(listener, name, mechanism="OAUTHBEARER")
                                   for name in sorted(OAUTHBEARER_KEYS - {SERVER_CALLBACK_HANDLER})})
    if handler not in (None, "", UNSECURED_VALIDATOR_HANDLER):
        raise ValueError(f"listener {listener}: {key}={handler}: minibroker has {sorted(JWT_VALIDATOR_HANDLERS)[0]} "
                         f"and the default {UNSECURED_VALIDATOR_HANDLER}")
    if url:
        raise ValueError(f"listener {listener}: sasl.oauthbearer.jwks.endpoint.url is set, but tokens are checked "
                         f"against it only with {key}={sorted(JWT_VALIDATOR_HANDLERS)[0]} (Kafka's default validator "
                         "ignores it and accepts unsecured tokens)")
    options = _jaas_options(config, listener, "OAUTHBEARER")
    required = tuple(options.get("unsecuredValidatorRequiredScope", "").split())
    try:
        skew = int(options.get("unsecuredValidatorAllowableClockSkewMs", "0"))
    except ValueError:
        raise ValueError(f"listener {listener}: unsecuredValidatorAllowableClockSkewMs must be a number of ms") from None
    principal_claim = options.get("unsecuredValidatorPrincipalClaimName", "sub")
    scope_claim = options.get("unsecuredValidatorScopeClaimName", "scope")

    def validate(token: str, now_ms: int) -> tuple[str, int]:
        checked = oauthbearer.validate_unsecured(token, now_ms, required_scope=required, allowable_clock_skew_ms=skew,
                                                 principal_claim=principal_claim, scope_claim=scope_claim)
        return checked.principal, checked.lifetime_ms

    return validate


@dataclass(frozen=True)
class SaslSettings:
    """A SASL listener's settings, checked once when the broker is made.

    Attributes:
        mechanisms: ``sasl.enabled.mechanisms``, in order.
        plain_users: PLAIN's users (name -> password) from the JAAS config.
        validate_token: OAUTHBEARER's validator (:func:`oauthbearer_validator`).
        reauth_ms: ``connections.max.reauth.ms`` (0: no limit).
        failed_delay_ms: ``connection.failed.authentication.delay.ms``.
    """

    mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str] = field(default_factory=dict)
    validate_token: TokenValidator | None = None
    reauth_ms: int = 0
    failed_delay_ms: int = 100

    @classmethod
    def of(cls, config: BrokerConfig, listener: str) -> SaslSettings:
        """Raises ValueError: an unknown mechanism or a malformed JAAS config."""
        mechanisms = tuple(m.strip().upper() for m in str(config.for_listener(listener, "sasl.enabled.mechanisms")).split(",")
                           if m.strip())
        unknown = [m for m in mechanisms if m not in SASL_MECHANISMS]
        if unknown or not mechanisms:
            raise ValueError(f"listener {listener}: sasl.enabled.mechanisms {','.join(mechanisms) or '(empty)'}: "
                             f"minibroker serves {', '.join(SASL_MECHANISMS)}")
        users = {name[len("user_"):]: password for name, password in _jaas_options(config, listener, "PLAIN").items()
                 if name.startswith("user_")}  # PlainServerCallbackHandler
        return cls(mechanisms, users,
                   oauthbearer_validator(config, listener) if "OAUTHBEARER" in mechanisms else None,
                   int(config.for_listener(listener, "connections.max.reauth.ms")),
                   int(config["connection.failed.authentication.delay.ms"]))

    def open(self) -> None:
        """Make ready what needs the network or a thread (a JWKS validator's keys); the
        server calls it when it starts. Raises what :meth:`JwksTokenValidator.open` raises."""
        if isinstance(self.validate_token, JwksTokenValidator):
            self.validate_token.open()

    def close(self) -> None:
        """Undo :meth:`open` (idempotent); the server calls it when it stops."""
        if isinstance(self.validate_token, JwksTokenValidator):
            self.validate_token.close()


@dataclass(frozen=True)
class Step:
    """What the server does with one frame (see :meth:`Authenticator.receive`).

    Attributes:
        reply: a whole frame (size prefix included) to send, or None.
        dispatch: the frame is a request for the handlers, as on any connection.
        close: close the connection after the reply; the reason, for the log.
        failed: an authentication failure: the reply waits for
            ``connection.failed.authentication.delay.ms``.
    """

    reply: bytes | None = None
    dispatch: bool = False
    close: str | None = None
    failed: bool = False


#: The moves of :class:`SaslState` (SaslServerAuthenticator's, and KafkaChannel's start of a
#: re-authentication from COMPLETE); any other is a bug in this module.
TRANSITIONS: dict[SaslState, frozenset[SaslState]] = {
    SaslState.INITIAL_REQUEST: frozenset({SaslState.HANDSHAKE_OR_VERSIONS_REQUEST, SaslState.FAILED}),
    SaslState.HANDSHAKE_OR_VERSIONS_REQUEST: frozenset({SaslState.HANDSHAKE_OR_VERSIONS_REQUEST,
                                                        SaslState.HANDSHAKE_REQUEST, SaslState.AUTHENTICATE,
                                                        SaslState.FAILED}),
    SaslState.HANDSHAKE_REQUEST: frozenset({SaslState.AUTHENTICATE, SaslState.FAILED}),
    SaslState.AUTHENTICATE: frozenset({SaslState.COMPLETE, SaslState.FAILED}),
    SaslState.COMPLETE: frozenset({SaslState.AUTHENTICATE, SaslState.REAUTH_BAD_MECHANISM, SaslState.FAILED}),
    SaslState.REAUTH_BAD_MECHANISM: frozenset({SaslState.FAILED}),
    SaslState.FAILED: frozenset(),
}

_DISPATCH = Step(dispatch=True)
_NOT_KAFKA = ("Invalid request, potential reasons: kafka client configured with the wrong security protocol, it does "
              "not support KIP-43 or it is not a kafka client.")


class _Plain:
    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.principal: str | None = None
        self.expiry_ms: int | None = None

    def evaluate(self, token: bytes, now_ms: int) -> bytes:
        if self.principal is not None:
            raise IllegalSaslStateError("PLAIN exchange already complete")
        self.principal = plain.check(token, self._users)
        return b""


class _Scram:
    def __init__(self, mechanism: str, lookup: ScramLookup) -> None:
        self._server = ScramServer(mechanism, lambda user: lookup(user, mechanism))
        self.expiry_ms: int | None = None

    @property
    def principal(self) -> str | None:
        return self._server.principal

    def evaluate(self, token: bytes, now_ms: int) -> bytes:
        if self._server.state is ScramState.RECEIVE_CLIENT_FIRST_MESSAGE:
            return self._server.first_message(token)
        return self._server.final_message(token)


class _OAuthBearer:
    def __init__(self, validate: TokenValidator) -> None:
        self._validate = validate
        self._now_ms = 0
        self.expiry_ms: int | None = None
        #: why the token was refused, for the broker's log (the client gets only the JSON status)
        self.refusal: str | None = None
        self._server = oauthbearer.OAuthBearerServer(self._check)

    def _check(self, token: str) -> str:
        try:
            principal, self.expiry_ms = self._validate(token, self._now_ms)
        except oauthbearer.TokenValidationError as exc:
            self.refusal = str(exc)
            raise
        return principal

    @property
    def principal(self) -> str | None:
        return self._server.principal

    def evaluate(self, token: bytes, now_ms: int) -> bytes:
        self._now_ms = now_ms
        return self._server.respond(token)


def _reply(api_key: int, version: int, correlation_id: int, response: Any) -> bytes:
    return encode_response(api_key, version, correlation_id, response)


#: KafkaChannel's MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS: re-authentication starts at most this often.
_MIN_REAUTH_INTERVAL_MS = 1000


class Authenticator:
    """One connection's SASL state (see the module docstring).

    Args:
        settings: the listener's :class:`SaslSettings`.
        scram_credentials: the broker's SCRAM users.

    Attributes:
        principal: ``User:<name>`` once authenticated, else None.
        mechanism: the mechanism of the session.
        expires_ms: when the session ends (ms since the epoch), None without an end.
        reauthentications: how many times the connection authenticated again (KIP-368).
    """

    def __init__(self, settings: SaslSettings, scram_credentials: ScramLookup) -> None:
        self.settings = settings
        self._scram = scram_credentials
        self.state = SaslState.INITIAL_REQUEST
        self.principal: str | None = None
        self.mechanism: str | None = None
        self.expires_ms: int | None = None
        self.reauthentications = 0
        self._raw = False  # SaslHandshake v0: the tokens come as raw frames
        self._server: _Plain | _Scram | _OAuthBearer | None = None
        self._chosen: str | None = None  # the mechanism being negotiated
        self._reauthenticating = False
        self._reauth_started_ms: int | None = None
        self._bad_mechanism = ""

    @property
    def authenticated(self) -> bool:
        return self.state is SaslState.COMPLETE

    def receive(self, frame: bytes, now_ms: int) -> Step:
        """What to do with one received frame (its size prefix removed), at ``now_ms``
        (wall clock: a token's expiry is one)."""
        if self.state is SaslState.COMPLETE:
            return self._authenticated(frame, now_ms)
        if self.state is SaslState.FAILED:
            return Step(close="authentication failed earlier")
        if self._raw and self.state is SaslState.AUTHENTICATE:
            return self._token(frame, None, now_ms)
        if self.state is SaslState.REAUTH_BAD_MECHANISM:
            self._move(SaslState.FAILED)
            return Step(close=self._bad_mechanism, failed=True)
        request: Any
        try:
            header, request = decode_request(frame, strict=False)
        except UnsupportedApiVersionError as exc:
            if exc.api_key == ApiKey.API_VERSIONS and self.state in (SaslState.INITIAL_REQUEST,
                                                                       SaslState.HANDSHAKE_OR_VERSIONS_REQUEST):
                self._move(SaslState.HANDSHAKE_OR_VERSIONS_REQUEST)
                return _DISPATCH  # answered UNSUPPORTED_VERSION; the client may ask again
            if self.state is SaslState.INITIAL_REQUEST:
                return self._fail(_NOT_KAFKA)
            return self._fail(f"Version {exc.api_version} is not supported for apiKey {exc.api_key}")
        except (ProtocolError, ValueError, struct.error) as exc:
            if self.state is SaslState.INITIAL_REQUEST:
                return self._fail(_NOT_KAFKA)
            return self._fail(f"invalid request during SASL authentication: {exc}")
        if self.state is SaslState.AUTHENTICATE:
            if header.api_key != ApiKey.SASL_AUTHENTICATE:
                message = f"Unexpected Kafka request of type {_name(header.api_key)} during SASL authentication."
                reply = _reply(header.api_key, header.api_version, header.correlation_id,
                               error_response(header.api_key, header.api_version, request, IllegalSaslStateError.code,
                                              message))
                self._move(SaslState.FAILED)
                return Step(reply=reply, close=message, failed=True)
            return self._token(request.auth_bytes, header, now_ms)
        # INITIAL_REQUEST, HANDSHAKE_OR_VERSIONS_REQUEST, HANDSHAKE_REQUEST
        if header.api_key not in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE):
            return self._fail(f"Unexpected Kafka request of type {_name(header.api_key)} during SASL handshake.")
        if self.state is SaslState.INITIAL_REQUEST:
            self._move(SaslState.HANDSHAKE_OR_VERSIONS_REQUEST)
        if header.api_key == ApiKey.API_VERSIONS:
            if self.state is not SaslState.HANDSHAKE_OR_VERSIONS_REQUEST:
                return self._fail(f"Unexpected ApiVersions request received during SASL authentication state "
                                  f"{self.state.name}")
            self._move(SaslState.HANDSHAKE_REQUEST)
            return _DISPATCH
        return self._handshake(header, request)

    def _move(self, state: SaslState) -> None:
        if state not in TRANSITIONS[self.state]:
            raise RuntimeError(f"SASL state {self.state.name} cannot move to {state.name}")
        self.state = state

    def _fail(self, reason: str) -> Step:
        self._move(SaslState.FAILED)
        return Step(close=reason)

    def _authenticated(self, frame: bytes, now_ms: int) -> Step:
        api_key = struct.unpack_from(">h", frame)[0] if len(frame) >= 2 else -1
        if api_key == ApiKey.SASL_HANDSHAKE and self.expires_ms is not None and (
                self._reauth_started_ms is None or now_ms - self._reauth_started_ms >= _MIN_REAUTH_INTERVAL_MS):
            # KafkaChannel.maybeBeginServerReauthentication: a session with an end may renew,
            # once a second at most; a handshake sooner goes to the handlers (ILLEGAL_SASL_STATE)
            self._reauth_started_ms = now_ms
            try:
                header, request = decode_request(frame, strict=False)
            except (ProtocolError, ValueError, struct.error) as exc:
                return self._fail(f"invalid SaslHandshake: {exc}")
            self._reauthenticating = True
            return self._handshake(header, request)
        if self.expires_ms is not None and now_ms >= self.expires_ms:
            # SocketServer.Processor: an expired session's request closes the connection
            return self._fail("the SASL session expired without re-authentication (connections.max.reauth.ms, KIP-368)")
        return _DISPATCH

    def _handshake(self, header: Any, request: Any) -> Step:
        mechanism = request.mechanism
        self._raw = header.api_version == 0
        enabled = list(self.settings.mechanisms)
        if mechanism not in self.settings.mechanisms:
            self._move(SaslState.FAILED)
            reply = _reply(header.api_key, header.api_version, header.correlation_id,
                           SaslHandshakeResponse(error_code=UnsupportedSaslMechanismError.code, mechanisms=enabled))
            return Step(reply=reply, close=f"Unsupported SASL mechanism {mechanism}", failed=True)
        reply = _reply(header.api_key, header.api_version, header.correlation_id,
                       SaslHandshakeResponse(error_code=0, mechanisms=enabled))
        if self._reauthenticating and mechanism != self.mechanism:
            self._bad_mechanism = (f"SASL mechanism '{mechanism}' requested by client is not supported for "
                                   f"re-authentication of mechanism '{self.mechanism}'")
            self._move(SaslState.REAUTH_BAD_MECHANISM)
            return Step(reply=reply)
        self._chosen = mechanism
        if mechanism == "PLAIN":
            self._server = _Plain(self.settings.plain_users)
        elif mechanism in SCRAM_MECHANISMS:
            self._server = _Scram(mechanism, self._scram)
        else:
            assert self.settings.validate_token is not None
            self._server = _OAuthBearer(self.settings.validate_token)
        self._move(SaslState.AUTHENTICATE)
        return Step(reply=reply)

    def _token(self, token: bytes, header: Any, now_ms: int) -> Step:
        assert self._server is not None and self._chosen is not None
        try:
            response = self._server.evaluate(token, now_ms)
            lifetime = 0
            if self._server.principal is not None:
                principal = f"User:{self._server.principal}"
                if self._reauthenticating and principal != self.principal:
                    old, new = self.principal.partition(":")[::2], principal.partition(":")[::2]  # type: ignore[union-attr]
                    raise SaslServerError(f"Cannot change principals during re-authentication from {old[0]}.{old[1]}: "
                                          f"{new[0]}.{new[1]}", self._chosen, shown=True)
                lifetime = self._session(now_ms, self._server.expiry_ms)
                self.reauthentications += self._reauthenticating
                self.principal, self.mechanism = principal, self._chosen
                self._move(SaslState.COMPLETE)
                self._reauthenticating, self._server = False, None
        except SaslServerError as exc:
            self._move(SaslState.FAILED)
            if header is None:  # raw tokens have no error answer
                return Step(close=f"authentication failed: {exc}", failed=True)
            reply = _reply(header.api_key, header.api_version, header.correlation_id, SaslAuthenticateResponse(
                error_code=SaslAuthenticationFailedError.code, error_message=exc.client_message(self._reauthenticating),
                auth_bytes=b""))
            refusal = self._server.refusal if isinstance(self._server, _OAuthBearer) else None
            reason = f"{self._chosen} authentication failed: {exc}" + (f" ({refusal})" if refusal else "")
            return Step(reply=reply, close=reason, failed=True)
        except KafkaCodeError as exc:  # IllegalSaslStateError: a token out of turn
            return self._fail(f"{self._chosen} authentication failed: {exc}")
        if header is None:
            return Step(reply=struct.pack(">i", len(response)) + response)
        return Step(reply=_reply(header.api_key, header.api_version, header.correlation_id, SaslAuthenticateResponse(
            error_code=0, error_message=None, auth_bytes=response, session_lifetime_ms=lifetime)))

    def _session(self, now_ms: int, credential_expiry_ms: int | None) -> int:
        """The session's lifetime (ms) and end (ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs)."""
        reauth_ms = self.settings.reauth_ms
        if credential_expiry_ms is None and reauth_ms <= 0:
            self.expires_ms = None
            return 0
        if credential_expiry_ms is None:
            lifetime = reauth_ms
        elif reauth_ms <= 0:
            lifetime = max(0, credential_expiry_ms - now_ms)
        else:
            lifetime = max(0, min(credential_expiry_ms - now_ms, reauth_ms))
        self.expires_ms = now_ms + lifetime
        return lifetime


def _name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return str(api_key)
