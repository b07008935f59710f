"""Requests other than Produce and Fetch on a full or failed disk: answered as Kafka does.

Issue 10, "a write error closes the connection instead of answering KAFKA_STORAGE_ERROR":
committed offsets, group deletions and expiry write ``__consumer_offsets``; DeleteRecords
and ListOffsets touch a partition that may be offline; maintenance must outlive an I/O
error. Each test runs a real broker on a real tmpfs that fills up (the ``small_disk``
fixture) or, for what a full disk cannot provoke, a failure injected at the file layer.
"""

from __future__ import annotations

import asyncio
import errno
import os
import threading
import time

import pytest

from kproto.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    KafkaStorageError,
    LeaderNotAvailableError,
    NotCoordinatorError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    AlterConfigsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteGroupsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
)
from kproto.records import BatchBuilder, decode_record_set
from minibroker import MiniBroker
from minibroker.coordinator import CommittedOffset, GroupCoordinator
from minibroker.log import LogConfig, PartitionLog
from minibroker.log.maintenance import maintain
from minibroker.state import OFFSETS_TOPIC
from tests.minibroker.log.test_disk_full import batch, create_topic, produce
from tests.support.raw_client import RawClient

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
            broker._server.state.topics["t"].partitions[0].log.go_offline("EIO on truncate (test)")
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


def test_delete_records_on_a_full_disk_answers_storage_error_and_keeps_the_connection(small_disk):
    """Issue 10: DeleteRecords must write the log start offset checkpoint first, and the
    disk is full. Before the fix the OSError closed the connection, with the log start
    offset already moved in memory but not on disk. Now the partition goes offline, as
    Kafka's log dir does on an IOException, and answers KAFKA_STORAGE_ERROR; the other
    partition is served; a restart recovers it with nothing deleted."""
    with MiniBroker(data_dir=small_disk.path) as broker:
        port = broker.port
        client = RawClient(port)
        try:
            create_topic(client, "t", 2)
            assert produce(client, "t", {0: batch(b"a"), 1: batch(b"b")})[0].error_code == 0
            assert produce(client, "t", {0: batch(b"c")})[0].error_code == 0
            small_disk.fill()

            def delete_records(partition: int) -> tuple[int, int]:
                answer = client.request(ApiKey.DELETE_RECORDS, 2, DeleteRecordsRequest(timeout_ms=5000, topics=[
                    DeleteRecordsRequest.DeleteRecordsTopic(name="t", partitions=[
                        DeleteRecordsRequest.DeleteRecordsPartition(partition_index=partition, offset=1)])]))
                p = answer.topics[0].partitions[0]
                return p.error_code, p.low_watermark

            assert delete_records(0) == (KafkaStorageError.code, -1)
            assert delete_records(0) == (KafkaStorageError.code, -1)  # offline now
            small_disk.free()
            assert delete_records(1) == (0, 1)
        finally:
            client.close()
    with MiniBroker(port=port, data_dir=small_disk.path) as broker:
        client = RawClient(broker.port)
        try:
            listed = client.request(ApiKey.LIST_OFFSETS, 7, ListOffsetsRequest(replica_id=-1, topics=[
                ListOffsetsRequest.ListOffsetsTopic(name="t", partitions=[
                    ListOffsetsRequest.ListOffsetsPartition(partition_index=p, timestamp=-2) for p in (0, 1)])]))
            assert [(p.error_code, p.offset) for p in listed.topics[0].partitions] == [(0, 0), (0, 1)]
        finally:
            client.close()


def _log_with_segments(directory, policy: str, clock) -> PartitionLog:
    """A log on disk of three segments of one keyed record each, plus an empty active one."""
    log = PartitionLog(directory, config=LogConfig(segment_bytes=100, cleanup_policy=policy, retention_ms=1000),
                       clock=clock)
    for value in (b"a" * 60, b"b" * 60, b"c" * 60):
        builder = BatchBuilder()
        builder.append(0, b"k", value)
        log.append(builder.build(), last_offset_delta=0, max_timestamp=0, leader_epoch=0)
    log.roll()
    return log


def test_retention_that_cannot_remove_a_segment_takes_the_log_offline_and_goes_on(tmp_path, monkeypatch, caplog):
    """Issue 10: retention drops a segment from the log but its ``.log`` cannot be renamed
    to ``.deleted`` (EIO; Kafka's asyncDeleteSegment renames first, file.delete.delay.ms).
    Before the fix the log stayed online although its files no longer matched it (after a
    restart the deleted records came back). Now the log goes offline, and maintenance goes
    on with the next log."""
    bad = _log_with_segments(tmp_path / "bad-0", "delete", lambda: 10_000)
    good = _log_with_segments(tmp_path / "good-0", "delete", lambda: 10_000)
    real_replace = os.replace

    def replace(src, dst, *args, **kwargs):
        if str(src).startswith(str(bad.directory)) and str(src).endswith(".log"):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    try:
        asyncio.run(maintain([bad, good]))
        assert bad.offline and not good.offline
        assert good.log_start_offset == 3 and len(good.segments) == 1
        with pytest.raises(KafkaStorageError):
            bad.read(0, 1000)
        assert "failed, the log is offline" in caplog.text
    finally:
        monkeypatch.undo()
        bad.close()
        good.close()


def test_a_compaction_that_fails_after_its_commit_point_takes_the_log_offline(tmp_path, monkeypatch):
    """Issue 10: the cleaned segment is committed (its ``.log.swap`` exists) but the final
    rename fails. Before the fix the log stayed online holding the old segments, whose
    files were gone. Now it goes offline, and a reopen completes the swap of the first
    segment (each segment is a group of its own here; the others were not cleaned)."""
    plog = _log_with_segments(tmp_path / "c-0", "compact", lambda: 10_000)
    real_replace = os.replace

    def replace(src, dst, *args, **kwargs):
        if str(src).endswith(".log.swap"):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    try:
        with pytest.raises(OSError):
            plog.compact()
        assert plog.offline
    finally:
        monkeypatch.undo()
        plog.close()
    with PartitionLog(tmp_path / "c-0", config=LogConfig(segment_bytes=100, cleanup_policy="compact")) as again:
        assert not again.offline
        assert [r.value for r in decode_record_set(again.read(0, 10_000))[0]] == [b"b" * 60, b"c" * 60]


def test_a_compaction_on_a_full_disk_leaves_the_log_as_it_was(small_disk):
    """Issue 10: the cleaned copy cannot be written (a full disk). The originals stay, the
    log stays online and serves every record, and the next cleaning succeeds once space
    is back. (This held before the fix too; it guards the line between the two cases.)"""
    plog = _log_with_segments(small_disk.path / "c-0", "compact", lambda: 10_000)
    try:
        small_disk.fill()
        with pytest.raises(OSError):
            plog.compact()
        assert not plog.offline
        assert [r.value for r in decode_record_set(plog.read(0, 10_000))[0]] == [b"a" * 60, b"b" * 60, b"c" * 60]
        small_disk.free()
        assert plog.compact().records_kept == 1
        assert [r.value for r in decode_record_set(plog.read(0, 10_000))[0]] == [b"c" * 60]
    finally:
        plog.close()


def _leave_free_pages(disk, pages: int) -> None:
    """Fill the disk, then give back ``pages`` pages (a page holds one small file)."""
    disk.fill()
    os.truncate(disk.filler, os.path.getsize(disk.filler) - pages * 4096)


def _topic_names(client: RawClient) -> set[str]:
    return {t.name for t in client.request(ApiKey.METADATA, 9, MetadataRequest(topics=None)).topics}


def test_create_topics_whose_topics_file_cannot_be_written_leaves_nothing(small_disk):
    """Issue 10: the partitions of a new topic are made, then the topics file cannot be
    rewritten (the disk is full). Before the fix the answer was KAFKA_STORAGE_ERROR but
    the topic stayed, in memory only (listed by Metadata, gone after a restart, its
    directory stray). Now nothing of it is left, CreatePartitions likewise keeps the
    count it had, and both succeed once space is back."""
    with MiniBroker(data_dir=small_disk.path) as broker:
        client = RawClient(broker.port)
        try:
            create_topic(client, "t", 1)
            _leave_free_pages(small_disk, 1)  # the partition.metadata fits, the topics file does not
            request = CreateTopicsRequest(timeout_ms=5000, validate_only=False, topics=[
                CreateTopicsRequest.CreatableTopic(name="new", num_partitions=1, replication_factor=1,
                                                   assignments=[], configs=[])])
            answer = client.request(ApiKey.CREATE_TOPICS, 5, request).topics[0]
            assert answer.error_code == KafkaStorageError.code, answer
            assert _topic_names(client) == {"t"} and not (small_disk.path / "new-0").exists()
            small_disk.free()
            _leave_free_pages(small_disk, 1)
            grown = client.request(ApiKey.CREATE_PARTITIONS, 3, CreatePartitionsRequest(
                timeout_ms=5000, validate_only=False, topics=[
                    CreatePartitionsRequest.CreatePartitionsTopic(name="t", count=2, assignments=None)])).results[0]
            assert grown.error_code == KafkaStorageError.code, grown
            assert len(broker._server.state.topics["t"].partitions) == 1 and not (small_disk.path / "t-1").exists()
            small_disk.free()
            assert client.request(ApiKey.CREATE_TOPICS, 5, request).topics[0].error_code == 0
            assert _topic_names(client) == {"t", "new"}
        finally:
            client.close()


def test_metadata_auto_creation_on_a_full_disk_answers_leader_not_available(small_disk):
    """Issue 10: Metadata would create a topic (auto.create.topics.enable) and the disk is
    full. Before the fix the OSError closed the connection. Now the topic gets
    LEADER_NOT_AVAILABLE (retriable, as from Kafka while the topic has no leader) and is
    created by a later Metadata once space is back."""
    with MiniBroker(data_dir=small_disk.path) as broker:
        client = RawClient(broker.port)
        try:
            small_disk.fill()
            asked = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="auto")],
                                    allow_auto_topic_creation=True)
            answer = client.request(ApiKey.METADATA, 9, asked).topics[0]
            assert (answer.name, answer.error_code) == ("auto", LeaderNotAvailableError.code)
            assert "auto" not in broker._server.state.topics
            small_disk.free()
            assert client.request(ApiKey.METADATA, 9, asked).topics[0].error_code == 0
        finally:
            client.close()


def test_delete_topics_on_a_full_disk_keeps_the_topic(small_disk):
    """Issue 10: the deletion cannot be recorded in the topics file (a full disk). Before
    the fix the OSError closed the connection, the topic's offsets already deleted and
    the topic gone from memory but not from the file (back after a restart). Now the
    answer is KAFKA_STORAGE_ERROR and the topic, its data and its committed offsets stay;
    the deletion succeeds once space is back."""
    with MiniBroker(data_dir=small_disk.path, config=ONE_OFFSETS_PARTITION) as broker:
        client = RawClient(broker.port)
        try:
            create_topic(client, "t", 1)
            assert commit(client, "g", 7) == 0
            small_disk.fill()
            request = DeleteTopicsRequest(topic_names=["t"], timeout_ms=5000)
            answer = client.request(ApiKey.DELETE_TOPICS, 4, request).responses[0]
            assert answer.error_code == KafkaStorageError.code
            assert "t" in _topic_names(client) and committed(client, "g") == 7
            small_disk.free()
            assert client.request(ApiKey.DELETE_TOPICS, 4, request).responses[0].error_code == 0
            assert "t" not in _topic_names(client) and committed(client, "g") == -1
        finally:
            client.close()


def test_init_producer_id_on_a_full_disk_answers_a_retriable_error(small_disk):
    """Issue 10: a new block of producer ids must be recorded before use, and the disk is
    full. Before the fix the OSError closed the connection. Now the answer is
    COORDINATOR_LOAD_IN_PROGRESS (retriable: Kafka's answer while no producer id block
    is available) and no id is handed out; once space is back the request succeeds."""
    with MiniBroker(data_dir=small_disk.path) as broker:
        client = RawClient(broker.port)
        try:
            request = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000)
            small_disk.fill()
            refused = client.request(ApiKey.INIT_PRODUCER_ID, 4, request)
            assert (refused.error_code, refused.producer_id) == (CoordinatorLoadInProgressError.code, -1)
            small_disk.free()
            granted = client.request(ApiKey.INIT_PRODUCER_ID, 4, request)
            assert (granted.error_code, granted.producer_id) == (0, 0)
        finally:
            client.close()


def test_alter_configs_on_a_full_disk_changes_nothing(small_disk):
    """Issue 10: the new configs of a topic, or of the broker, cannot be recorded (a full
    disk). Before the fix the OSError closed the connection, the topic's new configs
    already in force in memory. Now the answer is KAFKA_STORAGE_ERROR and the configs
    in force are the old ones; the change succeeds once space is back."""
    with MiniBroker(data_dir=small_disk.path) as broker:
        client = RawClient(broker.port)
        try:
            create_topic(client, "t", 1)

            def alter(resource_type: int, name: str, key: str, value: str) -> int:
                request = AlterConfigsRequest(validate_only=False, resources=[AlterConfigsRequest.AlterConfigsResource(
                    resource_type=resource_type, resource_name=name,
                    configs=[AlterConfigsRequest.AlterableConfig(name=key, value=value)])])
                return client.request(ApiKey.ALTER_CONFIGS, 2, request).responses[0].error_code

            log = broker._server.state.topics["t"].partitions[0].log
            small_disk.fill()
            assert alter(2, "t", "retention.ms", "1234") == KafkaStorageError.code  # 2: TOPIC
            assert log.config.retention_ms != 1234 and broker._server.state.topics["t"].configs == {}
            assert alter(4, "", "log.retention.ms", "4321") == KafkaStorageError.code  # 4: BROKER
            assert broker._server.state.config["log.retention.ms"] != 4321 and log.config.retention_ms != 4321
            small_disk.free()
            assert alter(2, "t", "retention.ms", "1234") == 0
            assert log.config.retention_ms == 1234
        finally:
            client.close()


def test_a_broker_whose_retention_fails_takes_that_partition_offline_and_goes_on(tmp_path, monkeypatch):
    """Issue 10, through a running broker (maintenance every 50 ms): retention cannot
    rename a segment of topic "bad" to ``.deleted`` (EIO). Before the fix "bad" stayed online, serving
    and acknowledging although its files no longer matched it. Now it is offline
    (Produce and Fetch answer KAFKA_STORAGE_ERROR, Metadata lists its replica offline)
    while the maintenance loop goes on: retention keeps working on topic "good"."""
    with MiniBroker(data_dir=tmp_path, config={"log.retention.check.interval.ms": 50}) as broker:
        client = RawClient(broker.port)
        try:
            for name in ("bad", "good"):
                create_topic(client, name, 1, segment_bytes="100", retention_ms="60000")
            bad_dir = str(broker._server.state.topics["bad"].partitions[0].log.directory)
            real_replace = os.replace

            def replace(src, dst, *args, **kwargs):
                if str(src).startswith(bad_dir) and str(src).endswith(".log"):
                    raise OSError(errno.EIO, os.strerror(errno.EIO))
                return real_replace(src, dst, *args, **kwargs)

            monkeypatch.setattr(os, "replace", replace)
            old = BatchBuilder()
            old.append(1_000, b"k", b"x" * 80)  # 1970: past any retention
            for _ in range(2):
                for name in ("bad", "good"):
                    assert produce(client, name, {0: old.build()})[0].error_code == 0
            good = broker._server.state.topics["good"].partitions[0].log
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and good.log_start_offset < 1:
                time.sleep(0.05)
            assert good.log_start_offset >= 1
            assert produce(client, "bad", {0: old.build()})[0].error_code == KafkaStorageError.code
            # later passes still run: a new old segment of "good" goes too
            for _ in range(2):
                assert produce(client, "good", {0: old.build()})[0].error_code == 0
            while time.monotonic() < deadline and good.log_start_offset < 3:
                time.sleep(0.05)
            assert good.log_start_offset >= 3
            metadata = client.request(ApiKey.METADATA, 9, MetadataRequest(topics=None))
            bad = next(t for t in metadata.topics if t.name == "bad").partitions[0]
            assert (bad.error_code, bad.offline_replicas) == (LeaderNotAvailableError.code, [broker._server.state.node_id])
        finally:
            monkeypatch.undo()
            client.close()


def test_offset_delete_and_delete_groups_on_an_offline_offsets_partition_change_nothing(tmp_path):
    """Issue 10: the tombstones of OffsetDelete and DeleteGroups cannot be written: the
    group's ``__consumer_offsets`` partition is offline (a write failed and so did its
    undo). Before the fix the KafkaStorageError closed the connection. Now both answer
    NOT_COORDINATOR and the offsets and the group stay (in memory as in the log); after
    a restart, which recovers the partition, both succeed."""
    offset_delete = OffsetDeleteRequest(group_id="g", topics=[OffsetDeleteRequest.OffsetDeleteRequestTopic(
        name="t", partitions=[OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=0)])])
    delete_groups = DeleteGroupsRequest(groups_names=["g"])
    with MiniBroker(data_dir=tmp_path, config=ONE_OFFSETS_PARTITION) as broker:
        port = broker.port
        client = RawClient(port)
        try:
            create_topic(client, "t", 1)
            assert commit(client, "g", 5) == 0
            broker._server.state.topics[OFFSETS_TOPIC].partitions[0].log.go_offline("EIO on truncate (test)")
            assert client.request(ApiKey.OFFSET_DELETE, 0, offset_delete).error_code == NotCoordinatorError.code
            assert client.request(ApiKey.DELETE_GROUPS, 2, delete_groups).results[0].error_code == NotCoordinatorError.code
            assert committed(client, "g") == 5 and broker._server.state.groups.get("g") is not None
        finally:
            client.close()
    with MiniBroker(port=port, data_dir=tmp_path, config=ONE_OFFSETS_PARTITION) as broker:
        client = RawClient(broker.port)
        try:
            assert committed(client, "g") == 5
            answer = client.request(ApiKey.OFFSET_DELETE, 0, offset_delete)
            assert (answer.error_code, answer.topics[0].partitions[0].error_code) == (0, 0)
            assert committed(client, "g") == -1
            assert commit(client, "g", 6) == 0
            assert client.request(ApiKey.DELETE_GROUPS, 2, delete_groups).results[0].error_code == 0
            assert committed(client, "g") == -1 and broker._server.state.groups.get("g") is None
        finally:
            client.close()
