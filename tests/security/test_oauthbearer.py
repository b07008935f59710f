"""OAUTHBEARER's initial response, the server's conversation and Kafka's unsecured JWTs
(issue 15, item 4), with kafka-python's OAUTHBEARER mechanism as an oracle."""

import base64
import json

import pytest
from kafka.net.sasl.oauth import AbstractTokenProvider, SaslMechanismOAuth

from kproto.errors import SaslAuthenticationFailedError
from kproto.security.jaas import parse as parse_jaas
from kproto.security.oauthbearer import (
    ClientInitialResponse,
    OAuthBearerClient,
    OAuthBearerServer,
    TokenValidationError,
    initial_response,
    parse_initial_response,
    unsecured_login,
    unsecured_token,
    validate_unsecured,
)

NOW_MS = 1_700_000_000_000


def server_at(now_ms, **options):
    return OAuthBearerServer(lambda token: validate_unsecured(token, now_ms, **options).principal)


def test_the_initial_response_is_rfc_7628s_as_kafka_writes_it():
    assert initial_response("abc.def.") == b"n,,\x01auth=Bearer abc.def.\x01\x01"
    assert (initial_response("t", {"traceId": "123", "logicalCluster": "lkc-1"}, authzid="bob")
            == b"n,a=bob,\x01auth=Bearer t\x01traceId=123\x01logicalCluster=lkc-1\x01\x01")
    assert parse_initial_response(initial_response("t", {"traceId": "1 2"}, authzid="bob")) == \
        ClientInitialResponse("t", "bob", {"traceId": "1 2"})


@pytest.mark.parametrize("message, error", [
    (b"n,,auth=Bearer t\x01\x01", "Invalid OAUTHBEARER client first message$"),
    (b"n,,\x01traceId=1\x01\x01", "'auth' not specified"),
    (b"n,,\x01auth=Bearer t,u\x01\x01", "invalid 'auth' format"),
    (b"n,,\x01auth=Basic t\x01\x01", "Invalid scheme in OAUTHBEARER client first message: Basic"),
    (b"n,,\x01auth=Bearer t\x01trace1=x\x01\x01", "Invalid OAUTHBEARER client first message$"),
])
def test_malformed_initial_responses_fail_as_kafka_says(message, error):
    with pytest.raises(SaslAuthenticationFailedError, match=error):
        parse_initial_response(message)


@pytest.mark.parametrize("extensions, error", [
    ({"auth": "x"}, "Extension name auth is invalid"),
    ({"trace_id": "x"}, "Extension name trace_id is invalid"),
    ({"traceId": "\x02"}, r"Extension value \(\x02\) for extension traceId is invalid"),
])
def test_invalid_extensions_are_refused(extensions, error):
    with pytest.raises(ValueError, match=error):
        initial_response("t", extensions)


def test_an_unsecured_token_is_kafkas_unsecured_jws():
    token = unsecured_token("alice", NOW_MS, scope=["read", "write"])
    header, claims, signature = token.split(".")
    assert signature == ""
    assert json.loads(base64.urlsafe_b64decode(header + "==")) == {"alg": "none"}
    body = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))
    assert body == {"sub": "alice", "iat": NOW_MS / 1000, "exp": NOW_MS / 1000 + 3600,
                    "scope": ["read", "write"]}
    checked = validate_unsecured(token, NOW_MS, required_scope=["read"])
    assert checked.principal == "alice" and checked.scope == {"read", "write"}
    assert checked.lifetime_ms == NOW_MS + 3_600_000 and checked.start_time_ms == NOW_MS


def test_client_and_server_agree_with_extensions():
    client = OAuthBearerClient(unsecured_token("alice", NOW_MS), {"traceId": "42"})
    server = server_at(NOW_MS + 1000)
    assert client.receive(server.respond(client.first_message())) is None
    assert client.complete and server.principal == "alice"
    assert server.extensions == {"traceId": "42"}


def test_an_expired_token_gets_kafkas_json_error_then_the_failure():
    client = OAuthBearerClient(unsecured_token("alice", NOW_MS, lifetime_seconds=60))
    server = server_at(NOW_MS + 60_000)
    challenge = server.respond(client.first_message())
    assert challenge == b'{"status":"invalid_token"}'
    answer = client.receive(challenge)
    assert answer == b"\x01" and client.error == '{"status":"invalid_token"}'
    with pytest.raises(SaslAuthenticationFailedError, match='{"status":"invalid_token"}'):
        server.respond(answer)
    assert server.principal is None


def test_a_missing_scope_gets_insufficient_scope():
    server = server_at(NOW_MS, required_scope=["LOGIN_TO_KAFKA"])
    challenge = server.respond(initial_response(unsecured_token("a", NOW_MS, scope=["other"])))
    assert challenge == b'{"status":"insufficient_scope", "scope":"[LOGIN_TO_KAFKA]"}'


def test_kafka_pythons_client_is_accepted_and_answers_an_error_with_x01():
    class Provider(AbstractTokenProvider):
        def __init__(self, token):
            self._token = token

        def token(self):
            return self._token

        def extensions(self):
            return {"traceId": "abc"}

    theirs = SaslMechanismOAuth(sasl_oauth_token_provider=Provider(unsecured_token("bob", NOW_MS)))
    server = server_at(NOW_MS)
    theirs.receive(server.respond(theirs.auth_bytes()))
    assert theirs.is_authenticated() and server.principal == "bob"
    assert server.extensions == {"traceId": "abc"}

    expired = SaslMechanismOAuth(
        sasl_oauth_token_provider=Provider(unsecured_token("bob", NOW_MS, lifetime_seconds=1)))
    server = server_at(NOW_MS + 5000)
    expired.receive(server.respond(expired.auth_bytes()))
    with pytest.raises(SaslAuthenticationFailedError, match="invalid_token"):
        server.respond(expired.auth_bytes())


def test_an_authzid_other_than_the_principal_is_refused():
    server = server_at(NOW_MS)
    with pytest.raises(SaslAuthenticationFailedError,
                       match=r"authorization id \(eve\) that is different from the token's "
                             r"principal name \(alice\)"):
        server.respond(initial_response(unsecured_token("alice", NOW_MS), authzid="eve"))


def b64(obj):
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


NONE = b64({"alg": "none"})


@pytest.mark.parametrize("token, error", [
    ("a.b", "must have 3 dot-separated"),
    ("a..b", "Malformed compact serialization contains '..'"),
    (f"{NONE}.{b64({'sub': 'a', 'exp': 2e9})}.sig", "must not contain a digital signature"),
    (f"{b64({'alg': 'HS256'})}.{b64({'sub': 'a', 'exp': 2e9})}.", "must have 'none' for an algo"),
    (f"{NONE}.{b64({'exp': 2e9})}.", "No principal name in JWT claim: sub"),
    (f"{NONE}.{b64({'sub': ' ', 'exp': 2e9})}.", "No principal name in JWT claim: sub"),
    (f"{NONE}.{b64({'sub': 1, 'exp': 2e9})}.", "The 'sub' claim was not of type String: int"),
    (f"{NONE}.{b64({'sub': 'a', 'exp': 'x'})}.", "The 'exp' claim was not of type Number: str"),
    (f"{NONE}.{b64({'sub': 'a', 'exp': 2e9, 'scope': 3})}.",
     "The 'scope' claim was not of type List: int"),
    (f"{NONE}.{b64({'sub': 'a'})}.", "No expiration time"),
    (f"{NONE}.{b64({'sub': 'a', 'exp': 2e9, 'iat': 1.9e9})}.",
     r"The Issued At value \(1900000000.000000 seconds\) was after the indicated time "
     r"\(1700000000000 ms\) plus allowable clock skew \(0 ms\)"),
    (f"{NONE}.{b64({'sub': 'a', 'exp': 1e9, 'iat': 1e9})}.",
     r"The indicated time \(1700000000000 ms\) minus allowable clock skew \(0 ms\) was on or "
     r"after the Expiration Time value \(1000000000.000000 seconds\)"),
    (f"{NONE}.!!!.", "malformed Base64 URL encoded value"),
    (f"{NONE}.{base64.urlsafe_b64encode(b'{x').decode()}.", "malformed JSON"),
])
def test_invalid_unsecured_tokens_are_refused(token, error):
    with pytest.raises(TokenValidationError, match=error) as caught:
        validate_unsecured(token, NOW_MS)
    assert caught.value.json() == '{"status":"invalid_token"}'


def test_a_string_scope_is_one_value_as_in_kafka():
    token = f"{NONE}.{b64({'sub': 'a', 'exp': 2e9, 'scope': ' read write '})}."
    assert validate_unsecured(token, NOW_MS).scope == {"read write"}


def test_clock_skew_is_allowed_as_configured():
    token = unsecured_token("a", NOW_MS, lifetime_seconds=1)
    with pytest.raises(TokenValidationError):
        validate_unsecured(token, NOW_MS + 1500)
    assert validate_unsecured(token, NOW_MS + 1500, allowable_clock_skew_ms=1000).principal == "a"


def test_the_login_module_options_of_kafkas_docs_make_a_token_and_extensions():
    """OAuthBearerLoginModule's unsecured options, from a sasl.jaas.config as Kafka's docs
    write it, through kproto.security.jaas."""
    entry = parse_jaas(
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule Required "
        'unsecuredLoginStringClaim_sub="thePrincipalName" '
        'unsecuredLoginListClaim_scope="|scopeValue1|scopeValue2" '
        'unsecuredLoginNumberClaim_level="2" '
        'unsecuredLoginLifetimeSeconds="60" unsecuredLoginExtension_traceId="123";')
    token, extensions = unsecured_login(entry.options, NOW_MS)
    assert extensions == {"traceId": "123"}
    checked = validate_unsecured(token, NOW_MS, required_scope=["scopeValue2"])
    assert checked.principal == "thePrincipalName"
    assert checked.lifetime_ms == NOW_MS + 60_000 and checked.claims["level"] == 2.0
    server = server_at(NOW_MS)
    assert server.respond(initial_response(token, extensions)) == b""
    assert server.principal == "thePrincipalName"


@pytest.mark.parametrize("value, expected", [
    ("", []), (",", []), ("|a|b", ["a", "b"]), (",1,2,", ["1", "2", ""]),
    (",,a", ["", "a", ""]), ("|a||b", ["a", "", "b", ""]),
])
def test_list_claims_split_as_kafkas_login_handler_does(value, expected):
    token, _ = unsecured_login({"unsecuredLoginStringClaim_sub": "a",
                                "unsecuredLoginListClaim_l": value}, NOW_MS)
    assert validate_unsecured(token, NOW_MS).claims["l"] == expected


@pytest.mark.parametrize("options, error", [
    ({}, "No principal name in JWT claim: sub"),
    ({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginStringClaim_exp": "1"},
     "Cannot explicitly set the 'exp' claim"),
    ({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginExtension_auth": "x"},
     "Extension name auth is invalid"),
    ({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginLifetimeSeconds": "x"}, "invalid"),
])
def test_bad_login_options_are_refused(options, error):
    with pytest.raises(ValueError, match=error):
        unsecured_login(options, NOW_MS)
