"""Committed offsets in ``__consumer_offsets``: Kafka's record format, and commits that
survive restarts, group and topic deletion, and compaction, seen through real clients."""

import struct
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kproto.admin import AdminClient
from kproto.errors import InvalidTopicError
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    MetadataRequest,
)
from minibroker import MiniBroker
from minibroker.coordinator import CommittedOffset
from minibroker.coordinator.offsets_log import (
    OFFSETS_TOPIC,
    decode_offset_record,
    encode_offset_key,
    encode_offset_value,
    java_string_hash,
    partition_for,
)

kafka = pytest.importorskip("kafka")
from kafka.structs import OffsetAndMetadata  # noqa: E402


def kstring(text: str) -> bytes:
    return struct.pack(">h", len(text.encode())) + text.encode()


# -- the record format ----------------------------------------------------------------------

def test_key_and_value_bytes_follow_kafkas_layout():
    key = encode_offset_key("grp", "topic", 7)
    assert key == struct.pack(">h", 1) + kstring("grp") + kstring("topic") + struct.pack(">i", 7)
    value = encode_offset_value(CommittedOffset(offset=42, leader_epoch=3, metadata="m", commit_timestamp=1700))
    assert value == struct.pack(">hqi", 3, 42, 3) + kstring("m") + struct.pack(">q", 1700)
    assert decode_offset_record(key, value) == ("grp", "topic", 7, CommittedOffset(
        offset=42, leader_epoch=3, metadata="m", commit_timestamp=1700))
    assert decode_offset_record(key, None) == ("grp", "topic", 7, None)  # a tombstone


@pytest.mark.parametrize("version, body, epoch", [
    (0, struct.pack(">q", 9) + kstring("md") + struct.pack(">q", 5), -1),
    (1, struct.pack(">q", 9) + kstring("md") + struct.pack(">qq", 5, 99), -1),  # with expire_timestamp
    (2, struct.pack(">q", 9) + kstring("md") + struct.pack(">q", 5), -1),
    (3, struct.pack(">qi", 9, 4) + kstring("md") + struct.pack(">q", 5), 4),
])
def test_every_value_version_kafka_has_written_is_read(version, body, epoch):
    key = struct.pack(">h", 0) + kstring("g") + kstring("t") + struct.pack(">i", 0)  # key version 0 too
    entry = decode_offset_record(key, struct.pack(">h", version) + body)
    assert entry == ("g", "t", 0, CommittedOffset(offset=9, leader_epoch=epoch, metadata="md", commit_timestamp=5))


def test_group_metadata_records_are_not_offsets():
    assert decode_offset_record(struct.pack(">h", 2) + kstring("g"), b"\x00\x03whatever") is None


@pytest.mark.parametrize("key, value", [
    (None, b""),
    (struct.pack(">h", 1) + kstring("g"), None),  # truncated key
    (encode_offset_key("g", "t", 0), struct.pack(">hq", 3, 1)),  # truncated value
    (encode_offset_key("g", "t", 0), struct.pack(">h", 4) + bytes(30)),  # a version from the future
    (struct.pack(">h", 1) + struct.pack(">h", 2) + b"\xff\xfe" + kstring("t") + bytes(4), None),  # not UTF-8
])
def test_malformed_records_raise_value_error(key, value):
    with pytest.raises(ValueError):
        decode_offset_record(key, value)


# The hand-packed format minibroker wrote before the records became the schema table's
# data messages (issue 12), kept here as the oracle: data dirs it wrote must still load,
# and what is written now must read back with it.

def old_encode_key(group_id, topic, partition):
    return struct.pack(">h", 1) + kstring(group_id) + kstring(topic) + struct.pack(">i", partition)


def old_encode_value(c):
    return struct.pack(">hqi", 3, c.offset, c.leader_epoch) + kstring(c.metadata or "") + struct.pack(
        ">q", c.commit_timestamp)


def old_decode(key, value):
    pos = 0

    def take(fmt):
        nonlocal pos
        (x,) = struct.unpack_from(fmt, key_or_value, pos)
        pos += struct.calcsize(fmt)
        return x

    def string():
        nonlocal pos
        n = take(">h")
        pos += n
        return key_or_value[pos - n:pos].decode()

    key_or_value = key
    if take(">h") not in (0, 1):
        return None
    group_id, topic, partition = string(), string(), take(">i")
    if value is None:
        return group_id, topic, partition, None
    key_or_value, pos = value, 0
    version = take(">h")
    offset = take(">q")
    epoch = take(">i") if version >= 3 else -1
    metadata = string()
    return group_id, topic, partition, CommittedOffset(
        offset=offset, leader_epoch=epoch, metadata=metadata, commit_timestamp=take(">q"))


texts = st.text(max_size=10)
commits = st.builds(CommittedOffset, offset=st.integers(-1, 2**63 - 1), leader_epoch=st.integers(-1, 2**31 - 1),
                    metadata=texts, commit_timestamp=st.integers(-1, 2**63 - 1))


@settings(max_examples=200, deadline=None)
@given(texts, texts, st.integers(0, 2**31 - 1), st.one_of(st.none(), commits))
def test_records_are_byte_identical_to_the_old_format_both_ways(group_id, topic, partition, committed):
    """Issue 12: the table's OffsetCommitKey/Value write the bytes the hand-packed code
    wrote, read what it wrote (existing data dirs load), and it reads what they write."""
    key = encode_offset_key(group_id, topic, partition)
    value = None if committed is None else encode_offset_value(committed)
    assert key == old_encode_key(group_id, topic, partition)
    assert value == (None if committed is None else old_encode_value(committed))
    entry = (group_id, topic, partition, committed)
    assert old_decode(key, value) == entry
    old_key = old_encode_key(group_id, topic, partition)
    old_value = None if committed is None else old_encode_value(committed)
    assert decode_offset_record(old_key, old_value) == entry


def test_a_value_of_version_4_is_read():
    """Issue 12: Kafka's OffsetCommitValue v4 (flexible, KIP-915) is in the table, so replay reads it."""
    key = encode_offset_key("g", "t", 0)
    value = struct.pack(">hqi", 4, 9, 2) + b"\x03md" + struct.pack(">q", 5) + b"\x00"
    assert decode_offset_record(key, value) == ("g", "t", 0, CommittedOffset(
        offset=9, leader_epoch=2, metadata="md", commit_timestamp=5))


def test_java_string_hash_and_kafkas_partition_rule():
    # Values of Java's String.hashCode, including a surrogate pair and int overflow.
    assert [java_string_hash(s) for s in ("", "a", "Aa", "BB", "hello")] == [0, 97, 2112, 2112, 99162322]
    assert java_string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00
    assert java_string_hash("polygenelubricants") == -(2**31)  # Kafka's Utils.abs maps it to 0
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("Aa", 50) == 2112 % 50
    assert 0 <= partition_for("hello world, with a long group id", 50) < 50


# -- through a running broker ---------------------------------------------------------------

def commit(bootstrap, group, offsets, metadata="meta"):
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        consumer.commit({kafka.TopicPartition(t, p): OffsetAndMetadata(o, metadata, -1) for (t, p), o in offsets.items()})
    finally:
        consumer.close()


def committed(bootstrap, group, partitions):
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        return {tp: consumer.committed(kafka.TopicPartition(*tp)) for tp in partitions}
    finally:
        consumer.close()


def create(bootstrap, *names, partitions=2):
    admin = kafka.KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([kafka.admin.NewTopic(n, partitions, 1) for n in names])
    finally:
        admin.close()


def test_commits_survive_a_restart_and_later_commits_win(tmp_path):
    with MiniBroker(data_dir=tmp_path) as broker:
        port, bs = broker.port, broker.bootstrap_servers
        create(bs, "orders")
        commit(bs, "billing", {("orders", 0): 10, ("orders", 1): 20})
        commit(bs, "billing", {("orders", 0): 11})
        commit(bs, "audit", {("orders", 1): 3})
        assert OFFSETS_TOPIC in broker._server.state.topics
    with MiniBroker(port=port, data_dir=tmp_path) as broker:
        bs = broker.bootstrap_servers
        assert committed(bs, "billing", [("orders", 0), ("orders", 1)]) == {("orders", 0): 11, ("orders", 1): 20}
        assert committed(bs, "audit", [("orders", 0), ("orders", 1)]) == {("orders", 0): None, ("orders", 1): 3}
        stored = broker._server.state.groups.offsets.get("billing", "orders", 0)
        assert stored.metadata == "meta" and stored.commit_timestamp > 0
        admin = kafka.KafkaAdminClient(bootstrap_servers=bs)
        try:
            assert {g["group_id"] for g in admin.list_groups()} >= {"billing", "audit"}  # Empty groups, as Kafka
        finally:
            admin.close()


def test_deleted_groups_and_topics_stay_deleted_after_a_restart(tmp_path):
    with MiniBroker(data_dir=tmp_path) as broker:
        port, bs = broker.port, broker.bootstrap_servers
        create(bs, "kept", "dropped")
        commit(bs, "gone", {("kept", 0): 5})
        commit(bs, "stays", {("kept", 0): 6, ("dropped", 1): 7})
        admin = kafka.KafkaAdminClient(bootstrap_servers=bs)
        try:
            admin.delete_groups(["gone"])
            admin.delete_topics(["dropped"])
        finally:
            admin.close()
        assert broker._server.state.groups.offsets.committed("stays") == {("kept", 0): CommittedOffset(
            offset=6, metadata="meta", commit_timestamp=broker._server.state.groups.offsets.get("stays", "kept", 0).commit_timestamp)}
    with MiniBroker(port=port, data_dir=tmp_path) as broker:
        offsets = broker._server.state.groups.offsets
        assert not offsets.has_offsets("gone")
        assert list(offsets.committed("stays")) == [("kept", 0)]


def read_offsets_topic(bootstrap, partition):
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=1000)
    try:
        tp = kafka.TopicPartition(OFFSETS_TOPIC, partition)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        return [(m.offset, decode_offset_record(m.key, m.value)) for m in consumer]
    finally:
        consumer.close()


def test_the_offsets_topic_is_readable_by_a_consumer_and_decodes_as_kafkas():
    with MiniBroker() as broker:
        bs = broker.bootstrap_servers
        create(bs, "events")
        commit(bs, "readers", {("events", 0): 77}, metadata="")
        entries = [e for _, e in read_offsets_topic(bs, partition_for("readers", 50))]
        assert [e[:3] + (e[3].offset, e[3].metadata) for e in entries] == [("readers", "events", 0, 77, "")]


def test_compaction_of_the_offsets_topic_keeps_the_last_commit_of_each_partition(tmp_path):
    config = {"offsets.topic.num.partitions": 1, "offsets.topic.segment.bytes": 1024,
              "log.retention.check.interval.ms": 50}
    with MiniBroker(data_dir=tmp_path, config=config) as broker:
        port, bs = broker.port, broker.bootstrap_servers
        create(bs, "busy")
        for i in range(40):
            commit(bs, "g", {("busy", i % 2): i})
        deadline = time.monotonic() + 10
        while len(records := read_offsets_topic(bs, 0)) >= 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(records) < 40, "the cleaner never compacted __consumer_offsets"
        offsets = [o for o, _ in records]
        assert offsets == sorted(offsets) and offsets[-1] == 39  # gaps, order kept, the newest still there
    with MiniBroker(port=port, data_dir=tmp_path, config=config) as broker:
        assert committed(broker.bootstrap_servers, "g", [("busy", 0), ("busy", 1)]) == {("busy", 0): 38, ("busy", 1): 39}


def test_clients_cannot_create_delete_or_grow_the_offsets_topic(broker, raw):
    client = raw()

    def create():
        return client.request(ApiKey.CREATE_TOPICS, 5, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=OFFSETS_TOPIC, num_partitions=1, replication_factor=1)])).topics[0].error_code

    assert create() == InvalidTopicError.code  # not even before the broker made it
    assert OFFSETS_TOPIC not in broker._server.state.topics
    create_one = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(name="t", num_partitions=1, replication_factor=1)])
    client.request(ApiKey.CREATE_TOPICS, 5, create_one)
    commit(broker.bootstrap_servers, "g", {("t", 0): 1})
    assert create() == InvalidTopicError.code
    deleted = client.request(ApiKey.DELETE_TOPICS, 5, DeleteTopicsRequest(topic_names=[OFFSETS_TOPIC], timeout_ms=1000))
    assert deleted.responses[0].error_code == InvalidTopicError.code
    grown = client.request(ApiKey.CREATE_PARTITIONS, 3, CreatePartitionsRequest(topics=[
        CreatePartitionsRequest.CreatePartitionsTopic(name=OFFSETS_TOPIC, count=60, assignments=None)], timeout_ms=1000))
    assert grown.results[0].error_code == InvalidTopicError.code
    assert len(broker._server.state.topics[OFFSETS_TOPIC].partitions) == 50


def test_metadata_flags_the_offsets_topic_internal_and_creates_it_as_the_brokers(broker, raw):
    client = raw()
    response = client.request(ApiKey.METADATA, 12, MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=OFFSETS_TOPIC)], allow_auto_topic_creation=True))
    (described,) = response.topics
    assert described.error_code == 0 and described.is_internal and len(described.partitions) == 50
    assert broker._server.state.topics[OFFSETS_TOPIC].configs["cleanup.policy"] == "compact"
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:  # hides internal topics, as Java's
        assert OFFSETS_TOPIC not in admin.list_topics() and OFFSETS_TOPIC in admin.list_topics(include_internal=True)


def test_confluent_and_aiokafka_commits_survive_a_restart(tmp_path):
    confluent = pytest.importorskip("confluent_kafka")
    aiokafka = pytest.importorskip("aiokafka")
    import asyncio

    with MiniBroker(data_dir=tmp_path) as broker:
        port, bs = broker.port, broker.bootstrap_servers
        create(bs, "peers")
        c = confluent.Consumer({"bootstrap.servers": bs, "group.id": "by-confluent", "enable.auto.commit": False})
        try:
            c.commit(offsets=[confluent.TopicPartition("peers", 0, 12)], asynchronous=False)
        finally:
            c.close()

        async def aio_commit():
            consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=bs, group_id="by-aiokafka", enable_auto_commit=False)
            await consumer.start()
            try:
                consumer.assign([aiokafka.TopicPartition("peers", 1)])  # aiokafka commits only what it consumes
                await consumer.commit({aiokafka.TopicPartition("peers", 1): 34})
            finally:
                await consumer.stop()
        asyncio.run(aio_commit())
    with MiniBroker(port=port, data_dir=tmp_path) as broker:
        c = confluent.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "by-confluent"})
        try:
            (tp,) = c.committed([confluent.TopicPartition("peers", 0)], timeout=10)
            assert tp.offset == 12
        finally:
            c.close()

        async def aio_committed():
            consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id="by-aiokafka")
            await consumer.start()
            try:
                return await consumer.committed(aiokafka.TopicPartition("peers", 1))
            finally:
                await consumer.stop()
        assert asyncio.run(aio_committed()) == 34
