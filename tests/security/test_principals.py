"""minibroker's authorizer with real principals, over the wire (issue 15, ACLs and SASL/TLS
together).

One broker for the module with the authorizer on and ``super.users=User:admin``, and two
listeners: SASL_PLAINTEXT (PLAIN users admin, alice and bob from the JAAS config; SCRAM
users alice and bob made by the admin with AlterUserScramCredentials) and MTLS (an SSL
listener requiring client certificates: the principal is the certificate's subject,
``User:CN=client,O=kproto tests``). The admin (kproto's admin client logged in as admin)
grants and denies; alice and bob meet the decisions through kproto's clients and
confluent-kafka's (the oracle). Each test uses its own resource names, so that the ACLs the
module's tests leave behind do not meet.
"""

from __future__ import annotations

import time
import uuid

import pytest

from kproto import Consumer, Producer
from kproto.admin import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourcePattern,
    ResourcePatternFilter,
    ScramCredentialInfo,
    UserScramCredentialUpsertion,
)
from kproto.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)
from kproto.structs import TopicPartition
from minibroker import MiniBroker
from tests.support.leaks import nothing_left_behind  # noqa: F401  (autouse)

ck = pytest.importorskip("confluent_kafka")

PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
PLAIN_JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
              + " ".join(f'user_{user}="{password}"' for user, password in PASSWORDS.items()) + ";")
#: the SCRAM users' passwords differ from their PLAIN ones, so that a SCRAM login is one
SCRAM_PASSWORDS = {"alice": "alice-scram", "bob": "bob-scram"}
MTLS_PRINCIPAL = "User:CN=client,O=kproto tests"
PRODUCER = {"delivery.timeout.ms": 5000, "request.timeout.ms": 5000, "max.block.ms": 5000}
CONSUMER = {"default.api.timeout.ms": 5000, "request.timeout.ms": 5000}


@pytest.fixture(scope="module")
def secured(pki, tmp_path_factory):
    """The module's broker (see the module docstring), the SCRAM users made."""
    keystore = tmp_path_factory.mktemp("keystore") / "server.pem"
    keystore.write_text(pki.server.key_pem + pki.server.cert_pem)
    config = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0,MTLS://127.0.0.1:0",
        "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,MTLS:SSL",
        "ssl.keystore.location": str(keystore),
        "ssl.truststore.location": str(pki.ca.cert_path),
        "ssl.client.auth": "required",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "plain.sasl.jaas.config": PLAIN_JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "connection.failed.authentication.delay.ms": 10,
    }
    with MiniBroker(data_dir=tmp_path_factory.mktemp("data"), config=config) as broker:
        with AdminClient(sasl(broker, "admin")) as admin:
            for user, password in SCRAM_PASSWORDS.items():
                admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                    user, ScramCredentialInfo("SCRAM-SHA-256", 4096), password)])
        yield broker


def sasl(broker: MiniBroker, user: str, mechanism: str = "PLAIN") -> dict:
    """kproto's (and librdkafka's) settings for ``user`` on the SASL_PLAINTEXT listener."""
    password = PASSWORDS[user] if mechanism == "PLAIN" else SCRAM_PASSWORDS[user]
    return {"bootstrap.servers": broker.bootstrap_servers_for("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}


def mtls(broker: MiniBroker, pki) -> dict:
    """Settings for the ``pki`` fixture's client certificate on the MTLS listener."""
    return {"bootstrap.servers": broker.bootstrap_servers_for("MTLS"), "security.protocol": "SSL",
            "ssl.ca.location": str(pki.ca.cert_path), "ssl.certificate.location": str(pki.client.cert_path),
            "ssl.key.location": str(pki.client.key_path)}


@pytest.fixture
def admin(secured):
    with AdminClient(sasl(secured, "admin")) as client:
        yield client


def acls(principal: str, resource_type: str, name: str, *operations: str, pattern: str = "LITERAL",
         permission: str = "ALLOW", host: str = "*") -> list[AclBinding]:
    return [AclBinding(ResourcePattern(resource_type, name, pattern),
                       AccessControlEntry(principal, host, op, permission)) for op in operations]


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:6]}"


def produce(settings: dict, topic: str, value: bytes = b"v", **extra) -> int:
    with Producer(settings, **PRODUCER, **extra) as producer:
        return producer.send(topic, value).result(10).offset


def consume_group(settings: dict, topic: str, group: str) -> list[bytes]:
    with Consumer(settings, group_id=group, auto_offset_reset="earliest", **CONSUMER) as consumer:
        consumer.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + 10
        while not got and time.monotonic() < deadline:
            got += [r.value for r in consumer.poll(0.5)]
        consumer.commit()
        return got


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_alice_granted_a_prefix_produces_and_consumes_bob_is_denied(secured, admin, mechanism):
    """Issue 15, ACLs with SASL principals: the admin (a super user) grants User:alice WRITE
    and READ on a topic prefix and READ on a group prefix; alice, logged in with PLAIN or
    with the SCRAM credential the admin made, produces and consumes with a group; bob,
    granted nothing (then DESCRIBE on the topic), is refused each API with its own error."""
    prefix = unique("team-")
    topic, group = f"{prefix}orders", f"{prefix}group"
    admin.create_topics([NewTopic(topic)])
    admin.create_acls(acls("User:alice", "TOPIC", prefix, "WRITE", "READ", pattern="PREFIXED")
                      + acls("User:alice", "GROUP", prefix, "READ", pattern="PREFIXED"))
    alice, bob = sasl(secured, "alice", mechanism), sasl(secured, "bob", mechanism)
    assert produce(alice, topic, b"from alice") == 0
    assert consume_group(alice, topic, group) == [b"from alice"]

    with pytest.raises(TopicAuthorizationFailedError, match=rf"TOPIC_AUTHORIZATION_FAILED\] topic '{topic}'"):
        produce(bob, topic, enable_idempotence=False)  # Metadata: not even DESCRIBE
    admin.create_acls(acls("User:bob", "TOPIC", topic, "DESCRIBE"))  # bob may see the topic, no more
    with pytest.raises(ClusterAuthorizationFailedError, match="CLUSTER_AUTHORIZATION_FAILED.*InitProducerId"):
        produce(bob, topic)  # idempotent: IDEMPOTENT_WRITE on the cluster or WRITE on some topic
    with pytest.raises(TopicAuthorizationFailedError, match=rf"TOPIC_AUTHORIZATION_FAILED\] producing to {topic}-0"):
        produce(bob, topic, enable_idempotence=False)
    with Consumer(bob, auto_offset_reset="earliest", **CONSUMER) as consumer:  # Fetch: READ on the topic
        consumer.assign([(topic, 0)])
        with pytest.raises(TopicAuthorizationFailedError, match="TOPIC_AUTHORIZATION_FAILED"):
            consumer.poll(5)
    with Consumer(bob, group_id=group, **CONSUMER) as consumer:  # FindCoordinator: DESCRIBE on the group
        consumer.subscribe([topic])
        with pytest.raises(GroupAuthorizationFailedError, match="GROUP_AUTHORIZATION_FAILED"):
            consumer.poll(5)
    with AdminClient(bob) as bob_admin:
        with pytest.raises(GroupAuthorizationFailedError, match="GROUP_AUTHORIZATION_FAILED"):
            bob_admin.alter_group_offsets(group, {TopicPartition(topic, 0): 0})  # OffsetCommit: READ on the group
        with pytest.raises(TopicAuthorizationFailedError, match="Authorization failed"):
            bob_admin.create_topics([NewTopic(f"{prefix}bobs")])
        with pytest.raises(TopicAuthorizationFailedError, match="Authorization failed"):
            bob_admin.describe_configs([ConfigResource.topic(topic)])
    with Producer(bob, transactional_id=f"{prefix}tx", **PRODUCER) as producer:
        with pytest.raises(TransactionalIdAuthorizationFailedError, match="TRANSACTIONAL_ID_AUTHORIZATION_FAILED"):
            producer.init_transactions(10)


def test_confluent_kafka_sees_the_same_decisions(secured, admin):
    """Issue 15, librdkafka as the oracle over SASL_PLAINTEXT with SCRAM-SHA-256: alice,
    granted WRITE and READ on the topic and READ on the group, produces and consumes; bob
    (DESCRIBE on the topic only) has his produce fail with "Broker: Topic authorization failed" and his group consumer with
    GROUP_AUTHORIZATION_FAILED; bob's idempotent producer is refused its producer id
    (a fatal "Cluster authorization failed")."""
    topic, group = unique("ck-"), unique("ck-group-")
    admin.create_topics([NewTopic(topic)])
    admin.create_acls(acls("User:alice", "TOPIC", topic, "WRITE", "READ") + acls("User:alice", "GROUP", group, "READ"))

    def ck_conf(user: str) -> dict:
        conf = sasl(secured, user, "SCRAM-SHA-256")
        conf.pop("sasl.mechanism")
        return {**conf, "sasl.mechanisms": "SCRAM-SHA-256"}

    failures: list = []
    producer = ck.Producer({**ck_conf("alice"), "message.timeout.ms": 5000})
    producer.produce(topic, b"from alice", on_delivery=lambda err, msg: failures.append(err))
    producer.flush(10)
    assert failures == [None]

    consumer = ck.Consumer({**ck_conf("alice"), "group.id": group, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        deadline, message = time.monotonic() + 15, None
        while (message is None or message.error()) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
        assert message is not None and message.error() is None and message.value() == b"from alice"
    finally:
        consumer.close()

    admin.create_acls(acls("User:bob", "TOPIC", topic, "DESCRIBE"))  # bob may see the topic, no more
    failures.clear()
    producer = ck.Producer({**ck_conf("bob"), "enable.idempotence": False, "message.timeout.ms": 5000})
    producer.produce(topic, b"from bob", on_delivery=lambda err, msg: failures.append(err))
    producer.flush(10)
    assert [e.code() for e in failures] == [ck.KafkaError.TOPIC_AUTHORIZATION_FAILED]
    assert "Topic authorization failed" in failures[0].str()

    errors: list = []
    producer = ck.Producer({**ck_conf("bob"), "enable.idempotence": True, "message.timeout.ms": 5000,
                            "error_cb": errors.append})
    producer.produce(topic, b"from bob")
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        try:
            producer.poll(0.2)
        except ck.KafkaException as exc:  # confluent-kafka raises the fatal error from poll
            errors.append(exc.args[0])
    assert [(e.code(), e.fatal()) for e in errors] == [(ck.KafkaError.CLUSTER_AUTHORIZATION_FAILED, True)]
    assert "Cluster authorization failed" in errors[0].str()
    del producer

    consumer = ck.Consumer({**ck_conf("bob"), "group.id": group, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        message = consumer.poll(5)
        assert message is not None and message.error().code() == ck.KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        consumer.close()


def test_deny_on_one_topic_wins_over_a_prefix_allow(secured, admin):
    """Issue 15: a DENY of WRITE for alice on one topic wins over her PREFIXED ALLOW of it;
    the other topics of the prefix stay hers."""
    prefix = unique("deny-")
    open_topic, closed_topic = f"{prefix}open", f"{prefix}closed"
    admin.create_topics([NewTopic(open_topic), NewTopic(closed_topic)])
    admin.create_acls(acls("User:alice", "TOPIC", prefix, "WRITE", pattern="PREFIXED")
                      + acls("User:alice", "TOPIC", closed_topic, "WRITE", permission="DENY"))
    alice = sasl(secured, "alice")
    assert produce(alice, open_topic) == 0
    with pytest.raises(TopicAuthorizationFailedError, match=f"producing to {closed_topic}-0"):
        produce(alice, closed_topic, enable_idempotence=False)


def test_wildcard_principal_applies_to_every_user(secured, admin):
    """Issue 15: an ACL of ``User:*`` applies to alice and bob alike (and a DENY of one user
    still wins over it)."""
    topic = unique("everyone-")
    admin.create_topics([NewTopic(topic)])
    admin.create_acls(acls("User:*", "TOPIC", topic, "WRITE"))
    assert produce(sasl(secured, "alice"), topic) == 0
    assert produce(sasl(secured, "bob", "SCRAM-SHA-256"), topic) == 1
    admin.create_acls(acls("User:bob", "TOPIC", topic, "WRITE", permission="DENY"))
    with pytest.raises(TopicAuthorizationFailedError):
        produce(sasl(secured, "bob"), topic, enable_idempotence=False)
    assert produce(sasl(secured, "alice"), topic) == 2


def test_host_of_an_acl_is_compared_with_the_clients_address(secured, admin):
    """Issue 15: an ACL for bob from another host does not apply to him on 127.0.0.1; one
    naming 127.0.0.1 does; a DENY from another host does not take it away."""
    topic = unique("host-")
    admin.create_topics([NewTopic(topic)])
    bob = sasl(secured, "bob")
    admin.create_acls(acls("User:bob", "TOPIC", topic, "WRITE", host="10.20.30.40"))
    with pytest.raises(TopicAuthorizationFailedError):
        produce(bob, topic, enable_idempotence=False)
    admin.create_acls(acls("User:bob", "TOPIC", topic, "WRITE", host="127.0.0.1")
                      + acls("User:bob", "TOPIC", topic, "WRITE", host="10.20.30.40", permission="DENY"))
    assert produce(bob, topic, enable_idempotence=False) == 0


def test_mtls_principal_is_the_certificate_subject(secured, admin, pki):
    """Issue 15: on the mutual-TLS listener the principal is the client certificate's
    subject, ``User:CN=client,O=kproto tests`` (Kafka's default principal builder); an ACL
    for that principal lets it produce and consume, and none for it is a refusal."""
    assert f"User:{pki.client.subject}" == MTLS_PRINCIPAL
    topic = unique("mtls-")
    admin.create_topics([NewTopic(topic)])
    client = mtls(secured, pki)
    with pytest.raises(TopicAuthorizationFailedError):
        produce(client, topic, enable_idempotence=False)
    admin.create_acls(acls(MTLS_PRINCIPAL, "TOPIC", topic, "WRITE", "READ")
                      + acls(MTLS_PRINCIPAL, "GROUP", topic, "READ"))
    assert produce(client, topic, b"over mtls") == 0
    assert consume_group(client, topic, topic) == [b"over mtls"]
    assert {b.entry.principal for b in admin.describe_acls(AclBindingFilter(ResourcePatternFilter("TOPIC", topic)))} \
        == {MTLS_PRINCIPAL}


def test_metadata_and_list_groups_hide_what_bob_may_not_describe(secured, admin):
    """Issue 15: Metadata for every topic lists to bob only the topics he may DESCRIBE, and
    ListGroups only his groups, while alice sees hers; the admin sees all."""
    prefix = unique("hide-")
    mine, theirs = f"{prefix}bob", f"{prefix}alice"
    admin.create_topics([NewTopic(mine), NewTopic(theirs)])
    for group in (mine, theirs):
        admin.alter_group_offsets(group, {TopicPartition(mine, 0): 0})
    admin.create_acls(acls("User:bob", "TOPIC", mine, "DESCRIBE") + acls("User:bob", "GROUP", mine, "DESCRIBE")
                      + acls("User:alice", "TOPIC", theirs, "READ") + acls("User:alice", "GROUP", theirs, "READ"))

    def seen(user: str) -> tuple[set[str], set[str]]:
        with AdminClient(sasl(secured, user)) as client:
            topics = {t for t in client.list_topics() if t.startswith(prefix)}
            groups = {g.group_id for g in client.list_groups() if g.group_id.startswith(prefix)}
        return topics, groups

    assert seen("bob") == ({mine}, {mine})
    assert seen("alice") == ({theirs}, {theirs})
    assert seen("admin") == ({mine, theirs}, {mine, theirs})


def test_acl_changes_apply_to_connections_already_open(secured, admin):
    """Issue 15: an ACL the admin creates or deletes applies to the next request of a
    connection that authenticated before it: the authorizer decides per request, not per
    login."""
    topic = unique("live-")
    admin.create_topics([NewTopic(topic)])
    with Producer(sasl(secured, "alice"), enable_idempotence=False, **PRODUCER) as producer:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send(topic, b"before").result(10)
        admin.create_acls(acls("User:alice", "TOPIC", topic, "WRITE"))
        assert producer.send(topic, b"granted").result(10).offset == 0
        admin.delete_acls([AclBindingFilter(ResourcePatternFilter("TOPIC", topic))])
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send(topic, b"revoked").result(10)



def test_only_a_user_allowed_on_the_cluster_manages_scram_credentials(secured, admin):
    """Issue 15, a defect found with real principals: any logged-in user could reset
    another's SCRAM password or list the SCRAM users. Kafka checks ALTER on the cluster for
    AlterUserScramCredentials (``ControllerApis``) and DESCRIBE for
    DescribeUserScramCredentials (``KafkaApis``): bob is CLUSTER_AUTHORIZATION_FAILED for
    both, and alice's password stays hers; granted ALTER on the cluster, bob may."""
    with AdminClient(sasl(secured, "bob")) as bob:
        with pytest.raises(ClusterAuthorizationFailedError, match="Cluster authorization failed"):
            bob.alter_user_scram_credentials([UserScramCredentialUpsertion(
                "alice", ScramCredentialInfo("SCRAM-SHA-256", 4096), "stolen")])
        with pytest.raises(ClusterAuthorizationFailedError, match="Cluster authorization failed"):
            bob.describe_user_scram_credentials()
        admin.create_acls(acls("User:bob", "CLUSTER", "kafka-cluster", "ALTER"))
        try:
            assert set(bob.describe_user_scram_credentials()) == {"alice", "bob"}  # ALTER implies DESCRIBE
            bob.alter_user_scram_credentials([UserScramCredentialUpsertion(
                "bob", ScramCredentialInfo("SCRAM-SHA-256", 4096), SCRAM_PASSWORDS["bob"])])
        finally:
            admin.delete_acls([AclBindingFilter(ResourcePatternFilter("CLUSTER"),)])
    with AdminClient(sasl(secured, "alice", "SCRAM-SHA-256")) as alice:
        assert alice.list_topics() is not None  # her password was not changed by bob


def test_only_a_user_allowed_on_the_cluster_manages_client_quotas(secured, admin):
    """Issue 15, a defect found with real principals: any logged-in user could lift their own
    quota. Kafka checks ALTER_CONFIGS on the cluster for AlterClientQuotas and
    DESCRIBE_CONFIGS for DescribeClientQuotas: bob is CLUSTER_AUTHORIZATION_FAILED for both
    and the quotas stay as the admin set them."""
    from kproto.admin import ClientQuotaAlteration, ClientQuotaEntity

    entity = ClientQuotaEntity({ClientQuotaEntity.USER: "bob"})
    admin.alter_client_quotas([ClientQuotaAlteration(entity, [ClientQuotaAlteration.Op("producer_byte_rate", 1000)])])
    try:
        with AdminClient(sasl(secured, "bob")) as bob:
            with pytest.raises(ClusterAuthorizationFailedError, match="Cluster authorization failed"):
                bob.alter_client_quotas([ClientQuotaAlteration(entity, [ClientQuotaAlteration.Op("producer_byte_rate",
                                                                                                 None)])])
            with pytest.raises(ClusterAuthorizationFailedError, match="Cluster authorization failed"):
                bob.describe_client_quotas()
        assert admin.describe_client_quotas() == {entity: {"producer_byte_rate": 1000.0}}
    finally:
        admin.alter_client_quotas([ClientQuotaAlteration(entity, [ClientQuotaAlteration.Op("producer_byte_rate",
                                                                                           None)])])
