"""The broker's OAUTHBEARER validation against a JWKS (issue 15, item C): tokens signed with
keys made by ``cryptography``, the JWKS served by a real HTTP endpoint on 127.0.0.1 and by
``file://``, every reason Kafka's BrokerJwtValidator refuses a token, and the key refresh."""

from __future__ import annotations

import base64
import json
import sys
import time
from collections.abc import Callable

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from kproto.errors import ConfigError, SaslAuthenticationFailedError
from kproto.security.jwks import JsonWebKeySet, JwksValidator, UnknownKeyError, validate_jwt
from kproto.security.oauthbearer import (
    OAuthBearerServer,
    TokenValidationError,
    initial_response,
    unsecured_token,
)
from tests.security.endpoint import Reply, http_endpoint
from tests.support.leaks import no_thread_left  # noqa: F401  (a fixture)

NOW = 1_700_000_000  # seconds
NOW_MS = NOW * 1000


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def number(n: int) -> str:
    return b64url(n.to_bytes((n.bit_length() + 7) // 8, "big"))


class Signer:
    """A key pair of the identity provider: its JWK, and tokens it signs."""

    def __init__(self, kind: str, kid: str) -> None:
        self.kind, self.kid = kind, kid
        if kind == "RSA":
            self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        else:
            self.key = ec.generate_private_key(ec.SECP256R1())

    def jwk(self, **extra) -> dict:
        numbers = self.key.public_key().public_numbers()
        if self.kind == "RSA":
            return {"kty": "RSA", "kid": self.kid, "use": "sig", "n": number(numbers.n), "e": number(numbers.e),
                    **extra}
        return {"kty": "EC", "kid": self.kid, "crv": "P-256", "x": number(numbers.x), "y": number(numbers.y), **extra}

    def sign(self, claims: dict, alg: str | None = None, kid: str | None = "default") -> str:
        alg = alg or ("RS256" if self.kind == "RSA" else "ES256")
        header = {"alg": alg, "typ": "JWT", **({"kid": self.kid if kid == "default" else kid} if kid else {})}
        signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}".encode()
        if alg.startswith("RS"):
            signature = self.key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
        elif alg.startswith("PS"):
            signature = self.key.sign(signing_input, padding.PSS(mgf=padding.MGF1(hashes.SHA256()),
                                                                 salt_length=32), hashes.SHA256())
        else:
            r, s = decode_dss_signature(self.key.sign(signing_input, ec.ECDSA(hashes.SHA256())))
            signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
        return f"{signing_input.decode()}.{b64url(signature)}"


def jwks(*signers: Signer) -> str:
    return json.dumps({"keys": [s.jwk() for s in signers]})


def claims(**overrides) -> dict:
    base = {"sub": "alice", "iat": NOW - 10, "exp": NOW + 3600, "scope": "kafka", "iss": "https://idp",
            "aud": "kafka-cluster"}
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


@pytest.fixture(scope="module")
def rsa_key() -> Signer:
    return Signer("RSA", "rsa-1")


@pytest.fixture(scope="module")
def other_rsa_key() -> Signer:
    return Signer("RSA", "rsa-1")  # the same kid, another key: a forged token


@pytest.fixture(scope="module")
def ec_key() -> Signer:
    return Signer("EC", "ec-1")


pytestmark = pytest.mark.usefixtures("no_thread_left")  # the fetchers' threads end with each test


def check(token: str, keys: JsonWebKeySet, now_ms: int = NOW_MS, **options):
    options = {"expected_audience": ["kafka-cluster"], "expected_issuer": "https://idp", **options}
    return validate_jwt(token, keys, now_ms, **options)


def wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


# -- validate_jwt: sans-I/O ---------------------------------------------------------------


def test_rs256_es256_and_ps256_tokens_are_accepted(rsa_key, ec_key):
    """issue 15, C: signatures verified with the JWKS key the kid names; the principal,
    scope, expiry and issue time read from the claims."""
    keys = JsonWebKeySet.parse(jwks(rsa_key, ec_key))
    token = rsa_key.sign(claims(scope=["kafka", "admin"]))
    accepted = check(token, keys)
    assert (accepted.value, accepted.principal, accepted.scope) == (token, "alice", {"kafka", "admin"})
    assert (accepted.lifetime_ms, accepted.start_time_ms) == ((NOW + 3600) * 1000, (NOW - 10) * 1000)
    assert check(ec_key.sign(claims(sub="bob")), keys).principal == "bob"
    assert check(rsa_key.sign(claims(), alg="PS256"), keys).principal == "alice"
    assert check(rsa_key.sign(claims(), kid=None), keys).principal == "alice"  # no kid: every key is tried


def test_a_bad_signature_is_refused(rsa_key, other_rsa_key):
    """issue 15, C: a token signed by another key under the same kid, or altered after signing."""
    keys = JsonWebKeySet.parse(jwks(rsa_key))
    with pytest.raises(TokenValidationError, match="invalid signature"):
        check(other_rsa_key.sign(claims()), keys)
    header, _, signature = rsa_key.sign(claims()).split(".")
    altered = b64url(json.dumps(claims(sub="mallory")).encode())
    with pytest.raises(TokenValidationError, match="invalid signature"):
        check(f"{header}.{altered}.{signature}", keys)


def test_a_key_for_another_algorithm_does_not_verify(rsa_key, ec_key):
    keys = JsonWebKeySet([rsa_key.jwk(alg="RS512"), ec_key.jwk(use="enc")])
    with pytest.raises(TokenValidationError, match="invalid signature"):
        check(rsa_key.sign(claims()), keys)  # RS256 token, RS512 key
    with pytest.raises(UnknownKeyError):
        check(ec_key.sign(claims()), keys)  # an encryption key is no signature key


def test_alg_none_is_refused(rsa_key):
    """issue 15, C: DISALLOW_NONE: Kafka's unsecured JWT is not accepted by a JWKS validator."""
    keys = JsonWebKeySet.parse(jwks(rsa_key))
    with pytest.raises(TokenValidationError, match="'none' is not a permitted algorithm"):
        check(unsecured_token("alice", NOW_MS), keys)
    header = b64url(json.dumps({"alg": "none", "kid": "rsa-1"}).encode())
    with pytest.raises(TokenValidationError, match="not a permitted algorithm"):
        check(f"{header}.{b64url(json.dumps(claims()).encode())}.", keys)
    header, payload, signature = rsa_key.sign(claims()).split(".")  # a signed token stripped of its signature
    with pytest.raises(TokenValidationError, match="not a permitted algorithm"):
        check(f"{header}.{payload}.", keys)


def test_hs256_with_the_public_key_as_secret_is_refused(rsa_key):
    """The classic algorithm confusion: an HMAC "signature" made with the public key."""
    import hmac

    keys = JsonWebKeySet.parse(jwks(rsa_key))
    header = b64url(json.dumps({"alg": "HS256", "kid": "rsa-1"}).encode())
    payload = b64url(json.dumps(claims()).encode())
    mac = hmac.new(json.dumps(rsa_key.jwk()).encode(), f"{header}.{payload}".encode(), "sha256").digest()
    with pytest.raises(TokenValidationError, match="invalid signature"):
        check(f"{header}.{payload}.{b64url(mac)}", keys)


@pytest.mark.parametrize(("now_s", "overrides", "message"), [
    (NOW + 3600 + 30, {}, "no longer valid"),  # exp, with 30 s of skew
    (NOW, {"nbf": NOW + 31}, "not yet valid"),
    (NOW, {"exp": None}, r"No Expiration Time \(exp\) claim present"),
    (NOW, {"iat": None}, r"No Issued At \(iat\) claim present"),
    (NOW, {"exp": "soon"}, "Could not extract the 'exp' claim"),
    (NOW, {"aud": "another-cluster"}, r"Audience \(aud\) claim \['another-cluster'\] doesn't contain"),
    (NOW, {"aud": None}, r"No Audience \(aud\) claim present"),
    (NOW, {"iss": "https://evil"}, r"Issuer \(iss\) claim value \(https://evil\) doesn't match"),
    (NOW, {"iss": None}, r"No Issuer \(iss\) claim present but was expecting https://idp"),
    (NOW, {"sub": " "}, "sub value must be a non-empty string"),
])
def test_claims_that_are_refused(rsa_key, now_s, overrides, message):
    """issue 15, C: expired (past the skew), not yet valid, exp and iat required, wrong or
    missing aud and iss, no subject."""
    keys = JsonWebKeySet.parse(jwks(rsa_key))
    with pytest.raises(TokenValidationError, match=message):
        check(rsa_key.sign(claims(**overrides)), keys, now_s * 1000)


def test_clock_skew_and_audience_lists(rsa_key):
    keys = JsonWebKeySet.parse(jwks(rsa_key))
    assert check(rsa_key.sign(claims()), keys, (NOW + 3600 + 29) * 1000).principal == "alice"  # within the skew
    assert check(rsa_key.sign(claims(nbf=NOW + 30)), keys).principal == "alice"
    with pytest.raises(TokenValidationError, match="no longer valid"):
        check(rsa_key.sign(claims()), keys, (NOW + 3600) * 1000, clock_skew_seconds=0)
    token = rsa_key.sign(claims(aud=["other", "kafka-cluster"]))
    assert check(token, keys, expected_audience=["x", "kafka-cluster"]).principal == "alice"


def test_an_audience_in_the_token_needs_an_expected_audience(rsa_key):
    """issue 15, C: jose4j's default audience check, kept by Kafka: with no
    sasl.oauthbearer.expected.audience a token carrying aud is refused, one without is not."""
    keys = JsonWebKeySet.parse(jwks(rsa_key))
    with pytest.raises(TokenValidationError, match=r"Expected \[\] as an aud value"):
        check(rsa_key.sign(claims()), keys, expected_audience=(), expected_issuer=None)
    assert check(rsa_key.sign(claims(aud=None, iss=None)), keys, expected_audience=(),
                 expected_issuer=None).principal == "alice"


def test_claim_names(rsa_key):
    keys = JsonWebKeySet.parse(jwks(rsa_key))
    token = rsa_key.sign(claims(sub=None, client_id="svc", scp="read write"))
    accepted = check(token, keys, sub_claim="client_id", scope_claim="scp")
    assert (accepted.principal, accepted.scope) == ("svc", {"read write"})


def test_malformed_tokens_and_key_sets(rsa_key):
    keys = JsonWebKeySet.parse(jwks(rsa_key))
    for token, message in [("a.b", "expected three sections"), ("!!.e30.c2ln", "malformed Base64"),
                           (rsa_key.sign(claims())[:-3] + "%%%", "malformed signature")]:
        with pytest.raises(TokenValidationError, match=message):
            check(token, keys)
    for text, message in [("[]", '"keys" list'), ("nope", "not JSON")]:
        with pytest.raises(ValueError, match=message):
            JsonWebKeySet.parse(text)


# -- JwksValidator: the keys from an endpoint or a file -----------------------------------------


def validator(url: str, **settings) -> JwksValidator:
    return JwksValidator({"sasl.oauthbearer.jwks.endpoint.url": url,
                          "sasl.oauthbearer.expected.audience": "kafka-cluster, other",
                          "sasl.oauthbearer.expected.issuer": "https://idp",
                          "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": "10",
                          "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "300", **settings},
                         clock=lambda: time.time())


def now_claims(**overrides) -> dict:
    now = int(time.time())
    return claims(iat=now - 10, exp=now + 3600, **overrides)


def test_a_broker_validates_with_keys_from_an_http_jwks(rsa_key, other_rsa_key):
    """issue 15, C: the validator is the OAuthBearerServer's validate callable: a good token
    authenticates its subject; a forged one gets Kafka's invalid_token answer, then
    SASL_AUTHENTICATION_FAILED."""
    with http_endpoint(Reply(200, jwks(rsa_key)), path="/jwks") as endpoint, validator(endpoint.url) as keys:
        server = OAuthBearerServer(keys)
        assert server.respond(initial_response(rsa_key.sign(now_claims()))) == b""
        assert server.principal == "alice"
        refused = OAuthBearerServer(keys)
        assert refused.respond(initial_response(other_rsa_key.sign(now_claims()))) == b'{"status":"invalid_token"}'
        with pytest.raises(SaslAuthenticationFailedError, match="invalid_token"):
            refused.respond(b"\x01")
    assert [(r.method, r.path) for r in endpoint.requests] == [("GET", "/jwks")]


def test_an_unknown_kid_is_refused_and_brings_an_early_refresh(rsa_key, ec_key):
    """issue 15, C: a token signed by a key the provider has just rotated in: refused, but
    it wakes the refresh, and the next try succeeds; a made-up kid fetches the JWKS at most
    once a minute."""
    with http_endpoint(Reply(200, jwks(rsa_key)), path="/jwks") as endpoint, validator(endpoint.url) as keys:
        endpoint.replies = [Reply(200, jwks(rsa_key, ec_key))]  # the provider adds a key
        token = ec_key.sign(now_claims())
        with pytest.raises(UnknownKeyError, match="Unable to find a key matching kid 'ec-1'"):
            keys.validate(token)
        wait_until(lambda: "ec-1" in keys.keys.kids)
        assert keys.validate(token).principal == "alice" and len(endpoint.requests) == 2
        ghost = rsa_key.sign(now_claims(), kid="ghost")
        for _ in range(3):
            with pytest.raises(UnknownKeyError):
                keys.validate(ghost)
        wait_until(lambda: len(endpoint.requests) >= 3)
        time.sleep(0.2)
        assert len(endpoint.requests) == 3  # one refresh for three tries within the minute


def test_the_keys_are_refreshed_periodically_and_kept_when_a_refresh_fails(rsa_key, ec_key):
    """issue 15, C: sasl.oauthbearer.jwks.endpoint.refresh.ms; a failing refresh keeps the
    keys in use."""
    with http_endpoint(Reply(200, jwks(rsa_key)), Reply(500), path="/jwks") as endpoint:
        with validator(endpoint.url, **{"sasl.oauthbearer.jwks.endpoint.refresh.ms": "100",
                                        "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "0"}) as keys:
            wait_until(lambda: len(endpoint.requests) >= 3)
            assert keys.validate(rsa_key.sign(now_claims())).principal == "alice"  # 500s: the keys stay
            endpoint.replies = [Reply(200, jwks(ec_key))]
            wait_until(lambda: keys.keys.kids == {"ec-1"})


def test_the_first_fetch_is_retried_and_its_failure_raised(rsa_key):
    """issue 15, C: the JWKS at start-up, with Kafka's retries; an endpoint that keeps failing
    is an OSError naming it."""
    with http_endpoint(Reply(503), Reply(200, jwks(rsa_key)), path="/jwks") as endpoint:
        with validator(endpoint.url) as keys:
            assert keys.keys.kids == {"rsa-1"} and len(endpoint.requests) == 2
    with http_endpoint(Reply(404, "no such page"), path="/jwks") as endpoint:
        with pytest.raises(OSError, match=r"Non 200 status code \(404\) returned from http://127.0.0.1:\d+/jwks"):
            validator(endpoint.url)
    assert len(endpoint.requests) >= 2


def test_a_file_jwks_is_read_again_when_it_changed(tmp_path, rsa_key, ec_key):
    """issue 15, C: file:// JWKS (JwksFileVerificationKeyResolver); a token with an unknown
    kid reads the file again if it has changed, and no thread is started."""
    path = tmp_path / "jwks.json"
    path.write_text(jwks(rsa_key))
    with validator(path.as_uri()) as keys:
        assert keys.validate(rsa_key.sign(now_claims())).principal == "alice"
        with pytest.raises(UnknownKeyError):
            keys.validate(ec_key.sign(now_claims()))
        path.write_text(jwks(rsa_key, ec_key))
        assert keys.validate(ec_key.sign(now_claims(sub="bob"))).principal == "bob"


@pytest.mark.parametrize(("settings", "message"), [
    ({}, "sasl.oauthbearer.jwks.endpoint.url is required"),
    ({"sasl.oauthbearer.jwks.endpoint.url": "ldap://idp/keys"}, "expected an http, https or file URL"),
    ({"sasl.oauthbearer.jwks.endpoint.url": "http://127.0.0.1:9/keys",
      "sasl.oauthbearer.jwks.endpoint.refresh.ms": "0"}, "must be positive"),
    ({"sasl.oauthbearer.jwks.endpoint.url": "http://127.0.0.1:9/keys",
      "sasl.oauthbearer.clock.skew.seconds": "soon"}, "expected an integer"),
])
def test_bad_settings(settings, message):
    with pytest.raises(ConfigError, match=message):
        JwksValidator(settings)


def test_without_cryptography_the_error_says_what_to_install(monkeypatch, tmp_path, rsa_key):
    """issue 15, C: cryptography is an optional dependency (the oauth extra)."""
    for name in [n for n in sys.modules if n == "cryptography" or n.startswith("cryptography.")]:
        monkeypatch.setitem(sys.modules, name, None)
    path = tmp_path / "jwks.json"
    path.write_text(jwks(rsa_key))
    with pytest.raises(ImportError, match=r'pip install "kproto\[oauth\]"'):
        JwksValidator({"sasl.oauthbearer.jwks.endpoint.url": path.as_uri()})
    with pytest.raises(ImportError, match="cryptography"):
        JsonWebKeySet.parse(jwks(rsa_key))


# -- issue 15 review: jose4j's stricter rules, unreadable keys, redirects, TLS from JAAS -------


def test_rules_jose4j_and_claim_validation_utils_enforce(rsa_key):
    """issue 15, review item 5: an RSA key under 2048 bits (jose4j), an unknown crit header
    (RFC 7515 4.1.11), duplicate or blank scopes and a negative iat (ClaimValidationUtils),
    and NaN or Infinity (not JSON: Jackson refuses them) are refused as invalid tokens."""
    small = Signer("RSA", "small")
    small.key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    keys = JsonWebKeySet.parse(jwks(rsa_key, small))
    with pytest.raises(TokenValidationError, match="2048 bits or larger"):
        check(small.sign(claims()), keys)

    def signed(header: dict, payload: str) -> str:
        signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(payload.encode())}"
        signature = rsa_key.key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signing_input}.{b64url(signature)}"

    header = {"alg": "RS256", "kid": rsa_key.kid}
    with pytest.raises(TokenValidationError, match="Unrecognized header 'exp-ext' marked as critical"):
        check(signed({**header, "crit": ["exp-ext"], "exp-ext": 1}, json.dumps(claims())), keys)
    for overrides, message in [({"scope": ["a", "a"]}, "must not contain duplicates"),
                               ({"scope": ["a", " "]}, "must not contain null or blank"),
                               ({"iat": -5}, "iat value must be non-negative")]:
        with pytest.raises(TokenValidationError, match=message):
            check(rsa_key.sign(claims(**overrides)), keys)
    for constant in ("Infinity", "NaN", "-Infinity"):
        payload = json.dumps(claims(exp=None))[:-1] + f', "exp": {constant}}}'
        with pytest.raises(TokenValidationError, match="malformed JSON"):
            check(signed(header, payload), keys)


def test_an_unreadable_key_is_skipped_and_the_others_serve(rsa_key, ec_key, caplog):
    """issue 15, review item 4: a key given by x5c only, or a point off its curve, is left
    out with a warning, as jose4j's JsonWebKeySet does; the set's other keys still work."""
    off_curve = {**ec_key.jwk(), "kid": "broken", "y": number(ec_key.key.public_key().public_numbers().y ^ 1)}
    text = json.dumps({"keys": [{"kty": "RSA", "kid": "legacy", "x5c": ["MIIC"]}, off_curve, rsa_key.jwk()]})
    with caplog.at_level("WARNING", logger="kproto.security.jwks"):
        keys = JsonWebKeySet.parse(text)
    assert keys.kids == {rsa_key.kid}
    assert check(rsa_key.sign(claims()), keys).principal == "alice"
    assert "legacy" in caplog.text and "broken" in caplog.text


def test_a_jwks_url_that_redirects_is_followed(rsa_key):
    """issue 15, review item 6: jose4j's HttpURLConnection follows a redirect to the same
    scheme; to another scheme it does not, and the 3xx is a failed fetch."""
    moved = Reply(302, headers={"Location": "/keys/v2"})
    with http_endpoint(moved, Reply(200, jwks(rsa_key)), path="/jwks") as endpoint, validator(endpoint.url) as keys:
        assert keys.keys.kids == {rsa_key.kid}
        assert [r.path for r in endpoint.requests] == ["/jwks", "/keys/v2"]
    to_https = Reply(301, headers={"Location": "https://127.0.0.1:1/keys"})
    with http_endpoint(to_https, path="/jwks") as endpoint:
        with pytest.raises(OSError, match=r"Non 200 status code \(301\)"):
            validator(endpoint.url, **{"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "0"})
    with http_endpoint(Reply(302, headers={"Location": "/jwks"}), path="/jwks") as endpoint:
        with pytest.raises(OSError, match="redirected too many times"):
            validator(endpoint.url, **{"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "0"})


def test_an_https_jwks_is_trusted_by_the_jaas_ssl_options(tmp_path, rsa_key):
    """issue 15, review item 3: the broker's JAAS config ssl.truststore.* options
    (JaasOptionsUtils, as VerificationKeyResolverFactory uses it) verify an https JWKS."""
    import ssl

    from tests.support.certs import CertificateAuthority

    ca = CertificateAuthority.create(tmp_path)
    cert = ca.issue("localhost", hosts=("localhost",))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert.cert_path, cert.key_path)
    jaas = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
            f'ssl.truststore.type="PEM" ssl.truststore.location="{ca.cert_path}";')
    with http_endpoint(Reply(200, jwks(rsa_key)), path="/jwks", tls=server, host="localhost") as endpoint:
        with validator(endpoint.url, **{"sasl.jaas.config": jaas}) as keys:
            assert keys.keys.kids == {rsa_key.kid}
        with pytest.raises(OSError, match="CERTIFICATE_VERIFY_FAILED"):
            validator(endpoint.url, **{"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "0"})
