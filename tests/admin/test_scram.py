"""The admin client's SCRAM user calls (issue 15, client side, item 4): what the client
computes and refuses before anything is sent. The calls on the wire, against minibroker
with confluent-kafka's admin client as the oracle, are in
tests/security/test_client_scram_admin.py (confluent-kafka's handles keep their sockets a
while after they are dropped, which this directory's leak check counts).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from types import SimpleNamespace

import pytest

from kproto.admin import (
    AdminClient,
    AIOAdminClient,
    ScramCredentialInfo,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kproto.admin.scram import SCRAM_MECHANISM_CODES, _upsertion
from kproto.errors import (
    UnsupportedSaslMechanismError,
)
from kproto.protocol import ApiKey
from kproto.security import scram


class _Request:
    """Stands in for AlterUserScramCredentialsRequest's structs: keeps the fields."""

    ScramCredentialUpsertion = staticmethod(lambda **fields: SimpleNamespace(**fields))


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_upsertion_sends_the_salted_password_a_broker_derives_the_credential_from(mechanism):
    """Issue 15 item 4: as Java's KafkaAdminClient, the client sends salt and
    SaltedPassword = Hi(password, salt, i), never the password; the broker's StoredKey
    and ServerKey follow from it as from the password itself."""
    salt = b"0123456789abcdef"
    wire = _upsertion(_Request, UserScramCredentialUpsertion("alice", ScramCredentialInfo(mechanism, 8192),
                                                             "alice-secret", salt))
    assert (wire.name, wire.mechanism, wire.iterations, wire.salt) == ("alice", SCRAM_MECHANISM_CODES[mechanism],
                                                                       8192, salt)
    assert b"alice-secret" not in wire.salted_password
    expected = scram.credential("alice-secret", mechanism, 8192, salt)
    hash_name = scram.MECHANISMS[mechanism]
    client_key = hmac.new(wire.salted_password, b"Client Key", hash_name).digest()
    assert hashlib.new(hash_name, client_key).digest() == expected.stored_key
    assert hmac.new(wire.salted_password, b"Server Key", hash_name).digest() == expected.server_key


def test_upsertion_without_a_salt_gets_a_fresh_random_one():
    """Issue 15 item 4: Java's UserScramCredentialUpsertion makes a random salt."""
    info = ScramCredentialInfo("SCRAM-SHA-256", 4096)
    one, two = (_upsertion(_Request, UserScramCredentialUpsertion("bob", info, b"pw")) for _ in range(2))
    assert len(one.salt) >= 16 and one.salt != two.salt and one.salted_password != two.salted_password
    assert "pw" not in repr(UserScramCredentialUpsertion("bob", info, "pw"))


def test_unknown_mechanism_is_refused_before_anything_is_sent(kafka_broker):
    """Issue 15 item 4: Java's UnsupportedSaslMechanismException, client side: the broker
    gets no AlterUserScramCredentials."""
    alters = kafka_broker.requests.control(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)

    async def run():
        admin = AIOAdminClient(bootstrap_servers=kafka_broker.bootstrap_servers)
        try:
            with pytest.raises(UnsupportedSaslMechanismError, match="SCRAM-SHA-1"):
                await admin.alter_user_scram_credentials([UserScramCredentialDeletion("bob", "SCRAM-SHA-1")])
        finally:
            await admin.close()

    asyncio.run(run())
    assert alters.count == 0


def test_the_sync_face_has_the_scram_calls():
    """Issue 15 item 4: AdminClient runs the same calls."""
    assert AdminClient.describe_user_scram_credentials and AdminClient.alter_user_scram_credentials
