"""The topic configs that shape a log, honoured as Kafka does (issue 10 item 17):
``segment.index.bytes``, ``segment.jitter.ms``, ``file.delete.delay.ms``, ``flush.ms``,
and Produce's ``message.timestamp.before.max.ms`` / ``message.timestamp.after.max.ms``.

Each is checked on a real :class:`PartitionLog` (on disk, and in memory where that means
something) and through a real :class:`MiniBroker` with a topic created with the config.
"""

from __future__ import annotations

import os
import random
import time

import pytest

from kproto.errors import InvalidTimestampError
from kproto.protocol import ApiKey
from kproto.protocol.messages import CreateTopicsRequest, DeleteRecordsRequest
from kproto.records import BatchBuilder
from minibroker import MiniBroker
from minibroker.log import LogConfig, PartitionLog
from tests.minibroker.log.test_log import append, fill
from tests.minibroker.test_server import produce
from tests.support.raw_client import RawClient


def create_topic(client, topic, **configs):
    """CreateTopics with ``configs`` (``segment_index_bytes`` -> ``segment.index.bytes``)."""
    request = CreateTopicsRequest(timeout_ms=5000, validate_only=False, topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=1, replication_factor=1, assignments=[],
        configs=[CreateTopicsRequest.CreatableTopicConfig(name=k.replace("_", "."), value=str(v))
                 for k, v in configs.items()])])
    result = client.request(ApiKey.CREATE_TOPICS, 5, request).topics[0]
    assert result.error_code == 0, result.error_message


def one_batch(*timestamps, value=b"v"):
    builder = BatchBuilder(2, 0)
    for ts in timestamps:
        builder.append(ts, b"k", value)
    return builder.build()


def partition_log(broker, topic) -> PartitionLog:
    return broker._server.state.topics[topic].partitions[0].log


def now_ms() -> int:
    return int(time.time() * 1000)


# -- segment.index.bytes ---------------------------------------------------------------


@pytest.mark.parametrize("mode", ["memory", "disk"])
def test_a_segment_rolls_when_its_offset_index_is_full(tmp_path, mode):
    """issue 10 item 17: segment.index.bytes=24 is room for 3 offset index entries (8
    bytes each); with an entry per batch (index.interval.bytes=0) and no timestamps (no
    time index entries), a segment takes 4 batches: the first never has an entry."""
    plog = PartitionLog(tmp_path / "t-0" if mode == "disk" else None,
                        config=LogConfig(segment_index_bytes=24, index_interval_bytes=0))
    for _ in range(10):
        append(plog, [(-1, b"k", b"v")])
    assert [s.base_offset for s in plog.segments] == [0, 4, 8]
    assert [len(s.offset_index) for s in plog.segments] == [3, 3, 1]
    if mode == "disk":
        # Never larger than segment.index.bytes (Kafka's preallocated size, trimmed).
        assert max(p.stat().st_size for p in plog.directory.glob("*.index")) == 24
    plog.close()


def test_a_segment_rolls_when_its_time_index_is_full_keeping_the_last_slot_for_the_roll(tmp_path):
    """issue 10 item 17: segment.index.bytes=36 is room for 3 time index entries (12
    bytes), of which the last is kept for the entry the roll writes (Kafka's
    TimeIndex.isFull): with increasing timestamps the second and third batches fill the
    two others, so a segment takes 3 batches (the roll's entry repeats the third's
    timestamp here, so it is not written), and no time index passes 36 bytes."""
    plog = PartitionLog(tmp_path / "t-0", config=LogConfig(segment_index_bytes=36, index_interval_bytes=0))
    for i in range(7):
        append(plog, [(1_000 + i, b"k", b"v")])
    assert [s.base_offset for s in plog.segments] == [0, 3, 6]
    assert [len(s.time_index) for s in plog.segments] == [2, 2, 0]
    assert max(p.stat().st_size for p in plog.directory.glob("*.timeindex")) <= 36
    plog.close()
    # Reopened, the full indexes load as they are.
    with PartitionLog(tmp_path / "t-0", config=LogConfig(segment_index_bytes=36, index_interval_bytes=0)) as again:
        assert [s.base_offset for s in again.segments] == [0, 3, 6] and again.log_end_offset == 7


def test_segment_index_bytes_of_a_topic_rolls_its_segments(raw, broker):
    """issue 10 item 17, through a broker: a topic created with segment.index.bytes=24 and
    index.interval.bytes=0 rolls every 4 batches."""
    client = raw()
    create_topic(client, "small-index", segment_index_bytes=24, index_interval_bytes=0)
    for _ in range(9):
        assert produce(client, "small-index", one_batch(-1)).error_code == 0
    assert [s.base_offset for s in partition_log(broker, "small-index").segments] == [0, 4, 8]


# -- segment.jitter.ms -----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["memory", "disk"])
def test_each_segment_rolls_by_time_earlier_by_its_own_random_jitter(tmp_path, mode):
    """issue 10 item 17: Kafka takes a jitter drawn per segment, in [0, segment.jitter.ms),
    off segment.ms (LogSegment.rollJitterMs); a seeded random source makes it known."""
    draws = random.Random(42)
    first, second = draws.randrange(600), draws.randrange(600)
    plog = PartitionLog(tmp_path / "t-0" if mode == "disk" else None, rng=random.Random(42),
                        config=LogConfig(segment_ms=1_000, segment_jitter_ms=600))
    assert plog.segments[0].roll_jitter_ms == first
    append(plog, [(10_000, b"k", b"1")])
    append(plog, [(10_000 + 1_000 - first, b"k", b"2")])  # not yet older than segment.ms - jitter
    assert len(plog.segments) == 1
    append(plog, [(10_000 + 1_000 - first + 1, b"k", b"3")])
    assert [s.base_offset for s in plog.segments] == [0, 2]
    assert plog.segments[1].roll_jitter_ms == second
    plog.close()


def test_roll_jitter_is_at_most_segment_ms_and_none_by_default():
    """issue 10 item 17: Kafka draws in [0, min(segment.jitter.ms, segment.ms))."""
    rng = random.Random(1)
    jitters = {PartitionLog(config=LogConfig(segment_ms=10, segment_jitter_ms=10**9), rng=rng).segments[0].roll_jitter_ms
               for _ in range(200)}
    assert jitters <= set(range(10)) and len(jitters) > 1
    assert PartitionLog(config=LogConfig(segment_ms=10)).segments[0].roll_jitter_ms == 0


def test_segment_jitter_ms_of_a_topic_takes_time_off_its_rolls(raw, broker):
    """issue 10 item 17, through a broker: a topic with segment.ms=1000 and
    segment.jitter.ms=1000 rolls its segment once the new batch is more than
    1000 - jitter after the first, whatever jitter its segment drew."""
    client = raw()
    create_topic(client, "jittery", segment_ms=1_000, segment_jitter_ms=1_000)
    jitter = partition_log(broker, "jittery").segments[0].roll_jitter_ms
    assert 0 <= jitter < 1_000
    t0 = now_ms() - 10_000
    assert produce(client, "jittery", one_batch(t0)).error_code == 0
    assert produce(client, "jittery", one_batch(t0 + 1_000 - jitter)).error_code == 0
    assert len(partition_log(broker, "jittery").segments) == 1
    assert produce(client, "jittery", one_batch(t0 + 1_000 - jitter + 1)).error_code == 0
    assert [s.base_offset for s in partition_log(broker, "jittery").segments] == [0, 2]


# -- file.delete.delay.ms --------------------------------------------------------------


def _files(directory, suffix=""):
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("0000") and p.name.endswith(suffix))


def test_deleted_segments_files_stay_as_deleted_until_the_delay_passes(tmp_path):
    """issue 10 item 17: Kafka renames a deleted segment's files *.deleted and removes
    them file.delete.delay.ms later, so a read of the segment in flight ends first."""
    clock = [1_000_000]
    plog = PartitionLog(tmp_path / "t-0", config=LogConfig(segment_bytes=400, file_delete_delay_ms=60_000),
                        clock=lambda: clock[0])
    fill(plog, batches=20)
    slices = plog.read_slices(0, 350)
    expected = b"".join(s.tobytes() for s in slices)
    gone = [f"{s.base_offset:020d}" for s in plog.segments[:2]]
    plog.delete_records(plog.segments[2].base_offset)
    assert _files(plog.directory, ".deleted") == sorted(
        f"{stem}{kind}.deleted" for stem in gone for kind in (".index", ".log", ".timeindex"))
    # The data is still there, under the new name, for a Fetch that was reading it.
    assert (plog.directory / f"{gone[0]}.log.deleted").read_bytes()[:len(expected)] == expected
    assert b"".join(s.tobytes() for s in slices) == expected
    clock[0] += 59_999
    plog.run_scheduled()
    assert len(_files(plog.directory, ".deleted")) == 6
    clock[0] += 1
    plog.run_scheduled()
    assert _files(plog.directory, ".deleted") == []
    assert b"".join(s.tobytes() for s in slices) == expected  # open descriptors still read
    plog.close()


def test_retention_with_no_delay_removes_files_at_once_and_close_removes_pending_ones(tmp_path):
    """issue 10 item 17: file.delete.delay.ms=0 removes the files in the same pass; files
    still waiting when the log closes go then (a reopen would remove them as leftovers)."""
    plog = PartitionLog(tmp_path / "a-0", config=LogConfig(segment_bytes=400, retention_ms=1_000, file_delete_delay_ms=0))
    fill(plog, batches=20, t0=10_000)
    assert plog.apply_retention(now_ms=10**12) > 0
    assert _files(plog.directory, ".deleted") == [] and len(_files(plog.directory, ".log")) == 1
    plog.close()
    plog = PartitionLog(tmp_path / "b-0", config=LogConfig(segment_bytes=400, retention_ms=1_000))
    fill(plog, batches=20, t0=10_000)
    assert plog.apply_retention(now_ms=10**12) > 0
    assert _files(plog.directory, ".deleted")
    plog.close()
    assert _files(plog.directory, ".deleted") == [] and len(_files(plog.directory, ".log")) == 1


def test_file_delete_delay_ms_of_a_topic_keeps_deleted_files_a_while(tmp_path):
    """issue 10 item 17, through a broker with a data directory: DeleteRecords on a topic
    with the default file.delete.delay.ms (60 s) leaves *.deleted files behind; on a topic
    with file.delete.delay.ms=0 they are gone at once."""
    with MiniBroker(data_dir=tmp_path) as broker:
        client = RawClient(broker.port)
        try:
            for topic, delay in (("slow", 60_000), ("quick", 0)):
                create_topic(client, topic, segment_bytes=200, file_delete_delay_ms=delay)
                for _ in range(10):
                    assert produce(client, topic, one_batch(now_ms(), value=b"x" * 50)).error_code == 0
                plog = partition_log(broker, topic)
                assert len(plog.segments) > 3
                cut = plog.segments[2].base_offset
                answer = client.request(ApiKey.DELETE_RECORDS, 2, DeleteRecordsRequest(timeout_ms=5000, topics=[
                    DeleteRecordsRequest.DeleteRecordsTopic(name=topic, partitions=[
                        DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=cut)])]))
                assert answer.topics[0].partitions[0].error_code == 0
            assert len(_files(partition_log(broker, "slow").directory, ".log.deleted")) == 2
            assert _files(partition_log(broker, "quick").directory, ".deleted") == []
        finally:
            client.close()


def test_the_brokers_upkeep_removes_deleted_files_once_the_delay_passes(tmp_path):
    """issue 10 item 17, through a broker: its periodic upkeep
    (log.retention.check.interval.ms) removes the *.deleted files of a topic with
    file.delete.delay.ms=1000 once that has passed."""
    with MiniBroker(data_dir=tmp_path, config={"log.retention.check.interval.ms": 50}) as broker:
        client = RawClient(broker.port)
        try:
            create_topic(client, "upkeep", segment_bytes=200, file_delete_delay_ms=1_000)
            for _ in range(6):
                assert produce(client, "upkeep", one_batch(now_ms(), value=b"x" * 50)).error_code == 0
            plog = partition_log(broker, "upkeep")
            answer = client.request(ApiKey.DELETE_RECORDS, 2, DeleteRecordsRequest(timeout_ms=5000, topics=[
                DeleteRecordsRequest.DeleteRecordsTopic(name="upkeep", partitions=[
                    DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=plog.segments[2].base_offset)])]))
            assert answer.topics[0].partitions[0].error_code == 0
            assert _files(plog.directory, ".deleted")
            deadline = time.monotonic() + 10
            while _files(plog.directory, ".deleted") and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _files(plog.directory, ".deleted") == []
        finally:
            client.close()


# -- flush.ms --------------------------------------------------------------------------


def test_flush_ms_fsyncs_once_it_has_passed_since_the_last_flush(tmp_path, monkeypatch):
    """issue 10 item 17: Kafka's flusher fsyncs a log when flush.ms has passed since its
    last flush (LogManager.flushDirtyLogs); appends check it too here."""
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    clock = [5_000]
    plog = PartitionLog(tmp_path / "t-0", config=LogConfig(flush_ms=1_000), clock=lambda: clock[0])
    synced.clear()
    append(plog, [(1, b"k", b"v")])
    clock[0] += 999
    plog.run_scheduled()
    assert plog.recovery_point == 0 and not synced
    clock[0] += 1
    plog.run_scheduled()  # the periodic check, with no append
    assert plog.recovery_point == 1 and synced
    synced.clear()
    append(plog, [(1, b"k", b"v")])
    assert plog.recovery_point == 1 and not synced
    clock[0] += 1_000
    append(plog, [(1, b"k", b"v")])  # due: the append flushes
    assert plog.recovery_point == 3 and synced
    plog.close()


def test_flush_ms_of_a_topic_makes_produce_durable(tmp_path):
    """issue 10 item 17, through a broker: flush.ms=0 fsyncs every append (as
    flush.messages=1 does); the default leaves it to the OS and to rolls."""
    with MiniBroker(data_dir=tmp_path) as broker:
        client = RawClient(broker.port)
        try:
            create_topic(client, "synced", flush_ms=0)
            create_topic(client, "lazy")
            for topic in ("synced", "lazy"):
                for _ in range(3):
                    assert produce(client, topic, one_batch(now_ms())).error_code == 0
            assert partition_log(broker, "synced").recovery_point == 3
            assert partition_log(broker, "lazy").recovery_point == 0
        finally:
            client.close()


def test_the_brokers_upkeep_flushes_an_idle_log_once_flush_ms_passes(tmp_path):
    """issue 10 item 17, through a broker: with no append after it, a record on a topic
    with flush.ms=2000 is fsynced by the periodic upkeep (log.retention.check.interval.ms),
    as Kafka's flusher task does, about 2 s after the topic's log was made."""
    with MiniBroker(data_dir=tmp_path, config={"log.retention.check.interval.ms": 50}) as broker:
        client = RawClient(broker.port)
        try:
            create_topic(client, "idle", flush_ms=2_000)
            plog = partition_log(broker, "idle")
            assert produce(client, "idle", one_batch(now_ms())).error_code == 0
            assert plog.recovery_point == 0  # not due yet
            deadline = time.monotonic() + 20
            while plog.recovery_point < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert plog.log_end_offset == 1 and plog.recovery_point == 1
        finally:
            client.close()


# -- message.timestamp.before.max.ms / after.max.ms ------------------------------------


def test_produce_refuses_timestamps_out_of_the_topics_window(raw):
    """issue 10 item 17: Kafka's LogValidator (KIP-937) refuses a CreateTime batch with a
    record more than message.timestamp.before.max.ms behind the broker's clock or
    message.timestamp.after.max.ms ahead of it: INVALID_TIMESTAMP, each such record named
    in record_errors; records without a timestamp (-1) pass."""
    client = raw()
    create_topic(client, "window", message_timestamp_before_max_ms=60_000, message_timestamp_after_max_ms=60_000)
    now = now_ms()
    response = produce(client, "window", one_batch(now, now - 3_600_000, -1, now + 3_600_000, now + 1_000))
    assert (response.error_code, response.base_offset) == (InvalidTimestampError.code, -1)
    assert response.error_message == "One or more records have been rejected due to invalid timestamp"
    assert [e.batch_index for e in response.record_errors] == [1, 3]
    message = response.record_errors[0].batch_index_error_message
    assert message.startswith(f"Timestamp {now - 3_600_000} of message with offset 1 is out of range. "
                              "The timestamp should be within [")
    assert produce(client, "window", one_batch(now, -1, now + 1_000)).error_code == 0


def test_keyless_records_and_bad_timestamps_together_fail_as_invalid_timestamp(raw):
    """issue 10 item 17: Kafka gives each record its first error (a null key on a
    compacted topic comes first) and fails the batch with INVALID_TIMESTAMP when any
    record's timestamp is out of range (LogValidator.processRecordErrors)."""
    client = raw()
    create_topic(client, "both", cleanup_policy="compact", message_timestamp_after_max_ms=1_000)
    now = now_ms()
    builder = BatchBuilder(2, 0)
    for ts, key in ((now, b"k"), (now + 60_000, None), (now + 60_000, b"k"), (now, None)):
        builder.append(ts, key, b"v")
    response = produce(client, "both", builder.build())
    assert response.error_code == InvalidTimestampError.code
    assert [(e.batch_index, e.batch_index_error_message.split()[0]) for e in response.record_errors] == [
        (1, "Compacted"), (2, "Timestamp"), (3, "Compacted")]


def test_the_default_window_refuses_only_timestamps_over_an_hour_ahead(raw):
    """issue 10 item 17: Kafka's defaults, before Long.MAX and after one hour, on a topic
    created without them; a LogAppendTime topic is not checked (the broker stamps it)."""
    client = raw()
    create_topic(client, "default-window")
    now = now_ms()
    assert produce(client, "default-window", one_batch(1_000, now + 3_000_000)).error_code == 0
    assert produce(client, "default-window", one_batch(now, now + 4_000_000)).error_code == InvalidTimestampError.code
    create_topic(client, "stamped", message_timestamp_type="LogAppendTime")
    assert produce(client, "stamped", one_batch(now + 4_000_000)).error_code == 0


def test_confluent_kafka_gets_invalid_timestamp_for_a_record_from_the_future(broker, raw):
    """issue 10 item 17, with librdkafka: a record two hours ahead fails with
    INVALID_TIMESTAMP, one of now is delivered."""
    ck = pytest.importorskip("confluent_kafka")
    create_topic(raw(), "future")
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0, "retries": 0,
                            "enable.idempotence": False})
    outcome = {}
    producer.produce("future", b"later", partition=0, timestamp=now_ms() + 7_200_000,
                     on_delivery=lambda err, msg: outcome.__setitem__("later", err))
    producer.flush(15)
    producer.produce("future", b"now", partition=0, on_delivery=lambda err, msg: outcome.__setitem__("now", err))
    assert producer.flush(15) == 0
    assert outcome["later"] is not None and outcome["later"].code() == ck.KafkaError.INVALID_TIMESTAMP
    assert outcome["now"] is None
