"""SCRAM-SHA-256/512 client and server conversations (issue 15, item 1): RFC 7677's vector
byte for byte, round trips, kafka-python's SCRAM client as an oracle both ways, and the
failures Kafka's ScramSaslClient/ScramSaslServer raise."""

import base64

import pytest
from kafka.net.sasl.scram import SaslMechanismScram

from kproto.errors import IllegalSaslStateError, SaslAuthenticationFailedError
from kproto.security.scram import (
    ScramClient,
    ScramCredential,
    ScramServer,
    ScramState,
    credential,
    sasl_name,
    username_of,
)

# RFC 7677 section 3
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
RFC_CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

MECHANISMS = ["SCRAM-SHA-256", "SCRAM-SHA-512"]


def users(mechanism, **passwords):
    stored = {name: credential(password, mechanism) for name, password in passwords.items()}
    return stored.get


def test_the_client_speaks_rfc_7677s_example_byte_for_byte():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=RFC_CLIENT_NONCE)
    assert client.first_message() == RFC_CLIENT_FIRST
    assert client.final_message(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    client.verify(RFC_SERVER_FINAL)
    assert client.state is ScramState.COMPLETE


def test_the_server_speaks_rfc_7677s_example_byte_for_byte():
    stored = credential("pencil", "SCRAM-SHA-256", salt=RFC_SALT)
    server = ScramServer("SCRAM-SHA-256", {"user": stored}.get, nonce=RFC_SERVER_NONCE)
    assert server.first_message(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert server.final_message(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.principal == "user" and server.state is ScramState.COMPLETE


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_client_and_a_server_agree(mechanism):
    client = ScramClient(mechanism, "alice,=x", "secret")
    server = ScramServer(mechanism, users(mechanism, **{"alice,=x": "secret"}))
    first = client.first_message()
    assert b"n=alice=2C=3Dx," in first
    client.verify(server.final_message(client.final_message(server.first_message(first))))
    assert client.state is ScramState.COMPLETE and server.principal == "alice,=x"


def kafka_python_client(mechanism, username, password):
    return SaslMechanismScram(sasl_mechanism=mechanism, sasl_plain_username=username,
                              sasl_plain_password=password)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_our_server_accepts_kafka_pythons_client(mechanism):
    theirs = kafka_python_client(mechanism, "bob", "hunter2")
    server = ScramServer(mechanism, users(mechanism, bob="hunter2"))
    assert not theirs.receive(server.first_message(theirs.auth_bytes()))
    assert theirs.receive(server.final_message(theirs.auth_bytes()))  # it checks v= itself
    assert theirs.is_authenticated() and server.principal == "bob"


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_pythons_client_is_refused_with_a_wrong_password(mechanism):
    theirs = kafka_python_client(mechanism, "bob", "wrong")
    server = ScramServer(mechanism, users(mechanism, bob="hunter2"))
    theirs.receive(server.first_message(theirs.auth_bytes()))
    with pytest.raises(SaslAuthenticationFailedError, match="Invalid client credentials"):
        server.final_message(theirs.auth_bytes())
    assert server.principal is None and server.state is ScramState.FAILED


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_pythons_scram_formulas_accept_our_client(mechanism):
    """kafka-python's ScramClient computes the server's side too (its proof is ours and its
    server signature is what our client must accept): drive ours against its numbers."""
    ours = ScramClient(mechanism, "carol", "pw")
    theirs = kafka_python_client(mechanism, "carol", "pw")._scram_client
    theirs.nonce = ours.first_message()[len(b"n,,n=carol,r="):]
    theirs.first_message()
    stored = credential("pw", mechanism)
    server_first = (b"r=" + theirs.nonce + b"SERVER,s=" + base64.b64encode(stored.salt)
                    + b",i=4096")
    theirs.process_server_first_message(server_first)
    assert ours.final_message(server_first) == theirs.final_message()
    ours.verify(b"v=" + base64.b64encode(theirs.server_signature))
    assert ours.state is ScramState.COMPLETE


def test_a_wrong_password_is_refused_by_the_server():
    client = ScramClient("SCRAM-SHA-256", "user", "not-pencil")
    server = ScramServer("SCRAM-SHA-256", users("SCRAM-SHA-256", user="pencil"))
    final = client.final_message(server.first_message(client.first_message()))
    with pytest.raises(SaslAuthenticationFailedError, match="Invalid client credentials"):
        server.final_message(final)


def test_an_unknown_user_is_refused_as_kafka_refuses_it():
    server = ScramServer("SCRAM-SHA-256", users("SCRAM-SHA-256", user="pencil"))
    with pytest.raises(SaslAuthenticationFailedError,
                       match="Authentication failed: Invalid user credentials"):
        server.first_message(ScramClient("SCRAM-SHA-256", "nobody", "x").first_message())


def test_a_tampered_server_signature_is_refused_by_the_client():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=RFC_CLIENT_NONCE)
    client.first_message()
    client.final_message(RFC_SERVER_FIRST)
    tampered = b"v=" + base64.b64encode(bytes(32))
    with pytest.raises(SaslAuthenticationFailedError, match="Invalid server signature"):
        client.verify(tampered)
    assert client.state is ScramState.FAILED


def test_the_servers_error_is_raised_by_the_client():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=RFC_CLIENT_NONCE)
    client.first_message()
    client.final_message(RFC_SERVER_FIRST)
    with pytest.raises(SaslAuthenticationFailedError, match="failed with error: invalid-proof"):
        client.verify(b"e=invalid-proof")


def test_a_server_nonce_not_extending_the_clients_is_refused():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=RFC_CLIENT_NONCE)
    client.first_message()
    with pytest.raises(SaslAuthenticationFailedError, match="Invalid server nonce"):
        client.final_message(b"r=someoneelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")


def test_a_client_final_nonce_mismatch_is_refused_by_the_server():
    stored = credential("pencil", "SCRAM-SHA-256", salt=RFC_SALT)
    server = ScramServer("SCRAM-SHA-256", {"user": stored}.get, nonce=RFC_SERVER_NONCE)
    server.first_message(RFC_CLIENT_FIRST)
    with pytest.raises(SaslAuthenticationFailedError, match="Invalid client nonce"):
        server.final_message(RFC_CLIENT_FINAL.replace(b"k0,p=", b"k1,p="))


def test_the_client_refuses_fewer_than_4096_iterations():
    client = ScramClient("SCRAM-SHA-512", "user", "pencil", nonce=RFC_CLIENT_NONCE)
    client.first_message()
    with pytest.raises(SaslAuthenticationFailedError,
                       match="Requested iterations 4095 is less than the minimum 4096"):
        client.final_message(RFC_SERVER_FIRST.replace(b"i=4096", b"i=4095"))


def test_the_server_and_the_helper_refuse_fewer_than_4096_iterations():
    with pytest.raises(ValueError, match="less than the minimum 4096"):
        credential("pencil", "SCRAM-SHA-256", iterations=1000)
    weak = ScramCredential(salt=b"s", stored_key=b"k", server_key=b"k", iterations=1000)
    server = ScramServer("SCRAM-SHA-256", {"user": weak}.get)
    with pytest.raises(SaslAuthenticationFailedError, match="Iterations 1000 is less"):
        server.first_message(RFC_CLIENT_FIRST)


def test_the_tokenauth_extension_is_parsed_and_reported():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", token_auth=True)
    server = ScramServer("SCRAM-SHA-256", users("SCRAM-SHA-256", user="pencil"))
    first = client.first_message()
    assert first.endswith(b",tokenauth=true")
    client.verify(server.final_message(client.final_message(server.first_message(first))))
    assert server.token_auth


def test_an_authzid_other_than_the_user_is_refused():
    server = ScramServer("SCRAM-SHA-256", users("SCRAM-SHA-256", user="pencil"))
    with pytest.raises(SaslAuthenticationFailedError, match="authorization id that is different"):
        server.first_message(b"n,a=admin,n=user,r=abc")


def test_messages_out_of_turn_are_refused():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil")
    with pytest.raises(IllegalSaslStateError,
                       match="Unexpected challenge in Sasl client state SEND_CLIENT_FIRST"):
        client.verify(RFC_SERVER_FINAL)


def test_saslnames_escape_comma_and_equals():
    assert sasl_name("a,b=c") == "a=2Cb=3Dc"
    assert username_of("a=2Cb=3Dc") == "a,b=c"
    with pytest.raises(ValueError, match="Invalid username"):
        username_of("a=b")
