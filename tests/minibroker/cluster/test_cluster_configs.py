"""Topic config changes in a MiniCluster (issue 13 step 2, item 5.1): AlterConfigs and
IncrementalAlterConfigs go to the controller, which validates them by the single broker's
rules and commits ConfigRecords to the metadata log; every broker applies them to its
topic and logs, DescribeConfigs on any broker shows them, and they survive restarts.
``min.insync.replicas`` and ``unclean.leader.election.enable`` take effect on the leader
and the controller."""

import pytest

from kproto import AdminClient
from kproto.admin import ConfigResource
from kproto.errors import (
    InvalidConfigError,
    InvalidRequestError,
    MessageTooLargeError,
    NotEnoughReplicasError,
    UnknownTopicOrPartitionError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import DescribeConfigsRequest, IncrementalAlterConfigsRequest
from minibroker.cluster import MiniCluster
from minibroker.cluster.api import AlterConfigsResource
from minibroker.cluster.metadata import ConfigRecord
from minibroker.topic_configs import ConfigSource
from tests.minibroker.cluster.conftest import produce_raw, replica_log
from tests.minibroker.cluster.test_cluster_failover import _out_of_sync_replica
from tests.minibroker.cluster.test_controller import World
from tests.support.raw_client import RawClient

TOPIC = "t"


def _record(name, value):
    return ConfigRecord(resource_type=2, resource_name=TOPIC, name=name, value=value)


def test_the_controller_records_only_what_changes():
    """ConfigurationControlManager: one ConfigRecord per changed config (None: removed),
    nothing for a resource that changes nothing, for validate_only, or for an error; the
    brokers' image (fed by the commits) gets the configs."""
    w = World(n=3)
    w.create(configs={"retention.ms": "1000"})

    def alter(ops, replace=False, validate_only=False, name=TOPIC, resource_type=2):
        end = w.log.end_offset
        [result] = w.c.alter_configs([AlterConfigsResource(resource_type=resource_type, resource_name=name,
                                                           ops=tuple(ops), replace=replace)],
                                     validate_only=validate_only)
        return result.error_code, [r for _, r in w.log.read(end)]

    assert alter([("retention.ms", 0, "1000"), ("segment.ms", 0, "5000")]) == (0, [_record("segment.ms", "5000")])
    assert alter([("retention.ms", 0, "1000")]) == (0, [])
    assert alter([("flush.ms", 0, "7")], validate_only=True) == (0, [])
    assert alter([("segment.ms", 0, "9")], replace=True) == (
        0, [_record("retention.ms", None), _record("segment.ms", "9")])
    assert w.delivered.topic_by_name(TOPIC).configs == {"segment.ms": "9"}
    assert alter([("segment.ms", 0, "soon")]) == (InvalidConfigError.code, [])
    assert alter([("cleanup.policy", 3, "delete")]) == (0, [_record("cleanup.policy", "")])
    assert alter([("segment.ms", 2, "1")]) == (InvalidConfigError.code, [])  # APPEND: not a list
    assert alter([("segment.ms", 0, "1")], name="nope") == (UnknownTopicOrPartitionError.code, [])
    assert alter([("segment.ms", 0, "1")], name="x", resource_type=8)[0] == InvalidRequestError.code


def test_the_controller_records_dynamic_broker_configs_and_refuses_bad_ones_with_invalid_request():
    """KIP-226 resources: a broker id or "" (the cluster default); values by the broker
    synonyms' validators, INVALID_REQUEST otherwise (KAFKA-13609); the rules across values
    on what would be in force."""
    w = World(n=3)

    def alter(name, ops, replace=False):
        end = w.log.end_offset
        [result] = w.c.alter_configs([AlterConfigsResource(resource_type=4, resource_name=name, ops=tuple(ops),
                                                           replace=replace)], validate_only=False)
        return result.error_code, [(r.resource_name, r.name, r.value) for _, r in w.log.read(end)]

    assert alter("", [("log.retention.ms", 0, "5")]) == (0, [("", "log.retention.ms", "5")])
    assert alter("1", [("log.cleanup.policy", 2, "compact")]) == (0, [("1", "log.cleanup.policy", "delete,compact")])
    assert alter("1", [("unclean.leader.election.enable", 0, "TRUE")]) == (
        0, [("1", "unclean.leader.election.enable", "true")])
    assert alter("1", [("log.retention.ms", 0, "x")])[0] == InvalidRequestError.code
    assert alter("1", [("num.partitions", 0, "3")])[0] == InvalidRequestError.code
    assert alter("", [("log.cleaner.min.compaction.lag.ms", 0, "10"), ("log.cleaner.max.compaction.lag.ms", 0, "5")]
                 )[0] == InvalidRequestError.code
    assert alter("", [], replace=True) == (0, [("", "log.retention.ms", None)])
    assert w.delivered.broker_configs == {"": {}, "1": {"log.cleanup.policy": "delete,compact",
                                                        "unclean.leader.election.enable": "true"}}


def _described(port, topic, *names, resource_type=2):
    """``{name: (value, source)}`` of a topic's configs (or a BROKER resource's) as the
    broker at ``port`` answers DescribeConfigs v4 (raw: this broker, not one a client picked)."""
    client = RawClient(port)
    try:
        answer = client.request(ApiKey.DESCRIBE_CONFIGS, 4, DescribeConfigsRequest(resources=[
            DescribeConfigsRequest.DescribeConfigsResource(resource_type=resource_type, resource_name=topic,
                                                           configuration_keys=list(names))],
            include_synonyms=False, include_documentation=False)).results[0]
    finally:
        client.close()
    assert answer.error_code == 0, answer.error_message
    return {c.name: (c.value, c.config_source) for c in answer.configs}


def test_incremental_alter_configs_is_committed_and_every_broker_applies_it(cluster3):
    """Every broker's DescribeConfigs shows the change as DYNAMIC_TOPIC_CONFIG, and every
    replica's log runs with it; the leader enforces max.message.bytes."""
    cluster3.create_topic(TOPIC, partitions=1, replication_factor=3)
    with AdminClient({"bootstrap.servers": cluster3.bootstrap_servers}) as admin:
        admin.incremental_alter_configs({ConfigResource.topic(TOPIC): [
            ("retention.ms", "set", "123456"),
            ("segment.bytes", "set", "100000"), ("cleanup.policy", "append", "compact"),
            ("max.message.bytes", "set", "200")]})
    for node in range(3):
        assert _described(cluster3.brokers[node].port, TOPIC, "retention.ms", "segment.bytes", "cleanup.policy") == {
            "retention.ms": ("123456", ConfigSource.TOPIC_CONFIG),
            "segment.bytes": ("100000", ConfigSource.TOPIC_CONFIG),
            "cleanup.policy": ("delete,compact", ConfigSource.TOPIC_CONFIG)}
        config = replica_log(cluster3, node, TOPIC).config
        assert (config.retention_ms, config.segment_bytes) == (123456, 100000)
        assert set(config.cleanup_policy.split(",")) == {"delete", "compact"}
    leader = cluster3.leader_of(TOPIC, 0)
    code, _ = produce_raw(cluster3.brokers[leader].port, TOPIC, [b"x" * 500])
    assert code == MessageTooLargeError.code


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_confluent_kafka_alter_configs_validate_only_bad_values_and_unknown_topics(cluster3):
    """AlterConfigs replaces the set; validate_only changes nothing; a bad value is
    INVALID_CONFIG with the single broker's message and changes nothing; an unknown topic
    is UNKNOWN_TOPIC_OR_PARTITION."""
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient as CkAdmin
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry
    from confluent_kafka.admin import ConfigResource as CkResource

    cluster3.create_topic(TOPIC, partitions=1, replication_factor=3, configs={"retention.ms": "1000"})
    admin = CkAdmin({"bootstrap.servers": cluster3.bootstrap_servers})

    def alter(configs, validate_only=False, topic=TOPIC):
        [future] = admin.alter_configs([CkResource("topic", topic, set_config=configs)],
                                       validate_only=validate_only, request_timeout=10).values()
        try:
            future.result(10)
            return 0
        except ck.KafkaException as exc:
            return exc.args[0].code()

    assert alter({"segment.ms": "60000"}, validate_only=True) == 0
    assert _described(cluster3.brokers[0].port, TOPIC, "retention.ms", "segment.ms") == {
        "retention.ms": ("1000", ConfigSource.TOPIC_CONFIG), "segment.ms": ("604800000", ConfigSource.DEFAULT_CONFIG)}
    assert alter({"segment.ms": "60000"}) == 0  # retention.ms, left out, returns to its default
    for node in range(3):
        assert _described(cluster3.brokers[node].port, TOPIC, "retention.ms", "segment.ms") == {
            "retention.ms": ("604800000", ConfigSource.DEFAULT_CONFIG),
            "segment.ms": ("60000", ConfigSource.TOPIC_CONFIG)}
    assert alter({"segment.ms": "soon"}) == InvalidConfigError.code
    assert alter({"segment.ms": "1"}, topic="nope") == UnknownTopicOrPartitionError.code
    [future] = admin.incremental_alter_configs([CkResource("topic", TOPIC, incremental_configs=[
        ConfigEntry("message.timestamp.type", "LogAppendTime",
                    incremental_operation=AlterConfigOpType.SET)])]).values()
    future.result(10)
    assert _described(cluster3.brokers[2].port, TOPIC, "segment.ms", "message.timestamp.type") == {
        "segment.ms": ("60000", ConfigSource.TOPIC_CONFIG),
        "message.timestamp.type": ("LogAppendTime", ConfigSource.TOPIC_CONFIG)}


def test_a_bad_change_is_refused_with_the_single_brokers_message(cluster3):
    from minibroker.topic_configs import validate_all
    cluster3.create_topic(TOPIC, partitions=1, replication_factor=3)
    with AdminClient({"bootstrap.servers": cluster3.bootstrap_servers}) as admin:
        with pytest.raises(InvalidConfigError) as info:
            admin.incremental_alter_configs({ConfigResource.topic(TOPIC): [("retention.ms", "set", "soon")]})
    assert validate_all({"retention.ms": "soon"}) in str(info.value)
    assert _described(cluster3.brokers[1].port, TOPIC, "retention.ms")["retention.ms"][1] == ConfigSource.DEFAULT_CONFIG


def test_raising_min_insync_replicas_makes_acks_all_fail_while_the_isr_is_smaller(cluster3):
    """The leader reads the committed config: with one follower dead (ISR 2), acks=all
    passes at min.insync.replicas 2 and is NOT_ENOUGH_REPLICAS once it is 3."""
    cluster3.create_topic(TOPIC, partitions=1, replication_factor=3)
    leader = cluster3.leader_of(TOPIC, 0)
    cluster3.wait_for_isr(TOPIC, 0, 3)
    follower = next(r for r in cluster3.describe(TOPIC)[0].replicas if r != leader)
    cluster3.kill(follower)
    port = cluster3.brokers[leader].port
    with AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"}) as admin:
        admin.incremental_alter_configs({ConfigResource.topic(TOPIC): [("min.insync.replicas", "set", "2")]})
        assert produce_raw(port, TOPIC, [b"a"]) == (0, 0)
        admin.incremental_alter_configs({ConfigResource.topic(TOPIC): [("min.insync.replicas", "set", "3")]})
    assert produce_raw(port, TOPIC, [b"b"])[0] == NotEnoughReplicasError.code
    assert produce_raw(port, TOPIC, [b"b"], acks=1) == (0, 1)


@pytest.mark.parametrize("resource", [ConfigResource.topic(TOPIC), ConfigResource.broker("")])
def test_enabling_unclean_election_elects_an_out_of_sync_replica_at_once(cluster4, resource):
    """A leaderless partition whose only live replica is out of sync gets it as leader as
    soon as the config change is committed (the answer comes after the election), whether
    the topic or the cluster default enables it (KAFKA-12670's lookup)."""
    lagging, _, _ = _out_of_sync_replica(cluster4, {})
    cluster4.restart(lagging)
    assert cluster4.leader_of(TOPIC, 0) is None
    with AdminClient({"bootstrap.servers": cluster4.brokers[lagging].bootstrap_servers}) as admin:
        admin.incremental_alter_configs({resource: [("unclean.leader.election.enable", "set", "true")]})
        assert cluster4.leader_of(TOPIC, 0) == lagging
    assert produce_raw(cluster4.brokers[lagging].port, TOPIC, [b"new"], acks=1) == (0, 1)


def test_topic_configs_survive_a_broker_restart_and_a_cluster_restart(tmp_path):
    """The metadata log is the truth: a restarted broker replays the ConfigRecords, and so
    does a whole cluster started again on the same directory."""
    data = tmp_path / "cluster"
    with MiniCluster(brokers=3, data_dir=data) as cluster:
        cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
        with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            admin.incremental_alter_configs({ConfigResource.topic(TOPIC): [("retention.ms", "set", "4242")]})
        cluster.kill(2)
        cluster.restart(2)
        assert _described(cluster.brokers[2].port, TOPIC, "retention.ms") == {
            "retention.ms": ("4242", ConfigSource.TOPIC_CONFIG)}
        assert replica_log(cluster, 2, TOPIC).config.retention_ms == 4242
    with MiniCluster(brokers=3, data_dir=data) as cluster:
        for node in range(3):
            assert _described(cluster.brokers[node].port, TOPIC, "retention.ms") == {
                "retention.ms": ("4242", ConfigSource.TOPIC_CONFIG)}
            assert replica_log(cluster, node, TOPIC).config.retention_ms == 4242


def _alter_broker_raw(port, name, key, value, validate_only=False):
    """IncrementalAlterConfigs v1 SET of a BROKER resource, sent to the broker at ``port``."""
    client = RawClient(port)
    try:
        answer = client.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, IncrementalAlterConfigsRequest(
            validate_only=validate_only, resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
                resource_type=4, resource_name=name, configs=[IncrementalAlterConfigsRequest.AlterableConfig(
                    name=key, config_operation=0, value=value)])])).responses[0]
    finally:
        client.close()
    return answer.error_code, answer.error_message


def test_dynamic_broker_configs_are_committed_and_applied_by_their_brokers(tmp_path):
    """KIP-226 in a cluster (the stretch of item 5.1): the cluster default ("") reaches
    every broker, a broker's own only it; topics without their own setting follow, logs
    included; bad or static keys are INVALID_REQUEST; validate_only changes nothing; the
    metadata log keeps them across a broker restart and a cluster restart."""
    data = tmp_path / "cluster"
    with MiniCluster(brokers=3, data_dir=data) as cluster:
        cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
        with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            admin.incremental_alter_configs({ConfigResource.broker(""): [("log.retention.ms", "set", "7777")]})
        port1 = cluster.brokers[1].port
        assert _alter_broker_raw(port1, "1", "log.retention.ms", "1111", validate_only=True) == (0, None)
        assert _alter_broker_raw(port1, "1", "log.retention.ms", "1111") == (0, None)
        assert _alter_broker_raw(port1, "1", "log.retention.ms", "soon")[0] == InvalidRequestError.code
        code, message = _alter_broker_raw(port1, "1", "num.partitions", "5")
        assert code == InvalidRequestError.code and "Cannot update these configs dynamically" in message
        assert _alter_broker_raw(port1, "2", "log.retention.ms", "5")[0] == InvalidRequestError.code  # not here

        def check(cluster):
            for node, (value, source) in {0: ("7777", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
                                          1: ("1111", ConfigSource.DYNAMIC_BROKER_CONFIG),
                                          2: ("7777", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)}.items():
                port = cluster.brokers[node].port
                assert _described(port, str(node), "log.retention.ms", resource_type=4) == {
                    "log.retention.ms": (value, source)}
                assert _described(port, TOPIC, "retention.ms") == {"retention.ms": (value, source)}
                assert replica_log(cluster, node, TOPIC).config.retention_ms == int(value)

        check(cluster)
        cluster.kill(1)
        cluster.restart(1)
        check(cluster)
    with MiniCluster(brokers=3, data_dir=data) as cluster:
        check(cluster)
