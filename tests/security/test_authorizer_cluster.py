"""A MiniCluster with the authorizer on (issue 15, items 3 and 4): the ACLs are the
cluster's (the controller's metadata records, as KRaft), and the brokers' requests to each
other (a follower's Fetch, WriteTxnMarkers, AddPartitionsToTxn) keep working while clients
get only what their ACLs give."""

import time

import pytest

from kproto import Consumer, Producer
from kproto.admin import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AdminClient,
    NewTopic,
    ResourcePattern,
    ResourcePatternFilter,
)
from kproto.errors import TopicAuthorizationFailedError
from kproto.protocol import ApiKey
from kproto.protocol.messages import DescribeAclsRequest
from minibroker import MiniCluster
from tests.support.leaks import nothing_left_behind  # noqa: F401  (autouse)
from tests.support.raw_client import RawClient

# Open until the first ACL names a resource: the client can make the ACLs below.
CONFIG = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
          "allow.everyone.if.no.acl.found": "true"}


def acl(resource_type, name, operation, permission="ALLOW"):
    return AclBinding(ResourcePattern(resource_type, name), AccessControlEntry("User:*", "*", operation, permission))


def described(port):
    client = RawClient(port)
    try:
        response = client.request(ApiKey.DESCRIBE_ACLS, 3, DescribeAclsRequest(
            resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1, principal_filter=None,
            host_filter=None, operation=1, permission_type=1))
        assert response.error_code == 0, response
        return sorted((r.resource_name, a.operation, a.permission_type) for r in response.resources for a in r.acls)
    finally:
        client.close()


def everywhere(cluster, expected):
    """Whether every broker describes ``expected`` within 10 s (each applies the
    controller's records as they reach it; the broker that was asked has them at once)."""
    deadline = time.monotonic() + 10
    while [described(b.port) for b in cluster.brokers] != [expected] * len(cluster.brokers):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_acls_are_the_clusters_and_brokers_still_replicate(tmp_path):
    """Issue 15 items 3 and 4: ACLs made through one broker are every broker's; with an ACL
    on the cluster (so CLUSTER_ACTION is no longer open), acks=all over RF 3 (followers'
    Fetch) and a transaction (WriteTxnMarkers between brokers) still succeed, and a DENY
    refuses a produce whichever broker leads."""
    with MiniCluster(3, data_dir=tmp_path, config=CONFIG) as cluster:
        cluster.create_topic("replicated", partitions=3, replication_factor=3)
        cluster.create_topic("blocked", partitions=3, replication_factor=1)
        bootstrap = cluster.bootstrap_servers
        with AdminClient(bootstrap_servers=bootstrap) as admin:
            admin.create_acls([acl("CLUSTER", "kafka-cluster", "ALTER"), acl("TOPIC", "*", "ALL"),
                               acl("GROUP", "*", "ALL"), acl("TRANSACTIONAL_ID", "*", "ALL"),
                               acl("TOPIC", "blocked", "WRITE", "DENY")])
        expected = sorted([("kafka-cluster", 7, 3), ("*", 2, 3), ("*", 2, 3), ("*", 2, 3), ("blocked", 4, 2)])
        assert everywhere(cluster, expected)
        with Producer(bootstrap_servers=bootstrap, acks="all", transactional_id="acl-txn",
                      delivery_timeout_ms=20000) as producer:
            producer.init_transactions(20)
            producer.begin_transaction()
            for i in range(6):
                producer.send("replicated", b"v%d" % i, partition=i % 3)
            producer.commit_transaction(20)
        with Producer(bootstrap_servers=bootstrap, delivery_timeout_ms=10000) as producer:
            for partition in range(3):  # a leader on each broker
                with pytest.raises(TopicAuthorizationFailedError):
                    producer.send("blocked", b"x", partition=partition).result(10)
        with Consumer(bootstrap_servers=bootstrap, group_id="acl-group", auto_offset_reset="earliest",
                      isolation_level="read_committed") as consumer:
            consumer.subscribe(["replicated"])
            seen = []
            for _ in range(20):
                seen += consumer.poll(1)
                if len(seen) == 6:
                    break
            assert sorted(r.value for r in seen) == [b"v%d" % i for i in range(6)]


def test_acls_go_through_the_controller_endpoint_in_process_mode(tmp_path):
    """Issue 15 item 4: brokers in their own processes create and delete ACLs through the
    controller endpoint (CreateAcls / DeleteAcls over the wire), and every broker has them."""
    with MiniCluster(2, data_dir=tmp_path, config=CONFIG, processes=True) as cluster:
        with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
            made = [acl("TOPIC", "t", "READ"), acl("GROUP", "g", "READ", "DENY")]
            admin.create_acls(made)
            assert everywhere(cluster, [("g", 3, 2), ("t", 3, 3)])
            assert sorted(admin.delete_acls([AclBindingFilter(ResourcePatternFilter("GROUP"))]).values()) == [[made[1]]]
            assert everywhere(cluster, [("t", 3, 3)])


def test_an_anonymous_client_is_not_given_the_brokers_rights(tmp_path):
    """Issue 15, the inter-broker stopgap made narrow: in a MiniCluster with the authorizer
    on, an anonymous client (client id ``raw-test``) gets neither the topic DESCRIBE nor the
    CLUSTER_ACTION the brokers' own requests get: Metadata hides a topic whose ACLs do not
    name it, and WriteTxnMarkers is CLUSTER_AUTHORIZATION_FAILED; the brokers' replication
    (acks=all over RF 2: the followers' Fetch) still works."""
    from kproto.protocol.messages import MetadataRequest, WriteTxnMarkersRequest

    with MiniCluster(2, data_dir=tmp_path, config=CONFIG) as cluster:
        cluster.create_topic("open", partitions=2, replication_factor=2)
        cluster.create_topic("secret", partitions=1, replication_factor=2)
        with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
            admin.create_acls([acl("CLUSTER", "kafka-cluster", "ALTER"), acl("TOPIC", "open", "WRITE"),
                               AclBinding(ResourcePattern("TOPIC", "secret"),
                                          AccessControlEntry("User:bob", "*", "READ", "ALLOW"))])
        assert everywhere(cluster, sorted([("kafka-cluster", 7, 3), ("open", 4, 3), ("secret", 3, 3)]))
        with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all", enable_idempotence=False,
                      delivery_timeout_ms=10000) as producer:
            for partition in range(2):  # a leader on each broker, its follower on the other
                producer.send("open", b"v", partition=partition).result(10)
        for broker in cluster.brokers:
            client = RawClient(broker.port)
            try:
                listed = client.request(ApiKey.METADATA, 12, MetadataRequest(topics=None))
                assert [t.name for t in listed.topics] == ["open"]
                markers = client.request(ApiKey.WRITE_TXN_MARKERS, 1, WriteTxnMarkersRequest(markers=[
                    WriteTxnMarkersRequest.WritableTxnMarker(producer_id=1, producer_epoch=0, transaction_result=True, coordinator_epoch=0,
                    topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name="open", partition_indexes=[0])])]))
                assert [p.error_code for t in markers.markers[0].topics for p in t.partitions] == [31]
            finally:
                client.close()


def test_the_controller_endpoint_takes_requests_only_from_the_clusters_brokers(tmp_path):
    """Issue 15, review item 6: MiniCluster(processes=True)'s controller endpoint answers
    only connections that authenticate with the secret the cluster hands its broker
    processes (SASL PLAIN): a local client that the brokers refuse cannot delete every ACL
    by talking to the controller port instead; without SASL the connection is closed
    unanswered, with a wrong password it is SASL_AUTHENTICATION_FAILED; the brokers (which
    have the secret) still go through it."""
    from kproto.errors import ClusterAuthorizationFailedError, SaslAuthenticationFailedError
    from kproto.protocol.messages import (
        DeleteAclsRequest,
        SaslAuthenticateRequest,
        SaslHandshakeRequest,
    )
    from kproto.security import plain

    ACLS = [("kafka-cluster", 5, 3), ("kafka-cluster", 7, 2), ("kafka-cluster", 8, 3), ("t", 3, 3)]
    every = DeleteAclsRequest.DeleteAclsFilter(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                                               principal_filter=None, host_filter=None, operation=1, permission_type=1)
    with MiniCluster(1, data_dir=tmp_path, config=CONFIG, processes=True) as cluster:
        with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
            admin.create_acls([acl("TOPIC", "t", "READ"), acl("CLUSTER", "kafka-cluster", "DESCRIBE"),
                               acl("CLUSTER", "kafka-cluster", "CREATE"), acl("CLUSTER", "kafka-cluster", "ALTER", "DENY")])
            assert everywhere(cluster, ACLS)
            with pytest.raises(ClusterAuthorizationFailedError):  # the brokers refuse it
                admin.delete_acls([AclBindingFilter()])
        port = cluster._endpoint.port
        unauthenticated = RawClient(port)
        try:
            unauthenticated.send(ApiKey.DELETE_ACLS, 3, DeleteAclsRequest(filters=[every]))
            assert unauthenticated.is_closed_by_peer()
        finally:
            unauthenticated.close()
        guesser = RawClient(port)
        try:
            assert guesser.request(ApiKey.SASL_HANDSHAKE, 1, SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
            refused = guesser.request(ApiKey.SASL_AUTHENTICATE, 2, SaslAuthenticateRequest(
                auth_bytes=plain.initial_response("minicluster-broker", "guess")))
            assert refused.error_code == SaslAuthenticationFailedError.code
            assert guesser.is_closed_by_peer()
        finally:
            guesser.close()
        assert everywhere(cluster, ACLS)
        with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:  # forwarded by the broker
            admin.create_topics([NewTopic("still", 1, 1)])
            assert "still" in admin.list_topics()
