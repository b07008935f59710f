"""df.write.format("kproto") and writeStream: round trips through minibroker."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest
from pyspark.sql.types import StructType

from kproto import AdminClient
from kproto.admin import NewTopic
from kproto.codec import murmur2_partition
from kproto.errors import MessageTooLargeError
from kproto.spark import register
from kproto.spark.schema import HEADERS_TYPE
from kproto.spark.sink import SinkOptions, _header_lists, write_batches

kafka = pytest.importorskip("kafka")

PARTITIONS = 3


@pytest.fixture(scope="module", autouse=True)
def topics(spark, broker):
    register(spark)
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(name, PARTITIONS, 1) for name in ("out", "other", "src", "dst", "arrow")])
        admin.create_topics([NewTopic("tiny", 1, 1, configs={"max.message.bytes": "200"})])


def read_back(spark, broker, topic: str):
    return (spark.read.format("kproto").option("kafka.bootstrap.servers", broker.bootstrap_servers)
            .option("subscribe", topic).option("includeHeaders", "true").load())


def rows(n: int) -> list[tuple]:
    return [(None if i % 4 == 0 else f"user-{i % 7}",
             f"event {i}".encode(),
             1 if i % 10 == 9 else None,
             [("n", str(i).encode())] if i % 3 else None) for i in range(n)]


def test_batch_write_round_trip_with_java_partitioning(spark, broker):
    df = spark.createDataFrame(rows(200), "key string, value binary, partition int, "
                                          "headers array<struct<key:string,value:binary>>")
    (df.write.format("kproto").option("kafka.bootstrap.servers", broker.bootstrap_servers)
     .option("topic", "out").mode("append").save())
    got = read_back(spark, broker, "out").collect()
    assert sorted(bytes(r.value) for r in got) == sorted(v for _, v, _, _ in rows(200))
    for r in got:
        i = int(bytes(r.value).split()[1])
        key, _, partition, headers = rows(200)[i]
        assert (None if r.key is None else bytes(r.key).decode()) == key
        assert [(h.key, bytes(h.value)) for h in r.headers] == (headers or [])
        if partition is not None:
            assert r.partition == partition
        elif key is not None:  # murmur2 of the key, as the Java client partitions
            assert r.partition == murmur2_partition(key.encode(), PARTITIONS)


def test_the_topic_column_routes_rows_and_the_topic_option_wins(spark, broker):
    def write(data, **options):
        sink = spark.createDataFrame(data, "topic string, value string").write.format("kproto").mode("append")
        sink.option("kafka.bootstrap.servers", broker.bootstrap_servers).options(**options).save()

    write([("other", "a"), ("other", "b")])
    write([("no-such-topic", "c")], topic="other")
    assert sorted(bytes(r.value) for r in read_back(spark, broker, "other").collect()) == [b"a", b"b", b"c"]


@pytest.mark.parametrize(("schema", "data", "error"), [
    ("key string", [("k",)], "needs a 'value' column"),
    ("value string", [("v",)], "needs a 'topic' column"),
    ("topic string, value string, key int", [("out", "v", 1)], "column 'key' must be string or binary"),
])
def test_a_bad_schema_is_refused_before_anything_is_sent(spark, broker, schema, data, error):
    df = spark.createDataFrame(data, schema)
    with pytest.raises(Exception, match=error):
        df.write.format("kproto").option("kafka.bootstrap.servers", broker.bootstrap_servers).mode("append").save()


def test_overwrite_is_refused(spark, broker):
    df = spark.createDataFrame([("v",)], "value string")
    with pytest.raises(Exception, match="cannot overwrite"):
        (df.write.format("kproto").option("kafka.bootstrap.servers", broker.bootstrap_servers)
         .option("topic", "out").mode("overwrite").save())


def test_write_stream_copies_a_topic(spark, broker, tmp_path):
    spark.createDataFrame([(f"k{i}", f"v{i}") for i in range(50)], "key string, value string") \
        .write.format("kproto").option("kafka.bootstrap.servers", broker.bootstrap_servers) \
        .option("topic", "src").mode("append").save()
    source = (spark.readStream.format("kproto").option("kafka.bootstrap.servers", broker.bootstrap_servers)
              .option("subscribe", "src").option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", "20").load())
    query = (source.select("key", "value").writeStream.format("kproto")
             .option("kafka.bootstrap.servers", broker.bootstrap_servers).option("topic", "dst")
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    try:
        query.awaitTermination(120)
    finally:
        query.stop()
    got = read_back(spark, broker, "dst").collect()
    assert sorted((bytes(r.key), bytes(r.value)) for r in got) == sorted(
        (f"k{i}".encode(), f"v{i}".encode()) for i in range(50))


ARROW_HEADERS = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))


def test_header_lists_are_the_rows_headers_as_pairs():
    """issue 16, the sink from Arrow: headers come from the flattened child arrays, not a dict
    per header; the same pairs as the row path's ``to_pylist``, on a sliced array with null
    rows, empty lists and null values."""
    rows = [[("a", b"1"), ("b", None)], None, [], [("c", b"")], None, [("d", b"4"), ("e", b"5"), ("f", b"6")]]
    column = pa.array([None if r is None else [{"key": k, "value": v} for k, v in r] for r in rows], ARROW_HEADERS)
    for part in (column, column.slice(1), column.slice(2, 3), column.slice(5), column.slice(0, 0)):
        want = [None if r is None else [(h["key"], h["value"]) for h in r] for r in part.to_pylist()]
        assert _header_lists(part) == want


def read_all(bootstrap: str, topic: str, count: int) -> list:
    """kafka-python's consumer reads back ``count`` records of ``topic``'s partitions."""
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000)
    try:
        tps = [kafka.TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        out = []
        for m in consumer:
            out.append(m)
            if len(out) >= count:
                break
        return out
    finally:
        consumer.close()


def test_write_batches_from_arrow_reports_what_a_peer_reads_back(broker):
    """issue 16, the sink from Arrow: sliced Arrow batches with a topic column, string keys
    (some null), partitions (some null) and headers go out record for record; the task's
    report (records per partition, from one future per producer batch) is what
    kafka-python reads back."""
    data = rows(300)
    table = pa.table({
        "topic": pa.array(["arrow"] * len(data)),
        "key": pa.array([k for k, _, _, _ in data], pa.string()),
        "value": pa.array([v for _, v, _, _ in data], pa.binary()),
        "partition": pa.array([p for _, _, p, _ in data], pa.int32()),
        "headers": pa.array([None if h is None else [{"key": k, "value": v} for k, v in h] for *_, h in data],
                            ARROW_HEADERS),
    })
    batches = table.slice(0, 100).to_batches() + table.slice(100).to_batches(max_chunksize=70)
    schema = StructType.fromJson({"type": "struct", "fields": [
        {"name": "topic", "type": "string", "nullable": True, "metadata": {}},
        {"name": "key", "type": "string", "nullable": True, "metadata": {}},
        {"name": "value", "type": "binary", "nullable": True, "metadata": {}},
        {"name": "partition", "type": "integer", "nullable": True, "metadata": {}},
        {"name": "headers", "type": HEADERS_TYPE.jsonValue(), "nullable": True, "metadata": {}}]})
    options = SinkOptions.parse({"kafka.bootstrap.servers": broker.bootstrap_servers}, schema)
    report = write_batches(options, iter(batches))
    got = read_all(broker.bootstrap_servers, "arrow", len(data))
    assert report.counts == {("arrow", p): n for p, n in
                             Counter(m.partition for m in got).items()}
    assert sum(report.counts.values()) == len(data)
    sent = {v: (None if k is None else k.encode(), p, h or []) for k, v, p, h in data}
    for m in got:
        key, partition, headers = sent[m.value]
        assert (m.key, list(m.headers)) == (key, headers)
        if partition is not None:
            assert m.partition == partition


def test_write_batches_raises_a_refused_producer_batch(broker):
    """issue 16, the sink from Arrow: with one future kept per producer batch, a batch the
    broker refuses (over the topic's max.message.bytes) still fails the task."""
    batch = pa.RecordBatch.from_arrays([pa.array([b"x" * 500, b"y"], pa.binary())], ["value"])
    schema = StructType.fromJson({"type": "struct", "fields": [
        {"name": "value", "type": "binary", "nullable": True, "metadata": {}}]})
    options = SinkOptions.parse({"kafka.bootstrap.servers": broker.bootstrap_servers, "topic": "tiny",
                                 "kafka.retries": "0", "kafka.linger.ms": "0"}, schema)
    with pytest.raises(MessageTooLargeError):
        write_batches(options, iter([batch]))
