"""The kproto source and sink through a broker failure, without Spark's JVM (issue 13, step 2,
item 6): a task's fetch (:func:`kproto.spark.fetch.read_range`), the driver's planning
(:class:`kproto.spark.planning.Planner`) and a sink task (:func:`kproto.spark.sink.write_batches`)
called as Spark calls them, against a 3-broker MiniCluster whose leader is killed before or
while they run. Each must get through on the new leader, reading every record once and
writing every row once."""

from __future__ import annotations

import time
from collections import Counter

import pyarrow as pa
import pytest

from kproto import Consumer, Producer, TopicPartition
from kproto.spark.fetch import read_range
from kproto.spark.planning import OffsetRange, Planner, SourceOptions
from kproto.spark.sink import SinkOptions, write_batches

TOPIC = "t"
RECORDS = 300


@pytest.fixture
def kafka(tmp_path):
    from minibroker.cluster import MiniCluster

    with MiniCluster(3, data_dir=tmp_path / "kafka", config={"min.insync.replicas": 2}) as cluster:
        cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
        yield cluster


def produce(cluster, n: int = RECORDS) -> None:
    """``n`` records to partition 0, in batches of 30 (a flush each), so that small fetches take
    several; returns once every replica knows the high watermark.

    A follower learns the high watermark one fetch late, and a new leader elected before
    then starts below it: Kafka answers ListOffsets there with OFFSET_NOT_AVAILABLE until it
    catches up (KIP-207), minibroker with the lower offset, and a fetch up to the old end
    finds the log short. These tests are about the dead leader, so they wait that out.
    """
    from tests.minibroker.cluster.conftest import replica_log

    with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all") as producer:
        for first in range(0, n, 30):
            futures = [producer.send(TOPIC, b"record %d" % i, partition=0) for i in range(first, min(n, first + 30))]
            producer.flush()
            for future in futures:
                future.result()
    deadline = time.monotonic() + 10
    while any(replica_log(cluster, b.node_id, TOPIC).high_watermark < n for b in cluster.brokers):
        assert time.monotonic() < deadline, "the followers never learned the high watermark"
        time.sleep(0.01)


def source_options(cluster, **kafka: str) -> SourceOptions:
    options = {"kafka.bootstrap.servers": cluster.bootstrap_servers, "subscribe": TOPIC,
               "kafkaConsumer.pollTimeoutMs": "30000", **{f"kafka.{k}": v for k, v in kafka.items()}}
    return SourceOptions.parse(options, streaming=True)


def offsets(batches) -> list[int]:
    return [o for batch in batches for o in batch.column("offset").to_pylist()]


def test_a_task_reads_its_range_from_the_new_leader_when_the_old_one_died_before_it_started(kafka):
    """issue 13 item 6: the task's metadata may still name the dead leader (killed, not yet fenced)."""
    produce(kafka)
    kafka.kill(kafka.leader_of(TOPIC, 0), wait=False)
    assert offsets(read_range(source_options(kafka), OffsetRange(TOPIC, 0, 0, RECORDS))) == list(range(RECORDS))


def test_a_task_reads_on_from_the_new_leader_when_the_leader_dies_mid_range(kafka):
    """issue 13 item 6: the leader dies between two fetches of one task; every offset comes once."""
    produce(kafka)
    # Small fetches, so that the range takes many.
    batches = read_range(source_options(kafka, **{"max.partition.fetch.bytes": "1024"}),
                         OffsetRange(TOPIC, 0, 0, RECORDS))
    first = next(batches)
    assert 0 < first.num_rows < RECORDS
    kafka.kill(kafka.leader_of(TOPIC, 0), wait=False)
    assert offsets([first, *batches]) == list(range(RECORDS))


def test_the_driver_plans_through_a_dead_leader(kafka):
    """issue 13 item 6: ListOffsets for the next micro-batch meets the dead leader."""
    produce(kafka)
    planner = Planner(source_options(kafka))
    try:
        tp = TopicPartition(TOPIC, 0)
        assert planner.list_offsets({tp: "latest"}) == {tp: RECORDS}
        kafka.kill(kafka.leader_of(TOPIC, 0), wait=False)
        assert planner.list_offsets({tp: "latest"}) == {tp: RECORDS}
        assert planner.ranges({tp: 0}, {tp: RECORDS}) == [OffsetRange(TOPIC, 0, 0, RECORDS)]
    finally:
        planner.close()


def test_a_sink_task_writes_every_row_once_through_a_leader_killed_mid_task(kafka):
    """issue 13 item 6: acks=all and idempotence by default: a failover neither loses nor
    duplicates a row of the task."""
    values = [b"row %d" % i for i in range(RECORDS)]

    def batches():
        for first in range(0, RECORDS, 50):
            if first == RECORDS // 2:
                kafka.kill(kafka.leader_of(TOPIC, 0), wait=False)
            yield pa.record_batch({"value": pa.array(values[first:first + 50], pa.binary())})

    from pyspark.sql.types import BinaryType, StructField, StructType

    options = SinkOptions.parse({"kafka.bootstrap.servers": kafka.bootstrap_servers, "topic": TOPIC,
                                 "kafka.linger.ms": "5"}, StructType([StructField("value", BinaryType())]))
    report = write_batches(options, batches())
    assert report.counts == {(TOPIC, 0): RECORDS}
    tp = TopicPartition(TOPIC, 0)
    got = []
    with Consumer(bootstrap_servers=kafka.bootstrap_servers) as consumer:
        consumer.assign([tp])
        consumer.seek_to_beginning([tp])
        for _ in range(100):
            got += consumer.poll(0.2)
            if len(got) >= RECORDS:
                break
        got += consumer.poll(0.5)
    assert Counter(r.value for r in got) == Counter(values)
