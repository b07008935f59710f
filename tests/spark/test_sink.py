"""df.write.format("kproto") and writeStream: round trips through minibroker."""

from __future__ import annotations

import pytest

from kproto import AdminClient
from kproto.admin import NewTopic
from kproto.codec import murmur2_partition
from kproto.spark import register

PARTITIONS = 3


@pytest.fixture(scope="module", autouse=True)
def topics(spark, broker):
    register(spark)
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(name, PARTITIONS, 1) for name in ("out", "other", "src", "dst")])


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
