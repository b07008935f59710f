"""Consumer.poll_arrow (issue 16, "consume, columnar"): the records poll() returns, as one
Arrow record batch in Spark's Kafka schema, with poll's positions, seeks, pauses, commits
and read_committed filtering; peers' records (headers, nulls, every codec) byte for byte.

The chunk-level tests drive the fetcher's columnar take without a network, on the same
log as tests/consumer/test_fetcher.py; the rest run against minibroker.
"""

import asyncio
import subprocess
import sys
import time

import pyarrow as pa
import pytest

from kproto.admin import AdminClient, NewTopic
from kproto.aio import AIOConsumer
from kproto.arrow import arrow_schema, record_batch
from kproto.consumer import Consumer
from kproto.consumer.fetcher import _Chunk
from kproto.errors import ConfigError, CorruptRecordError
from kproto.records import decode_columnar
from kproto.serialization import string_deserializer
from kproto.structs import TopicPartition
from tests.consumer.test_fetcher import (
    ABORTED,
    LOG,
    TP,
    ControlType,
    FetchResponse,
    bad_crc,
    data_batch,
    marker,
)
from tests.support.process import child_env

ck = pytest.importorskip("confluent_kafka")

DEADLINE = 15


# -- the fetcher's columnar take, without a network ------------------------------------------------

def chunk_of(data, fetch_offset=0, aborted=None):
    return _Chunk(TP, 0, fetch_offset, data, check_crcs=True, aborted=aborted, deserializers=(None, None))


def offsets_taken(chunk, limit=100):
    """Offsets of what take_columns returns for up to ``limit`` records, called as the drain
    calls it (again while the chunk has more: a call stops at a skipped batch)."""
    out = []
    while len(out) < limit and not chunk.exhausted:
        taken = chunk.take_columns(limit - len(out))
        if taken is None:
            break
        cols, start, n = taken
        out += list(memoryview(cols.offsets).cast("q"))[start:start + n]
    return out


@pytest.mark.parametrize("read_committed, offsets", [(True, [2, 3, 5, 6, 8]), (False, [0, 1, 2, 3, 5, 6, 8])])
def test_take_columns_skips_what_take_skips(read_committed, offsets):
    """issue 16, poll_arrow: control batches and (read_committed) aborted batches are not
    returned; the position ends past the last batch, as the row path's does."""
    chunk = chunk_of(LOG, aborted=ABORTED if read_committed else None)
    assert offsets_taken(chunk) == offsets
    assert chunk.position == 9 and chunk.exhausted and chunk.epoch == 3


def test_take_columns_skips_an_aborted_transaction_at_the_end_of_a_response():
    """issue 16, poll_arrow (review): plain records, then an aborted transaction and its
    ABORT marker as the last batches of a response. The look-ahead judged the marker (which
    ends the producer's aborting) while the aborted batch stayed behind, so the next take
    judged it committed and returned its records."""
    log = data_batch(0, 2) + data_batch(2, 2, 1, True) + marker(4, 1, ControlType.ABORT)
    aborted = [FetchResponse.AbortedTransaction(producer_id=1, first_offset=2)]
    assert offsets_taken(chunk_of(log, aborted=aborted)) == [0, 1]
    chunk = chunk_of(log + data_batch(5, 1), aborted=aborted)
    assert offsets_taken(chunk, 1) == [0]
    assert offsets_taken(chunk) == [1, 5] and chunk.position == 6


def test_take_columns_limit_cuts_a_batch_and_the_next_take_resumes_inside_it():
    """issue 16, poll_arrow: max_records may end inside a batch; the rest of that batch
    comes next (from the columns decoded then: the drain takes again for more), then the
    following ones, from the position (records below it dropped)."""
    chunk = chunk_of(data_batch(0, 4) + data_batch(4, 4) + data_batch(8, 2), fetch_offset=1)
    assert offsets_taken(chunk, 2) == [1, 2]
    assert chunk.position == 3 and not chunk.exhausted
    assert offsets_taken(chunk, 4) == [3, 4, 5, 6]  # the rest of what was decoded, then more
    assert chunk.position == 7 and not chunk.exhausted
    assert offsets_taken(chunk, 100) == [7, 8, 9]
    assert chunk.position == 10 and chunk.exhausted


def test_take_columns_decodes_a_batch_once_however_small_the_limit(monkeypatch):
    """issue 16, consume2 (poll_arrow slower with larger fetches): taking a large batch
    ``limit`` records at a time decoded the whole rest of it on every take (the records
    past the limit were dropped and decoded again from the new position): records decoded
    grew as batch size squared over the limit. Counted here: each record is decoded once."""
    import kproto.consumer.fetcher as fetcher

    decoded = []
    real = fetcher.decode_columnar

    def counting(data, position, check_crcs):
        cols = real(data, position, check_crcs)
        decoded.append(cols.count)
        return cols

    monkeypatch.setattr(fetcher, "decode_columnar", counting)
    chunk = chunk_of(data_batch(0, 1000) + data_batch(1000, 1000))
    offsets = []
    while not chunk.exhausted:
        offsets += offsets_taken(chunk, 30)
    assert offsets == list(range(2000))
    assert chunk.position == 2000
    assert sum(decoded) == 2000  # before: 34,000 records decoded for 2,000 returned


def test_take_after_take_columns_cut_a_batch_resumes_at_the_position():
    """issue 16, consume2: the columns kept from a cut batch are dropped when poll()'s take
    comes in between, and take_columns decodes again from where take left the position."""
    chunk = chunk_of(data_batch(0, 4) + data_batch(4, 4))
    assert offsets_taken(chunk, 2) == [0, 1]
    out = []
    chunk.take(out, 3)
    assert [r.offset for r in out] == [2, 3, 4]
    assert chunk.index < len(chunk.records)  # take is inside the second batch
    out.clear()
    chunk.take(out, 100)
    assert [r.offset for r in out] == [5, 6, 7] and chunk.exhausted


def test_take_columns_stops_at_a_corrupt_batch_with_the_position_at_it():
    """issue 16, poll_arrow: records before a batch the codec refuses are returned; then
    the chunk is stuck at it (its error raised by the drain), as on the row path."""
    bad = bytearray(data_batch(2, 2))
    bad[60] = 3  # the header says 3 records, the batch holds 2 (CRCs are not checked here)
    chunk = _Chunk(TP, 0, 0, data_batch(0, 2) + bytes(bad) + data_batch(4, 1), check_crcs=False, aborted=None,
                   deserializers=(None, None))
    cols, start, n = chunk.take_columns(100)
    assert list(memoryview(cols.offsets).cast("q"))[start:start + n] == [0, 1]
    assert chunk.position == 2 and chunk.error is None
    assert chunk.take_columns(100) is None
    assert chunk.exhausted and isinstance(chunk.error, CorruptRecordError) and chunk.position == 2


@pytest.mark.parametrize("bad_one", ["data", "control"])
def test_take_columns_stops_at_a_batch_with_a_bad_crc_with_the_position_at_it(bad_one):
    """issue 16, poll_arrow lead 1: with the CRCs checked when the chunk is first drained (no
    longer on arrival), poll_arrow sees what it saw: the records before a batch whose CRC
    does not match, then its error with the position at it; a skipped batch (a transaction
    marker) is checked too."""
    bad = data_batch(2, 2) if bad_one == "data" else marker(2, 1, ControlType.COMMIT)
    chunk = chunk_of(data_batch(0, 2) + bad_crc(bad) + data_batch(4, 1))
    assert offsets_taken(chunk) == [0, 1]
    assert chunk.position == 2
    assert chunk.take_columns(100) is None
    assert chunk.exhausted and isinstance(chunk.error, CorruptRecordError) and "CRC" in str(chunk.error)
    assert chunk.position == 2 and chunk.end == 2


def test_record_batch_topic_and_partition_columns_for_any_row_count_and_many_topics():
    """issue 16, poll_arrow: the topic column is a slice of one made before when one is long
    enough (not made again for every batch): each batch still holds its own topic on every
    row, whatever the row counts before it (larger, smaller) and however many topics."""
    cols = {n: decode_columnar(data_batch(0, n)) for n in (1, 3, 5)}
    for topic in [f"t{i}" for i in range(40)] + ["t0", "t1"]:
        for n in (3, 5, 1, 5):
            batch = record_batch(cols[n], topic, 7, arrow_schema(False))
            assert batch.column("topic").to_pylist() == [topic] * n
            assert batch.column("partition").to_pylist() == [7] * n
            assert batch.column("timestampType").to_pylist() == [0] * n
            assert batch.schema == arrow_schema(False)


# -- against minibroker --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def shared_producer(broker):
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    producer.produce("warm-up", b"")  # its connections open now, before any test counts sockets
    assert producer.flush(DEADLINE) == 0
    yield producer
    producer.flush(DEADLINE)


def create(broker, topic, partitions=1):
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, partitions)])


def produce(broker, topic, records, **config):
    """confluent-kafka writes ``records`` (partition, key, value, headers, timestamp)."""
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5,
                            **{k.replace("_", "."): v for k, v in config.items()}})
    for partition, key, value, headers, timestamp in records:
        producer.produce(topic, value, key, partition=partition, headers=headers, timestamp=timestamp or 0)
    assert producer.flush(DEADLINE) == 0


def consumer_for(broker, **config):
    return Consumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                    **{"fetch_max_wait_ms": 100, **config})


def arrow_rows(consumer, count, timeout=DEADLINE, **kwargs):
    """poll_arrow until ``count`` rows came (or the time is up); the batches, as one table."""
    batches, got, deadline = [], 0, time.monotonic() + timeout
    while got < count and time.monotonic() < deadline:
        batch = consumer.poll_arrow(0.5, **kwargs)
        assert isinstance(batch, pa.RecordBatch)
        batches.append(batch)
        got += batch.num_rows
    return pa.Table.from_batches(batches, schema=batches[0].schema) if batches else None


def polled(consumer, count, timeout=DEADLINE):
    got, deadline = [], time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        got += consumer.poll(0.5)
    return got


def as_rows(records):
    """poll()'s records in poll_arrow's row form (timestamps as datetimes, via Arrow)."""
    table = pa.table({
        "key": pa.array([r.key for r in records], pa.binary()),
        "value": pa.array([r.value for r in records], pa.binary()),
        "topic": pa.array([r.topic for r in records], pa.string()),
        "partition": pa.array([r.partition for r in records], pa.int32()),
        "offset": pa.array([r.offset for r in records], pa.int64()),
        "timestamp": pa.array([r.timestamp for r in records], pa.timestamp("ms", tz="UTC")).cast(
            pa.timestamp("us", tz="UTC")),
        "timestampType": pa.array([r.timestamp_type for r in records], pa.int32()),
        "headers": pa.array([[{"key": k, "value": v} for k, v in r.headers] for r in records],
                            arrow_schema(True).field("headers").type),
    })
    return table.to_pylist()


def by_partition(rows):
    return sorted(rows, key=lambda r: (r["partition"], r["offset"]))


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_poll_arrow_returns_what_poll_returns_for_a_peers_records(broker, shared_producer, codec):
    """issue 16, poll_arrow: confluent-kafka's records (null keys and values, headers with
    null and repeated values, every codec, two partitions) come back as the same rows from
    poll_arrow as from poll, in Spark's Kafka schema; positions end at the log's end."""
    topic = f"columnar-{codec}"
    create(broker, topic, 2)
    written = [(i % 2, b"k%d" % i if i % 3 else None, None if i % 5 == 0 else b"\x00v%d" % i,
                [("h", b"x%d" % i), ("empty", b""), ("none", None), ("dup", b"1"), ("dup", b"2")] if i % 2 else None,
                1_600_000_000_000 + i) for i in range(400)]
    produce(broker, topic, written, compression_type=codec)
    partitions = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    with consumer_for(broker) as rows_consumer, consumer_for(broker) as arrow_consumer:
        rows_consumer.assign(partitions)
        arrow_consumer.assign(partitions)
        records = polled(rows_consumer, 400)
        table = arrow_rows(arrow_consumer, 400)
        assert table.schema == arrow_schema(include_headers=True)
        assert table.num_rows == 400
        assert by_partition(table.to_pylist()) == by_partition(as_rows(records))
        assert [arrow_consumer.position(tp) for tp in partitions] == [200, 200]
        for include_headers in (True, False, True):  # nothing left: no rows, in the schema asked for
            empty = arrow_consumer.poll_arrow(0.1, include_headers=include_headers)
            assert empty.num_rows == 0 and empty.schema == arrow_schema(include_headers)
    row = by_partition(table.to_pylist())[1]  # partition 0, offset 1: record 2
    assert (row["key"], row["value"], row["headers"]) == (b"k2", b"\x00v2", [])
    assert table.column("timestampType").to_pylist() == [0] * 400


def test_poll_arrow_without_headers_and_with_max_records(broker, shared_producer):
    """issue 16, poll_arrow: include_headers=False leaves the headers column out; max_records
    bounds each batch and the positions follow the rows returned; the consumer's metrics
    count the rows."""
    create(broker, "columnar-limits")
    produce(broker, "columnar-limits", [(0, None, b"v%d" % i, [("h", b"1")], None) for i in range(50)])
    tp = TopicPartition("columnar-limits", 0)
    with consumer_for(broker) as consumer:
        consumer.assign([tp])
        got = []
        deadline = time.monotonic() + DEADLINE
        while len(got) < 50 and time.monotonic() < deadline:
            batch = consumer.poll_arrow(0.5, max_records=7, include_headers=False)
            assert batch.num_rows <= 7 and batch.schema == arrow_schema(include_headers=False)
            got += batch.column("offset").to_pylist()
            assert consumer.position(tp) == (got[-1] + 1 if got else 0)
        metrics = consumer.metrics()
    assert got == list(range(50))
    # the consumer's metrics count poll_arrow's rows as poll's records
    totals = {name.name: value for name, value in metrics.items() if name.group == "consumer-fetch-manager-metrics"}
    assert totals["records-consumed-total"] == 50


def test_poll_arrow_with_small_max_records_makes_each_arrow_column_once(broker, shared_producer, monkeypatch):
    """issue 16, consume2: poll_arrow(max_records=n) on a large batch made the Arrow arrays
    of all the records decoded (ever fewer of them still to take) on every poll, then sliced
    them: rows wrapped grew as batch size squared over n. Counted here: the rows made into
    Arrow arrays, against those returned."""
    import kproto.arrow

    made = []
    real = kproto.arrow.record_batch

    def counting(cols, topic, partition, schema):
        made.append(cols.count)
        return real(cols, topic, partition, schema)

    monkeypatch.setattr(kproto.arrow, "record_batch", counting)
    create(broker, "columnar-one-batch")
    produce(broker, "columnar-one-batch", [(0, None, b"v%d" % i, None, None) for i in range(600)],
            linger_ms=200, batch_num_messages=1000)
    tp = TopicPartition("columnar-one-batch", 0)
    with consumer_for(broker) as consumer:
        consumer.assign([tp])
        got = []
        deadline = time.monotonic() + DEADLINE
        while len(got) < 600 and time.monotonic() < deadline:
            got += consumer.poll_arrow(0.5, max_records=20, include_headers=False).column("offset").to_pylist()
    assert got == list(range(600))
    assert sum(made) <= 2 * 600  # before: about 600 x 600 / 20 / 2 = 9,000


def test_poll_arrow_follows_seek_and_pause(broker, shared_producer):
    """issue 16, poll_arrow: a seek (backwards, into the middle of a batch) is where the next
    rows start; a paused partition gives none until resumed."""
    create(broker, "columnar-seek", 2)
    produce(broker, "columnar-seek", [(i % 2, None, b"v%d" % i, None, None) for i in range(40)])
    p0, p1 = TopicPartition("columnar-seek", 0), TopicPartition("columnar-seek", 1)
    with consumer_for(broker) as consumer:
        consumer.assign([p0, p1])
        consumer.pause([p1])
        table = arrow_rows(consumer, 20)
        assert table.column("partition").to_pylist() == [0] * 20
        assert consumer.poll_arrow(0.3).num_rows == 0  # p1 is paused, p0 is at its end
        consumer.seek(p0, 13)
        table = arrow_rows(consumer, 7)
        assert table.column("offset").to_pylist() == list(range(13, 20))
        consumer.resume([p1])
        table = arrow_rows(consumer, 20)
        assert table.column("partition").to_pylist() == [1] * 20
        assert table.column("offset").to_pylist() == list(range(20))


def test_poll_arrow_positions_are_what_commit_commits(broker, shared_producer):
    """issue 16, poll_arrow: commit() after poll_arrow commits the positions past the rows
    returned, so a new member of the group starts after them."""
    create(broker, "columnar-commit")
    produce(broker, "columnar-commit", [(0, None, b"v%d" % i, None, None) for i in range(30)])
    tp = TopicPartition("columnar-commit", 0)
    with consumer_for(broker, group_id="columnar", enable_auto_commit=False) as consumer:
        consumer.subscribe(["columnar-commit"])
        table = arrow_rows(consumer, 12, max_records=12)
        assert table.num_rows == 12
        consumer.commit()
        assert consumer.committed([tp])[tp].offset == 12
    produce(broker, "columnar-commit", [(0, None, b"late", None, None)])
    with consumer_for(broker, group_id="columnar") as consumer:
        consumer.subscribe(["columnar-commit"])
        table = arrow_rows(consumer, 19)
    assert table.column("offset").to_pylist() == list(range(12, 31))


def test_poll_arrow_read_committed_skips_aborted_transactions(broker, shared_producer):
    """issue 16, poll_arrow: under read_committed, a peer's aborted transaction is not in the
    rows and neither are the markers; under read_uncommitted the aborted records are."""
    create(broker, "columnar-txn")
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "columnar-txn"})
    producer.init_transactions(DEADLINE)
    for i, commit in enumerate([True, False, True]):
        producer.begin_transaction()
        for j in range(5):
            producer.produce("columnar-txn", b"%d-%d" % (i, j), partition=0)
        assert producer.flush(DEADLINE) == 0  # in the log before the abort: 5 records + a marker each
        (producer.commit_transaction if commit else producer.abort_transaction)(DEADLINE)
    tp = TopicPartition("columnar-txn", 0)
    expected = [b"%d-%d" % (i, j) for i in (0, 2) for j in range(5)]
    with consumer_for(broker, isolation_level="read_committed") as committed, consumer_for(broker) as everything:
        committed.assign([tp])
        everything.assign([tp])
        assert arrow_rows(committed, 10).column("value").to_pylist() == expected
        assert committed.position(tp) == 18  # past three markers
        table = arrow_rows(everything, 15)
        assert table.num_rows == 15 and table.column("offset").to_pylist() == [*range(5), *range(6, 11), *range(12, 17)]


def test_poll_arrow_refuses_deserializers(broker):
    """issue 16, poll_arrow: Arrow columns hold the bytes as they are, so a consumer with a
    deserializer is told to use poll() rather than given undeserialized values."""
    with consumer_for(broker, value_deserializer=string_deserializer) as consumer:
        consumer.assign([TopicPartition("warm-up", 0)])
        with pytest.raises(ConfigError, match="poll\\(\\)"):
            consumer.poll_arrow(0.1)


def test_aio_poll_arrow_and_mixing_with_poll(broker, shared_producer):
    """issue 16, poll_arrow: the asyncio face; poll() then poll_arrow() on one consumer
    return every record once, in order (a batch poll() decoded part way is fetched again)."""
    create(broker, "columnar-aio")
    produce(broker, "columnar-aio", [(0, None, b"v%d" % i, None, None) for i in range(100)])
    tp = TopicPartition("columnar-aio", 0)

    async def main():
        async with AIOConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                               fetch_max_wait_ms=100) as consumer:
            consumer.assign([tp])
            offsets = []
            deadline = time.monotonic() + DEADLINE
            while not offsets and time.monotonic() < deadline:
                offsets += [r.offset for r in await consumer.poll(0.5, max_records=3)]
            while len(offsets) < 100 and time.monotonic() < deadline:
                offsets += (await consumer.poll_arrow(0.5)).column("offset").to_pylist()
            return offsets, await consumer.position(tp) if asyncio.iscoroutinefunction(consumer.position) \
                else consumer.position(tp)

    offsets, position = asyncio.run(main())
    assert offsets == list(range(100)) and position == 100


def test_kproto_imports_without_pyarrow_and_poll_arrow_names_the_extra(broker, tmp_path):
    """issue 16, poll_arrow: pyarrow is needed by poll_arrow alone: without it kproto and
    its consumer import and work, and poll_arrow raises an ImportError naming kproto[arrow]."""
    script = tmp_path / "no_pyarrow.py"
    script.write_text(
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('pyarrow', 'pyspark'):\n"
        "            raise ImportError(f'No module named {name!r} (blocked)')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import kproto, kproto.aio, kproto.consumer\n"
        "from kproto.structs import TopicPartition\n"
        f"with kproto.Consumer(bootstrap_servers={broker.bootstrap_servers!r}) as consumer:\n"
        "    consumer.assign([TopicPartition('warm-up', 0)])\n"
        "    try:\n"
        "        consumer.poll_arrow(0.1)\n"
        "    except ImportError as exc:\n"
        "        print('ImportError:', exc)\n"
        "assert 'pyarrow' not in sys.modules\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                         env=child_env())
    assert out.returncode == 0, out.stderr
    assert "ImportError:" in out.stdout and "pip install kproto[arrow]" in out.stdout


def test_record_batch_timestamps_in_microseconds_and_out_of_range_raises_arrows_error():
    """Timestamps go from Kafka's milliseconds to Spark's microseconds in one pass; one that
    microseconds cannot hold fails the batch with Arrow's cast error, as before."""
    from kproto.codec import BatchBuilder

    def batch_of(timestamps):
        builder = BatchBuilder()
        for ts in timestamps:
            builder.append(ts, b"k", b"v")
        return record_batch(decode_columnar(builder.build()), "t", 0, arrow_schema())

    stamps = [0, 1_700_000_000_123, -1, 2**63 // 1000]
    column = batch_of(stamps).column("timestamp")
    assert column.type == pa.timestamp("us", tz="UTC")
    assert column.cast(pa.int64()).to_pylist() == [t * 1000 for t in stamps]
    with pytest.raises(pa.ArrowInvalid):
        batch_of([0, 2**63 // 1000 + 1])
