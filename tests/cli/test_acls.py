"""``kproto acls`` (issue 15, the CLI: ``kafka-acls.sh``'s flags) against a minibroker whose
only listener is SASL_PLAINTEXT with the authorizer on and ``super.users=User:admin``: the
command logs in as the admin with ``--command-config admin.properties``, and what it did
is checked through kproto's admin client and by alice's and bob's clients."""

from __future__ import annotations

import json

import pytest

from kproto import Producer
from kproto.admin import AclBindingFilter, AdminClient, ResourcePatternFilter
from kproto.errors import TopicAuthorizationFailedError

PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{user}="{password}"' for user, password in PASSWORDS.items()) + ";")


@pytest.fixture(scope="module")
def minibroker_config():
    return {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "plain.sasl.jaas.config": JAAS,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:admin", "quota.window.num": 2}


def login(broker, user: str, password: str | None = None, mechanism: str = "PLAIN") -> dict:
    return {"bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password or PASSWORDS[user]}


@pytest.fixture(scope="module")
def admin(broker):
    with AdminClient(login(broker, "admin")) as client:
        yield client


@pytest.fixture(scope="module")
def admin_properties(tmp_path_factory):
    """The admin's client.properties, as Kafka's tools take it."""
    path = tmp_path_factory.mktemp("config") / "admin.properties"
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
                    '    username="admin" password="admin-secret";\n')
    return str(path)


@pytest.fixture
def as_admin(cli, admin_properties):
    """``as_admin("acls", "list")``: the command with the admin's --command-config."""
    def run(*args: str):
        return cli(*args, "--command-config", admin_properties)
    return run


def acls_of(admin, **pattern) -> set[tuple]:
    return {(b.pattern.resource_type.name, b.pattern.name, b.pattern.pattern_type.name, b.entry.principal, b.entry.host,
             b.entry.operation.name, b.entry.permission_type.name)
            for b in admin.describe_acls(AclBindingFilter(ResourcePatternFilter(**pattern)))}


def test_add_list_and_remove_with_kafkas_flags(as_admin, admin):
    """Issue 15, the CLI: ``acls add`` with --allow-principal, --operation (Kafka's
    spellings), --topic, --resource-pattern-type PREFIXED and --allow-host makes one ACL per
    principal, host and operation; ``list`` shows them (a table, or JSON lines);
    ``remove`` with a principal and an operation removes that one, without them every ACL
    of the resource."""
    result = as_admin("acls", "add", "--allow-principal", "User:alice", "--allow-principal", "User:carol",
                      "--operation", "Read", "--operation", "DESCRIBE_CONFIGS", "--allow-host", "10.0.0.1",
                      "--topic", "cli-", "--resource-pattern-type", "PREFIXED")
    assert result.code == 0, result.err
    assert result.lines[0].split() == ["RESOURCE-TYPE", "NAME", "PATTERN-TYPE", "PRINCIPAL", "HOST", "OPERATION",
                                       "PERMISSION-TYPE"]
    assert len(result.lines) == 5
    expected = {("TOPIC", "cli-", "PREFIXED", p, "10.0.0.1", op, "ALLOW") for p in ("User:alice", "User:carol")
                for op in ("READ", "DESCRIBE_CONFIGS")}
    assert acls_of(admin, resource_type="TOPIC", name="cli-") == expected

    listed = as_admin("acls", "list", "--topic", "cli-", "--resource-pattern-type", "PREFIXED", "--json")
    assert listed.code == 0
    rows = [json.loads(line) for line in listed.lines]
    assert {tuple(r.values()) for r in rows} == expected
    assert rows[0].keys() == {"resource_type", "name", "pattern_type", "principal", "host", "operation",
                              "permission_type"}
    by_principal = as_admin("acls", "list", "--principal", "User:carol", "--json")
    assert {json.loads(line)["principal"] for line in by_principal.lines} == {"User:carol"}
    matched = as_admin("acls", "list", "--topic", "cli-orders", "--resource-pattern-type", "MATCH", "--json")
    assert len(matched.lines) == 4

    removed = as_admin("acls", "remove", "--allow-principal", "User:carol", "--allow-host", "10.0.0.1",
                       "--operation", "Read", "--topic", "cli-", "--resource-pattern-type", "PREFIXED")
    assert removed.code == 0 and len(removed.lines) == 2 and "User:carol" in removed.lines[1]
    assert len(acls_of(admin, resource_type="TOPIC", name="cli-")) == 3
    removed = as_admin("acls", "remove", "--topic", "cli-", "--resource-pattern-type", "PREFIXED", "--force")
    assert removed.code == 0 and len(removed.lines) == 4
    assert acls_of(admin, resource_type="TOPIC", name="cli-") == set()


def test_producer_and_consumer_shortcuts_let_alice_work_and_a_deny_wins(as_admin, admin, broker):
    """Issue 15, the CLI: ``--producer --idempotent`` and ``--consumer`` grant what
    kafka-acls.sh grants (WRITE, DESCRIBE, CREATE on the topic and IDEMPOTENT_WRITE on the
    cluster; READ, DESCRIBE on the topic and READ on the group); alice's idempotent producer
    then works; ``--deny-principal`` for her on the topic wins."""
    assert as_admin("acls", "add", "--allow-principal", "User:alice", "--producer", "--idempotent",
                    "--topic", "cli-orders").code == 0
    assert as_admin("acls", "add", "--allow-principal", "User:alice", "--consumer", "--topic", "cli-orders",
                    "--group", "cli-billing").code == 0
    assert acls_of(admin, resource_type="TOPIC", name="cli-orders") == {
        ("TOPIC", "cli-orders", "LITERAL", "User:alice", "*", op, "ALLOW") for op in ("WRITE", "DESCRIBE", "CREATE", "READ")}
    assert acls_of(admin, resource_type="CLUSTER") >= {
        ("CLUSTER", "kafka-cluster", "LITERAL", "User:alice", "*", "IDEMPOTENT_WRITE", "ALLOW")}
    assert acls_of(admin, resource_type="GROUP", name="cli-billing") == {
        ("GROUP", "cli-billing", "LITERAL", "User:alice", "*", "READ", "ALLOW")}
    with Producer(login(broker, "alice"), max_block_ms=5000, delivery_timeout_ms=5000) as producer:
        assert producer.send("cli-orders", b"v").result(10).offset == 0
    assert as_admin("acls", "add", "--deny-principal", "User:alice", "--operation", "Write",
                    "--topic", "cli-orders").code == 0
    with Producer(login(broker, "alice"), enable_idempotence=False, max_block_ms=5000,
                  delivery_timeout_ms=5000) as producer:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("cli-orders", b"v").result(10)


def test_a_user_not_allowed_is_told_and_bad_usage_is_exit_2(cli, broker, tmp_path):
    """Issue 15, the CLI: bob (not allowed to ALTER the cluster) gets the broker's
    CLUSTER_AUTHORIZATION_FAILED, exit 1; missing resource or principal, an unknown
    operation, or --operation with --producer are usage errors, exit 2."""
    bob = tmp_path / "bob.properties"
    bob.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=bob\nsasl.password=bob-secret\n")
    refused = cli("acls", "add", "--allow-principal", "User:bob", "--operation", "All", "--topic", "mine",
                  "--command-config", str(bob))
    assert refused.code == 1 and "CLUSTER_AUTHORIZATION_FAILED" in refused.err
    config = ["--command-config", str(bob)]
    assert cli("acls", "add", "--allow-principal", "User:bob", *config).code == 2
    assert cli("acls", "add", "--topic", "t", *config).code == 2
    assert cli("acls", "remove", *config).code == 2
    assert cli("acls", "add", "--allow-principal", "User:bob", "--operation", "Fly", "--topic", "t", *config).code == 2
    result = cli("acls", "add", "--allow-principal", "User:bob", "--operation", "Read", "--producer", "--topic", "t",
                 *config)
    assert result.code == 2 and "--operation cannot be given with --producer" in result.err


def test_acls_over_a_real_process(run_process, broker, admin_properties, admin):
    """Issue 15, the CLI: ``python -m kproto acls`` as a real process, --cluster and a
    --transactional-id."""
    done = run_process("acls", "add", "--bootstrap-servers", broker.bootstrap_servers, "--command-config",
                       admin_properties, "--allow-principal", "User:ops", "--operation", "Describe", "--cluster",
                       "--transactional-id", "cli-tx")
    assert done.returncode == 0, done.stderr
    assert acls_of(admin, resource_type="TRANSACTIONAL_ID", name="cli-tx") == {
        ("TRANSACTIONAL_ID", "cli-tx", "LITERAL", "User:ops", "*", "DESCRIBE", "ALLOW")}
    assert ("CLUSTER", "kafka-cluster", "LITERAL", "User:ops", "*", "DESCRIBE", "ALLOW") in acls_of(
        admin, resource_type="CLUSTER")
