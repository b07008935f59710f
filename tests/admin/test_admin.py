"""kproto's AdminClient and AIOAdminClient against minibroker, with kafka-python as the
counterpart that sees what the admin client did (and does what it then reads); the same
against Tansu: ``test_tansu_clients.py``."""

import asyncio
import threading

import pytest

from kproto.admin import AdminClient, AIOAdminClient, ConfigResource, NewTopic
from kproto.errors import (
    ConfigError,
    GroupIdNotFoundError,
    InvalidPartitionsError,
    NoBrokersAvailableError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from kproto.structs import OffsetAndMetadata, TopicPartition

kafka = pytest.importorskip("kafka")


@pytest.fixture(scope="module")
def minibroker(broker):
    return broker


@pytest.fixture
def admin(minibroker):
    with AdminClient(bootstrap_servers=minibroker.bootstrap_servers) as client:
        yield client


def produce(bootstrap, topic, count, partition=0):
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap)
    try:
        for i in range(count):
            producer.send(topic, b"v%d" % i, partition=partition, timestamp_ms=1000 + i)
        producer.flush(10)
    finally:
        producer.close(5)


def test_topics_round_trip_and_failures_keep_every_result(admin, minibroker):
    ids = admin.create_topics([NewTopic("adm-a", 3), NewTopic("adm-b", configs={"cleanup.policy": "compact"})])
    assert set(ids) == {"adm-a", "adm-b"} and all(ids.values())
    oracle = kafka.KafkaAdminClient(bootstrap_servers=minibroker.bootstrap_servers)
    try:
        assert {"adm-a", "adm-b"} <= set(oracle.list_topics())
    finally:
        oracle.close()
    with pytest.raises(TopicAlreadyExistsError) as raised:
        admin.create_topics([NewTopic("adm-a"), NewTopic("adm-c")])
    assert isinstance(raised.value.results["adm-a"], TopicAlreadyExistsError) and raised.value.results["adm-c"]
    assert admin.create_topics([NewTopic("adm-d")], validate_only=True) == {"adm-d": None}
    assert "adm-d" not in admin.list_topics()
    described = admin.describe_topics(["adm-a"])["adm-a"]
    assert [p.partition for p in described.partitions] == [0, 1, 2] and described.partitions[0].leader == 0
    assert described.topic_id == ids["adm-a"] and not described.is_internal
    admin.create_partitions({"adm-a": 5})
    assert len(admin.describe_topics(["adm-a"])["adm-a"].partitions) == 5
    with pytest.raises(InvalidPartitionsError):
        admin.create_partitions({"adm-a": 2})
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.describe_topics(["adm-never"])
    assert admin.delete_topics(["adm-b", "adm-c"]) == {"adm-b": None, "adm-c": None}
    assert not {"adm-b", "adm-c"} & set(admin.list_topics())


def test_configs_describe_alter_and_incremental(admin):
    admin.create_topics([NewTopic("cfg", configs={"retention.ms": "1000"})])
    topic = ConfigResource.topic("cfg")
    entry = admin.describe_configs([topic])[topic]["retention.ms"]
    assert entry.value == "1000" and not entry.is_default and entry.source == 1  # DYNAMIC_TOPIC_CONFIG
    admin.incremental_alter_configs({topic: [("cleanup.policy", "set", "compact"), ("retention.ms", "delete", None)]})
    configs = admin.describe_configs([topic])[topic]
    assert configs["cleanup.policy"].value == "compact" and configs["retention.ms"].is_default
    admin.alter_configs({topic: {"segment.ms": "5000"}})  # replaces the whole set
    configs = admin.describe_configs([topic])[topic]
    assert configs["segment.ms"].value == "5000" and configs["cleanup.policy"].is_default
    broker = admin.describe_configs([ConfigResource.broker(0)])[ConfigResource.broker(0)]
    assert broker["num.partitions"].value == "1"


def test_group_offsets_written_by_a_peer_are_read_altered_and_deleted(admin, minibroker):
    admin.create_topics([NewTopic("grp-t", 2)])
    produce(minibroker.bootstrap_servers, "grp-t", 5)
    consumer = kafka.KafkaConsumer(bootstrap_servers=minibroker.bootstrap_servers, group_id="grp", enable_auto_commit=False)
    try:
        consumer.commit({kafka.TopicPartition("grp-t", 0): kafka.structs.OffsetAndMetadata(3, "peer", -1)})
    finally:
        consumer.close()
    tp0, tp1 = TopicPartition("grp-t", 0), TopicPartition("grp-t", 1)
    assert admin.list_group_offsets("grp") == {tp0: OffsetAndMetadata(3, "peer", -1)}
    assert admin.list_group_offsets("grp", [tp0, tp1])[tp1].offset == -1
    assert "grp" in {g.group_id for g in admin.list_groups()}
    assert [g.group_id for g in admin.list_groups(states=["Stable"])] == []
    described = admin.describe_groups(["grp"])["grp"]
    assert described.state == "Empty" and described.members == [] and described.coordinator == 0
    admin.alter_group_offsets("grp", {tp0: 1, tp1: OffsetAndMetadata(4, "by kproto")})
    consumer = kafka.KafkaConsumer(bootstrap_servers=minibroker.bootstrap_servers, group_id="grp", enable_auto_commit=False)
    try:
        assert consumer.committed(kafka.TopicPartition("grp-t", 0)) == 1
        assert consumer.committed(kafka.TopicPartition("grp-t", 1)) == 4
    finally:
        consumer.close()
    admin.delete_group_offsets("grp", [tp0])
    assert set(admin.list_group_offsets("grp")) == {tp1}
    assert admin.delete_groups(["grp"]) == {"grp": None}
    with pytest.raises(GroupIdNotFoundError):
        admin.delete_groups(["grp"])


def test_list_offsets_and_delete_records(admin, minibroker):
    admin.create_topics([NewTopic("offs", 1)])
    produce(minibroker.bootstrap_servers, "offs", 10)
    tp = TopicPartition("offs", 0)
    listed = admin.list_offsets({tp: "latest"})[tp]
    assert listed.offset == 10
    assert admin.list_offsets({tp: "earliest"})[tp].offset == 0
    assert admin.list_offsets({tp: 1004})[tp].offset == 4
    assert admin.list_offsets({tp: "max_timestamp"})[tp].timestamp == 1009
    assert admin.list_offsets({tp: 99999})[tp].offset == -1
    assert admin.delete_records({tp: 6}) == {tp: 6}
    assert admin.list_offsets({tp: "earliest"})[tp].offset == 6


def test_describe_cluster(admin, minibroker):
    cluster = admin.describe_cluster()
    assert cluster.controller_id == 0 and [(b.node_id, b.port) for b in cluster.brokers] == [(0, minibroker.port)]


def test_async_client_and_no_leftovers(minibroker):
    before = set(threading.enumerate())

    async def run():
        async with AIOAdminClient({"bootstrap.servers": minibroker.bootstrap_servers}) as admin:
            await admin.create_topics([NewTopic("aio-t", 2)])
            assert "aio-t" in await admin.list_topics()
            assert (await admin.describe_cluster()).brokers[0].port == minibroker.port
        assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
    asyncio.run(run())
    admin = AdminClient(bootstrap_servers=minibroker.bootstrap_servers)
    admin.list_topics()
    admin.close()
    admin.close()  # idempotent
    assert set(threading.enumerate()) == before


def test_bad_config_and_unreachable_brokers_are_clear():
    with pytest.raises(ConfigError, match="did you mean 'request.timeout.ms'"):
        AdminClient(bootstrap_servers="127.0.0.1:1", request_timeout=5)
    with AdminClient(bootstrap_servers="127.0.0.1:1", socket_connection_setup_timeout_ms=500,
                     default_api_timeout_ms=1500) as admin:  # lazy: the call tries until its timeout
        with pytest.raises(NoBrokersAvailableError):
            admin.list_topics()
