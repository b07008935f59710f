"""OAUTHBEARER without I/O: the client's initial response, the server's conversation, and
Kafka's unsecured JWTs.

RFC 7628 as Kafka speaks it (KIP-255, KIP-342): Kafka's ``OAuthBearerClientInitialResponse``,
``OAuthBearerSaslClient``, ``OAuthBearerSaslServer``. The client's one message::

    n,[a=<authzid>],\\x01auth=Bearer <token>[\\x01<key>=<value>...]\\x01\\x01

Extension keys are letters, values printable ASCII plus space, tab, CR, LF, and ``auth`` is
reserved. The server answers an empty message on success; on a token it does not accept it
answers a JSON error (``{"status":"invalid_token"}``, or ``insufficient_scope`` with the
scope), the client answers ``\\x01``, and the server then fails the exchange with that JSON
as the message (SASL_AUTHENTICATION_FAILED, 58).

Unsecured tokens (``alg`` ``none``, for tests and development only) as Kafka's
``OAuthBearerUnsecuredJws``, ``OAuthBearerUnsecuredLoginCallbackHandler`` and
``OAuthBearerUnsecuredValidatorCallbackHandler`` build and check them: a JWS compact
serialization ``base64url(header).base64url(claims).`` with an empty signature; the principal
in ``sub``, ``iat`` and ``exp`` in seconds (NumericDate), ``scope`` a string or a list.
:func:`unsecured_login` reads OAuthBearerLoginModule's ``unsecuredLogin...`` options (from
:mod:`kproto.security.jaas`). Times are passed in (``now_ms``): nothing here reads a clock.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from kproto.errors import IllegalSaslStateError
from kproto.security import SaslServerError

__all__ = [
    "MECHANISM",
    "ClientInitialResponse",
    "OAuthBearerClient",
    "OAuthBearerServer",
    "TokenValidationError",
    "UnsecuredToken",
    "b64url_decode",
    "b64url_json",
    "initial_response",
    "parse_initial_response",
    "unsecured_login",
    "unsecured_token",
    "validate_unsecured",
]

MECHANISM = "OAUTHBEARER"
_SEP = "\x01"
# OAuthBearerClientInitialResponse's patterns (RFC 7628 section 3.1)
_SASLNAME = r"(?:[\x01-\x7F](?<![=,])|=2C|=3D)+"
_KEY = re.compile(r"[A-Za-z]+")
_VALUE = re.compile(r"[\x21-\x7E \t\r\n]+")
_RESPONSE = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,{_SEP}(?P<kvpairs>(?:[A-Za-z]+=[\x21-\x7E \t\r\n]+{_SEP})*){_SEP}"
)
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_.a-zA-Z0-9]+)")
_DEFAULT_LIFETIME_SECONDS = 3600  # OAuthBearerUnsecuredLoginCallbackHandler


@dataclass(frozen=True)
class ClientInitialResponse:
    """The parts of a client's message (Kafka's OAuthBearerClientInitialResponse)."""

    token: str
    authzid: str = ""
    extensions: dict[str, str] = field(default_factory=dict)


def _check_extensions(extensions: Mapping[str, str]) -> None:
    # OAuthBearerClientInitialResponse.validateExtensions
    for key, value in extensions.items():
        if key == "auth" or not _KEY.fullmatch(key):
            raise ValueError(f"Extension name {key} is invalid")
        if not _VALUE.fullmatch(value):
            raise ValueError(
                f"Extension value ({value}) for extension {key} is invalid"
            )


def initial_response(
    token: str, extensions: Mapping[str, str] | None = None, authzid: str = ""
) -> bytes:
    """The client's message (OAuthBearerClientInitialResponse.toBytes)."""
    extensions = extensions or {}
    _check_extensions(extensions)
    ext = "".join(f"{_SEP}{key}={value}" for key, value in extensions.items())
    a = f"a={authzid}" if authzid else ""
    return f"n,{a},{_SEP}auth=Bearer {token}{ext}{_SEP}{_SEP}".encode()


def _malformed(message: str) -> SaslServerError:
    # OAuthBearerClientInitialResponse throws SaslException: the client sees a generic text
    return SaslServerError(message, MECHANISM)


def parse_initial_response(message: bytes) -> ClientInitialResponse:
    """The server's reading of the client's message, with Kafka's errors
    (:class:`~kproto.security.SaslServerError`)."""
    match = _RESPONSE.fullmatch(message.decode("utf-8", "replace"))
    if match is None:
        raise _malformed("Invalid OAUTHBEARER client first message")
    properties = dict(
        pair.split("=", 1) for pair in match["kvpairs"].split(_SEP) if pair
    )
    auth = properties.pop("auth", None)
    if auth is None:
        raise _malformed(
            "Invalid OAUTHBEARER client first message: 'auth' not specified"
        )
    try:
        _check_extensions(properties)
    except ValueError as exc:
        raise _malformed(str(exc)) from None
    auth_match = _AUTH.fullmatch(auth)
    if auth_match is None:
        raise _malformed(
            "Invalid OAUTHBEARER client first message: invalid 'auth' format"
        )
    if auth_match["scheme"].lower() != "bearer":
        raise _malformed(
            f"Invalid scheme in OAUTHBEARER client first message: {auth_match['scheme']}"
        )
    return ClientInitialResponse(auth_match["token"], match["authzid"] or "", properties)


class TokenValidationError(Exception):
    """A token the server does not accept (Kafka's OAuthBearerIllegalTokenException): the
    ``status`` and ``scope`` of the JSON error the server answers."""

    def __init__(self, message: str, scope: str | None = None) -> None:
        super().__init__(message)
        self.scope = scope
        self.status = "insufficient_scope" if scope is not None else "invalid_token"

    def json(self) -> str:
        """OAuthBearerSaslServer.jsonErrorResponse, byte for byte."""
        scope = f', "scope":"{self.scope}"' if self.scope is not None else ""
        return f'{{"status":"{self.status}"{scope}}}'


@dataclass(frozen=True)
class UnsecuredToken:
    """A validated unsecured JWT (Kafka's OAuthBearerUnsecuredJws)."""

    value: str
    principal: str
    claims: dict[str, object]
    scope: frozenset[str]
    lifetime_ms: int
    start_time_ms: int | None


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _not_json(constant: str) -> object:
    # json.loads takes NaN, Infinity and -Infinity; JSON (RFC 8259) and Jackson, which
    # Kafka's and jose4j's parsers are, refuse them
    raise ValueError(f"{constant} is not JSON")


def b64url_decode(text: str) -> bytes:
    """The bytes of a JWS part or a JWK number: base64url (RFC 7515 section 2), padding
    optional, any other character refused.

    Raises:
        TokenValidationError: not base64url.
    """
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise TokenValidationError("malformed Base64 URL encoded value") from None


def b64url_json(part: str) -> dict[str, object]:
    """A JWS header or claims part as a JSON object (``OAuthBearerUnsecuredJws.toMap``):
    base64url, then strict JSON (no NaN or Infinity).

    Raises:
        TokenValidationError: not base64url, not JSON, or not an object.
    """
    raw = b64url_decode(part)
    try:
        decoded = json.loads(raw, parse_constant=_not_json)
    except ValueError:
        raise TokenValidationError("malformed JSON") from None
    if not isinstance(decoded, dict):
        raise TokenValidationError("malformed JSON")
    return decoded


def _claim_of_type(
    claims: Mapping[str, object], name: str, kinds: tuple[type, ...], java: str
) -> object:
    # OAuthBearerUnsecuredJws.claim: None when absent, refused when of another type
    value = claims.get(name)
    if value is not None and (not isinstance(value, kinds) or isinstance(value, bool)):
        raise TokenValidationError(
            f"The '{name}' claim was not of type {java}: {type(value).__name__}"
        )
    return value


def unsecured_token(
    subject: str,
    now_ms: int,
    *,
    lifetime_seconds: int = _DEFAULT_LIFETIME_SECONDS,
    scope: Sequence[str] | None = None,
    claims: Mapping[str, object] | None = None,
) -> str:
    """An unsecured JWT as OAuthBearerUnsecuredLoginCallbackHandler builds it from
    ``unsecuredLoginStringClaim_sub``, ``unsecuredLoginLifetimeSeconds`` and
    ``unsecuredLoginListClaim_scope``: header ``{"alg":"none"}``, ``iat`` now and ``exp``
    ``lifetime_seconds`` later (NumericDate seconds)."""
    body: dict[str, object] = {**(claims or {}), "sub": subject}
    if scope is not None:
        body["scope"] = list(scope)
    return _jws(body, now_ms, lifetime_seconds)


def _jws(claims: Mapping[str, object], now_ms: int, lifetime_seconds: int) -> str:
    for reserved in ("iat", "exp"):  # confirmNotReservedClaimName
        if reserved in claims:
            raise ValueError(f"Cannot explicitly set the '{reserved}' claim")
    body = {"exp": now_ms / 1000 + lifetime_seconds, "iat": now_ms / 1000, **claims}
    header = _b64url(b'{"alg":"none"}')
    return f"{header}.{_b64url(json.dumps(body, separators=(',', ':')).encode())}."


def _list_claim(value: str) -> list[str]:
    """``unsecuredLoginListClaim_<name>``'s value: its first character is the delimiter
    (OAuthBearerUnsecuredLoginCallbackHandler.listJsonText, quirks kept: Java's split drops
    trailing empty strings, then one "" is added if any element was empty)."""
    if len(value) <= 1:
        return []
    delimiter, text = value[0], value[1:]
    elements = text.split(delimiter)
    while len(elements) > 1 and elements[-1] == "":
        elements.pop()
    if elements == [""] and text:  # text made of delimiters only
        elements = []
    if text.startswith(delimiter) or text.endswith(delimiter) or delimiter * 2 in text:
        elements.append("")
    return elements


def unsecured_login(options: Mapping[str, str], now_ms: int) -> tuple[str, dict[str, str]]:
    """The token and the SASL extensions that OAuthBearerUnsecuredLoginCallbackHandler makes
    from OAuthBearerLoginModule's options (a parsed ``sasl.jaas.config``, see
    :mod:`kproto.security.jaas`): ``unsecuredLoginStringClaim_<name>``,
    ``unsecuredLoginNumberClaim_<name>``, ``unsecuredLoginListClaim_<name>``,
    ``unsecuredLoginLifetimeSeconds`` (3600), ``unsecuredLoginPrincipalClaimName`` (``sub``),
    ``unsecuredLoginExtension_<name>``. :class:`ValueError` for a bad option."""
    claims: dict[str, object] = {}
    extensions: dict[str, str] = {}
    for key, value in options.items():
        prefix, _, name = key.partition("_")
        if not name:
            continue
        if prefix == "unsecuredLoginStringClaim":
            claims[name] = value
        elif prefix == "unsecuredLoginNumberClaim":
            claims[name] = float(value)  # Double.valueOf
        elif prefix == "unsecuredLoginListClaim":
            claims[name] = _list_claim(value)
        elif prefix == "unsecuredLoginExtension":
            extensions[name] = value
    _check_extensions(extensions)
    principal_claim = options.get("unsecuredLoginPrincipalClaimName", "").strip() or "sub"
    principal = claims.get(principal_claim)
    if not isinstance(principal, str) or not principal.strip():
        raise ValueError(f"No principal name in JWT claim: {principal_claim}")
    lifetime = int(options.get("unsecuredLoginLifetimeSeconds", _DEFAULT_LIFETIME_SECONDS))
    return _jws(claims, now_ms, lifetime), extensions


def _seconds(claims: Mapping[str, object], name: str) -> float | None:
    value = _claim_of_type(claims, name, (int, float), "Number")
    return float(value) if isinstance(value, int | float) else None


def _java_list(items: Sequence[str]) -> str:
    return "[" + ", ".join(items) + "]"  # java.util.List.toString, as Kafka formats scopes


def validate_unsecured(
    token: str,
    now_ms: int,
    *,
    required_scope: Sequence[str] = (),
    allowable_clock_skew_ms: int = 0,
    principal_claim: str = "sub",
    scope_claim: str = "scope",
) -> UnsecuredToken:
    """Check an unsecured JWT as OAuthBearerUnsecuredValidatorCallbackHandler does (its
    ``unsecuredValidator...`` options as arguments); :class:`TokenValidationError` if not."""
    if allowable_clock_skew_ms < 0:
        raise ValueError(f"Allowable clock skew must not be negative: {allowable_clock_skew_ms}")
    # OAuthBearerUnsecuredJws's constructor, its checks in its order
    if ".." in token:
        raise TokenValidationError("Malformed compact serialization contains '..'")
    parts = token.split(".")
    if len(parts) != 3:
        raise TokenValidationError(
            "Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded "
            "values"
        )
    header = b64url_json(parts[0])
    claims = b64url_json(parts[1])
    if header.get("alg") != "none":
        raise TokenValidationError("Unsecured JWS must have 'none' for an algorithm")
    if parts[2]:
        raise TokenValidationError("Unsecured JWS must not contain a digital signature")
    raw_scope = claims.get(scope_claim)
    if isinstance(raw_scope, str):  # one scope value, trimmed, not split
        scope = frozenset([raw_scope.strip()] if raw_scope.strip() else [])
    else:
        listed = _claim_of_type(claims, scope_claim, (list,), "List")
        items = listed if isinstance(listed, list) else []
        scope = frozenset(str(s).strip() for s in items if str(s).strip())
    expires = _seconds(claims, "exp")
    if expires is None:  # the token's lifetime
        raise TokenValidationError("No expiration time in JWT")
    principal = _claim_of_type(claims, principal_claim, (str,), "String")
    if not isinstance(principal, str) or not principal.strip():
        raise TokenValidationError(f"No principal name in JWT claim: {principal_claim}")
    issued = _seconds(claims, "iat")
    # OAuthBearerValidationUtils: validateIssuedAt, validateExpirationTime,
    # validateTimeConsistency, validateScope, in that order and with its texts
    skew = allowable_clock_skew_ms
    if issued is not None and 1000 * issued > now_ms + skew:
        raise TokenValidationError(
            f"The Issued At value ({issued:f} seconds) was after the indicated time ({now_ms} ms) "
            f"plus allowable clock skew ({skew} ms)"
        )
    if now_ms - skew >= 1000 * expires:
        raise TokenValidationError(
            f"The indicated time ({now_ms} ms) minus allowable clock skew ({skew} ms) was on or "
            f"after the Expiration Time value ({expires:f} seconds)"
        )
    if issued is not None and expires <= issued:
        raise TokenValidationError(
            f"The Expiration Time time ({expires:f} seconds) was not after the Issued At time "
            f"({issued:f} seconds)"
        )
    for required in required_scope:
        if required not in scope:
            raise TokenValidationError(
                f"The provided scope ({_java_list(sorted(scope))}) was missing a required scope "
                f"({required}).  All required scope elements: {_java_list(required_scope)}",
                scope=_java_list(required_scope),
            )
    return UnsecuredToken(
        token,
        principal,
        claims,
        scope,
        round(1000 * expires),
        None if issued is None else round(1000 * issued),
    )


class OAuthBearerClient:
    """The client's conversation (Kafka's OAuthBearerSaslClient): ``first_message()``, then
    ``receive(challenge)``: ``None`` when authenticated, or ``b"\\x01"`` to send after the
    server's JSON error (kept in ``error``); the server then fails the exchange."""

    def __init__(
        self, token: str, extensions: Mapping[str, str] | None = None, authzid: str = ""
    ) -> None:
        self._message = initial_response(token, extensions, authzid)
        self.complete = False
        self.error: str | None = None

    def first_message(self) -> bytes:
        return self._message

    def receive(self, challenge: bytes) -> bytes | None:
        if self.complete or self.error is not None:
            raise IllegalSaslStateError("OAUTHBEARER client: unexpected server message")
        if not challenge:
            self.complete = True
            return None
        self.error = challenge.decode("utf-8", "replace")
        return _SEP.encode()


class OAuthBearerServer:
    """The server's conversation (Kafka's OAuthBearerSaslServer). ``validate(token)``
    answers the token's principal or raises :class:`TokenValidationError` (for unsecured
    tokens: ``lambda token: validate_unsecured(token, now_ms).principal``).
    ``respond(message)`` answers ``b""`` when authenticated (``principal``, ``extensions``),
    the JSON error for a refused token, and raises
    :class:`~kproto.security.SaslServerError` for the client's ``\\x01`` after it, as
    Kafka does, or for a malformed message."""

    def __init__(self, validate: Callable[[str], str]) -> None:
        self._validate = validate
        self._error: str | None = None
        self.principal: str | None = None
        self.extensions: dict[str, str] = {}

    def respond(self, message: bytes) -> bytes:
        if self.principal is not None:
            raise IllegalSaslStateError("OAUTHBEARER exchange already complete")
        if message == _SEP.encode() and self._error is not None:
            # OAuthBearerSaslServer: a SaslAuthenticationException, the JSON reaches the client
            raise SaslServerError(self._error, MECHANISM, shown=True)
        self._error = None
        response = parse_initial_response(message)
        try:
            principal = self._validate(response.token)
        except TokenValidationError as exc:
            self._error = exc.json()
            return self._error.encode()
        if response.authzid and response.authzid != principal:
            raise SaslServerError(
                f"Authentication failed: Client requested an authorization id "
                f"({response.authzid}) that is different from the token's principal name "
                f"({principal})",
                MECHANISM,
                shown=True,
            )
        self.extensions = response.extensions
        self.principal = principal
        return b""
