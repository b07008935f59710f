"""Authorized operations (KIP-430): what Metadata, DescribeCluster and DescribeGroups
report when asked, on the wire and through confluent-kafka's AdminClient."""

import pytest

from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    DescribeClusterRequest,
    DescribeGroupsRequest,
    MetadataRequest,
)
from minibroker.authorizer import NOT_REQUESTED, AclOperation, ResourceType, authorized_operations
from tests.minibroker.test_server import create

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka import TopicCollection  # noqa: E402
from confluent_kafka.admin import AclOperation as CkAclOperation  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

TOPIC_OPS = {"READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}
CLUSTER_OPS = {"CREATE", "ALTER", "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE"}
GROUP_OPS = {"READ", "DESCRIBE", "DELETE"}


def _names(bits):
    return {op.name for op in AclOperation if bits & (1 << op)}


def test_bit_sets_are_kafkas():
    """Issue 10 item 18: the bit sets are Kafka's AclEntry.supportedOperations, by code."""
    assert _names(authorized_operations(ResourceType.TOPIC)) == TOPIC_OPS
    assert _names(authorized_operations(ResourceType.CLUSTER)) == CLUSTER_OPS
    assert _names(authorized_operations(ResourceType.GROUP)) == GROUP_OPS
    assert authorized_operations(ResourceType.TOPIC) == 3576  # as a Kafka broker without authorizer
    assert authorized_operations(ResourceType.CLUSTER) == 8096
    assert authorized_operations(ResourceType.GROUP) == 328


@pytest.mark.parametrize("version", [8, 10, 11, 12])
def test_metadata_reports_operations_only_when_asked(raw, version):
    """Issue 10 item 18: Metadata v8+ answers every operation of a topic (and of the
    cluster at v8-10) when asked, and INT32_MIN when not."""
    client = raw()
    create(client, "ops")
    for asked in (False, True):
        response = client.request(ApiKey.METADATA, version, MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name="ops")],
            include_cluster_authorized_operations=asked and version <= 10,
            include_topic_authorized_operations=asked))
        (topic,) = response.topics
        assert topic.topic_authorized_operations == (3576 if asked else NOT_REQUESTED)
        if version <= 10:
            assert response.cluster_authorized_operations == (8096 if asked else NOT_REQUESTED)


def test_describe_cluster_and_groups_report_operations_when_asked(raw):
    """Issue 10 item 18: DescribeCluster and DescribeGroups v3+ answer the cluster's and
    the group's operations when asked."""
    client = raw()
    for asked in (False, True):
        cluster = client.request(ApiKey.DESCRIBE_CLUSTER, 1, DescribeClusterRequest(
            include_cluster_authorized_operations=asked))
        assert cluster.cluster_authorized_operations == (8096 if asked else NOT_REQUESTED)
        (group,) = client.request(ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest(
            groups=["some-group"], include_authorized_operations=asked)).groups
        assert group.authorized_operations == (328 if asked else NOT_REQUESTED)


def test_confluent_admin_describes_authorized_operations(broker):
    """Issue 10 item 18: confluent-kafka's describe_topics and describe_cluster with
    include_authorized_operations=True list every operation, as a Kafka without ACLs."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    raw_producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers})
    raw_producer.produce("ck-ops", b"x")
    assert raw_producer.flush(10) == 0
    (future,) = admin.describe_topics(TopicCollection(["ck-ops"]), include_authorized_operations=True).values()
    topic = future.result(10)
    assert {op.name for op in topic.authorized_operations} == TOPIC_OPS
    cluster = admin.describe_cluster(include_authorized_operations=True).result(10)
    assert {op.name for op in cluster.authorized_operations} == CLUSTER_OPS
    assert all(isinstance(op, CkAclOperation) for op in cluster.authorized_operations)
    (future,) = admin.describe_consumer_groups(["ck-group"], include_authorized_operations=True).values()
    assert {op.name for op in future.result(10).authorized_operations} == GROUP_OPS
