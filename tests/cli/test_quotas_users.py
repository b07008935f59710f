"""``kproto quotas`` and ``kproto users`` (issue 15, the CLI: ``kafka-configs.sh`` with
``--entity-type users`` / ``clients``) against the SASL_PLAINTEXT minibroker of
test_acls.py (authorizer on, ``super.users=User:admin``), run as the admin with
``--command-config``; checked through kproto's admin client, a SCRAM login, and a
throttled producer."""

from __future__ import annotations

import json

import pytest

from kproto import Producer
from kproto.admin import AdminClient, ClientQuotaEntity
from kproto.cli.options import UsageError
from kproto.cli.quotas import parse_config_list
from kproto.errors import SaslAuthenticationError
from tests.cli import test_acls
from tests.cli.test_acls import login

# test_acls.py's broker settings and the admin's fixtures, for this module too
minibroker_config, admin, admin_properties, as_admin = (test_acls.minibroker_config, test_acls.admin,
                                                         test_acls.admin_properties, test_acls.as_admin)

USER, CLIENT = ClientQuotaEntity.USER, ClientQuotaEntity.CLIENT_ID


def test_add_config_is_read_as_kafka_configs_reads_it():
    """Issue 15, the CLI: comma-separated pairs, a bracketed value keeping its commas."""
    assert parse_config_list(["producer_byte_rate=1024,consumer_byte_rate=2048", "request_percentage=50"]) == {
        "producer_byte_rate": "1024", "consumer_byte_rate": "2048", "request_percentage": "50"}
    assert parse_config_list(["SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=x=y]"]) == {
        "SCRAM-SHA-256": "iterations=8192,password=alice-secret", "SCRAM-SHA-512": "password=x=y"}
    for bad in ("producer_byte_rate", "SCRAM-SHA-256=[password=x"):
        with pytest.raises(UsageError):
            parse_config_list([bad])


def test_quotas_alter_and_describe_users_clients_and_defaults(as_admin, admin):
    """Issue 15, the CLI: ``quotas alter`` sets and deletes keys of a user, a user and
    client, the default user and a client id (a certificate subject too); ``describe``
    shows them, all or one entity, as a table or JSON lines."""
    dn = "CN=client,O=kproto tests"
    assert as_admin("quotas", "alter", "--user", "alice", "--add-config",
                    "producer_byte_rate=1024,consumer_byte_rate=2048").lines == [
        "Completed updating quotas for user-principal 'alice'."]
    assert as_admin("quotas", "alter", "--user", "alice", "--client", "app", "--add-config",
                    "request_percentage=12.5").code == 0
    assert as_admin("quotas", "alter", "--user-defaults", "--add-config", "producer_byte_rate=500").lines == [
        "Completed updating quotas for the default user-principal."]
    assert as_admin("quotas", "alter", "--client", "tool", "--add-config", "consumer_byte_rate=100").code == 0
    assert as_admin("quotas", "alter", "--user", dn, "--add-config", "producer_byte_rate=64").code == 0
    assert as_admin("quotas", "alter", "--user", "alice", "--delete-config", "consumer_byte_rate").code == 0
    try:
        assert admin.describe_client_quotas() == {
            ClientQuotaEntity({USER: "alice"}): {"producer_byte_rate": 1024.0},
            ClientQuotaEntity({USER: "alice", CLIENT: "app"}): {"request_percentage": 12.5},
            ClientQuotaEntity({USER: None}): {"producer_byte_rate": 500.0},
            ClientQuotaEntity({CLIENT: "tool"}): {"consumer_byte_rate": 100.0},
            ClientQuotaEntity({USER: dn}): {"producer_byte_rate": 64.0}}
        table = as_admin("quotas", "describe")
        assert table.code == 0 and table.lines[0].split() == ["USER", "CLIENT-ID", "QUOTAS"]
        assert [line.split() for line in table.lines[1:]] == [
            ["-", "tool", "consumer_byte_rate=100"], ["<default>", "-", "producer_byte_rate=500"],
            ["CN=client,O=kproto", "tests", "-", "producer_byte_rate=64"], ["alice", "-", "producer_byte_rate=1024"],
            ["alice", "app", "request_percentage=12.5"]]
        one = as_admin("quotas", "describe", "--user", "alice", "--json")
        assert [json.loads(line) for line in one.lines] == [
            {"user": "alice", "client_id": None, "quotas": {"producer_byte_rate": 1024.0}},
            {"user": "alice", "client_id": "app", "quotas": {"request_percentage": 12.5}}]
        defaults = as_admin("quotas", "describe", "--user-defaults", "--json")
        assert [json.loads(line)["quotas"] for line in defaults.lines] == [{"producer_byte_rate": 500.0}]
    finally:
        for entity in admin.describe_client_quotas():
            names = entity.entries
            flags = []
            for kind, flag in ((USER, "--user"), (CLIENT, "--client")):
                if kind in names:
                    flags += [flag, names[kind]] if names[kind] is not None else [f"{flag}-defaults"]
            for key in admin.describe_client_quotas()[entity]:
                assert as_admin("quotas", "alter", *flags, "--delete-config", key).code == 0
    assert admin.describe_client_quotas() == {}


def test_quotas_usage_errors_and_refusals(cli, as_admin, tmp_path):
    """Issue 15, the CLI: no entity, nothing to alter, a value that is not a number are
    usage errors (exit 2); the broker's refusal of a bad key, and bob's lack of
    ALTER_CONFIGS on the cluster, are exit 1 with the error named."""
    assert as_admin("quotas", "alter", "--add-config", "producer_byte_rate=1").code == 2
    assert as_admin("quotas", "alter", "--user", "x").code == 2
    assert as_admin("quotas", "alter", "--user", "x", "--add-config", "producer_byte_rate=fast").code == 2
    bad = as_admin("quotas", "alter", "--user", "x", "--add-config", "bytes_per_fortnight=1")
    assert bad.code == 1 and "INVALID_REQUEST" in bad.err
    bob = tmp_path / "bob.properties"
    bob.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=bob\nsasl.password=bob-secret\n")
    refused = cli("quotas", "alter", "--user", "bob", "--add-config", "producer_byte_rate=1e9",
                  "--command-config", str(bob))
    assert refused.code == 1 and "CLUSTER_AUTHORIZATION_FAILED" in refused.err


def test_users_alter_makes_a_scram_user_who_logs_in(as_admin, admin, broker):
    """Issue 15, the CLI: ``users alter`` with kafka-configs.sh's
    ``SCRAM-SHA-256=[iterations=8192,password=...]`` makes a SCRAM user who can log in (and
    produce, once granted); ``describe`` shows mechanisms and iterations, never the
    password; ``--delete-config`` removes the credential, and the login then fails."""
    made = as_admin("users", "alter", "dave", "--add-config",
                    "SCRAM-SHA-256=[iterations=8192,password=dave-secret],SCRAM-SHA-512=[password=dave-512]")
    assert made.code == 0 and made.lines == ["Completed updating SCRAM credentials for user-principal 'dave'."]
    described = as_admin("users", "describe", "dave")
    assert [line.split() for line in described.lines] == [["USER", "MECHANISM", "ITERATIONS"],
                                                          ["dave", "SCRAM-SHA-256", "8192"],
                                                          ["dave", "SCRAM-SHA-512", "4096"]]
    assert "secret" not in described.out
    assert as_admin("acls", "add", "--allow-principal", "User:dave", "--producer", "--topic", "dave-t").code == 0
    with Producer(login(broker, "dave", "dave-secret", "SCRAM-SHA-256"), enable_idempotence=False,
                  max_block_ms=5000) as producer:
        assert producer.send("dave-t", b"v").result(10).offset == 0
    assert as_admin("users", "alter", "dave", "--delete-config", "SCRAM-SHA-256").code == 0
    assert [json.loads(line) for line in as_admin("users", "describe", "--json").lines if "dave" in line] == [
        {"user": "dave", "mechanism": "SCRAM-SHA-512", "iterations": 4096}]
    with pytest.raises(SaslAuthenticationError):
        with AdminClient(login(broker, "dave", "dave-secret", "SCRAM-SHA-256")) as client:
            client.list_topics()


def test_users_usage_errors(as_admin):
    """Issue 15, the CLI: an unknown mechanism (a quota key points to ``kproto quotas``), a
    credential without a password, bad iterations are usage errors; too few iterations is
    the broker's UNACCEPTABLE_CREDENTIAL (exit 1)."""
    quota = as_admin("users", "alter", "eve", "--add-config", "producer_byte_rate=1")
    assert quota.code == 2 and "kproto quotas" in quota.err
    assert as_admin("users", "alter", "eve", "--add-config", "SCRAM-SHA-256=[iterations=8192]").code == 2
    assert as_admin("users", "alter", "eve", "--add-config", "SCRAM-SHA-256=[iterations=many,password=p]").code == 2
    few = as_admin("users", "alter", "eve", "--add-config", "SCRAM-SHA-256=[iterations=100,password=p]")
    assert few.code == 1 and "UNACCEPTABLE_CREDENTIAL" in few.err
