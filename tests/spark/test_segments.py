"""spark.read.format("kafka-log"): minibroker's data dir, torn and padded segments, corruption."""

from __future__ import annotations

import shutil

import pytest

from kproto import AdminClient, Producer
from kproto.admin import NewTopic
from kproto.records import read_batches
from kproto.spark import register
from kproto.spark.segments import find_segments
from minibroker import MiniBroker


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    """A minibroker data dir: topic "events", 2 partitions, small segments; and what was sent."""
    data_dir = tmp_path_factory.mktemp("kafka-logs")
    sent = {}
    with MiniBroker(data_dir=data_dir, config={"log.segment.bytes": 800}) as broker:
        with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
            admin.create_topics([NewTopic("events", 2, 1)])
        with Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=1, batch_size=400,
                      compression_type="lz4") as producer:
            futures = []
            for i in range(400):
                key = None if i % 10 == 0 else b"user-%d" % (i % 17)
                value = None if i % 33 == 5 else b"event-%d" % i
                headers = [("source", b"web"), ("seq", b"%d" % i)] if i % 2 else []
                futures.append((producer.send("events", value, key, timestamp_ms=1_700_000_000_000 + i,
                                              headers=headers), key, value, headers))
            producer.flush()
            for future, key, value, headers in futures:
                meta = future.result()
                sent[(meta.partition, meta.offset)] = (key, value, [(k, v) for k, v in headers])
    return data_dir, sent


def rows_by_position(df) -> dict:
    out = {}
    for r in df.collect():
        headers = [(h.key, bytes(h.value)) for h in r.headers] if "headers" in r else None
        out[(r.partition, r.offset)] = (None if r.key is None else bytes(r.key),
                                        None if r.value is None else bytes(r.value), headers)
        assert r.topic == "events" and r.timestampType == 0
    return out


def test_find_segments_takes_a_log_dir_a_partition_dir_or_a_file(log_dir, tmp_path):
    data_dir, _ = log_dir
    segments = find_segments(data_dir)
    assert {(s.topic, s.partition) for s in segments} == {("events", 0), ("events", 1)}
    assert len(segments) >= 6  # small segments: several per partition
    assert find_segments(data_dir / "events-1") == [s for s in segments if s.partition == 1]
    assert find_segments(segments[0].path) == segments[:1]
    (data_dir / "events-0.abc-delete").mkdir()  # Kafka's dirs of deleted partitions are not read
    assert find_segments(data_dir) == segments
    (data_dir / "events-0.abc-delete").rmdir()
    with pytest.raises(FileNotFoundError):
        find_segments(tmp_path / "nothing")


def test_reads_every_record_of_minibrokers_data_dir_one_task_per_segment(spark, log_dir):
    data_dir, sent = log_dir
    register(spark)
    df = spark.read.format("kafka-log").option("includeHeaders", "true").load(str(data_dir))
    assert df.rdd.getNumPartitions() == len(find_segments(data_dir))
    assert rows_by_position(df) == sent
    assert df.where("timestamp = timestamp_millis(1700000000007)").count() == 1


def test_headers_are_left_out_by_default_as_in_sparks_kafka_source(spark, log_dir):
    data_dir, _ = log_dir
    df = spark.read.format("kafka-log").load(str(data_dir / "events-0"))
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]


def torn_copy(data_dir, tmp_path, tail: bytes | None = None, cut: int = 0):
    """The first segment of events-0 copied into a partition dir, cut short or padded."""
    segment = find_segments(data_dir / "events-0")[0]
    copy = tmp_path / "events-0" / "00000000000000000000.log"
    copy.parent.mkdir()
    shutil.copy(segment.path, copy)
    data = copy.read_bytes()
    batches = list(read_batches(data))
    if cut:
        copy.write_bytes(data[:len(data) - cut])
    if tail is not None:
        with open(copy, "ab") as f:
            f.write(tail)
    return copy, batches


@pytest.mark.parametrize("cut", [1, 30, 70])
def test_a_torn_tail_ends_the_segment_cleanly(spark, log_dir, tmp_path, cut):
    data_dir, sent = log_dir
    copy, batches = torn_copy(data_dir, tmp_path, cut=cut)
    assert batches[-1].size > cut  # the cut falls inside the last batch
    got = rows_by_position(spark.read.format("kafka-log").load(str(copy)))
    whole = batches[:-1]
    assert sorted(got) == [(0, o) for b in whole for o in range(b.base_offset, b.last_offset + 1)]
    assert all(got[k][:2] == sent[k][:2] for k in got)


def test_zero_padding_after_the_last_batch_ends_the_segment_cleanly(spark, log_dir, tmp_path):
    data_dir, _ = log_dir
    copy, batches = torn_copy(data_dir, tmp_path, tail=bytes(4096))
    assert spark.read.format("kafka-log").load(str(copy)).count() == sum(b.records_count for b in batches)


def test_a_corrupt_batch_inside_the_segment_fails_naming_the_file(spark, log_dir, tmp_path):
    data_dir, _ = log_dir
    copy, batches = torn_copy(data_dir, tmp_path)
    data = bytearray(copy.read_bytes())
    data[17] ^= 0xFF  # the first batch's CRC
    copy.write_bytes(bytes(data))
    with pytest.raises(Exception, match="00000000000000000000.log, bytes 0-"):
        spark.read.format("kafka-log").load(str(copy)).collect()
    assert spark.read.format("kafka-log").option("verifyCrc", "false").load(str(copy)).count() > 0
