"""OAUTHBEARER on the broker: signed JWTs checked against the keys of a JWKS (KIP-768).

Kafka's broker validates OAUTHBEARER tokens with ``OAuthBearerValidatorCallbackHandler``
when ``sasl.oauthbearer.jwks.endpoint.url`` is set (without it, Kafka's default is the
unsecured-JWT validator, :func:`kproto.security.oauthbearer.validate_unsecured`).
:class:`JwksValidator` is that validator; it is the ``validate`` callable that
:class:`~kproto.security.oauthbearer.OAuthBearerServer` takes::

    validator = JwksValidator({"sasl.oauthbearer.jwks.endpoint.url": "https://idp/keys",
                               "sasl.oauthbearer.expected.audience": "kafka"})
    server = OAuthBearerServer(validator)   # validator(token) -> principal
    ...
    validator.close()

The checks, as ``BrokerJwtValidator`` configures jose4j's ``JwtConsumer``:

- a JWS compact serialization whose ``alg`` is not ``none``: RS256/384/512, PS256/384/512
  or ES256/384/512, verified with the key the header's ``kid`` names (every key of the
  set is tried when there is no ``kid``); a key whose ``use`` is not ``sig``, or whose
  ``alg`` differs from the token's, does not verify it; an RSA key under 2048 bits is
  refused (jose4j); a ``crit`` header is refused (RFC 7515 4.1.11: Kafka knows no
  extension); the header and claims are strict JSON (no NaN or Infinity, as Jackson);
- ``exp`` and ``iat`` required; expired when ``now - skew >= exp``, not yet valid when
  ``now + skew < nbf``, the skew being ``sasl.oauthbearer.clock.skew.seconds`` (30);
- ``aud``: with ``sasl.oauthbearer.expected.audience`` (a comma-separated list) the
  token's audience (a string or a list) must hold one of them; without it, a token that
  has an ``aud`` is refused (jose4j's default audience check, which Kafka keeps);
- ``iss`` equal to ``sasl.oauthbearer.expected.issuer`` when that is set;
- the principal in ``sasl.oauthbearer.sub.claim.name`` (``sub``), the scope in
  ``sasl.oauthbearer.scope.claim.name`` (``scope``), no blank or duplicate scope, no
  negative ``iat`` (``ClaimValidationUtils``, shared with the client:
  :func:`kproto.security.oidc.token_from_claims`).

A refused token is a :class:`~kproto.security.oauthbearer.TokenValidationError`
("Could not validate the access token: ..."), which the server answers as Kafka does
(``{"status":"invalid_token"}``, then SASL_AUTHENTICATION_FAILED).

The keys (``RefreshingHttpsJwks``, ``JwksFileVerificationKeyResolver``): an ``http(s)://``
JWKS is fetched when the validator is made (blocking, following redirects to the same
scheme as Java's ``HttpURLConnection``, trusting the ``ssl.*`` options of the JAAS
config as ``JaasOptionsUtils``, with Kafka's retries:
``sasl.oauthbearer.jwks.endpoint.retry.backoff.ms`` and ``...retry.backoff.max.ms``), then
again every ``sasl.oauthbearer.jwks.endpoint.refresh.ms`` (one hour) by a background
thread. A token naming a ``kid`` the set does not have is refused, and it wakes that
thread for an early refresh, at most once a minute per ``kid`` (16 remembered, ids over
1000 characters ignored), so that a key the provider has just rotated in works moments
later while a stream of made-up ids cannot hammer the provider. :meth:`validate` never
waits for the network: on a broker it runs on the event loop. A ``file://`` JWKS is read
when the validator is made, and read again when a token names an unknown ``kid`` and the
file has changed. A key of the set that cannot be read is left out with a warning, as
jose4j does; the others serve.

Signatures are checked by the ``cryptography`` package, an optional dependency
(``pip install "kproto[oauth]"``); without it, making a validator or a key set raises
:class:`ImportError` saying so.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from kproto.errors import ConfigError
from kproto.security.oauthbearer import TokenValidationError, b64url_decode, b64url_json
from kproto.security.oidc import (
    MAX_REDIRECTS,
    AccessToken,
    Retriable,
    _ms,
    file_url_path,
    http_exchange,
    jaas_options,
    jaas_ssl_context,
    retry,
    token_from_claims,
)

__all__ = [
    "JsonWebKeySet",
    "JwksValidator",
    "UnknownKeyError",
    "validate_jwt",
]

log = logging.getLogger(__name__)

_MISSING_KID_INTERVAL_MS = 60_000  # RefreshingHttpsJwks.MISSING_KEY_ID_CACHE_IN_FLIGHT_MS
_MISSING_KID_ENTRIES = 16  # ...MISSING_KEY_ID_CACHE_MAX_ENTRIES
_MISSING_KID_MAX_LENGTH = 1000  # ...MISSING_KEY_ID_MAX_KEY_LENGTH
_CURVES = {"P-256": ("SECP256R1", 32), "P-384": ("SECP384R1", 48), "P-521": ("SECP521R1", 66)}
_ALG_CURVE = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}
_MIN_RSA_KEY_BITS = 2048  # jose4j's RsaKeyUtil / KeyValidationSupport.MIN_RSA_KEY_LENGTH


def _crypto() -> Any:
    """The parts of ``cryptography`` used here, or a clear ImportError."""
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
        from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
    except ImportError:
        raise ImportError('OAUTHBEARER validation against a JWKS needs the cryptography package: '
                          'pip install "kproto[oauth]"') from None

    return SimpleNamespace(InvalidSignature=InvalidSignature, hashes=hashes, ec=ec, padding=padding, rsa=rsa,
                           encode_dss_signature=encode_dss_signature)


def _b64url_int(value: Any, what: str) -> int:
    """A JWK's number (RFC 7518 6.2, 6.3): base64url of its big-endian bytes."""
    if not isinstance(value, str):
        raise ValueError(f"{what} is missing")
    try:
        return int.from_bytes(b64url_decode(value), "big")
    except TokenValidationError as exc:
        raise ValueError(f"{what}: {exc}") from None


@dataclass(frozen=True)
class _Key:
    kid: str | None
    kty: str
    alg: str | None
    curve: str | None
    public_key: Any


class UnknownKeyError(TokenValidationError):
    """The token's ``kid`` names no key of the set (a refresh may bring it)."""

    def __init__(self, message: str, kid: str) -> None:
        super().__init__(message)
        self.kid = kid


class JsonWebKeySet:
    """The signature keys of a JWKS document (RFC 7517): RSA and EC (P-256, P-384, P-521)
    public keys; keys of other types, or for encryption (``use`` ``enc``), are left out.
    A key that cannot be read (no ``n``, a point off its curve...) is left out too, with a
    warning, as jose4j's ``JsonWebKeySet`` skips it: the provider's other keys still work.

    Raises:
        ImportError: ``cryptography`` is not installed.
    """

    def __init__(self, keys: Sequence[Mapping[str, Any]]) -> None:
        crypto = _crypto()
        self.keys: list[_Key] = []
        for jwk in keys:
            if not isinstance(jwk, Mapping) or jwk.get("use", "sig") != "sig":
                continue
            try:
                key = self._read(jwk, crypto)
            except ValueError as exc:  # cryptography's errors for a bad key are ValueErrors too
                log.warning("ignoring the JWK %s of the JWKS: it cannot be read: %s",
                            {k: jwk.get(k) for k in ("kid", "kty", "alg", "crv") if k in jwk}, exc)
                continue
            if key is not None:
                self.keys.append(key)

    @staticmethod
    def _read(jwk: Mapping[str, Any], crypto: Any) -> _Key | None:
        kty, kid, alg = jwk.get("kty"), jwk.get("kid"), jwk.get("alg")
        if kty == "RSA":
            numbers = crypto.rsa.RSAPublicNumbers(_b64url_int(jwk.get("e"), "e"), _b64url_int(jwk.get("n"), "n"))
            return _Key(kid, "RSA", alg, None, numbers.public_key())
        if kty == "EC" and jwk.get("crv") in _CURVES:
            curve_name, _ = _CURVES[jwk["crv"]]
            numbers = crypto.ec.EllipticCurvePublicNumbers(
                _b64url_int(jwk.get("x"), "x"), _b64url_int(jwk.get("y"), "y"), getattr(crypto.ec, curve_name)())
            return _Key(kid, "EC", alg, jwk["crv"], numbers.public_key())
        return None

    @classmethod
    def parse(cls, text: str | bytes) -> JsonWebKeySet:
        """A key set from a JWKS document's JSON (``{"keys": [...]}``).

        Raises:
            ValueError: not JSON, or no ``keys`` list.
        """
        try:
            document = json.loads(text)
        except ValueError:
            raise ValueError("the JWKS is not JSON") from None
        if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
            raise ValueError('the JWKS has no "keys" list')
        return cls(document["keys"])

    @property
    def kids(self) -> frozenset[str]:
        return frozenset(k.kid for k in self.keys if k.kid is not None)

    def candidates(self, kid: str | None) -> Iterator[_Key]:
        """The keys that may have signed a token with this ``kid`` (every key without one)."""
        return iter([k for k in self.keys if kid is None or k.kid == kid])


def _verify(key: _Key, alg: str, signing_input: bytes, signature: bytes, crypto: Any) -> bool:
    """Whether ``signature`` is ``key``'s ``alg`` signature of ``signing_input``."""
    if key.alg is not None and key.alg != alg:
        return False
    family, bits = alg[:2], alg[2:]
    if bits not in ("256", "384", "512"):
        return False
    digest = {"256": crypto.hashes.SHA256, "384": crypto.hashes.SHA384, "512": crypto.hashes.SHA512}[bits]()
    try:
        if family in ("RS", "PS") and key.kty == "RSA":
            if key.public_key.key_size < _MIN_RSA_KEY_BITS:
                raise _invalid(f"An RSA key of size {_MIN_RSA_KEY_BITS} bits or larger MUST be used with the all "
                               f"JOSE RSA algorithms (given key was only {key.public_key.key_size} bits).")
            pad = (crypto.padding.PKCS1v15() if family == "RS" else
                   crypto.padding.PSS(mgf=crypto.padding.MGF1(digest), salt_length=digest.digest_size))
            key.public_key.verify(signature, signing_input, pad, digest)
            return True
        if family == "ES" and key.kty == "EC" and key.curve == _ALG_CURVE[alg]:
            size = _CURVES[key.curve][1]
            if len(signature) != 2 * size:  # JWS: r and s, each the curve's size (RFC 7518 3.4)
                return False
            r, s = int.from_bytes(signature[:size], "big"), int.from_bytes(signature[size:], "big")
            key.public_key.verify(crypto.encode_dss_signature(r, s), signing_input, crypto.ec.ECDSA(digest))
            return True
    except crypto.InvalidSignature:
        return False
    return False


def _invalid(message: str) -> TokenValidationError:
    # BrokerJwtValidator: ValidateException("Could not validate the access token: ...")
    return TokenValidationError(f"Could not validate the access token: {message}")


def _seconds(claims: Mapping[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise TokenValidationError(f"Could not extract the '{name}' claim from the access token")
    return float(value)  # finite: b64url_json refuses NaN and Infinity


def validate_jwt(token: str, keys: JsonWebKeySet, now_ms: int, *, expected_audience: Sequence[str] = (),
                 expected_issuer: str | None = None, clock_skew_seconds: int = 30, sub_claim: str = "sub",
                 scope_claim: str = "scope") -> AccessToken:
    """Check a signed JWT as Kafka's ``BrokerJwtValidator`` does (see the module docstring).

    Args:
        token: the compact JWS the client sent.
        keys: the provider's signature keys.
        now_ms: the time now, ms since the epoch.
        expected_audience: ``sasl.oauthbearer.expected.audience``.
        expected_issuer: ``sasl.oauthbearer.expected.issuer``.
        clock_skew_seconds: ``sasl.oauthbearer.clock.skew.seconds``.
        sub_claim: ``sasl.oauthbearer.sub.claim.name``.
        scope_claim: ``sasl.oauthbearer.scope.claim.name``.

    Returns:
        the token, its principal, scope, expiry and issue time.

    Raises:
        UnknownKeyError: no key of the set has the token's ``kid``.
        TokenValidationError: any other reason to refuse the token.
    """
    crypto = _crypto()
    parts = token.split(".")
    if len(parts) != 3:  # SerializedJwt
        raise _invalid("Malformed JWT provided; expected three sections (header, payload, and signature)")
    header, claims = b64url_json(parts[0]), b64url_json(parts[1])
    alg, kid = header.get("alg"), header.get("kid")
    if not isinstance(alg, str) or alg == "none" or not parts[2]:  # AlgorithmConstraints.DISALLOW_NONE
        raise _invalid(f"'{alg}' is not a permitted algorithm: a signed JWT is required")
    if kid is not None and not isinstance(kid, str):
        raise _invalid("the kid header is not a string")
    if "crit" in header:  # RFC 7515 4.1.11: BrokerJwtValidator knows no extension, so every one is refused
        crit = header["crit"]
        names = crit if isinstance(crit, list) and crit else [crit]
        raise _invalid(f"Unrecognized header '{names[0]}' marked as critical.")
    try:
        signature = b64url_decode(parts[2])
    except TokenValidationError:
        raise _invalid("malformed signature") from None
    candidates = list(keys.candidates(kid))
    if not candidates and kid is not None:
        raise UnknownKeyError(f"Could not validate the access token: Unable to find a key matching kid '{kid}' "
                              f"among the JWKS's key ids {sorted(keys.kids)}", kid)
    signing_input = f"{parts[0]}.{parts[1]}".encode("ascii")
    if not any(_verify(key, alg, signing_input, signature, crypto) for key in candidates):
        raise _invalid(f"JWT rejected due to invalid signature (alg {alg}, kid {kid})")
    # jose4j's claim validators, with the skew
    skew_ms = 1000 * clock_skew_seconds
    exp, iat, nbf = _seconds(claims, "exp"), _seconds(claims, "iat"), _seconds(claims, "nbf")
    if exp is None:
        raise _invalid("No Expiration Time (exp) claim present.")
    if iat is None:
        raise _invalid("No Issued At (iat) claim present.")
    if now_ms - skew_ms >= exp * 1000:
        raise _invalid(f"The JWT is no longer valid - the evaluation time {now_ms} ms is on or after the Expiration "
                       f"Time (exp={exp:.0f}) claim value (even when providing {clock_skew_seconds} seconds of "
                       "leeway to account for clock skew).")
    if nbf is not None and now_ms + skew_ms < nbf * 1000:
        raise _invalid(f"The JWT is not yet valid as the evaluation time {now_ms} ms is before the Not Before "
                       f"(nbf={nbf:.0f}) claim time (even when providing {clock_skew_seconds} seconds of leeway to "
                       "account for clock skew).")
    aud = claims.get("aud")
    audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else None
    if audiences is None and aud is not None:
        raise _invalid("Could not extract the 'aud' claim from the access token")
    if audiences is None:
        if expected_audience:
            raise _invalid("No Audience (aud) claim present.")
    elif not set(audiences) & set(expected_audience):
        raise _invalid(f"Audience (aud) claim {audiences} doesn't contain an acceptable identifier. Expected "
                       f"{'one of ' if expected_audience else ''}{sorted(expected_audience)} as an aud value.")
    if expected_issuer is not None:
        iss = claims.get("iss")
        if iss is None:
            raise _invalid(f"No Issuer (iss) claim present but was expecting {expected_issuer}")
        if iss != expected_issuer:
            raise _invalid(f"Issuer (iss) claim value ({iss}) doesn't match expected value of {expected_issuer}")
    # BrokerJwtValidator's own checks (ClaimValidationUtils), as the client's
    try:
        return token_from_claims(token, claims, sub_claim=sub_claim, scope_claim=scope_claim)
    except TokenValidationError as exc:
        raise _invalid(str(exc)) from None


def _listing(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(item.strip() for item in items if item.strip())


class JwksValidator:
    """The broker's validator of signed OAUTHBEARER tokens (Kafka's
    ``OAuthBearerValidatorCallbackHandler`` with a JWKS); see the module docstring.

    Args:
        config: the listener's settings with Kafka's names:
            ``sasl.oauthbearer.jwks.endpoint.url`` (required; ``https://``, ``http://``
            or ``file://``), ``sasl.oauthbearer.expected.audience``,
            ``sasl.oauthbearer.expected.issuer``, ``sasl.oauthbearer.clock.skew.seconds``
            (30), ``sasl.oauthbearer.sub.claim.name``, ``sasl.oauthbearer.scope.claim.name``,
            ``sasl.oauthbearer.jwks.endpoint.refresh.ms`` (3600000),
            ``sasl.oauthbearer.jwks.endpoint.retry.backoff.ms`` (100),
            ``sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms`` (10000),
            ``sasl.login.connect.timeout.ms``, ``sasl.login.read.timeout.ms``,
            ``sasl.jaas.config`` (its ``ssl.*`` options, for an ``https://`` JWKS).
        ssl_context: for an ``https://`` JWKS (default: from the ``ssl.*`` options of
            ``OAuthBearerLoginModule`` in ``sasl.jaas.config``, as Java's
            ``JaasOptionsUtils``, see :func:`kproto.security.oidc.jaas_ssl_context`;
            without them the system's CAs).
        clock: seconds since the epoch (``time.time``).

    Raises:
        ConfigError: a missing or bad setting.
        ImportError: ``cryptography`` is not installed.
        OSError: the JWKS could not be had (the provider failed past the retries, or the
            file is unreadable), or ValueError: it is not a JWKS.

    Close it (or use it in ``with``) to stop its refresh thread.
    """

    def __init__(self, config: Mapping[str, Any], *, ssl_context: Any = None,
                 clock: Callable[[], float] = time.time) -> None:
        _crypto()
        url = config.get("sasl.oauthbearer.jwks.endpoint.url")
        if not url:
            raise ConfigError("sasl.oauthbearer.jwks.endpoint.url is required to validate tokens against a JWKS")
        self.url = str(url)
        self._scheme = urllib.parse.urlsplit(self.url).scheme
        if self._scheme not in ("http", "https", "file"):
            raise ConfigError(f"sasl.oauthbearer.jwks.endpoint.url={self.url!r}: expected an http, https or file URL")
        self.expected_audience = _listing(config.get("sasl.oauthbearer.expected.audience"))
        issuer = config.get("sasl.oauthbearer.expected.issuer")
        self.expected_issuer = str(issuer).strip() if issuer else None
        self.clock_skew_seconds = _ms(config, "sasl.oauthbearer.clock.skew.seconds", 30) or 0
        self.sub_claim = str(config.get("sasl.oauthbearer.sub.claim.name") or "sub").strip()
        self.scope_claim = str(config.get("sasl.oauthbearer.scope.claim.name") or "scope").strip()
        self.refresh_ms = _ms(config, "sasl.oauthbearer.jwks.endpoint.refresh.ms", 3_600_000) or 0
        if self.refresh_ms <= 0:  # RefreshingHttpsJwks' constructor
            raise ConfigError("sasl.oauthbearer.jwks.endpoint.refresh.ms must be positive")
        self._backoff_ms = _ms(config, "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", 100) or 0
        self._backoff_max_ms = _ms(config, "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", 10_000) or 0
        self._connect_timeout_ms = _ms(config, "sasl.login.connect.timeout.ms", None)
        self._read_timeout_ms = _ms(config, "sasl.login.read.timeout.ms", None)
        if ssl_context is None and self._scheme == "https":  # VerificationKeyResolverFactory, JaasOptionsUtils
            ssl_context = jaas_ssl_context(jaas_options(config))
        self._ssl_context = ssl_context
        self._clock = clock
        self._lock = threading.Lock()
        self._missing: OrderedDict[str, int] = OrderedDict()  # kid -> when it may expedite again
        self._file_stamp: tuple[int, int] | None = None  # the JWKS file's mtime and size when read
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._keys = self._load()  # blocking, as RefreshingHttpsJwks.init
        self._thread: threading.Thread | None = None
        if self._scheme != "file":
            self._thread = threading.Thread(target=self._refresh_loop, name=f"kproto-jwks-refresh {self.url}",
                                            daemon=True)
            self._thread.start()

    @property
    def keys(self) -> JsonWebKeySet:
        """The key set in use."""
        return self._keys

    def _load(self) -> JsonWebKeySet:
        if self._scheme == "file":
            path = file_url_path(self.url)
            self._file_stamp = self._stamp(path)
            with open(path, "rb") as f:
                return JsonWebKeySet.parse(f.read())
        # close() cuts the waits between retries short, and the next attempt then fails at once
        return retry(self._fetch, self._backoff_ms, self._backoff_max_ms, self._clock, self._closed.wait)

    @staticmethod
    def _stamp(path: str) -> tuple[int, int]:
        stat = os.stat(path)
        return stat.st_mtime_ns, stat.st_size

    def _fetch(self) -> JsonWebKeySet:
        """One GET of the JWKS; :class:`Retriable` for any failure (HttpsJwks.refresh)."""
        if self._closed.is_set():
            raise OSError(f"the JWKS validator of {self.url} is closed")
        try:
            # jose4j's Get is an HttpURLConnection: it follows redirects to the same scheme
            status, body = http_exchange(self.url, "GET", headers={"Accept": "application/json"},
                                         connect_timeout_ms=self._connect_timeout_ms,
                                         read_timeout_ms=self._read_timeout_ms, ssl_context=self._ssl_context,
                                         max_redirects=MAX_REDIRECTS)
        except Exception as exc:  # every failure is retried, as RefreshingHttpsJwks.refresh does
            raise Retriable(OSError(f"could not get the JWKS from {self.url}: {exc}")) from None
        if status != 200:
            raise Retriable(OSError(f"Non 200 status code ({status}) returned from {self.url}"))
        try:
            return JsonWebKeySet.parse(body)
        except ValueError as exc:
            raise Retriable(ValueError(f"{self.url}: {exc}")) from None

    def refresh(self) -> None:
        """Get the JWKS again now (blocking); on failure the keys in use stay."""
        try:
            keys = self._load()
        except (OSError, ValueError) as exc:
            log.warning("OAuth JWKS refresh of %s failed; keeping the keys in use: %s", self.url, exc)
            return
        with self._lock:
            self._keys = keys
            for kid in keys.kids:
                self._missing.pop(kid, None)
        log.info("OAuth JWKS refresh of %s complete: key ids %s", self.url, sorted(keys.kids))

    def _refresh_loop(self) -> None:
        while not self._closed.is_set():
            self._wake.wait(self.refresh_ms / 1000)
            self._wake.clear()
            if not self._closed.is_set():
                self.refresh()

    def _expedite(self, kid: str) -> None:
        """An unknown kid: a changed JWKS file is read again at once; an endpoint's JWKS is
        refreshed early by the refresh thread, at most once a minute per kid
        (``RefreshingHttpsJwks.maybeExpediteRefresh``)."""
        if self._scheme == "file":
            path = file_url_path(self.url)
            try:
                changed = self._stamp(path) != self._file_stamp
            except OSError:
                changed = False
            if changed:
                self.refresh()
            return
        if len(kid) > _MISSING_KID_MAX_LENGTH:
            log.warning("key id %s... (%d characters) is too long to look for", kid[:_MISSING_KID_MAX_LENGTH], len(kid))
            return
        now_ms = int(self._clock() * 1000)
        with self._lock:
            if self._missing.get(kid, 0) > now_ms:
                return
            self._missing[kid] = now_ms + _MISSING_KID_INTERVAL_MS
            self._missing.move_to_end(kid)
            while len(self._missing) > _MISSING_KID_ENTRIES:
                self._missing.popitem(last=False)
        self._wake.set()

    def validate(self, token: str, now_ms: int | None = None) -> AccessToken:
        """Check ``token`` (see :func:`validate_jwt`) with the keys in use; never waits for the
        network.

        Raises:
            TokenValidationError: the token is refused (:class:`UnknownKeyError` for a
                ``kid`` the keys do not have, after which an early refresh is asked for).
        """
        if now_ms is None:
            now_ms = int(self._clock() * 1000)
        try:
            return self._check(token, now_ms)
        except UnknownKeyError as exc:
            self._expedite(exc.kid)
            if self._scheme == "file" and exc.kid in self._keys.kids:  # the file had it: read again just now
                return self._check(token, now_ms)
            raise

    def _check(self, token: str, now_ms: int) -> AccessToken:
        return validate_jwt(token, self._keys, now_ms, expected_audience=self.expected_audience,
                            expected_issuer=self.expected_issuer, clock_skew_seconds=self.clock_skew_seconds,
                            sub_claim=self.sub_claim, scope_claim=self.scope_claim)

    def __call__(self, token: str) -> str:
        """The principal of a valid ``token``: the ``validate`` callable of
        :class:`~kproto.security.oauthbearer.OAuthBearerServer`."""
        return self.validate(token).principal

    def close(self) -> None:
        """Stop the refresh thread (idempotent); a fetch in flight is waited for up to its
        timeouts (``RefreshingHttpsJwks.close`` waits 10 s)."""
        self._closed.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(10)
            if self._thread.is_alive():
                log.warning("the JWKS refresh thread of %s is still fetching; left to end on its own", self.url)

    def __enter__(self) -> JwksValidator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
