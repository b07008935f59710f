"""A MiniCluster with the authorizer on (issue 15, item 3): the brokers' requests to each
other (a follower's Fetch, WriteTxnMarkers, AddPartitionsToTxn) keep working, while
clients get only what their ACLs give."""

import pytest

from kproto import Consumer, Producer
from kproto.admin import AdminClient
from kproto.errors import ClusterAuthorizationFailedError
from minibroker import MiniCluster
from minibroker.acl_store import AclStore
from minibroker.authorizer import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from tests.support.leaks import nothing_left_behind  # noqa: F401  (autouse)

ON = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}


def seed(data_dir, brokers):
    """Every broker's ACLs file: User:ANONYMOUS may do ALL on every topic, group and
    transactional id, nothing on the cluster (so not manage ACLs)."""
    acls = [AclBinding(rtype, "*", PatternType.LITERAL, "User:ANONYMOUS", "*", AclOperation.ALL,
                       AclPermissionType.ALLOW)
            for rtype in (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID)]
    for node in range(brokers):
        (data_dir / f"broker-{node}").mkdir(parents=True)
        AclStore([data_dir / f"broker-{node}"]).save(acls)


def test_replication_and_transactions_work_with_the_authorizer_on(tmp_path):
    """Issue 15 item 3: acks=all over RF 3 (followers' Fetch needs CLUSTER_ACTION) and a
    transaction (WriteTxnMarkers between brokers) succeed; the client itself may not
    describe the ACLs (no DESCRIBE on the cluster)."""
    seed(tmp_path, 3)
    with MiniCluster(3, data_dir=tmp_path, config=ON) as cluster:
        cluster.create_topic("replicated", partitions=2, replication_factor=3)
        bootstrap = cluster.bootstrap_servers
        with Producer(bootstrap_servers=bootstrap, acks="all", transactional_id="acl-txn",
                      delivery_timeout_ms=20000) as producer:
            producer.init_transactions(20)
            producer.begin_transaction()
            for i in range(4):
                producer.send("replicated", b"v%d" % i, partition=i % 2)
            producer.commit_transaction(20)
        with Consumer(bootstrap_servers=bootstrap, group_id="acl-group", auto_offset_reset="earliest",
                      isolation_level="read_committed") as consumer:
            consumer.subscribe(["replicated"])
            seen = []
            for _ in range(20):
                seen += consumer.poll(1)
                if len(seen) == 4:
                    break
            assert sorted(r.value for r in seen) == [b"v0", b"v1", b"v2", b"v3"]
        with AdminClient(bootstrap_servers=bootstrap) as admin:
            with pytest.raises(ClusterAuthorizationFailedError):
                admin.describe_acls()
