"""format("kproto") with ``kafka.isolation.level`` over a log with real aborts (issue 14,
tests: "the Spark source with kafka.isolation.level=read_committed over a log with real
aborts"): the transactions are kproto's transactional producer's against minibroker's
transaction coordinator, so the markers, the aborted-transaction index and the last
stable offset are the broker's own. read_uncommitted is the contrast: it sees it all."""

from __future__ import annotations

import json

import pytest

from kproto import AdminClient, Producer
from kproto.admin import NewTopic
from kproto.spark import register

TOPIC = "txn-orders"
PARTITIONS = 2


def _transaction(producer, tag: str, count: int, *, commit: bool) -> list[tuple[int, bytes]]:
    producer.begin_transaction()
    sent = [(i % PARTITIONS, b"%s-%d" % (tag.encode(), i)) for i in range(count)]
    for partition, value in sent:
        producer.send(TOPIC, value, partition=partition)
    if commit:
        producer.commit_transaction()
    else:
        producer.flush()  # in the log, then aborted: an ABORT marker and an entry in the .txnindex
        producer.abort_transaction()
    return sent


@pytest.fixture(scope="module")
def log(spark, broker):
    """The topic's records in the order written, as (partition, value, committed):
    plain, committed, aborted, committed, plain, aborted, committed transactions."""
    register(spark)
    bootstrap = broker.bootstrap_servers
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    written = []
    with Producer(bootstrap_servers=bootstrap) as plain, \
            Producer(bootstrap_servers=bootstrap, transactional_id="spark-txn") as producer:
        producer.init_transactions()
        for tag, count, commit in (("plain-a", 4, None), ("commit-a", 6, True), ("abort-a", 10, False),
                                   ("commit-b", 4, True), ("plain-b", 2, None), ("abort-b", 8, False),
                                   ("commit-c", 6, True)):
            if commit is None:
                for i in range(count):
                    plain.send(TOPIC, b"%s-%d" % (tag.encode(), i), partition=i % PARTITIONS).result()
                written += [(i % PARTITIONS, b"%s-%d" % (tag.encode(), i), True) for i in range(count)]
            else:
                written += [(p, v, commit) for p, v in _transaction(producer, tag, count, commit=commit)]
    return written


def read(spark, broker, isolation: str, **options):
    reader = (spark.read.format("kproto").option("kafka.bootstrap.servers", broker.bootstrap_servers)
              .option("subscribe", TOPIC).option("kafka.isolation.level", isolation))
    for name, value in options.items():
        reader = reader.option(name, value if isinstance(value, str) else json.dumps(value))
    return reader.load()


def per_partition(rows) -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    for r in sorted(rows, key=lambda r: (r.partition, r.offset)):
        out[r.partition].append(bytes(r.value))
    return out


def expected(log, committed_only: bool) -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    for partition, value, committed in log:
        if committed or not committed_only:
            out[partition].append(value)
    return out


def test_read_committed_batch_skips_the_aborted_transactions(spark, broker, log):
    """Issue 14: only plain and committed records, in log order, at their offsets."""
    rows = read(spark, broker, "read_committed").collect()
    assert per_partition(rows) == expected(log, committed_only=True)
    assert not [r for r in rows if bytes(r.value).startswith(b"abort")]


def test_read_uncommitted_batch_sees_the_aborted_records_too(spark, broker, log):
    """Issue 14, the contrast: every data record, the aborted ones included; never a marker."""
    assert per_partition(read(spark, broker, "read_uncommitted").collect()) == expected(log, committed_only=False)


def test_read_committed_ranges_cut_inside_aborted_transactions(spark, broker, log):
    """Issue 14: ranges that start and end inside an aborted transaction (minPartitions
    splits each partition's range in many) still drop all of it and keep the rest."""
    df = read(spark, broker, "read_committed", minPartitions="11")
    assert df.rdd.getNumPartitions() >= 11
    assert per_partition(df.collect()) == expected(log, committed_only=True)


def test_read_committed_stops_at_an_open_transaction_until_it_commits(spark, broker, log, tmp_path):
    """Issue 14: the last stable offset bounds a read_committed read (batch and streaming):
    the open transaction's records appear once it commits; read_uncommitted sees them at once."""
    checkpoint = str(tmp_path / "checkpoint")

    def stream() -> list[bytes]:
        got: list[bytes] = []
        query = (spark.readStream.format("kproto").option("kafka.bootstrap.servers", broker.bootstrap_servers)
                 .option("subscribe", TOPIC).option("kafka.isolation.level", "read_committed")
                 .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "7").load()
                 .writeStream.foreachBatch(lambda df, _: got.extend(bytes(r.value) for r in df.collect()))
                 .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
        try:
            query.awaitTermination(120)
        finally:
            query.stop()
        return got

    committed = [v for p in expected(log, committed_only=True).values() for v in p]
    with Producer(bootstrap_servers=broker.bootstrap_servers, transactional_id="spark-open") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        open_values = []
        for i in range(4):
            producer.send(TOPIC, b"open-%d" % i, partition=i % PARTITIONS)
            open_values.append(b"open-%d" % i)
        producer.flush()
        assert sorted(bytes(r.value) for r in read(spark, broker, "read_committed").collect()) == sorted(committed)
        first = stream()
        assert sorted(first) == sorted(committed)  # each once, across micro-batches of 7 offsets
        uncommitted = [bytes(r.value) for r in read(spark, broker, "read_uncommitted").collect()]
        assert set(open_values) <= set(uncommitted)
        producer.commit_transaction()
    assert sorted(stream()) == sorted(open_values)  # the checkpoint resumes at the old LSO
    assert sorted(bytes(r.value) for r in read(spark, broker, "read_committed").collect()) == \
        sorted(committed + open_values)
