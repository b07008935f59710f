"""PLAIN's message and Kafka's PlainSaslServer checks (issue 15, item 2), with kafka-python's
PLAIN mechanism as an oracle for the client's bytes."""

import pytest
from kafka.net.sasl.plain import SaslMechanismPlain

from kproto.errors import SaslAuthenticationFailedError
from kproto.security.plain import check, initial_response

USERS = {"alice": "alice-secret", "admin": "admin-secret"}


def test_the_message_is_rfc_4616s():
    assert initial_response("alice", "pw") == b"\0alice\0pw"
    assert initial_response("alice", "pw", authzid="alice") == b"alice\0alice\0pw"
    assert initial_response("ünï", "pä") == "\0ünï\0pä".encode()


def test_kafka_pythons_message_authenticates_and_has_our_shape():
    theirs = SaslMechanismPlain(sasl_plain_username="alice", sasl_plain_password="alice-secret")
    message = theirs.auth_bytes()
    assert message == initial_response("alice", "alice-secret", authzid="alice")
    assert check(message, USERS) == "alice"
    theirs.receive(b"")  # the server's empty answer on success
    assert theirs.is_authenticated()


def test_our_message_authenticates():
    assert check(initial_response("admin", "admin-secret"), USERS) == "admin"


@pytest.mark.parametrize("message", [
    initial_response("alice", "wrong"),
    initial_response("nobody", "alice-secret"),
])
def test_a_wrong_password_or_user_fails_as_kafka_says(message):
    with pytest.raises(SaslAuthenticationFailedError,
                       match="^.*Authentication failed: Invalid username or password$"):
        check(message, USERS)


def test_the_authzid_must_be_the_user():
    with pytest.raises(SaslAuthenticationFailedError, match="authorization id that is different"):
        check(initial_response("alice", "alice-secret", authzid="admin"), USERS)


@pytest.mark.parametrize("message, error", [
    (b"alice\0alice-secret", "expected 3 tokens, got 2"),
    (b"a\0b\0c\0d\0e", "expected 3 tokens, got 4"),
    (b"\0\0pw", "username not specified"),
    (b"\0alice\0", "password not specified"),
    (b"\0alice\0\xff", "not UTF-8"),
])
def test_malformed_messages_fail_as_kafka_says(message, error):
    with pytest.raises(SaslAuthenticationFailedError, match=error):
        check(message, USERS)


def test_nul_cannot_be_sent():
    with pytest.raises(ValueError, match="NUL"):
        initial_response("a\0b", "pw")
