"""Admin APIs against minibroker: topic configs, partitions, cluster, leader epochs."""

import time

import pytest

from kproto.errors import FencedLeaderEpochError, NotEnoughReplicasError, UnknownLeaderEpochError
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    CreateTopicsRequest,
    DescribeConfigsRequest,
    MetadataRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
)
from kproto.records import BatchBuilder
from minibroker import MiniBroker
from minibroker.config import DEFAULTS as BROKER_DEFAULTS
from minibroker.topic_configs import BROKER_SYNONYMS, TOPIC_CONFIGS

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
)


@pytest.fixture
def admin(broker):
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers})


def wait(futures):
    return {key: future.result(10) for key, future in futures.items()}


def topic_configs(admin, topic):
    (result,) = wait(admin.describe_configs([ConfigResource("topic", topic)])).values()
    return result


def test_describe_configs_lists_every_topic_config_with_its_default(admin):
    wait(admin.create_topics([NewTopic("c", 1, 1, config={"retention.ms": "1000"})]))
    configs = topic_configs(admin, "c")
    assert configs["retention.ms"].value == "1000" and not configs["retention.ms"].is_default
    assert configs["cleanup.policy"].value == "delete" and configs["cleanup.policy"].is_default
    assert configs["max.message.bytes"].value == "1048588"


def test_create_topic_with_a_bad_config_is_refused(admin):
    with pytest.raises(ck.KafkaException, match="retention.ms"):
        wait(admin.create_topics([NewTopic("bad", 1, 1, config={"retention.ms": "soon"})]))
    with pytest.raises(ck.KafkaException, match="Unknown topic config name"):
        wait(admin.create_topics([NewTopic("bad", 1, 1, config={"retention.msec": "1"})]))


def test_incremental_alter_configs(admin):
    wait(admin.create_topics([NewTopic("inc", 1, 1)]))
    resource = ConfigResource("topic", "inc", incremental_configs=[
        ConfigEntry("retention.ms", "5000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
    ])
    wait(admin.incremental_alter_configs([resource]))
    configs = topic_configs(admin, "inc")
    assert configs["retention.ms"].value == "5000"
    assert configs["cleanup.policy"].value == "delete,compact"
    wait(admin.incremental_alter_configs([ConfigResource("topic", "inc", incremental_configs=[
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])]))
    assert topic_configs(admin, "inc")["retention.ms"].is_default


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")  # it is the API under test
def test_alter_configs_replaces_the_whole_set(admin):
    wait(admin.create_topics([NewTopic("alt", 1, 1, config={"retention.ms": "1000"})]))
    wait(admin.alter_configs([ConfigResource("topic", "alt", set_config={"segment.ms": "60000"})]))
    configs = topic_configs(admin, "alt")
    assert configs["segment.ms"].value == "60000"
    assert configs["retention.ms"].is_default  # AlterConfigs (not incremental) replaces the set
    with pytest.raises(ck.KafkaException, match="segment.ms"):
        wait(admin.alter_configs([ConfigResource("topic", "alt", set_config={"segment.ms": "-5"})]))


def test_kafka_python_admin_configs(broker):
    kafka = pytest.importorskip("kafka")
    from kafka.admin import ConfigResource as KConfigResource
    from kafka.admin import ConfigResourceType
    from kafka.admin import NewTopic as KNewTopic

    admin = kafka.KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        admin.create_topics([KNewTopic("kp", 1, 1, topic_configs={"retention.ms": "1000"})])
        assert admin.alter_configs([KConfigResource(ConfigResourceType.TOPIC, "kp", configs={"segment.ms": "60000"})]) == {"topic": {"kp": "OK"}}
        described = admin.describe_configs([KConfigResource(ConfigResourceType.TOPIC, "kp")])["topic"]["kp"]
        assert described["segment.ms"]["value"] == "60000" and described["retention.ms"]["value"] == "1000"
        refused = admin.alter_configs([KConfigResource(ConfigResourceType.TOPIC, "kp", configs={"segment.ms": "-5"})])
        assert "Error 40" in refused["topic"]["kp"]  # INVALID_CONFIG
    finally:
        admin.close()


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")
def test_broker_configs_are_described_and_read_only(admin, broker):
    (configs,) = wait(admin.describe_configs([ConfigResource("broker", "0")])).values()
    assert configs["num.partitions"].value == "1" and configs["num.partitions"].is_read_only
    with pytest.raises(ck.KafkaException):
        wait(admin.alter_configs([ConfigResource("broker", "0", set_config={"num.partitions": "3"})]))


def test_create_partitions_only_grows(admin):
    wait(admin.create_topics([NewTopic("grow", 2, 1)]))
    wait(admin.create_partitions([NewPartitions("grow", 5)]))
    assert len(admin.list_topics(timeout=10).topics["grow"].partitions) == 5
    with pytest.raises(ck.KafkaException):
        wait(admin.create_partitions([NewPartitions("grow", 3)]))


def test_describe_cluster(admin, broker):
    cluster = admin.describe_cluster().result(10)
    assert cluster.cluster_id == "minibroker-cluster"
    assert [(n.host, n.port) for n in cluster.nodes] == [("127.0.0.1", broker.port)]
    assert cluster.controller.id == 0


def test_log_append_time_topics_are_stamped_by_the_broker(broker, admin):
    kafka = pytest.importorskip("kafka")
    wait(admin.create_topics([NewTopic("lat", 1, 1, config={"message.timestamp.type": "LogAppendTime"})]))
    producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    before = int(time.time() * 1000)
    producer.send("lat", b"v", timestamp_ms=1).get(10)
    producer.close(5)
    consumer = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, consumer_timeout_ms=3000)
    try:
        tp = kafka.TopicPartition("lat", 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        (message,) = list(consumer)
    finally:
        consumer.close()
    assert message.timestamp_type == 1 and message.timestamp >= before


def _produce(client, topic, acks):
    builder = BatchBuilder()
    builder.append(1, None, b"v")
    request = ProduceRequest(acks=acks, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=builder.build())])])
    return client.request(ApiKey.PRODUCE, 9, request).responses[0].partition_responses[0].error_code


def test_min_insync_replicas_is_honoured_with_one_replica(raw):
    client = raw()
    client.request(ApiKey.CREATE_TOPICS, 5, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name="safe", num_partitions=1, replication_factor=1,
        configs=[CreateTopicsRequest.CreatableTopicConfig(name="min.insync.replicas", value="2")])]))
    assert _produce(client, "safe", acks=-1) == NotEnoughReplicasError.code
    assert _produce(client, "safe", acks=1) == 0


def test_offset_for_leader_epoch(raw):
    client = raw()
    client.request(ApiKey.METADATA, 9, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="e")]))
    _produce(client, "e", 1)

    def ask(leader_epoch, current=-1):
        request = OffsetForLeaderEpochRequest(topics=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
            topic="e", partitions=[OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
                partition=0, current_leader_epoch=current, leader_epoch=leader_epoch)])])
        p = client.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, request).topics[0].partitions[0]
        return p.error_code, p.leader_epoch, p.end_offset

    assert ask(0) == (0, 0, 1)
    assert ask(5) == (0, -1, -1)
    assert ask(0, current=3)[0] == UnknownLeaderEpochError.code
    assert FencedLeaderEpochError.code != UnknownLeaderEpochError.code


# -- DescribeConfigs: broker configs, and the broker synonyms of topic configs --------------


def test_broker_configs_include_listeners_and_the_log_keys(admin, broker):
    (configs,) = wait(admin.describe_configs([ConfigResource("broker", "0")])).values()
    assert set(BROKER_DEFAULTS) <= set(configs)
    assert configs["listeners"].value == "PLAINTEXT://127.0.0.1:0"
    assert configs["listeners"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["advertised.listeners"].value == ""  # unset: the same as listeners
    assert configs["log.retention.ms"].value == "604800000" and not configs["log.retention.ms"].is_read_only  # dynamic
    assert configs["listeners"].is_read_only
    assert configs["log.cleanup.policy"].value == "delete"


def test_broker_configs_given_at_start_are_static(tmp_path):
    settings = {"listeners": "PLAINTEXT://127.0.0.1:0", "advertised.listeners": "PLAINTEXT://localhost:0",
                "log.retention.ms": 604800000}  # set, even to its default: Kafka says STATIC_BROKER_CONFIG
    with MiniBroker(config=settings, data_dir=tmp_path) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        (configs,) = wait(admin.describe_configs([ConfigResource("broker", "0")])).values()
    for name in ("listeners", "advertised.listeners", "log.retention.ms", "log.dirs"):
        assert configs[name].source == ConfigSource.STATIC_BROKER_CONFIG.value, name
    assert configs["advertised.listeners"].value == "PLAINTEXT://localhost:0"
    assert configs["log.dirs"].value == str(tmp_path)
    assert configs["num.partitions"].source == ConfigSource.DEFAULT_CONFIG.value


def test_broker_synonyms_name_configs_of_both_tables_with_the_same_default():
    for topic_name, broker_name in BROKER_SYNONYMS.items():
        default, kind, _ = BROKER_DEFAULTS[broker_name]
        assert TOPIC_CONFIGS[topic_name].default == (str(default).lower() if kind is bool else str(default)), topic_name


def test_topic_configs_take_their_value_from_the_broker_synonym():
    with MiniBroker(config={"log.retention.ms": 3600000, "message.max.bytes": 2000000}) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        wait(admin.create_topics([NewTopic("inherits", 1, 1, config={"segment.ms": "60000"})]))
        configs = topic_configs(admin, "inherits")
    retention = configs["retention.ms"]
    assert retention.value == "3600000"  # what the topic's log uses, not Kafka's default
    assert retention.source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert "log.retention.ms" in retention.synonyms  # librdkafka asks for synonyms
    assert configs["max.message.bytes"].value == "2000000"
    assert configs["segment.ms"].value == "60000" and configs["segment.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["cleanup.policy"].source == ConfigSource.DEFAULT_CONFIG.value


def test_topic_config_synonyms_with_kafka_python():
    kafka = pytest.importorskip("kafka")
    from kafka.admin import ConfigResource as KConfigResource
    from kafka.admin import ConfigResourceType
    from kafka.admin import NewTopic as KNewTopic

    with MiniBroker(config={"log.retention.ms": 3600000}) as broker:
        admin = kafka.KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
        try:
            admin.create_topics([KNewTopic("syn", 1, 1, topic_configs={"segment.ms": "60000"})])
            resource = [KConfigResource(ConfigResourceType.TOPIC, "syn")]
            described = admin.describe_configs(resource, include_synonyms=True, config_filter="all")["topic"]["syn"]
            plain = admin.describe_configs(resource, config_filter="all")["topic"]["syn"]
            brokers = admin.describe_configs([KConfigResource(ConfigResourceType.BROKER, "0")],
                                             include_synonyms=True, config_filter="all")["broker"]["0"]
        finally:
            admin.close()

    def synonyms(config):
        return [(s["name"], s["value"], s["source"]) for s in config["synonyms"]]

    # From the setting in force to the fallback, as Kafka's ConfigHelper lists them.
    assert described["retention.ms"]["config_source"] == "STATIC_BROKER_CONFIG"
    assert synonyms(described["retention.ms"]) == [
        ("log.retention.ms", "3600000", "STATIC_BROKER_CONFIG"), ("log.retention.ms", "604800000", "DEFAULT_CONFIG")]
    assert described["segment.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert synonyms(described["segment.ms"]) == [
        ("segment.ms", "60000", "DYNAMIC_TOPIC_CONFIG"), ("log.roll.ms", "604800000", "DEFAULT_CONFIG")]
    assert synonyms(described["max.message.bytes"]) == [("message.max.bytes", "1048588", "DEFAULT_CONFIG")]
    assert synonyms(described["min.insync.replicas"]) == [("min.insync.replicas", "1", "DEFAULT_CONFIG")]
    assert synonyms(described["remote.storage.enable"]) == []  # no broker synonym in Kafka either
    assert described["min.insync.replicas"]["config_source"] == "DEFAULT_CONFIG"
    assert all(not config.get("synonyms") for config in plain.values())  # only when asked for
    assert plain["retention.ms"]["value"] == "3600000"
    assert synonyms(brokers["log.retention.ms"]) == [
        ("log.retention.ms", "3600000", "STATIC_BROKER_CONFIG"), ("log.retention.ms", "604800000", "DEFAULT_CONFIG")]
    assert synonyms(brokers["listeners"]) == [("listeners", "PLAINTEXT://127.0.0.1:0", "DEFAULT_CONFIG")]


def _describe(client, version, resource_type, name, **flags):
    request = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=resource_type, resource_name=name, configuration_keys=None)], **flags)
    return {c.name: c for c in client.request(ApiKey.DESCRIBE_CONFIGS, version, request).results[0].configs}


def test_describe_configs_versions_and_documentation(raw):
    client = raw()
    client.request(ApiKey.CREATE_TOPICS, 5, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name="docs", num_partitions=1, replication_factor=1,
        configs=[CreateTopicsRequest.CreatableTopicConfig(name="retention.ms", value="1000")])]))
    v0 = _describe(client, 0, 2, "docs")
    assert not v0["retention.ms"].is_default and v0["segment.ms"].is_default
    documented = _describe(client, 3, 4, "0", include_documentation=True)
    assert "NAME://host:port" in documented["listeners"].documentation
    assert _describe(client, 3, 4, "0")["listeners"].documentation is None  # only when asked, as in Kafka
    flexible = _describe(client, 4, 2, "docs", include_synonyms=True)
    assert [(s.name, s.value, s.source) for s in flexible["retention.ms"].synonyms] == [
        ("retention.ms", "1000", 1), ("log.retention.ms", "604800000", 5)]
