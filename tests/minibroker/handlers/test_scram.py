"""AlterUserScramCredentials and DescribeUserScramCredentials (minibroker/handlers/scram.py;
issue 15, item 3): Kafka's checks and texts, and users that survive a restart."""

from __future__ import annotations

import hashlib

import pytest

from kproto.errors import (
    DuplicateResourceError,
    ResourceNotFoundError,
    UnacceptableCredentialError,
    UnsupportedSaslMechanismError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    AlterUserScramCredentialsRequest,
    DescribeUserScramCredentialsRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from kproto.security import scram
from kproto.security.scram import (
    MAX_ITERATIONS,
    MECHANISM_CODES,
    MECHANISM_NAMES,
    ScramClient,
    salted_password,
)
from minibroker import MiniBroker
from minibroker.scram_credentials import SCRAM_CREDENTIALS_FILE
from tests.support.raw_client import RawClient

A = AlterUserScramCredentialsRequest
SHA256, SHA512 = MECHANISM_CODES["SCRAM-SHA-256"], MECHANISM_CODES["SCRAM-SHA-512"]


def test_the_scram_wire_codes_and_limits_have_one_owner():
    """Issue 15, review item 4: the mechanisms' wire codes, the iteration limits and Hi()
    are kproto.security.scram's, used by the admin client and the broker alike."""
    import kproto.admin.scram
    import minibroker.handlers.scram
    import minibroker.scram_users

    assert (SHA256, SHA512) == (1, 2)  # Java's ScramMechanism.type()
    assert MECHANISM_NAMES == {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
    assert (scram.MIN_ITERATIONS, MAX_ITERATIONS) == (4096, 16384)  # ScramControlManager.MAX_ITERATIONS
    assert kproto.admin.scram.SCRAM_MECHANISM_CODES is MECHANISM_CODES
    for module in (minibroker.scram_users, minibroker.handlers.scram):  # no twin tables
        assert not {"MECHANISM_TYPES", "_TYPE_OF"} & set(vars(module))
    assert salted_password("SCRAM-SHA-512", "pw", b"salt", 4096) == hashlib.pbkdf2_hmac("sha512", b"pw", b"salt", 4096)


def upsert(name, mechanism=SHA256, iterations=4096, password="pw", salt=b"salt-salt-salt"):
    salted = salted_password(MECHANISM_NAMES.get(mechanism, "SCRAM-SHA-256"), password, salt, 4096)
    return A.ScramCredentialUpsertion(name=name, mechanism=mechanism, iterations=iterations, salt=salt,
                                      salted_password=salted)


def alter(port, deletions=(), upsertions=()):
    c = RawClient(port)
    try:
        answer = c.request(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, A(deletions=list(deletions), upsertions=list(upsertions)))
    finally:
        c.close()
    return {r.user: (r.error_code, r.error_message) for r in answer.results}


def describe(port, users=None):
    c = RawClient(port)
    try:
        names = None if users is None else [DescribeUserScramCredentialsRequest.UserName(name=u) for u in users]
        answer = c.request(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, DescribeUserScramCredentialsRequest(users=names))
    finally:
        c.close()
    return {r.user: (r.error_code, r.error_message, [(i.mechanism, i.iterations) for i in r.credential_infos])
            for r in answer.results}


def test_kafkas_checks_and_texts(broker):
    """Issue 15, item 3: ScramControlManager's validation, one error per user."""
    results = alter(broker.port, deletions=[A.ScramCredentialDeletion(name="ghost", mechanism=SHA256),
                                            A.ScramCredentialDeletion(name="", mechanism=SHA256)],
                    upsertions=[upsert("few", iterations=4095), upsert("many", iterations=16385),
                                upsert("odd", mechanism=0), upsert("twice"), upsert("twice", SHA512), upsert("ok")])
    assert results == {
        "ghost": (ResourceNotFoundError.code, "Attempt to delete a user credential that does not exist"),
        "": (UnacceptableCredentialError.code, "Username must not be empty"),
        "few": (UnacceptableCredentialError.code, "Too few iterations"),
        "many": (UnacceptableCredentialError.code, "Too many iterations"),
        "odd": (UnsupportedSaslMechanismError.code, "Unknown SCRAM mechanism"),
        "twice": (DuplicateResourceError.code, "A user credential cannot be altered twice in the same request"),
        "ok": (0, None),
    }
    assert describe(broker.port) == {"ok": (0, None, [(SHA256, 4096)])}


def test_describe_named_unknown_and_twice(broker):
    alter(broker.port, upsertions=[upsert("alice")])
    alter(broker.port, upsertions=[upsert("alice", SHA512, iterations=8192)])
    assert describe(broker.port, ["alice", "nobody", "x", "x"]) == {
        "alice": (0, None, [(SHA256, 4096), (SHA512, 8192)]),
        "nobody": (ResourceNotFoundError.code, "Attempt to describe a user credential that does not exist", []),
        "x": (DuplicateResourceError.code, "Cannot describe SCRAM credentials for the same user twice in a single request", []),
    }
    assert alter(broker.port, deletions=[A.ScramCredentialDeletion(name="alice", mechanism=SHA256)]) == {"alice": (0, None)}
    assert describe(broker.port, []) == {"alice": (0, None, [(SHA512, 8192)])}


def scram_login(port, user, password, mechanism="SCRAM-SHA-256"):
    """A raw SCRAM exchange; the SaslAuthenticate answer's error code."""
    c = RawClient(port)
    try:
        assert c.request(ApiKey.SASL_HANDSHAKE, 1, SaslHandshakeRequest(mechanism=mechanism)).error_code == 0
        scram = ScramClient(mechanism, user, password)
        first = c.request(ApiKey.SASL_AUTHENTICATE, 2, SaslAuthenticateRequest(auth_bytes=scram.first_message()))
        if first.error_code:
            return first.error_code
        final = c.request(ApiKey.SASL_AUTHENTICATE, 2,
                          SaslAuthenticateRequest(auth_bytes=scram.final_message(first.auth_bytes)))
        if not final.error_code:
            scram.verify(final.auth_bytes)
        return final.error_code
    finally:
        c.close()


def test_users_survive_a_restart_and_authenticate(tmp_path):
    """Issue 15, item 3: the users are written to their own file in the first log
    directory and a restarted broker authenticates them."""
    config = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
              "connection.failed.authentication.delay.ms": 0}
    with MiniBroker(data_dir=tmp_path, config=config) as broker:
        assert alter(broker.port, upsertions=[upsert("alice", password="secret")]) == {"alice": (0, None)}
    assert (tmp_path / SCRAM_CREDENTIALS_FILE).exists()
    assert "secret" not in (tmp_path / SCRAM_CREDENTIALS_FILE).read_text()
    with MiniBroker(data_dir=tmp_path, config=config) as broker:
        sasl_port = broker._server.ports["SASL_PLAINTEXT"]
        assert scram_login(sasl_port, "alice", "secret") == 0
        assert scram_login(sasl_port, "alice", "wrong") == 58


@pytest.mark.parametrize("garbage", ["{", '{"alice": {"SCRAM-SHA-256": {"salt": 1}}}'])
def test_a_damaged_file_stops_the_broker(tmp_path, garbage):
    from minibroker.storage import CorruptStateFileError

    (tmp_path / SCRAM_CREDENTIALS_FILE).write_text(garbage)
    with pytest.raises(CorruptStateFileError, match=SCRAM_CREDENTIALS_FILE):
        MiniBroker(data_dir=tmp_path).start()
