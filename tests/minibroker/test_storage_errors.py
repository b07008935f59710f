"""Requests other than Produce and Fetch on a full or failed disk: answered as Kafka does.

Issue 10, "a write error closes the connection instead of answering KAFKA_STORAGE_ERROR":
committed offsets, group deletions and expiry write ``__consumer_offsets``; DeleteRecords
and ListOffsets touch a partition that may be offline; maintenance must outlive an I/O
error. Each test runs a real broker on a real tmpfs that fills up (the ``small_disk``
fixture) or, for what a full disk cannot provoke, a failure injected at the file layer.
"""

from __future__ import annotations

import threading
import time

import pytest

from kproto.errors import (
    CoordinatorNotAvailableError,
    KafkaStorageError,
    LeaderNotAvailableError,
    NotCoordinatorError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    DeleteRecordsRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from minibroker import MiniBroker
from minibroker.coordinator import CommittedOffset, GroupCoordinator
from minibroker.state import OFFSETS_TOPIC
from tests.minibroker.conftest import RawClient
from tests.minibroker.test_log_disk_full import batch, create_topic, produce

# One offsets partition: the tmpfs holds a few hundred KiB, and 50 partitions' files
# would take most of it before the test fills the rest.
ONE_OFFSETS_PARTITION = {"offsets.topic.num.partitions": 1}


def commit(client: RawClient, group: str, offset: int, topic: str = "t", partition: int = 0) -> int:
    """A simple consumer's OffsetCommit (v8); its error code."""
    response = client.request(ApiKey.OFFSET_COMMIT, 8, OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(
                    partition_index=partition, committed_offset=offset, committed_leader_epoch=-1,
                    committed_metadata="")])]))
    return response.topics[0].partitions[0].error_code


def committed(client: RawClient, group: str, topic: str = "t", partition: int = 0) -> int:
    response = client.request(ApiKey.OFFSET_FETCH, 7, OffsetFetchRequest(group_id=group, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=[partition])]))
    return response.topics[0].partitions[0].committed_offset


def fill_disk(disk, client: RawClient, group: str) -> int:
    """Fill the disk, then commit 0, 1, 2, ... to ``group`` until the offsets log has no
    room left in the pages it already has; returns the last offset committed."""
    disk.fill()
    for offset in range(200):  # a page holds ~50 commits
        if commit(client, group, offset):
            return offset - 1
    raise AssertionError("the full disk took every commit")


def test_offset_commit_on_a_full_disk_answers_not_coordinator_and_keeps_the_old_offset(small_disk):
    """Issue 10: the append to ``__consumer_offsets`` fails for lack of space. Before the
    fix the KafkaStorageError escaped the handler and the connection was closed. Now the
    commit gets NOT_COORDINATOR (Kafka's storeOffsets mapping of KAFKA_STORAGE_ERROR),
    the connection stays up, OffsetFetch still says the old offset, the retry succeeds
    once space is back, and a restart reads back exactly what was acknowledged."""
    with MiniBroker(data_dir=small_disk.path, config=ONE_OFFSETS_PARTITION) as broker:
        port = broker.port
        client = RawClient(port)
        try:
            create_topic(client, "t", 1)
            assert commit(client, "g", 0) == 0
            last = fill_disk(small_disk, client, "g")
            codes = {commit(client, "g", 1000) for _ in range(3)}
            assert codes == {NotCoordinatorError.code}
            assert committed(client, "g") == last  # memory agrees with the log
            small_disk.free()
            assert commit(client, "g", 1000) == 0
            assert committed(client, "g") == 1000
        finally:
            client.close()
    with MiniBroker(port=port, data_dir=small_disk.path, config=ONE_OFFSETS_PARTITION) as broker:
        client = RawClient(broker.port)
        try:
            assert committed(client, "g") == 1000
        finally:
            client.close()


def test_the_offsets_topic_cannot_be_created_on_a_full_disk(small_disk):
    """Issue 10: the first commit must create ``__consumer_offsets`` and the disk is full.
    Before the fix the OSError closed the connection and left half-made partition
    directories. Now the commit gets COORDINATOR_NOT_AVAILABLE (Kafka's answer while the
    offsets partition does not exist), nothing of the topic is left, and the commit
    succeeds, creating the topic, once space is back."""
    config = {"offsets.topic.num.partitions": 3}
    with MiniBroker(data_dir=small_disk.path, config=config) as broker:
        client = RawClient(broker.port)
        try:
            create_topic(client, "t", 1)
            small_disk.fill()
            assert commit(client, "g", 5) == CoordinatorNotAvailableError.code
            assert OFFSETS_TOPIC not in broker._server.state.topics
            assert not list(small_disk.path.glob(f"{OFFSETS_TOPIC}-*"))
            assert committed(client, "g") == -1
            small_disk.free()
            assert commit(client, "g", 5) == 0
            assert committed(client, "g") == 5
            assert len(list(small_disk.path.glob(f"{OFFSETS_TOPIC}-*"))) == 3
        finally:
            client.close()


def test_kproto_consumer_commit_retries_through_a_full_disk(small_disk):
    """Issue 10 with kproto's consumer: NOT_COORDINATOR is retriable, so ``commit`` finds
    the coordinator again and retries until space is back, then returns; the offset is
    committed once and survives."""
    from kproto.consumer import Consumer
    from kproto.structs import TopicPartition

    with MiniBroker(data_dir=small_disk.path, config=ONE_OFFSETS_PARTITION) as broker:
        client = RawClient(broker.port)
        try:
            create_topic(client, "t", 1)
            assert commit(client, "kg", 0) == 0
            tp = TopicPartition("t", 0)
            with Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "kg",
                           "enable.auto.commit": False, "retry.backoff.ms": 20}) as consumer:
                consumer.assign([tp])
                last = fill_disk(small_disk, client, "kg")
                outcome: list[object] = []
                worker = threading.Thread(target=lambda: outcome.append(_call(consumer.commit, {tp: 1000}, timeout=20)))
                worker.start()
                time.sleep(0.5)  # several refused attempts
                assert not outcome and committed(client, "kg") == last
                small_disk.free()
                worker.join(20)
                assert outcome == [None]
                assert consumer.committed([tp])[tp].offset == 1000
        finally:
            client.close()


def test_confluent_kafka_commit_retries_through_a_full_disk(small_disk):
    """Issue 10 through librdkafka: a synchronous commit on a full disk gets
    NOT_COORDINATOR, never a closed connection; librdkafka looks the coordinator up again
    and retries, and a commit succeeds once space is back."""
    ck = pytest.importorskip("confluent_kafka")
    with MiniBroker(data_dir=small_disk.path, config=ONE_OFFSETS_PARTITION) as broker:
        client = RawClient(broker.port)
        try:
            create_topic(client, "t", 1)
            assert commit(client, "ckg", 0) == 0
            consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "ckg",
                                    "enable.auto.commit": False})
            try:
                last = fill_disk(small_disk, client, "ckg")
                outcome: list[object] = []
                offsets = [ck.TopicPartition("t", 0, 1000)]
                worker = threading.Thread(target=lambda: outcome.append(
                    _call(consumer.commit, offsets=offsets, asynchronous=False)))
                worker.start()
                time.sleep(1.0)
                assert committed(client, "ckg") == last
                small_disk.free()
                worker.join(30)
                assert not worker.is_alive()
                result = outcome[0]
                if isinstance(result, ck.KafkaException):
                    # librdkafka retries NOT_COORDINATOR a few times (looking the
                    # coordinator up again), then reports it, as it would from Kafka.
                    assert result.args[0].code() == ck.KafkaError.NOT_COORDINATOR, result
                    consumer.commit(offsets=offsets, asynchronous=False)
                else:
                    assert [(tp.offset, tp.error) for tp in result] == [(1000, None)]
                assert committed(client, "ckg") == 1000
            finally:
                consumer.close()
        finally:
            client.close()


def _call(function, *args, **kwargs):
    try:
        return function(*args, **kwargs)
    except Exception as exc:  # handed to the test thread
        return exc


def test_expiry_goes_on_past_a_group_whose_tombstones_cannot_be_written():
    """Issue 10: the offsets log refuses the expiry tombstones of one group
    (KafkaStorageError, as PartitionLog.append raises on a full disk). Before the fix the
    error escaped ``expire`` and no later group was expired in that check. Now that
    group keeps its offsets (memory as the log) until the next check, the others go."""
    clock = [0]

    def journal(group_id, entries):
        if group_id == "stuck":
            raise KafkaStorageError("No space left on device")

    coordinator = GroupCoordinator({"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 10,
                                    "group.max.session.timeout.ms": 60_000, "offsets.retention.minutes": 1},
                                   wall_clock=lambda: clock[0], journal=journal)
    coordinator.load_offsets([(group, "t", 0, CommittedOffset(offset=1, commit_timestamp=0)) for group in ("stuck", "other")])
    clock[0] = 120_000
    coordinator.expire()
    assert coordinator.offsets.has_offsets("stuck") and not coordinator.offsets.has_offsets("other")


def test_delete_records_and_list_offsets_on_an_offline_partition_answer_storage_error(tmp_path):
    """Issue 10: once a partition is offline (a write failed and so did its undo),
    DeleteRecords and ListOffsets for it answer KAFKA_STORAGE_ERROR, as Kafka's
    ReplicaManager does for a partition on an offline log dir, and Metadata lists its
    replica as offline with LEADER_NOT_AVAILABLE; the other partition is served."""
    with MiniBroker(data_dir=tmp_path) as broker:
        client = RawClient(broker.port)
        try:
            create_topic(client, "t", 2)
            assert produce(client, "t", {0: batch(b"a"), 1: batch(b"b")})[0].error_code == 0
            broker._server.state.topics["t"].partitions[0]._go_offline("EIO on truncate (test)")
            deleted = client.request(ApiKey.DELETE_RECORDS, 2, DeleteRecordsRequest(timeout_ms=5000, topics=[
                DeleteRecordsRequest.DeleteRecordsTopic(name="t", partitions=[
                    DeleteRecordsRequest.DeleteRecordsPartition(partition_index=p, offset=1) for p in (0, 1)])]))
            assert [(p.error_code, p.low_watermark) for p in deleted.topics[0].partitions] == \
                [(KafkaStorageError.code, -1), (0, 1)]
            listed = client.request(ApiKey.LIST_OFFSETS, 7, ListOffsetsRequest(replica_id=-1, topics=[
                ListOffsetsRequest.ListOffsetsTopic(name="t", partitions=[
                    ListOffsetsRequest.ListOffsetsPartition(partition_index=p, timestamp=-1) for p in (0, 1)])]))
            assert [(p.error_code, p.offset) for p in listed.topics[0].partitions] == \
                [(KafkaStorageError.code, -1), (0, 1)]
            metadata = client.request(ApiKey.METADATA, 9, MetadataRequest(topics=None))
            parts = sorted(next(t for t in metadata.topics if t.name == "t").partitions, key=lambda p: p.partition_index)
            node = broker._server.state.node_id
            assert [(p.error_code, p.leader_id, p.offline_replicas) for p in parts] == \
                [(LeaderNotAvailableError.code, -1, [node]), (0, node, [])]
        finally:
            client.close()
