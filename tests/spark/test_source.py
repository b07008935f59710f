"""format("kproto") against minibroker: batch reads by offsets and timestamps, and streaming."""

from __future__ import annotations

import gc
import json
import logging
import socket

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from kproto import AdminClient, Producer
from kproto.admin import NewTopic
from kproto.spark import kafka_schema, register
from kproto.spark.fetch import WORKER_CLIENTS, read_range
from kproto.spark.planning import OffsetRange, SourceOptions
from kproto.spark.source import KprotoDataSource
from kproto.structs import TopicPartition
from tests.support.sockets import tcp_connections

T0 = 1_700_000_000_000
PARTITIONS = 3


@pytest.fixture(scope="module", autouse=True)
def topics(broker):
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(name, PARTITIONS, 1) for name in ("orders", "stream", "trimmed", "early")])


def produce(broker, topic: str, per_partition: int, first: int = 0) -> dict:
    """``per_partition`` records to each partition; returns {(partition, offset): (key, value, headers, ts)}."""
    sent = {}
    with Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=2, compression_type="zstd") as producer:
        pending = []
        for i in range(first, first + per_partition):
            for p in range(PARTITIONS):
                key = None if i % 9 == 0 else b"k-%d-%d" % (p, i)
                value = None if i % 11 == 4 else b"order %d of partition %d" % (i, p)
                headers = [("trace", b"%d" % i)] if i % 2 else []
                ts = T0 + 1000 * i
                pending.append((producer.send(topic, value, key, partition=p, timestamp_ms=ts, headers=headers),
                                (key, value, headers, ts)))
        producer.flush()
        for future, record in pending:
            meta = future.result()
            sent[(meta.partition, meta.offset)] = record
    return sent


@pytest.fixture(scope="module")
def orders(spark, broker):
    register(spark)
    return produce(broker, "orders", 60)


def read(spark, broker, **options):
    reader = spark.read.format("kproto").option("kafka.bootstrap.servers", broker.bootstrap_servers)
    for name, value in options.items():
        reader = reader.option(name, value if isinstance(value, str) else json.dumps(value))
    return reader.load()


def by_position(df) -> dict:
    out = {}
    for r in df.collect():
        headers = [(h.key, bytes(h.value)) for h in r.headers] if "headers" in r else None
        out[(r.partition, r.offset)] = (None if r.key is None else bytes(r.key),
                                        None if r.value is None else bytes(r.value), headers,
                                        int(r.timestamp.timestamp() * 1000) if r.timestamp else None)
    return out


def test_batch_read_of_a_whole_topic_with_headers(spark, broker, orders):
    df = read(spark, broker, subscribe="orders", includeHeaders="true")
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
    assert df.rdd.getNumPartitions() == PARTITIONS
    assert by_position(df) == orders
    assert {r.topic for r in df.select("topic").distinct().collect()} == {"orders"}


def test_batch_read_of_offset_ranges_in_sparks_json(spark, broker, orders):
    df = read(spark, broker, assign={"orders": [0, 1, 2]},
              startingOffsets={"orders": {"0": 10, "1": -2, "2": 50}},
              endingOffsets={"orders": {"0": 20, "1": 5, "2": -1}})
    got = by_position(df)
    want = [(0, o) for o in range(10, 20)] + [(1, o) for o in range(0, 5)] + [(2, o) for o in range(50, 60)]
    assert sorted(got) == want
    assert all(got[k][:2] == orders[k][:2] and got[k][2] is None for k in got)


def test_min_partitions_splits_the_ranges(spark, broker, orders):
    df = read(spark, broker, subscribePattern="ord.*", minPartitions="9")
    assert df.rdd.getNumPartitions() == 9 and df.count() == len(orders)


def test_starting_timestamp_starts_at_the_first_record_at_or_after_it(spark, broker, orders):
    df = read(spark, broker, subscribe="orders", startingTimestamp=str(T0 + 1000 * 45))
    assert sorted(by_position(df)) == [(p, o) for p in range(PARTITIONS) for o in range(45, 60)]


def test_fail_on_data_loss(spark, broker):
    produce(broker, "trimmed", 10)
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.delete_records({TopicPartition("trimmed", 0): 4})
    starting = {"trimmed": {"0": 1}}
    with pytest.raises(Exception, match="offsets 1-3 of trimmed-0 are gone"):
        read(spark, broker, assign={"trimmed": [0]}, startingOffsets=starting).collect()
    df = read(spark, broker, assign={"trimmed": [0]}, startingOffsets=starting, failOnDataLoss="false")
    assert sorted(r.offset for r in df.collect()) == list(range(4, 10))


def test_a_refused_option_fails_the_query_with_sparks_message(spark, broker):
    with pytest.raises(Exception, match="'kafka.group.id' is not supported"):
        read(spark, broker, subscribe="orders", **{"kafka.group.id": "g"}).collect()


def test_streaming_reads_every_record_once_in_capped_micro_batches(spark, broker, tmp_path):
    sent = produce(broker, "stream", 40)
    checkpoint = str(tmp_path / "checkpoint")

    def run(**options):
        stream = (spark.readStream.format("kproto").option("kafka.bootstrap.servers", broker.bootstrap_servers)
                  .option("subscribe", "stream").option("includeHeaders", "true"))
        for key, value in options.items():
            stream = stream.option(key, value)
        batches = []
        query = (stream.load().writeStream.foreachBatch(lambda df, _: batches.append(by_position(df)))
                 .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
        try:
            query.awaitTermination(120)
        finally:
            query.stop()
        got = {k: v for batch in batches for k, v in batch.items()}
        assert len(got) == sum(map(len, batches))  # no record twice
        end = query.lastProgress["sources"][0]["endOffset"]
        return got, [len(b) for b in batches if b], json.loads(end) if isinstance(end, str) else end

    got, sizes, end = run(startingOffsets="earliest", maxOffsetsPerTrigger="50")
    assert got == sent
    assert sizes == [48, 48, 24]  # 50 shared by backlog: 16 per partition, then what is left
    assert end == {"stream": {"0": 40, "1": 40, "2": 40}}
    more = produce(broker, "stream", 5, first=40)
    got, sizes, end = run(maxOffsetsPerTrigger="50")  # the checkpoint knows where the first run ended
    assert got == more and sizes == [15]
    assert end == {"stream": {"0": 45, "1": 45, "2": 45}}


def arrow_rows(batches) -> dict:
    """Arrow batches of the source's schema, by position as :func:`by_position` gives them."""
    out = {}
    for batch in batches:
        for r in batch.to_pylist():
            headers = [(h["key"], h["value"]) for h in r["headers"]]
            out[(r["partition"], r["offset"])] = (r["key"], r["value"], headers,
                                                  int(r["timestamp"].timestamp() * 1000))
    return out


def test_the_readers_yield_arrow_batches_of_sparks_schema(broker, orders):
    """issue 16, the source's Arrow path: what a task's read() yields, batch and streaming
    alike, is pyarrow.RecordBatch (Spark then takes it as is, no per-row tuples) of exactly
    the schema Spark checks them against, holding every record the producer acknowledged."""
    source = KprotoDataSource({"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": "orders",
                               "includeHeaders": "true", "startingOffsets": "earliest"})
    schema = source.schema()
    want = to_arrow_schema(kafka_schema(True), timezone="UTC")
    batch_reader = source.reader(schema)
    try:
        batches = [b for p in batch_reader.partitions() for b in batch_reader.read(p)]
        assert batches and all(isinstance(b, pa.RecordBatch) and b.schema.equals(want) for b in batches)
        assert arrow_rows(batches) == orders
        stream = source.streamReader(schema)
        try:
            start, end = stream.initialOffset(), stream.latestOffset(stream.initialOffset(), stream.getDefaultReadLimit())
            batches = [b for p in stream.partitions(start, end) for b in stream.read(p)]
        finally:
            stream.stop()
    finally:
        WORKER_CLIENTS.close()  # read() keeps its clients for the next task, as in a Spark worker
    assert batches and all(isinstance(b, pa.RecordBatch) and b.schema.equals(want) for b in batches)
    assert arrow_rows(batches) == orders


def test_a_task_that_spark_stops_early_leaves_no_fetch_behind(broker, caplog):
    """issue 16, the source's read-ahead: a task sends its next Fetch before handing a batch to
    Spark; when Spark stops reading there (a LIMIT), closing the task cancels that Fetch and
    closes the loop: no task destroyed pending nor an exception never retrieved (asyncio logs those)."""
    for first in range(0, 200, 40):  # a producer each: five batches per partition
        produce(broker, "early", 40, first)
    options = SourceOptions.parse({"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": "early",
                                   "kafka.max.partition.fetch.bytes": "1024",
                                   # the broker holds each Fetch for a second: the next one is
                                   # still in flight when Spark stops
                                   "kafka.fetch.min.bytes": "1000000", "kafka.fetch.max.wait.ms": "1000"},
                            streaming=False)
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        batches = read_range(options, OffsetRange("early", 0, 0, 200))
        first = next(batches)
        assert 0 < first.num_rows < 200
        batches.close()
        del batches
        gc.collect()
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []


def first_batch_rows(broker, topic: str, **kafka: str) -> int:
    options = SourceOptions.parse({"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": topic,
                                   **{f"kafka.{k}": v for k, v in kafka.items()}}, streaming=False)
    batches = read_range(options, OffsetRange(topic, 0, 0, WIDE_RECORDS))
    try:
        return next(batches).num_rows
    finally:
        batches.close()


WIDE_RECORDS = 30_000  # of about 110 bytes each in their batches: 3.3 MB


@pytest.fixture(scope="module")
def wide(broker) -> str:
    """A one-partition topic of WIDE_RECORDS records in batches of 64 KiB."""
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("wide", 1, 1)])
    with Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=20, batch_size=64 * 1024) as producer:
        for i in range(WIDE_RECORDS):
            producer.send("wide", b"%08d" % i + b"v" * 92, b"key-%d" % (i % 100), partition=0)
        producer.flush()
    return "wide"


def test_a_task_fetches_two_mib_of_its_partition_unless_told_otherwise(broker, wide):
    """issue 16, item 2 (the source's consumer settings): a task's Fetch asks for up to 2 MiB of
    its partition, not the Java consumer's 1 MiB, so the range takes half the round trips;
    ``kafka.max.partition.fetch.bytes`` set by the user still wins."""
    one_mib = first_batch_rows(broker, "wide", **{"max.partition.fetch.bytes": str(1 << 20)})
    assert 0 < one_mib < WIDE_RECORDS // 2
    assert first_batch_rows(broker, "wide") > 1.8 * one_mib  # a Fetch returns whole batches: about 2x
    assert first_batch_rows(broker, "wide", **{"max.partition.fetch.bytes": str(1 << 19)}) < 0.6 * one_mib


def task_receive_buffers(broker, **kafka: str) -> set[int]:
    """SO_RCVBUF of the sockets a task holds to the broker once it has handed over a first batch."""
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    options = SourceOptions.parse({"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": "wide",
                                   **{f"kafka.{k}": v for k, v in kafka.items()}}, streaming=False)
    batches = read_range(options, OffsetRange("wide", 0, 0, WIDE_RECORDS))
    try:
        next(batches)
        return {sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) for _, _, sock in tcp_connections()
                if sock.getpeername() == (host, int(port))}
    finally:
        batches.close()


def test_a_tasks_client_leaves_its_socket_receive_buffer_to_the_os_unless_told_otherwise(broker, wide):
    """issue 16, item 2: ``receive.buffer.bytes`` -1 for a task's client (the OS sizes the socket's
    buffer as data comes, as librdkafka leaves it): with a fixed 32 KiB (kproto's default; the
    Java consumer's is 64 KiB) a 2 MiB Fetch answer arrives in dozens of reads and the broker
    stalls on a full buffer. A user's ``kafka.receive.buffer.bytes`` still wins, and the other
    consumer settings keep their defaults."""
    from kproto.config import ClientConfig
    from kproto.spark.fetch import task_config

    def config(**kafka: str) -> ClientConfig:
        return task_config(SourceOptions.parse({"kafka.bootstrap.servers": broker.bootstrap_servers,
                                                "subscribe": "wide", **{f"kafka.{k}": v for k, v in kafka.items()}},
                                               streaming=False))

    default = config()
    assert default["receive.buffer.bytes"] == -1 and default["max.partition.fetch.bytes"] == 2 << 20
    kafka_defaults = ClientConfig("consumer", {"bootstrap.servers": broker.bootstrap_servers})
    assert {k: v for k, v in default.items() if k not in ("receive.buffer.bytes", "max.partition.fetch.bytes")} \
        == {k: v for k, v in kafka_defaults.items() if k not in ("receive.buffer.bytes", "max.partition.fetch.bytes")}
    assert config(**{"receive.buffer.bytes": "65536"})["receive.buffer.bytes"] == 65536
    assert config(**{"max.partition.fetch.bytes": "1048576"})["max.partition.fetch.bytes"] == 1 << 20
    # On the task's sockets: Linux reports twice the size set (socket(7)); left alone, the buffer
    # starts at tcp_rmem's default and grows.
    assert task_receive_buffers(broker, **{"receive.buffer.bytes": "32768"}) == {65536}
    with open("/proc/sys/net/ipv4/tcp_rmem") as f:
        os_default = int(f.read().split()[1])
    mine = task_receive_buffers(broker)
    assert mine and min(mine) >= os_default and os_default != 65536, (mine, os_default)


def test_a_task_fills_one_frame_buffer_again_with_each_fetch_answer(broker, wide, monkeypatch):
    """issue 16, item 2 (the task's cost per Fetch): a task lets go of each Fetch answer before it
    waits for the next, so that its connection reads the next answer into the buffer of the
    last one (kproto.protocol.frames reuses it once nothing holds it) rather than into a fresh
    buffer that page-faults as the socket fills it (a quarter of a millisecond per MiB here).
    Held until the next answer came, every answer took a fresh buffer."""
    from kproto.protocol.frames import FrameReader

    starts = []
    start_frame = FrameReader._start_frame

    def spy(self, size):
        before = len(self._recent)
        start_frame(self, size)
        starts.append("reused" if len(self._recent) < before else "fresh")

    monkeypatch.setattr(FrameReader, "_start_frame", spy)
    options = SourceOptions.parse({"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": "wide",
                                   "kafka.max.partition.fetch.bytes": str(512 << 10)}, streaming=False)
    batches = list(read_range(options, OffsetRange("wide", 0, 0, WIDE_RECORDS)))
    assert sum(b.num_rows for b in batches) == WIDE_RECORDS and len(batches) >= 5
    # Fresh: the first answer's buffer, and one a little too small for the next answer (a
    # buffer is reused for an answer of its size or up to a quarter smaller), such as the last.
    assert len(starts) >= 5 and starts.count("reused") >= len(starts) - 3, " ".join(starts)
