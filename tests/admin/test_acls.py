"""The admin client's ACL calls against minibroker with the authorizer on, kafka-python's
admin client as the counterpart (issue 15, items 2 and 5)."""

import asyncio

import pytest

from kproto.admin import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AdminClient,
    AIOAdminClient,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kproto.errors import (
    ClusterAuthorizationFailedError,
    InvalidRequestError,
    SecurityDisabledError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import DeleteAclsRequest, DescribeAclsRequest
from minibroker import MiniBroker
from tests.support.raw_client import RawClient

kafka = pytest.importorskip("kafka")
from kafka.admin import ACL as KpACL  # noqa: E402
from kafka.admin import ACLFilter as KpACLFilter  # noqa: E402
from kafka.admin import ACLOperation as KpOperation  # noqa: E402
from kafka.admin import ACLPermissionType as KpPermission  # noqa: E402
from kafka.admin import ACLResourcePatternType as KpPatternType  # noqa: E402
from kafka.admin import ResourcePattern as KpPattern  # noqa: E402
from kafka.admin import ResourcePatternFilter as KpPatternFilter  # noqa: E402
from kafka.admin import ResourceType as KpResourceType  # noqa: E402

ON = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}


@pytest.fixture
def broker():
    with MiniBroker(config={**ON, "super.users": "User:ANONYMOUS"}) as b:
        yield b


@pytest.fixture
def admin(broker):
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as client:
        yield client


def binding(name, op="READ", principal="User:alice", pattern="LITERAL", permission="ALLOW", rtype="TOPIC"):
    return AclBinding(ResourcePattern(rtype, name, pattern), AccessControlEntry(principal, "*", op, permission))


def test_create_describe_delete_round_trip(admin):
    """Issue 15 item 5: ACLs made are described (by filter, MATCH included) and deleted."""
    made = [binding("orders"), binding("orders-", "WRITE", pattern="PREFIXED"),
            binding("*", "DESCRIBE", principal="User:*"), binding("g", rtype="GROUP", principal="User:bob")]
    assert admin.create_acls(made) == dict.fromkeys(made)
    assert sorted(admin.describe_acls(), key=repr) == sorted(made, key=repr)
    matching = admin.describe_acls(AclBindingFilter(ResourcePatternFilter("TOPIC", "orders-eu", "MATCH")))
    assert sorted(b.pattern.name for b in matching) == ["*", "orders-"]
    assert admin.describe_acls(AclBindingFilter(entry_filter=AccessControlEntryFilter(principal="User:bob"))) == [made[3]]
    deleted = admin.delete_acls([AclBindingFilter(ResourcePatternFilter("TOPIC")),
                                 AclBindingFilter(ResourcePatternFilter("TOPIC", "orders"))])
    assert sorted(deleted[AclBindingFilter(ResourcePatternFilter("TOPIC"))], key=repr) == sorted(made[:3], key=repr)
    assert deleted[AclBindingFilter(ResourcePatternFilter("TOPIC", "orders"))] == [made[0]]
    assert admin.describe_acls() == [made[3]]


def test_errors_per_binding_keep_the_others(admin):
    """Issue 15 items 2 and 5: an ACL Kafka refuses is INVALID_REQUEST with Kafka's reason,
    the others of the call are made, and every outcome is in ``.results``."""
    good, bad = binding("ok"), binding("not-kafka-cluster", "ALTER", rtype="CLUSTER")
    with pytest.raises(InvalidRequestError, match="only valid name for the CLUSTER resource") as raised:
        admin.create_acls([good, bad])
    assert raised.value.results[good] is None and isinstance(raised.value.results[bad], InvalidRequestError)
    assert admin.describe_acls() == [good]
    with pytest.raises(ValueError, match="cannot be MATCH"):
        ResourcePattern("TOPIC", "t", "MATCH")
    with pytest.raises(ValueError, match="Type:name"):
        AccessControlEntry("alice")


def test_security_disabled_and_cluster_authorization(tmp_path):
    """Issue 15 item 2: a broker without an authorizer answers SECURITY_DISABLED; one whose
    principal may not ALTER (DESCRIBE) the cluster CLUSTER_AUTHORIZATION_FAILED."""
    with MiniBroker() as plain, AdminClient(bootstrap_servers=plain.bootstrap_servers) as admin:
        with pytest.raises(SecurityDisabledError, match="No Authorizer is configured"):
            admin.describe_acls()
        with pytest.raises(SecurityDisabledError):
            admin.create_acls([binding("t")])
    with MiniBroker(config=ON) as locked, AdminClient(bootstrap_servers=locked.bootstrap_servers) as admin:
        with pytest.raises(ClusterAuthorizationFailedError):
            admin.describe_acls()
        with pytest.raises(ClusterAuthorizationFailedError):
            admin.create_acls([binding("t")])
        with pytest.raises(ClusterAuthorizationFailedError):
            admin.delete_acls([AclBindingFilter()])


def test_unknown_filter_elements_are_invalid_request(broker):
    """Issue 15 item 2: a filter with an UNKNOWN element is INVALID_REQUEST (Kafka's
    DescribeAclsRequest / DeleteAclsRequest validation), the other filters still apply."""
    client = RawClient(broker.port)
    try:
        any_fields = dict(resource_name_filter=None, pattern_type_filter=1, principal_filter=None, host_filter=None,
                          operation=1, permission_type=1)
        response = client.request(ApiKey.DESCRIBE_ACLS, 3, DescribeAclsRequest(resource_type_filter=0, **any_fields))
        assert (response.error_code, response.error_message) == (42, "Invalid resourceType UNKNOWN")
        response = client.request(ApiKey.DELETE_ACLS, 3, DeleteAclsRequest(filters=[
            DeleteAclsRequest.DeleteAclsFilter(resource_type_filter=1, **{**any_fields, "operation": 0}),
            DeleteAclsRequest.DeleteAclsFilter(resource_type_filter=1, **any_fields)]))
        assert [r.error_code for r in response.filter_results] == [42, 0]
    finally:
        client.close()


def test_kafka_python_admin_sees_and_makes_the_same_acls(admin, broker):
    """Issue 15 item 2, kafka-python's KafkaAdminClient as the oracle: it describes what
    kproto created, and kproto describes what it created."""
    admin.create_acls([binding("kp-topic", "WRITE", pattern="PREFIXED")])
    oracle = kafka.KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        acls, error = oracle.describe_acls(KpACLFilter(
            principal=None, host=None, operation=KpOperation.ANY, permission_type=KpPermission.ANY,
            resource_pattern=KpPatternFilter(KpResourceType.ANY, None, KpPatternType.ANY)))
        assert error is kafka.errors.NoError
        assert [(a.resource_pattern.resource_name, a.resource_pattern.pattern_type, a.operation) for a in acls] == [
            ("kp-topic", KpPatternType.PREFIXED, KpOperation.WRITE)]
        result = oracle.create_acls([KpACL(principal="User:carol", host="*", operation=KpOperation.READ,
                                           permission_type=KpPermission.DENY,
                                           resource_pattern=KpPattern(KpResourceType.GROUP, "kp-group"))])
        assert not result["failed"]
    finally:
        oracle.close()
    [made] = admin.describe_acls(AclBindingFilter(ResourcePatternFilter("GROUP")))
    assert made == binding("kp-group", "READ", principal="User:carol", permission="DENY", rtype="GROUP")
    assert made.pattern.pattern_type is PatternType.LITERAL and made.entry.operation is AclOperation.READ


def test_async_client_has_the_same_calls(broker):
    """Issue 15 item 5: AIOAdminClient's ACL calls are the implementation of the sync ones."""
    async def main():
        async with AIOAdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
            await admin.create_acls([binding("a")])
            assert [b.pattern.resource_type for b in await admin.describe_acls()] == [ResourceType.TOPIC]
            assert list((await admin.delete_acls([AclBindingFilter()])).values()) == [[binding("a")]]
    asyncio.run(main())
