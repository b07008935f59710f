"""minibroker's authorizer over the wire (issue 15, item 6): real brokers, kproto's clients
and peers (confluent-kafka, kafka-python) denied per API with each client's own error,
Metadata and ListGroups hiding what the principal may not describe, and ACLs kept
across a restart.

There is no SASL yet, so every client is ``User:ANONYMOUS``. Each broker starts with the
ACLs file seeded with one ACL, ALTER on the cluster for ``User:ANONYMOUS`` (which implies
DESCRIBE: it may create, delete and describe ACLs, nothing else); each test then grants
and denies through the admin client, as an operator would.
"""

import pytest

from kproto import Consumer, Producer
from kproto.admin import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourcePattern,
    ResourcePatternFilter,
)
from kproto.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    DescribeClusterRequest,
    InitProducerIdRequest,
    ListGroupsRequest,
    MetadataRequest,
)
from kproto.structs import TopicPartition
from minibroker import MiniBroker
from minibroker.acl_store import AclStore
from minibroker.authorizer import AclBinding as BrokerAcl
from minibroker.authorizer import AclOperation, AclPermissionType, PatternType, ResourceType
from tests.support.leaks import nothing_left_behind  # noqa: F401  (autouse)
from tests.support.raw_client import RawClient

ON = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
ANON = "User:ANONYMOUS"
PRODUCER = {"delivery.timeout.ms": 5000, "request.timeout.ms": 5000, "max.block.ms": 5000}
CONSUMER = {"default.api.timeout.ms": 5000, "request.timeout.ms": 5000}


def start(data_dir, **config):
    """A broker with the authorizer on; ANONYMOUS may manage ACLs (seeded in the file)."""
    AclStore([data_dir]).save([BrokerAcl(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, ANON, "*",
                                         AclOperation.ALTER, AclPermissionType.ALLOW)])
    return MiniBroker(data_dir=data_dir, config={**ON, **config}).start()


@pytest.fixture
def secured(tmp_path):
    broker = start(tmp_path)
    yield broker
    broker.stop()


@pytest.fixture
def admin(secured):
    with AdminClient(bootstrap_servers=secured.bootstrap_servers) as client:
        yield client


def allow(resource_type, name, *operations, pattern="LITERAL", permission="ALLOW"):
    return [AclBinding(ResourcePattern(resource_type, name, pattern), AccessControlEntry(ANON, "*", op, permission))
            for op in operations]


def test_create_topic_is_denied_without_create(admin):
    """Issue 15 item 6: CreateTopics without CREATE on the cluster or topic is
    TOPIC_AUTHORIZATION_FAILED; a PREFIXED CREATE lets the topics it covers be made."""
    with pytest.raises(TopicAuthorizationFailedError, match="Authorization failed"):
        admin.create_topics([NewTopic("denied-topic")])
    admin.create_acls(allow("TOPIC", "team-", "CREATE", "DESCRIBE", pattern="PREFIXED"))
    assert set(admin.create_topics([NewTopic("team-a")])) == {"team-a"}
    with pytest.raises(TopicAuthorizationFailedError) as raised:
        admin.create_topics([NewTopic("team-b"), NewTopic("other")])
    assert raised.value.results["team-b"] is not None and isinstance(raised.value.results["other"],
                                                                      TopicAuthorizationFailedError)
    assert admin.list_topics() == ["team-a", "team-b"]


def test_produce_and_fetch_need_write_and_read(admin, secured):
    """Issue 15 item 6: kproto's producer without WRITE gets TOPIC_AUTHORIZATION_FAILED (its
    idempotent InitProducerId, with WRITE on no topic, CLUSTER_AUTHORIZATION_FAILED); its
    consumer without READ TOPIC_AUTHORIZATION_FAILED; granted, both work."""
    admin.create_acls(allow("TOPIC", "pf", "CREATE", "DESCRIBE"))
    admin.create_topics([NewTopic("pf")])
    bootstrap = secured.bootstrap_servers
    with Producer(bootstrap_servers=bootstrap, **PRODUCER) as producer:
        with pytest.raises(ClusterAuthorizationFailedError, match="CLUSTER_AUTHORIZATION_FAILED.*InitProducerId"):
            producer.send("pf", b"v").result(10)
    with Producer(bootstrap_servers=bootstrap, enable_idempotence=False, **PRODUCER) as producer:
        with pytest.raises(TopicAuthorizationFailedError, match=r"TOPIC_AUTHORIZATION_FAILED\] producing to pf-0"):
            producer.send("pf", b"v").result(10)
    admin.create_acls(allow("TOPIC", "pf", "WRITE"))
    with Producer(bootstrap_servers=bootstrap, **PRODUCER) as producer:
        assert producer.send("pf", b"v").result(10).offset == 0
    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", **CONSUMER) as consumer:
        consumer.assign([("pf", 0)])
        with pytest.raises(TopicAuthorizationFailedError):
            consumer.poll(5)
    admin.create_acls(allow("TOPIC", "pf", "READ"))
    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", **CONSUMER) as consumer:
        consumer.assign([("pf", 0)])
        assert [r.value for r in consumer.poll(5)] == [b"v"]


def test_join_and_commit_need_read_on_group_and_topic(admin, secured):
    """Issue 15 item 6: a kproto consumer joining a group it may not READ gets
    GROUP_AUTHORIZATION_FAILED; with the group, a commit to a topic it may not READ gets
    TOPIC_AUTHORIZATION_FAILED."""
    admin.create_acls(allow("TOPIC", "jc", "CREATE", "READ") + allow("TOPIC", "jc-other", "CREATE", "DESCRIBE"))
    admin.create_topics([NewTopic("jc"), NewTopic("jc-other")])
    config = dict(bootstrap_servers=secured.bootstrap_servers, group_id="jc-group", **CONSUMER)
    with Consumer(**config) as consumer:  # FindCoordinator needs DESCRIBE on the group
        consumer.subscribe(["jc"])
        with pytest.raises(GroupAuthorizationFailedError, match="GROUP_AUTHORIZATION_FAILED.*coordinator"):
            consumer.poll(5)
    admin.create_acls(allow("GROUP", "jc-group", "DESCRIBE"))
    with Consumer(**config) as consumer:  # JoinGroup needs READ
        consumer.subscribe(["jc"])
        with pytest.raises(GroupAuthorizationFailedError, match="GROUP_AUTHORIZATION_FAILED") as raised:
            consumer.poll(5)
        assert "coordinator" not in str(raised.value)
    admin.create_acls(allow("GROUP", "jc-", "READ", pattern="PREFIXED"))
    with Consumer(**config) as consumer:
        consumer.subscribe(["jc"])
        consumer.poll(2)
        assert consumer.assignment() == {("jc", 0)}
        consumer.commit({("jc", 0): 0})
        with pytest.raises(TopicAuthorizationFailedError):
            consumer.commit({("jc-other", 0): 0})


def test_describe_configs_needs_describe_configs(admin):
    """Issue 15 item 6: DescribeConfigs of a topic needs DESCRIBE_CONFIGS on it (ALTER_CONFIGS
    implies it), of the broker on the cluster: TOPIC_ / CLUSTER_AUTHORIZATION_FAILED."""
    admin.create_acls(allow("TOPIC", "dc", "CREATE", "DESCRIBE"))
    admin.create_topics([NewTopic("dc")])
    with pytest.raises(TopicAuthorizationFailedError, match="Authorization failed"):
        admin.describe_configs([ConfigResource.topic("dc")])
    with pytest.raises(ClusterAuthorizationFailedError):
        admin.describe_configs([ConfigResource.broker(0)])
    admin.create_acls(allow("TOPIC", "dc", "ALTER_CONFIGS"))
    assert "retention.ms" in admin.describe_configs([ConfigResource.topic("dc")])[ConfigResource.topic("dc")]


def test_transactional_id_needs_write(admin, secured):
    """Issue 15 item 6: a transactional producer without WRITE on its id fails
    init_transactions with TRANSACTIONAL_ID_AUTHORIZATION_FAILED; granted, it commits."""
    admin.create_acls(allow("TOPIC", "tx", "CREATE", "WRITE"))
    admin.create_topics([NewTopic("tx")])
    config = dict(bootstrap_servers=secured.bootstrap_servers, transactional_id="tx-app", **PRODUCER)
    with Producer(**config) as producer:
        with pytest.raises(TransactionalIdAuthorizationFailedError, match="TRANSACTIONAL_ID_AUTHORIZATION_FAILED"):
            producer.init_transactions(10)
    admin.create_acls(allow("TRANSACTIONAL_ID", "tx-app", "WRITE"))
    with Producer(**config) as producer:
        producer.init_transactions(10)
        producer.begin_transaction()
        producer.send("tx", b"in-txn")
        producer.commit_transaction(10)


def test_metadata_hides_topics_the_principal_may_not_describe(admin, secured):
    """Issue 15 item 6: every topic lists only those the principal may DESCRIBE; a named one
    it may not is TOPIC_AUTHORIZATION_FAILED, existing or not, and one it may describe but
    not create is not auto-created."""
    admin.create_acls(allow("TOPIC", "*", "CREATE") + allow("TOPIC", "seen", "DESCRIBE")
                      + allow("TOPIC", "new", "DESCRIBE"))
    admin.create_topics([NewTopic("seen"), NewTopic("hidden")])
    admin.delete_acls([AclBindingFilter(ResourcePatternFilter("TOPIC", "*", "LITERAL"))])  # no more CREATE
    client = RawClient(secured.port)
    try:
        every = client.request(ApiKey.METADATA, 12, MetadataRequest(topics=None))
        assert [t.name for t in every.topics] == ["seen"]
        named = client.request(ApiKey.METADATA, 12, MetadataRequest(topics=[
            MetadataRequest.MetadataRequestTopic(name=n) for n in ("seen", "hidden", "absent", "new")]))
        assert {t.name: t.error_code for t in named.topics} == {"seen": 0, "hidden": 29, "absent": 29, "new": 29}
    finally:
        client.close()
    assert admin.list_topics() == ["seen"]


def test_idempotent_init_producer_id_is_refused_by_a_wildcard_deny(admin, secured):
    """Issue 15, review item 1: an ALLOW of WRITE on every topic for everyone, then a DENY
    of WRITE on every topic for this principal: Kafka's authorizeByResourceType denies, so
    an idempotent InitProducerId is CLUSTER_AUTHORIZATION_FAILED."""
    admin.create_acls([AclBinding(ResourcePattern("TOPIC", "*"), AccessControlEntry("User:*", "*", "WRITE", "ALLOW"))])
    admin.create_acls(allow("TOPIC", "*", "WRITE", permission="DENY"))
    client = RawClient(secured.port)
    try:
        answer = client.request(ApiKey.INIT_PRODUCER_ID, 4, InitProducerIdRequest(
            transactional_id=None, transaction_timeout_ms=60000))
        assert (answer.error_code, answer.producer_id) == (ClusterAuthorizationFailedError.code, -1)
    finally:
        client.close()


def test_cluster_authorized_operations_need_describe_on_the_cluster(admin, secured):
    """Issue 15, review item 2 (KIP-430): a principal without DESCRIBE on the cluster is
    told 0 by DescribeCluster and Metadata v8-10, as KafkaApis answers."""
    admin.create_acls(allow("CLUSTER", "kafka-cluster", "IDEMPOTENT_WRITE"))
    admin.delete_acls([AclBindingFilter(ResourcePatternFilter("CLUSTER", "kafka-cluster", "LITERAL"),
                                        AccessControlEntryFilter(operation="ALTER"))])  # ALTER implies DESCRIBE
    client = RawClient(secured.port)
    try:
        cluster = client.request(ApiKey.DESCRIBE_CLUSTER, 0, DescribeClusterRequest(
            include_cluster_authorized_operations=True))
        metadata = client.request(ApiKey.METADATA, 10, MetadataRequest(
            topics=[], include_cluster_authorized_operations=True))
        assert (cluster.cluster_authorized_operations, metadata.cluster_authorized_operations) == (0, 0)
    finally:
        client.close()


def test_list_groups_hides_groups_without_describe(admin, secured):
    """Issue 15 item 6: ListGroups lists every group to a principal that may DESCRIBE the
    cluster (ALTER implies it), else only the groups it may DESCRIBE."""
    admin.create_acls(allow("TOPIC", "lg", "CREATE", "READ") + allow("GROUP", "*", "READ"))
    admin.create_topics([NewTopic("lg")])
    for group in ("mine", "theirs"):
        admin.alter_group_offsets(group, {TopicPartition("lg", 0): 0})
    assert sorted(g.group_id for g in admin.list_groups()) == ["mine", "theirs"]
    admin.delete_acls([AclBindingFilter(ResourcePatternFilter("GROUP"))])  # READ implies DESCRIBE
    admin.create_acls(allow("CLUSTER", "kafka-cluster", "DESCRIBE", permission="DENY")
                      + allow("GROUP", "mine", "DESCRIBE"))
    client = RawClient(secured.port)
    try:
        listed = client.request(ApiKey.LIST_GROUPS, 4, ListGroupsRequest(states_filter=[]))
        assert [g.group_id for g in listed.groups] == ["mine"]
    finally:
        client.close()
    assert [g.group_id for g in admin.list_groups()] == ["mine"]


def test_acls_survive_a_restart(tmp_path):
    """Issue 15 item 4: ACLs made by CreateAcls are in force after the broker restarts on
    its log directory, and DeleteAcls' deletions too."""
    broker = start(tmp_path)
    try:
        with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
            admin.create_acls(allow("TOPIC", "kept", "CREATE", "DESCRIBE") + allow("TOPIC", "gone", "CREATE"))
            admin.delete_acls([AclBindingFilter(ResourcePatternFilter("TOPIC", "gone"))])
    finally:
        broker.stop()
    broker = MiniBroker(data_dir=tmp_path, config=ON).start()
    try:
        with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
            assert sorted((b.pattern.name, b.entry.operation.name) for b in admin.describe_acls()) == [
                ("kafka-cluster", "ALTER"), ("kept", "CREATE"), ("kept", "DESCRIBE")]
            admin.create_topics([NewTopic("kept")])
            with pytest.raises(TopicAuthorizationFailedError):
                admin.create_topics([NewTopic("gone")])
    finally:
        broker.stop()


def test_confluent_producer_and_consumer_see_authorization_errors(admin, secured):
    """Issue 15 item 6, librdkafka as the oracle: a produce to a topic without WRITE fails
    with TOPIC_AUTHORIZATION_FAILED ("Broker: Topic authorization failed"), a consumer of a
    group without READ with GROUP_AUTHORIZATION_FAILED; authorized operations (KIP-430)
    report the principal's real rights."""
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient as CkAdmin

    admin.create_acls(allow("TOPIC", "ck", "CREATE", "READ"))
    admin.create_topics([NewTopic("ck")])
    bootstrap = secured.bootstrap_servers
    failures = []
    producer = ck.Producer({"bootstrap.servers": bootstrap, "enable.idempotence": False,
                            "message.timeout.ms": 5000})
    producer.produce("ck", b"v", on_delivery=lambda err, msg: failures.append(err))
    producer.flush(10)
    assert [e.code() for e in failures] == [ck.KafkaError.TOPIC_AUTHORIZATION_FAILED]
    assert "Topic authorization failed" in failures[0].str()

    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "ck-group", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe(["ck"])
        message = consumer.poll(5)
        assert message is not None and message.error().code() == ck.KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        consumer.close()

    ck_admin = CkAdmin({"bootstrap.servers": bootstrap})
    (future,) = ck_admin.describe_topics(TopicCollection(["ck"]), include_authorized_operations=True).values()
    assert {op.name for op in future.result(10).authorized_operations} == {"CREATE", "READ", "DESCRIBE"}
    cluster = ck_admin.describe_cluster(include_authorized_operations=True).result(10)
    assert {op.name for op in cluster.authorized_operations} == {"ALTER", "DESCRIBE"}


def test_kafka_python_consumer_is_refused_its_topic(admin, secured):
    """Issue 15 item 6, kafka-python as the oracle: a consumer assigned a topic it may not
    READ raises TopicAuthorizationFailedError."""
    kafka = pytest.importorskip("kafka")
    admin.create_acls(allow("TOPIC", "kp", "CREATE", "DESCRIBE"))
    admin.create_topics([NewTopic("kp")])
    consumer = kafka.KafkaConsumer(bootstrap_servers=secured.bootstrap_servers, auto_offset_reset="earliest")
    try:
        consumer.assign([kafka.TopicPartition("kp", 0)])
        with pytest.raises(kafka.errors.TopicAuthorizationFailedError):
            consumer.poll(5000)
    finally:
        consumer.close()


def test_admin_calls_get_each_apis_authorization_error(admin):
    """Issue 15 item 3: with only CREATE and DESCRIBE on a topic (and ALTER on the cluster,
    so not CLUSTER_ACTION), each admin call is refused with the error Kafka's KafkaApis
    gives its request, and the refusal of one item leaves the others answered."""
    tp = TopicPartition("adm", 0)
    admin.create_acls(allow("TOPIC", "adm", "CREATE", "DESCRIBE"))
    admin.create_topics([NewTopic("adm")])
    refusals = [
        (lambda: admin.delete_records({tp: 0}), TopicAuthorizationFailedError),
        (lambda: admin.create_partitions({"adm": 2}), TopicAuthorizationFailedError),
        (lambda: admin.delete_topics(["adm"]), TopicAuthorizationFailedError),
        (lambda: admin.describe_producers([tp]), TopicAuthorizationFailedError),
        (lambda: admin.describe_groups(["g"]), GroupAuthorizationFailedError),
        (lambda: admin.delete_groups(["g"]), GroupAuthorizationFailedError),
        (lambda: admin.list_group_offsets("g"), GroupAuthorizationFailedError),
        (lambda: admin.alter_configs({ConfigResource.topic("adm"): {"retention.ms": "1000"}}),
         TopicAuthorizationFailedError),
        (lambda: admin.describe_transactions(["tx"]), TransactionalIdAuthorizationFailedError),
        (lambda: admin.abort_transaction("adm", 0, 1, 0, 0), ClusterAuthorizationFailedError),  # WriteTxnMarkers
    ]
    for call, error in refusals:
        with pytest.raises(error):
            call()
    assert admin.list_offsets({tp: "latest"})[tp].offset == 0  # DESCRIBE is enough
