"""kproto's SCRAM user calls on the wire (issue 15, client side, item 4):
DescribeUserScramCredentials 50 and AlterUserScramCredentials 51 against minibroker, with
confluent-kafka's admin client as the oracle both ways: a user kproto makes logs in with
kproto and confluent-kafka, a user confluent-kafka makes logs in with kproto, and each
describes what the other made; the broker's per-user errors come back typed.
"""

from __future__ import annotations

import gc

import pytest

from kproto.admin import (
    AdminClient,
    ScramCredentialInfo,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kproto.errors import (
    DuplicateResourceError,
    ResourceNotFoundError,
    SaslAuthenticationFailedError,
    UnacceptableCredentialError,
)
from minibroker import MiniBroker
from tests.support.secure_broker import secure_config

# -- on the wire, against minibroker, confluent-kafka as the oracle ------------------------


@pytest.fixture(scope="module")
def secured(pki, tmp_path_factory):
    """minibroker with SASL listeners (tests/support/secure_broker.py); users are made on
    its PLAINTEXT listener."""
    with MiniBroker(config=secure_config(pki, tmp_path_factory.mktemp("scram"))) as broker:
        yield broker


def _kproto_login(broker, pki, user, password, mechanism):
    """Log in with kproto (SASL_SSL) and list the topics: the SCRAM exchange's outcome."""
    with AdminClient({"bootstrap.servers": broker.bootstrap_servers_for("SASL_SSL"), "security.protocol": "SASL_SSL",
                      "ssl.ca.location": str(pki.ca.cert_path), "sasl.mechanism": mechanism,
                      "sasl.username": user, "sasl.password": password}) as admin:
        return admin.list_topics()


def _ck_login(broker, pki, user, password, mechanism):
    """Log in with confluent-kafka (SASL_SSL): its admin's list_topics succeeds or raises."""
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    admin = ck_admin.AdminClient({"bootstrap.servers": broker.bootstrap_servers_for("SASL_SSL"),
                                  "security.protocol": "SASL_SSL", "ssl.ca.location": str(pki.ca.cert_path),
                                  "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password})
    try:
        return admin.list_topics(timeout=10)
    finally:
        del admin  # librdkafka closes its sockets when the handle is destroyed
        gc.collect()


def _ck_admin(broker):
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    return ck_admin, ck_admin.AdminClient({"bootstrap.servers": broker.bootstrap_servers_for("PLAINTEXT")})


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_user_kproto_makes_logs_in_with_kproto_and_confluent_kafka(secured, pki, mechanism):
    """Issue 15 item 4: kproto's AlterUserScramCredentials upsertion makes a user that
    kproto's and librdkafka's SCRAM log in as (the broker derived the right keys from the
    salted password kproto sent), that kproto and confluent-kafka describe alike, and a
    wrong password is still refused."""
    user = f"k-{mechanism.lower()}"
    with AdminClient(bootstrap_servers=secured.bootstrap_servers_for("PLAINTEXT")) as admin:
        assert admin.alter_user_scram_credentials([
            UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, 8192), "k-secret")]) == {user: None}
        described = admin.describe_user_scram_credentials([user])
    assert described[user].credential_infos == [ScramCredentialInfo(mechanism, 8192)]
    _kproto_login(secured, pki, user, "k-secret", mechanism)
    _ck_login(secured, pki, user, "k-secret", mechanism)
    with pytest.raises(SaslAuthenticationFailedError, match="invalid credentials"):
        _kproto_login(secured, pki, user, "wrong", mechanism)
    ck_admin, oracle = _ck_admin(secured)
    theirs = oracle.describe_user_scram_credentials([user])[user].result(10)
    assert [(i.mechanism.name, i.iterations) for i in theirs.scram_credential_infos] == [
        (mechanism.replace("-", "_"), 8192)]


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_user_confluent_kafka_makes_logs_in_with_kproto(secured, pki, mechanism):
    """Issue 15 item 4, the reverse: confluent-kafka's admin makes the user; kproto
    describes it and logs in with it; kproto deletes it, and then neither describes nor
    logs in."""
    ck_admin, oracle = _ck_admin(secured)
    user = f"c-{mechanism.lower()}"
    info = ck_admin.ScramCredentialInfo(getattr(ck_admin.ScramMechanism, mechanism.replace("-", "_")), 4096)
    oracle.alter_user_scram_credentials([ck_admin.UserScramCredentialUpsertion(user, info, b"c-secret")])[
        user].result(10)
    with AdminClient(bootstrap_servers=secured.bootstrap_servers_for("PLAINTEXT")) as admin:
        assert admin.describe_user_scram_credentials([user])[user].credential_infos == [
            ScramCredentialInfo(mechanism, 4096)]
        _kproto_login(secured, pki, user, "c-secret", mechanism)
        admin.alter_user_scram_credentials([UserScramCredentialDeletion(user, mechanism)])
        with pytest.raises(ResourceNotFoundError, match="does not exist") as caught:
            admin.describe_user_scram_credentials([user])
        assert isinstance(caught.value.results[user], ResourceNotFoundError)
    with pytest.raises(SaslAuthenticationFailedError):
        _kproto_login(secured, pki, user, "c-secret", mechanism)


def test_per_user_errors_come_back_typed_with_every_users_outcome(secured):
    """Issue 15 item 4: the broker's per-user errors on the wire: too few iterations
    (UNACCEPTABLE_CREDENTIAL), a deletion of nothing (RESOURCE_NOT_FOUND), a user altered
    twice in one request (DUPLICATE_RESOURCE); ``.results`` has every
    user's outcome, the good ones None."""
    with AdminClient(bootstrap_servers=secured.bootstrap_servers_for("PLAINTEXT")) as admin:
        with pytest.raises(UnacceptableCredentialError) as caught:
            admin.alter_user_scram_credentials([
                UserScramCredentialUpsertion("few", ScramCredentialInfo("SCRAM-SHA-256", 1024), "pw"),
                UserScramCredentialUpsertion("fine", ScramCredentialInfo("SCRAM-SHA-256", 4096), "pw")])
        assert caught.value.results["fine"] is None
        with pytest.raises(ResourceNotFoundError):
            admin.alter_user_scram_credentials([UserScramCredentialDeletion("nobody", "SCRAM-SHA-512")])
        with pytest.raises(DuplicateResourceError):
            admin.alter_user_scram_credentials([
                UserScramCredentialUpsertion("twice", ScramCredentialInfo("SCRAM-SHA-256", 4096), "a"),
                UserScramCredentialUpsertion("twice", ScramCredentialInfo("SCRAM-SHA-512", 4096), "a")])
        assert set(admin.describe_user_scram_credentials()) >= {"fine"}
