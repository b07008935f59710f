"""The peer's address reaches handlers (minibroker/handlers/__init__.py RequestContext):
DescribeGroups shows each member's client_host as Kafka does, "/127.0.0.1"."""

import time

import pytest

from kproto.protocol import ApiKey, RequestHeader
from kproto.protocol.messages import DescribeGroupsRequest, JoinGroupRequest
from minibroker.handlers import RequestContext, client_host


def test_client_host_is_javas_inet_address_to_string():
    assert client_host(("127.0.0.1", 50_000)) == "/127.0.0.1"
    assert client_host(("::1", 50_000, 0, 0)) == "/0:0:0:0:0:0:0:1"
    assert client_host(("2001:db8::ab:1", 1, 0, 0)) == "/2001:db8:0:0:0:0:ab:1"
    assert client_host(("::ffff:10.1.2.3", 1, 0, 0)) == "/10.1.2.3"  # Java makes it an Inet4Address
    assert client_host(("fe80::1%eth0", 1, 0, 2)) == "/fe80:0:0:0:0:0:0:1"
    assert client_host("/tmp/unix.sock") == ""
    assert client_host(None) == ""


def test_the_context_is_the_header_then_the_peer():
    """Handlers read header fields off the context by name: the order must match; who sent
    it (principal, listener) follows the peer, unauthenticated by default."""
    assert RequestContext._fields == (*RequestHeader._fields, "client_host", "principal", "listener_name")
    header = RequestHeader(ApiKey.FETCH, 12, 5, "me", None)
    assert RequestContext.of(header, "/10.0.0.1")[:5] == header
    assert RequestContext.of(header, "/10.0.0.1").principal == "User:ANONYMOUS"


def test_describe_groups_shows_the_members_client_host(raw):
    client = raw()
    joined = client.request(ApiKey.JOIN_GROUP, 0, JoinGroupRequest(
        group_id="g", session_timeout_ms=10_000, member_id="", protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")]))
    assert joined.error_code == 0
    described = raw().request(ApiKey.DESCRIBE_GROUPS, 0, DescribeGroupsRequest(groups=["g"]))
    [member] = described.groups[0].members
    assert (member.member_id, member.client_id, member.client_host) == (joined.member_id, "raw-test", "/127.0.0.1")


def test_confluent_admin_sees_the_consumers_host(broker):
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic("hosts-topic", 1, 1)])["hosts-topic"].result(10)
    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "hosts",
                            "client.id": "the-consumer"})
    try:
        assigned = []
        consumer.subscribe(["hosts-topic"], on_assign=lambda c, partitions: assigned.append(partitions))
        deadline = time.monotonic() + 20
        while not assigned and time.monotonic() < deadline:
            consumer.poll(0.1)
        assert assigned
        group = admin.describe_consumer_groups(["hosts"])["hosts"].result(10)
        [member] = group.members
        assert (member.client_id, member.host) == ("the-consumer", "/127.0.0.1")
    finally:
        consumer.close()
