"""minibroker's authorizer, without I/O: Kafka's StandardAuthorizer rules one by one
(issue 15, item 1: the authorizer), ACL validation and filters, and the ACLs file."""

import json
from types import SimpleNamespace

import pytest

from minibroker.acl_store import AclStore
from minibroker.authorizer import (
    NOT_REQUESTED,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    Authorizer,
    PatternType,
    ResourceType,
    authorized_operations,
    validate_binding,
    validate_filter,
)
from minibroker.config import BrokerConfig
from minibroker.faults import (
    add_partitions_client_id,
    broker_node,
    fetcher_client_id,
    fetcher_node,
    txn_markers_client_id,
)
from minibroker.storage import CorruptStateFileError

ON = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
Op, Res, Pat, Perm = AclOperation, ResourceType, PatternType, AclPermissionType


def ctx(principal="User:alice", host="/127.0.0.1", client_id="app"):
    return SimpleNamespace(principal=principal, client_host=host, client_id=client_id)


def acl(name, op=Op.READ, perm=Perm.ALLOW, principal="User:alice", host="*", rtype=Res.TOPIC, pattern=Pat.LITERAL):
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def authorizer(*acls, **config):
    settings = {"authorizer.class.name": ON, **{k.replace("_", "."): v for k, v in config.items()}}
    return Authorizer(BrokerConfig(settings), acls)


def test_the_acl_enums_have_one_owner():
    """Issue 15, review item 3: the broker's ACL enums are kproto's (kproto.acl), the same
    classes the admin client exports, under every import path they had."""
    import kproto.acl
    import kproto.admin
    import kproto.admin.acls

    for name in ("AclOperation", "ResourceType", "PatternType", "AclPermissionType"):
        owner = getattr(kproto.acl, name)
        assert owner.__module__ == "kproto.acl"
        assert getattr(kproto.admin, name) is getattr(kproto.admin.acls, name) is owner
        assert {"AclOperation": Op, "ResourceType": Res, "PatternType": Pat, "AclPermissionType": Perm}[name] is owner


def test_off_by_default_allows_everything():
    """Issue 15 item 1: without authorizer.class.name every request is allowed, as today."""
    off = Authorizer(BrokerConfig(), [acl("t", perm=Perm.DENY)])
    assert not off.enabled
    assert off.allows(ctx(), Op.READ, Res.TOPIC, "t")
    assert off.operations(ctx(), Res.TOPIC, "t") == authorized_operations(Res.TOPIC) == 3576


def test_the_zookeeper_authorizer_name_is_a_synonym_and_others_are_refused():
    """Issue 15 item 1: AclAuthorizer is accepted; an unknown class names the valid ones."""
    assert Authorizer(BrokerConfig({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})).enabled
    with pytest.raises(ValueError, match="StandardAuthorizer"):
        BrokerConfig({"authorizer.class.name": "com.example.MyAuthorizer"})


def test_no_acl_denies_unless_allow_everyone_if_no_acl_found():
    """Issue 15 item 1: allow.everyone.if.no.acl.found (default false) decides only for a
    resource no ACL applies to, whoever that ACL names."""
    assert not authorizer().allows(ctx(), Op.READ, Res.TOPIC, "t")
    open_ = authorizer(acl("other"), allow_everyone_if_no_acl_found=True)
    assert open_.allows(ctx(), Op.READ, Res.TOPIC, "t")
    bob_only = authorizer(acl("t", principal="User:bob"), allow_everyone_if_no_acl_found=True)
    assert not bob_only.allows(ctx(), Op.READ, Res.TOPIC, "t")  # an ACL exists: alice is not in it


def test_literal_prefixed_and_wildcard_patterns():
    """Issue 15 item 1: LITERAL matches the name only, PREFIXED any name starting with it,
    LITERAL ``*`` any name of the type (and only that type)."""
    a = authorizer(acl("orders"), acl("logs-", pattern=Pat.PREFIXED), acl("*", rtype=Res.GROUP))
    assert a.allows(ctx(), Op.READ, Res.TOPIC, "orders")
    assert not a.allows(ctx(), Op.READ, Res.TOPIC, "orders2")
    assert a.allows(ctx(), Op.READ, Res.TOPIC, "logs-app")
    assert not a.allows(ctx(), Op.READ, Res.TOPIC, "log")
    assert a.allows(ctx(), Op.READ, Res.GROUP, "any-group")
    assert not a.allows(ctx(), Op.READ, Res.TOPIC, "any-topic")
    prefix_star = authorizer(acl("*", pattern=Pat.PREFIXED))  # a PREFIXED "*" is a prefix, not a wildcard
    assert not prefix_star.allows(ctx(), Op.READ, Res.TOPIC, "t")


def test_deny_wins_over_allow_whatever_the_pattern():
    """Issue 15 item 1: a matching DENY wins over every ALLOW (StandardAuthorizerData)."""
    a = authorizer(acl("*", op=Op.ALL), acl("secret-", perm=Perm.DENY, pattern=Pat.PREFIXED))
    assert a.allows(ctx(), Op.READ, Res.TOPIC, "public")
    assert not a.allows(ctx(), Op.READ, Res.TOPIC, "secret-1")
    assert a.allows(ctx(), Op.WRITE, Res.TOPIC, "secret-1")  # the DENY names READ only
    everyone_denied = authorizer(acl("t"), acl("t", perm=Perm.DENY, principal="User:*"))
    assert not everyone_denied.allows(ctx(), Op.READ, Res.TOPIC, "t")


def test_implied_operations_for_allow_only():
    """Issue 15 item 1: an ALLOW of READ/WRITE/DELETE/ALTER implies DESCRIBE, of
    ALTER_CONFIGS DESCRIBE_CONFIGS, ALL everything; a DENY implies nothing but ALL."""
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        assert authorizer(acl("t", op=op)).allows(ctx(), Op.DESCRIBE, Res.TOPIC, "t")
    assert not authorizer(acl("t", op=Op.CREATE)).allows(ctx(), Op.DESCRIBE, Res.TOPIC, "t")
    assert authorizer(acl("t", op=Op.ALTER_CONFIGS)).allows(ctx(), Op.DESCRIBE_CONFIGS, Res.TOPIC, "t")
    assert not authorizer(acl("t", op=Op.READ)).allows(ctx(), Op.WRITE, Res.TOPIC, "t")
    all_ = authorizer(acl("t", op=Op.ALL))
    assert all(all_.allows(ctx(), op, Res.TOPIC, "t") for op in (Op.READ, Op.ALTER_CONFIGS, Op.DELETE))
    deny_read = authorizer(acl("t", op=Op.DESCRIBE), acl("t", op=Op.READ, perm=Perm.DENY))
    assert deny_read.allows(ctx(), Op.DESCRIBE, Res.TOPIC, "t")  # a DENY of READ does not deny DESCRIBE
    deny_all = authorizer(acl("t", op=Op.DESCRIBE), acl("t", op=Op.ALL, perm=Perm.DENY))
    assert not deny_all.allows(ctx(), Op.DESCRIBE, Res.TOPIC, "t")


def test_host_and_principal_matching():
    """Issue 15 item 1: the ACL's host is * or the client's IP (client_host without the
    slash); its principal is the request's or the User:* wildcard."""
    a = authorizer(acl("t", host="10.0.0.1"), acl("u", principal="User:*"))
    assert a.allows(ctx(host="/10.0.0.1"), Op.READ, Res.TOPIC, "t")
    assert not a.allows(ctx(host="/127.0.0.1"), Op.READ, Res.TOPIC, "t")
    assert a.allows(ctx("User:ANONYMOUS"), Op.READ, Res.TOPIC, "u")
    assert not a.allows(ctx("User:bob"), Op.READ, Res.TOPIC, "t")


def test_super_users_may_do_anything_despite_deny():
    """Issue 15 item 1: super.users, semicolon-separated and trimmed, bypass every ACL."""
    a = authorizer(acl("t", op=Op.ALL, perm=Perm.DENY, principal="User:*"), super_users=" User:admin ; User:ops;")
    assert a.super_users == {"User:admin", "User:ops"}
    assert a.allows(ctx("User:ops"), Op.READ, Res.TOPIC, "t")
    assert a.allows(ctx("User:admin"), Op.ALTER, Res.CLUSTER)
    assert not a.allows(ctx(), Op.READ, Res.TOPIC, "t")


def test_allows_any_is_authorize_by_resource_type():
    """Issue 15 item 3 (idempotent producers, KIP-679): WRITE on some topic, as Kafka's
    Authorizer.authorizeByResourceType decides it."""
    assert not authorizer().allows_any(ctx(), Op.WRITE, Res.TOPIC)
    assert authorizer(acl("t", op=Op.WRITE)).allows_any(ctx(), Op.WRITE, Res.TOPIC)
    assert authorizer(acl("p", op=Op.ALL, pattern=Pat.PREFIXED)).allows_any(ctx(), Op.WRITE, Res.TOPIC)
    covered = authorizer(acl("pre-x", op=Op.WRITE), acl("pre-", op=Op.WRITE, perm=Perm.DENY, pattern=Pat.PREFIXED))
    assert not covered.allows_any(ctx(), Op.WRITE, Res.TOPIC)
    wildcard_deny = authorizer(acl("t", op=Op.WRITE), acl("*", op=Op.WRITE, perm=Perm.DENY))
    assert not wildcard_deny.allows_any(ctx(), Op.WRITE, Res.TOPIC)
    assert authorizer(allow_everyone_if_no_acl_found=True).allows_any(ctx(), Op.WRITE, Res.TOPIC)
    assert authorizer(super_users="User:alice").allows_any(ctx(), Op.WRITE, Res.TOPIC)


@pytest.mark.parametrize("deny_first", [False, True])
def test_allows_any_wildcard_deny_wins_whatever_the_acl_order(deny_first):
    """Issue 15, review item 1: authorizeByResourceType only notes an ALLOW on ``*`` and
    keeps scanning; a matching DENY on ``*`` denies, whether it comes before or after."""
    allow = acl("*", op=Op.WRITE, principal="User:*")
    deny = acl("*", op=Op.WRITE, perm=Perm.DENY)
    a = authorizer(*([deny, allow] if deny_first else [allow, deny]))
    assert not a.allows_any(ctx(), Op.WRITE, Res.TOPIC)
    assert a.allows_any(ctx("User:bob"), Op.WRITE, Res.TOPIC)


def test_allows_any_matches_principal_host_and_operation_as_allows_does():
    """Issue 15, review item 1: allows_any applies an ACL to the request by the rules of
    AclBinding.decides: another host, another principal or another operation is no ALLOW,
    a DENY of another operation no DENY, and a prefixed DENY covers a literal ALLOW."""
    assert not authorizer(acl("t", op=Op.WRITE, host="10.0.0.1")).allows_any(ctx(), Op.WRITE, Res.TOPIC)
    assert not authorizer(acl("t", op=Op.WRITE, principal="User:bob")).allows_any(ctx(), Op.WRITE, Res.TOPIC)
    assert not authorizer(acl("t", op=Op.READ)).allows_any(ctx(), Op.WRITE, Res.TOPIC)
    assert not authorizer(acl("t", op=Op.WRITE, rtype=Res.GROUP)).allows_any(ctx(), Op.WRITE, Res.TOPIC)
    other_deny = authorizer(acl("t", op=Op.WRITE), acl("*", op=Op.READ, perm=Perm.DENY))
    assert other_deny.allows_any(ctx(), Op.WRITE, Res.TOPIC)
    all_deny = authorizer(acl("*", op=Op.WRITE, principal="User:*"), acl("*", op=Op.ALL, perm=Perm.DENY))
    assert not all_deny.allows_any(ctx(), Op.WRITE, Res.TOPIC)
    prefix_deny = authorizer(acl("abc", op=Op.WRITE), acl("a", op=Op.WRITE, perm=Perm.DENY, pattern=Pat.PREFIXED))
    assert not prefix_deny.allows_any(ctx(), Op.WRITE, Res.TOPIC)
    prefix_allow = authorizer(acl("ab", op=Op.WRITE, pattern=Pat.PREFIXED), acl("ab", op=Op.WRITE, perm=Perm.DENY))
    assert prefix_allow.allows_any(ctx(), Op.WRITE, Res.TOPIC)  # a literal DENY does not cover a prefix


def test_cluster_operations_are_none_without_describe_on_the_cluster():
    """Issue 15, review item 2 (KIP-430): KafkaApis reports the cluster's authorized
    operations only to a principal that may DESCRIBE the cluster; to others 0."""
    a = authorizer(acl("kafka-cluster", op=Op.IDEMPOTENT_WRITE, rtype=Res.CLUSTER))
    assert a.cluster_operations(ctx()) == 0
    assert a.cluster_operations(ctx(), requested=False) == NOT_REQUESTED
    b = authorizer(acl("kafka-cluster", op=Op.IDEMPOTENT_WRITE, rtype=Res.CLUSTER),
                   acl("kafka-cluster", op=Op.ALTER, rtype=Res.CLUSTER))
    assert b.cluster_operations(ctx()) == (1 << Op.IDEMPOTENT_WRITE) | (1 << Op.ALTER) | (1 << Op.DESCRIBE)
    assert authorizer().cluster_operations(ctx()) == 0
    assert Authorizer(BrokerConfig()).cluster_operations(ctx()) == authorized_operations(Res.CLUSTER)


def test_operations_reports_what_the_principal_may_do():
    """Issue 15 item 3 (KIP-430): authorized operations follow the principal's rights."""
    a = authorizer(acl("t", op=Op.WRITE), acl("g", op=Op.READ, rtype=Res.GROUP))
    names = {op.name for op in Op if a.operations(ctx(), Res.TOPIC, "t") & (1 << op)}
    assert names == {"WRITE", "DESCRIBE"}
    assert a.operations(ctx(), Res.GROUP, "g") == (1 << Op.READ) | (1 << Op.DESCRIBE)
    assert a.operations(ctx(), Res.CLUSTER) == 0
    assert a.operations(ctx(), Res.CLUSTER, requested=False) == NOT_REQUESTED


def test_inter_broker_principal_gets_only_what_brokers_need():
    """Issue 15 item 3: a MiniCluster broker lets the brokers' (anonymous) principal do
    CLUSTER_ACTION and DESCRIBE topics, nothing else, without ACLs."""
    a = Authorizer(BrokerConfig({"authorizer.class.name": ON}), inter_broker_principal="User:ANONYMOUS")
    for client_id in ("broker-1-fetcher", "broker-0-txn-markers", "broker-12-add-partitions"):
        broker = ctx("User:ANONYMOUS", client_id=client_id)
        assert a.allows(broker, Op.CLUSTER_ACTION, Res.CLUSTER)
        assert a.allows(broker, Op.DESCRIBE, Res.TOPIC, "t")
        assert not a.allows(broker, Op.READ, Res.TOPIC, "t")
        assert not a.allows(broker, Op.ALTER, Res.CLUSTER)


@pytest.mark.parametrize("client_id_of", [fetcher_client_id, txn_markers_client_id, add_partitions_client_id])
def test_inter_broker_rights_go_to_the_client_ids_the_brokers_send(client_id_of):
    """Issue 15, review item 5: the stopgap recognizes a broker by the client ids its
    connections send, from their one owner (minibroker.faults), not a copy of their format."""
    a = Authorizer(BrokerConfig({"authorizer.class.name": ON}), inter_broker_principal="User:ANONYMOUS")
    assert broker_node(client_id_of(7)) == 7
    assert a.allows(ctx("User:ANONYMOUS", client_id=client_id_of(7)), Op.CLUSTER_ACTION, Res.CLUSTER)
    assert fetcher_node(client_id_of(7)) == (7 if client_id_of is fetcher_client_id else None)


@pytest.mark.parametrize("client_id", ["app", None, "broker-1-fetcher-x", "broker--fetcher", "rdkafka"])
def test_inter_broker_rights_are_not_every_anonymous_clients(client_id):
    """Issue 15, the inter-broker stopgap made narrow: an anonymous client that is not one
    of the cluster's brokers (its client id is not a broker's fetcher, txn-markers or
    add-partitions id) gets no CLUSTER_ACTION and no topic DESCRIBE from it."""
    a = Authorizer(BrokerConfig({"authorizer.class.name": ON}), inter_broker_principal="User:ANONYMOUS")
    client = ctx("User:ANONYMOUS", client_id=client_id)
    assert not a.allows(client, Op.CLUSTER_ACTION, Res.CLUSTER)
    assert not a.allows(client, Op.DESCRIBE, Res.TOPIC, "t")


def test_inter_broker_rights_are_not_an_authenticated_users():
    """Issue 15, the inter-broker stopgap: a user who logged in and sends a broker's client
    id is not the brokers' principal."""
    a = Authorizer(BrokerConfig({"authorizer.class.name": ON}), inter_broker_principal="User:ANONYMOUS")
    assert not a.allows(ctx("User:mallory", client_id="broker-1-fetcher"), Op.CLUSTER_ACTION, Res.CLUSTER)


@pytest.mark.parametrize(("fields", "message"), [
    ((Res.ANY, "t", Pat.LITERAL, "User:a", "*", Op.READ, Perm.ALLOW), "Invalid resourceType ANY"),
    ((Res.TOPIC, "t", Pat.MATCH, "User:a", "*", Op.READ, Perm.ALLOW), "Invalid patternType MATCH"),
    ((Res.TOPIC, "t", 9, "User:a", "*", Op.READ, Perm.ALLOW), "Invalid patternType 9"),
    ((Res.TOPIC, "t", Pat.LITERAL, "User:a", "*", Op.ANY, Perm.ALLOW), "Invalid operation ANY"),
    ((Res.TOPIC, "t", Pat.LITERAL, "User:a", "*", Op.READ, Perm.UNKNOWN), "Invalid permissionType UNKNOWN"),
    ((Res.TOPIC, "", Pat.LITERAL, "User:a", "*", Op.READ, Perm.ALLOW), "Resource name should not be empty"),
    ((Res.CLUSTER, "c", Pat.LITERAL, "User:a", "*", Op.ALTER, Perm.ALLOW), "only valid name for the CLUSTER"),
    ((Res.GROUP, "g", Pat.LITERAL, "User:a", "*", Op.WRITE, Perm.ALLOW), "WRITE is not supported for resource type GROUP"),
    ((Res.TOPIC, "t", Pat.LITERAL, "alice", "*", Op.READ, Perm.ALLOW), "Could not parse principal"),
])
def test_validate_binding_refuses_what_kafka_refuses(fields, message):
    """Issue 15 item 2: CreateAcls' INVALID_REQUEST cases, with Kafka's messages."""
    with pytest.raises(ValueError, match=message):
        validate_binding(*fields)


def test_filters_any_match_and_exact():
    """Issue 15 item 2: ResourcePatternFilter / AccessControlEntryFilter semantics."""
    literal, prefixed, star = acl("orders-eu"), acl("orders-", pattern=Pat.PREFIXED), acl("*")
    group = acl("g", rtype=Res.GROUP, principal="User:bob", op=Op.DESCRIBE)
    a = authorizer(literal, prefixed, star, group)
    assert a.acls(AclBindingFilter()) == [literal, prefixed, star, group]
    assert a.acls(AclBindingFilter(Res.TOPIC, "orders-eu", Pat.MATCH)) == [literal, prefixed, star]
    assert a.acls(AclBindingFilter(Res.TOPIC, "orders-", Pat.ANY)) == [prefixed]
    assert a.acls(AclBindingFilter(Res.TOPIC, "orders-eu", Pat.PREFIXED)) == []
    assert a.acls(AclBindingFilter(principal="User:bob", operation=Op.DESCRIBE)) == [group]
    assert a.acls(AclBindingFilter(host="10.0.0.1")) == []
    with pytest.raises(ValueError, match="Invalid resourceType UNKNOWN"):
        validate_filter(0, None, 1, None, None, 1, 1)


def test_create_is_idempotent_and_delete_reports_per_filter():
    """Issue 15 item 2: a duplicate ACL is kept once; an ACL two filters match is deleted
    once and reported under both."""
    a = authorizer()
    a.create([acl("t"), acl("t")])
    assert a.acls() == [acl("t")]
    assert a.delete([AclBindingFilter(Res.TOPIC), AclBindingFilter(principal="User:alice")]) == [[acl("t")], [acl("t")]]
    assert a.acls() == []


def test_a_failed_journal_changes_nothing():
    """Issue 15 item 4: the ACLs file is written before a change counts."""
    def full_disk(acls):
        raise OSError(28, "No space left on device")
    a = Authorizer(BrokerConfig({"authorizer.class.name": ON}), [acl("t")], journal=full_disk)
    with pytest.raises(OSError):
        a.create([acl("u")])
    with pytest.raises(OSError):
        a.delete([AclBindingFilter()])
    assert a.acls() == [acl("t")]


def test_store_round_trips_and_refuses_a_damaged_file(tmp_path):
    """Issue 15 item 4: minibroker-acls.json holds Kafka's names; a damaged file stops the
    broker rather than forget a DENY."""
    store = AclStore([tmp_path])
    acls = [acl("t"), acl("p-", perm=Perm.DENY, pattern=Pat.PREFIXED, host="10.0.0.1"), acl("g", rtype=Res.GROUP)]
    store.save(acls)
    assert json.loads((tmp_path / "minibroker-acls.json").read_text())["acls"][1]["permission_type"] == "DENY"
    assert AclStore([tmp_path]).load() == acls
    assert AclStore([]).load() == []
    (tmp_path / "minibroker-acls.json").write_text('{"acls": [{"resource_type": "TOPIC"}]}')
    with pytest.raises(CorruptStateFileError, match="minibroker-acls.json"):
        AclStore([tmp_path]).load()


def test_acl_records_build_the_image_and_survive_encoding():
    """Issue 15 item 4 (KRaft's AccessControlEntryRecord): the image holds the ACLs by id, a
    removal drops one, both are flagged in the delta, and the records round-trip the log's
    encoding."""
    import uuid

    from minibroker.cluster.metadata import (
        AccessControlEntryRecord,
        MetadataImage,
        RemoveAccessControlEntryRecord,
        decode_record,
        encode_record,
    )
    first, second = uuid.uuid4(), uuid.uuid4()
    records = [AccessControlEntryRecord.of(first, acl("t")), AccessControlEntryRecord.of(second, acl("g", rtype=Res.GROUP))]
    assert [decode_record(encode_record(r)) for r in records] == records
    image = MetadataImage()
    assert image.apply(0, records).acls
    assert [r.binding() for r in image.acls.values()] == [acl("t"), acl("g", rtype=Res.GROUP)]
    removal = RemoveAccessControlEntryRecord(id=first)
    assert decode_record(encode_record(removal)) == removal
    assert image.apply(1, [removal]).acls and list(image.acls) == [second]
    assert not image.apply(2, [removal]).acls  # gone already: nothing changed
