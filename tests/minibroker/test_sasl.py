"""SASL on a listener, request by request (minibroker/sasl.py; issue 15, item 3).

Raw protocol requests against a real broker, for what the peer clients cannot be made to
do: requests out of turn, SaslHandshake v0 with raw tokens, re-authentication with
another principal or mechanism, a session left to expire.
"""

from __future__ import annotations

import time

import pytest

from kproto.errors import (
    IllegalSaslStateError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    ApiVersionsRequest,
    FindCoordinatorRequest,
    MetadataRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from kproto.security import plain
from minibroker import MiniBroker
from tests.support.raw_client import RawClient, size_prefixed

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_alice="alice-secret" user_bob="bob-secret";')


def sasl_broker(**extra):
    return MiniBroker(config={"listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
                              "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256", "plain.sasl.jaas.config": JAAS,
                              "connection.failed.authentication.delay.ms": 0, **extra})


@pytest.fixture
def client():
    clients = []

    def connect(port):
        clients.append(RawClient(port))
        return clients[-1]

    yield connect
    for c in clients:
        c.close()


def handshake(c, mechanism="PLAIN", version=1):
    return c.request(ApiKey.SASL_HANDSHAKE, version, SaslHandshakeRequest(mechanism=mechanism))


def authenticate(c, user="alice", password=None, version=1):
    token = plain.initial_response(user, password or f"{user}-secret")
    return c.request(ApiKey.SASL_AUTHENTICATE, version, SaslAuthenticateRequest(auth_bytes=token))


def metadata(c):
    return c.request(ApiKey.METADATA, 12, MetadataRequest(topics=[]))


def test_nothing_but_api_versions_and_sasl_before_authentication(client):
    """Issue 15, item 3: a Metadata before SASL closes the connection, unanswered
    (SaslServerAuthenticator: "Unexpected Kafka request of type METADATA during SASL handshake.")."""
    with sasl_broker() as broker:
        c = client(broker.port)
        assert c.request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest()).error_code == 0
        c.send(ApiKey.METADATA, 12, MetadataRequest(topics=[]))
        assert c.is_closed_by_peer()


def test_an_unknown_mechanism_gets_the_enabled_list_and_a_closed_connection(client):
    with sasl_broker() as broker:
        c = client(broker.port)
        answer = handshake(c, "GSSAPI")
        assert (answer.error_code, answer.mechanisms) == (UnsupportedSaslMechanismError.code, ["PLAIN", "SCRAM-SHA-256"])
        assert c.is_closed_by_peer()


def test_plain_then_requests_as_the_user_and_sasl_again_is_illegal(client):
    """Issue 15, item 3: after authentication (no session end) SaslHandshake and
    SaslAuthenticate reach the handlers, which answer ILLEGAL_SASL_STATE as KafkaApis does."""
    with sasl_broker() as broker:
        c = client(broker.port)
        assert handshake(c).mechanisms == ["PLAIN", "SCRAM-SHA-256"]
        answer = authenticate(c)
        assert (answer.error_code, answer.session_lifetime_ms) == (0, 0)
        assert metadata(c).brokers[0].port == broker.port
        assert handshake(c).error_code == IllegalSaslStateError.code
        answer = authenticate(c)
        assert (answer.error_code, answer.error_message) == (
            IllegalSaslStateError.code, "SaslAuthenticate request received after successful authentication")


def test_sasl_on_a_plaintext_listener_is_illegal(client):
    with sasl_broker() as broker:
        c = client(broker._server.ports["PLAINTEXT"])
        assert handshake(c).error_code == IllegalSaslStateError.code


def test_handshake_v0_takes_raw_tokens(client):
    """Issue 15, item 3: after SaslHandshake v0 the token is a bare size-prefixed frame
    and so is the answer (PLAIN's is empty), as old kafka-python paths send it."""
    with sasl_broker() as broker:
        c = client(broker.port)
        assert handshake(c, version=0).error_code == 0
        c.send_raw(size_prefixed(plain.initial_response("alice", "alice-secret")))
        assert c.receive_frame() == b""
        assert metadata(c).brokers


def test_a_wrong_password_is_kafkas_text_then_closed(client):
    with sasl_broker() as broker:
        c = client(broker.port)
        handshake(c)
        answer = authenticate(c, password="nope")
        assert (answer.error_code, answer.error_message) == (
            SaslAuthenticationFailedError.code, "Authentication failed: Invalid username or password")
        assert c.is_closed_by_peer()


def test_another_request_while_authenticating_is_illegal_then_closed(client):
    with sasl_broker() as broker:
        c = client(broker.port)
        handshake(c)
        answer = c.request(ApiKey.FIND_COORDINATOR, 1, FindCoordinatorRequest(key="g"))
        assert answer.error_code == IllegalSaslStateError.code
        assert "Unexpected Kafka request of type FIND_COORDINATOR during SASL authentication." == answer.error_message
        assert c.is_closed_by_peer()


def test_reauthentication_with_the_same_principal_keeps_the_connection(client):
    """Issue 15, item 3 (KIP-368): v1 answers session_lifetime_ms; a SaslHandshake on an
    authenticated connection starts re-authentication, which keeps the connection."""
    with sasl_broker(**{"connections.max.reauth.ms": 60000}) as broker:
        c = client(broker.port)
        handshake(c)
        assert authenticate(c).session_lifetime_ms == 60000
        assert handshake(c).error_code == 0
        assert authenticate(c).error_code == 0
        assert metadata(c).brokers


def test_reauthentication_at_most_once_a_second(client):
    """Issue 15, review: Kafka's KafkaChannel.maybeBeginServerReauthentication starts a
    re-authentication at most once a second (MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS, against
    a client that renews in a loop); a SaslHandshake sooner goes to KafkaApis, which answers
    ILLEGAL_SASL_STATE, and the connection and its session go on."""
    with sasl_broker(**{"connections.max.reauth.ms": 60000}) as broker:
        c = client(broker.port)
        handshake(c)
        authenticate(c)
        assert handshake(c).error_code == 0  # the first re-authentication: any time
        assert authenticate(c).error_code == 0
        assert handshake(c).error_code == IllegalSaslStateError.code  # within the second
        assert metadata(c).brokers
        time.sleep(1.05)
        assert handshake(c).error_code == 0
        assert authenticate(c).error_code == 0
        assert metadata(c).brokers


def test_reauthentication_cannot_change_the_principal(client):
    with sasl_broker(**{"connections.max.reauth.ms": 60000}) as broker:
        c = client(broker.port)
        handshake(c)
        authenticate(c)
        handshake(c)
        answer = authenticate(c, "bob")
        assert (answer.error_code, answer.error_message) == (
            SaslAuthenticationFailedError.code, "Cannot change principals during re-authentication from User.alice: User.bob")
        assert c.is_closed_by_peer()


def test_reauthentication_cannot_change_the_mechanism(client):
    with sasl_broker(**{"connections.max.reauth.ms": 60000}) as broker:
        c = client(broker.port)
        handshake(c)
        authenticate(c)
        assert handshake(c, "SCRAM-SHA-256").error_code == 0  # Kafka answers, then fails the next token
        c.send(ApiKey.SASL_AUTHENTICATE, 1, SaslAuthenticateRequest(auth_bytes=b"n,,n=alice,r=abc"))
        assert c.is_closed_by_peer()


def test_an_expired_session_is_closed_at_its_next_request(client):
    """Issue 15, item 3 (KIP-368, SocketServer): a request after the session's end, other
    than a SaslHandshake, closes the connection."""
    with sasl_broker(**{"connections.max.reauth.ms": 700}) as broker:
        c = client(broker.port)
        handshake(c)
        assert authenticate(c).session_lifetime_ms == 700
        assert metadata(c).brokers
        time.sleep(0.8)
        c.send(ApiKey.METADATA, 12, MetadataRequest(topics=[]))
        assert c.is_closed_by_peer()


def test_sasl_settings_are_checked_when_the_broker_is_made():
    with pytest.raises(ValueError, match="sasl.enabled.mechanisms GSSAPI: minibroker serves PLAIN"):
        MiniBroker(config={"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "GSSAPI"})
    with pytest.raises(ValueError, match="plain.sasl.jaas.config"):
        MiniBroker(config={"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "plain.sasl.jaas.config": "no flag;"})
    with pytest.raises(ValueError, match="an SSL listener needs its certificate and key"):
        MiniBroker(config={"listeners": "SSL://127.0.0.1:0"})


def test_a_large_frame_before_authentication_closes_the_connection(client):
    """Issue 15, item 3: before authenticating, a frame may not exceed
    sasl.server.max.receive.size (Kafka's 512 KiB: "Failing SASL authentication due to
    invalid receive size"); once authenticated, socket.request.max.bytes applies."""
    import struct

    with sasl_broker() as broker:
        c = client(broker.port)
        c.send_raw(struct.pack(">i", 524289))
        assert c.is_closed_by_peer()
        c = client(broker.port)
        handshake(c)
        authenticate(c)
        c.send_raw(struct.pack(">i", 524289) + b"\0" * 1000)  # announced, not refused: the rest may follow
        c.sock.settimeout(0.5)
        with pytest.raises(TimeoutError):
            c.receive_frame()


def test_the_state_machine_is_a_table_and_an_illegal_move_raises():
    from minibroker.sasl import TRANSITIONS, Authenticator, SaslSettings, SaslState

    assert set(TRANSITIONS) == set(SaslState)
    authenticator = Authenticator(SaslSettings(("PLAIN",)), lambda user, mechanism: None)
    with pytest.raises(RuntimeError, match="SASL state INITIAL_REQUEST cannot move to COMPLETE"):
        authenticator._move(SaslState.COMPLETE)
