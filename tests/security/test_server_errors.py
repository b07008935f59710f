"""What a refused exchange tells the client (issue 15): Kafka's SaslServerAuthenticator sends
a SaslAuthenticationException's text as it is, and replaces a SaslException's text with a
generic message naming only the phase and the mechanism, so that a client cannot probe which
users exist."""

import pytest

from kproto.errors import IllegalSaslStateError, SaslAuthenticationFailedError
from kproto.security import SaslServerError
from kproto.security.oauthbearer import OAuthBearerServer, TokenValidationError
from kproto.security.plain import check, initial_response
from kproto.security.scram import ScramClient, ScramServer, credential

GENERIC = "Authentication failed during authentication due to invalid credentials with SASL " \
          "mechanism {}"


def refusal(call, *args):
    with pytest.raises(SaslServerError) as caught:
        call(*args)
    assert isinstance(caught.value, SaslAuthenticationFailedError)
    return caught.value


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_hides_an_unknown_user_and_a_wrong_password(mechanism):
    stored = {"user": credential("pencil", mechanism)}
    unknown = refusal(ScramServer(mechanism, stored.get).first_message,
                      ScramClient(mechanism, "nobody", "x").first_message())
    assert str(unknown.args[0]) == "Authentication failed: Invalid user credentials"
    assert unknown.client_message() == GENERIC.format(mechanism)
    client, server = ScramClient(mechanism, "user", "wrong"), ScramServer(mechanism, stored.get)
    final = client.final_message(server.first_message(client.first_message()))
    wrong = refusal(server.final_message, final)
    assert wrong.client_message(reauthentication=True) == GENERIC.format(mechanism).replace(
        "during authentication", "during re-authentication")


def test_scram_shows_an_authzid_mismatch():
    server = ScramServer("SCRAM-SHA-256", {"user": credential("p", "SCRAM-SHA-256")}.get)
    error = refusal(server.first_message, b"n,a=admin,n=user,r=abc")
    assert error.client_message() == ("Authentication failed: Client requested an authorization "
                                      "id that is different from username")


def test_scram_refuses_a_malformed_saslname_generically():
    server = ScramServer("SCRAM-SHA-256", {"a=b": credential("p", "SCRAM-SHA-256")}.get)
    error = refusal(server.first_message, b"n,,n=a=b,r=abc")
    assert error.client_message() == GENERIC.format("SCRAM-SHA-256")


def test_a_scram_message_out_of_turn_is_an_illegal_sasl_state():
    server = ScramServer("SCRAM-SHA-256", {}.get)
    with pytest.raises(IllegalSaslStateError):
        server.final_message(b"c=biws,r=x,p=AAAA")


def test_plain_shows_its_failures():
    error = refusal(check, initial_response("alice", "wrong"), {"alice": "right"})
    assert error.client_message() == "Authentication failed: Invalid username or password"


def test_oauthbearer_hides_a_malformed_message_and_shows_the_token_error():
    def reject(token):
        raise TokenValidationError("expired")

    assert refusal(OAuthBearerServer(reject).respond, b"garbage").client_message() == \
        GENERIC.format("OAUTHBEARER")
    server = OAuthBearerServer(reject)
    assert server.respond(b"n,,\x01auth=Bearer t\x01\x01") == b'{"status":"invalid_token"}'
    assert refusal(server.respond, b"\x01").client_message() == '{"status":"invalid_token"}'
