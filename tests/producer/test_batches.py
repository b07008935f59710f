"""``send_batch`` (kproto/producer/batches.py) against minibroker: records from columns
(Python lists, pyarrow arrays) in record batches built by one codec call each, read back
by confluent-kafka (librdkafka) and kafka-python: values, keys, headers, nulls, timestamps,
partitions, compression, the idempotent producer's sequences, transactions, and errors
(issue 16, "Produce, batches")."""

import asyncio
import contextlib
import time
import uuid

import pytest

from kproto import Producer, codec
from kproto.aio import AIOProducer
from kproto.codec import murmur2_partition, read_batches, size_of_varint, size_of_varlong
from kproto.errors import KafkaTimeoutError, MessageTooLargeError, TransactionStateError
from kproto.producer.batches import BatchFuture, BatchMetadata

ck = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")
pa = pytest.importorskip("pyarrow")

PARTITIONS = 4


@pytest.fixture(scope="module")
def minibroker_config():
    return {"num.partitions": PARTITIONS, "transaction.abort.timed.out.transaction.cleanup.interval.ms": 200}


def fresh(name):
    return f"{name}-{uuid.uuid4().hex[:8]}"


def read_back(bootstrap, topic, count, partitions=range(PARTITIONS), committed=False):
    """``count`` records of ``topic`` as confluent-kafka's consumer reads them: a list of
    (partition, offset, key, value, headers, timestamp), by partition then offset."""
    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": fresh("g"), "enable.auto.commit": False,
                     "isolation.level": "read_committed" if committed else "read_uncommitted"})
    try:
        c.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in partitions])
        out = []
        deadline = time.monotonic() + 15
        while len(out) < count and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                out.append((m.partition(), m.offset(), m.key(), m.value(), m.headers() or [], m.timestamp()[1]))
        return sorted(out)
    finally:
        c.close()


def log_batches(broker, topic, partition=0):
    log = broker._server.state.topics[topic].partitions[partition].log
    return list(read_batches(log.read(0, 1 << 26)))


def test_values_keys_headers_nulls_and_timestamps_are_read_back_by_librdkafka(broker):
    """issue 16, send_batch: every field of every record arrives, keyed records in murmur2's
    partition (Java's and librdkafka's), each partition's records in column order, and the
    metadata's rows say which input row has which offset."""
    topic = fresh("sb")
    n = 300
    values = [None if i % 7 == 0 else b"value-%d" % i for i in range(n)]
    keys = [None if i % 11 == 0 else b"key-%d" % (i % 37) for i in range(n)]
    headers = [[("i", b"%d" % i), ("none", None)] if i % 2 else None for i in range(n)]
    timestamps = [1_600_000_000_000 + i for i in range(n)]
    with Producer(bootstrap_servers=broker.bootstrap_servers, batch_size=2000) as producer:
        future = producer.send_batch(topic, values, keys, headers=headers, timestamps=timestamps)
        assert isinstance(future, BatchFuture)
        batches = future.result(15)
    assert all(isinstance(b, BatchMetadata) and b.error is None for b in batches)
    assert sum(b.record_count for b in batches) == n
    where = {}  # row -> (partition, offset)
    for b in batches:
        for j, row in enumerate(b.rows):
            where[row] = (b.partition, b.base_offset + j)
    assert sorted(where) == list(range(n))
    null_key_partitions = {where[i][0] for i in range(n) if keys[i] is None}
    assert len(null_key_partitions) == 1  # keyless: the sticky partition, one for the call
    for i in range(n):
        if keys[i] is not None:
            assert where[i][0] == murmur2_partition(keys[i], PARTITIONS)
    got = read_back(broker.bootstrap_servers, topic, n)
    expected = sorted((*where[i], keys[i], values[i], [("i", b"%d" % i), ("none", None)] if i % 2 else [],
                       timestamps[i]) for i in range(n))
    assert got == expected


def test_arrow_arrays_binary_string_large_sliced_chunked_with_nulls(broker):
    """issue 16, send_batch: pyarrow binary, string, large_binary and large_string arrays
    (sliced, chunked, with nulls) are read from their buffers; kafka-python reads the
    records back; timestamps may be an Arrow timestamp array."""
    topic = fresh("arrow")
    raw = [None if i % 5 == 0 else f"välue-{i}" for i in range(120)]
    cases = [
        (pa.array(raw, pa.string()), None),
        (pa.array([None if v is None else v.encode() for v in raw], pa.large_binary()).slice(7, 60),
         pa.array([b"k%d" % i for i in range(60)], pa.binary())),
        (pa.chunked_array([pa.array(raw[:50], pa.large_string()), pa.array(raw[50:], pa.large_string())]), None),
    ]
    expected = []
    with Producer(bootstrap_servers=broker.bootstrap_servers, batch_size=500) as producer:
        for values, keys in cases:
            ts = pa.array([1_700_000_000_000 + i for i in range(len(values))], pa.timestamp("ms"))
            producer.send_batch(topic, values, keys, partition=0, timestamps=ts).result(15)
            py_values = values.to_pylist()
            py_keys = [None] * len(values) if keys is None else keys.to_pylist()
            expected += [(k, None if v is None else (v if isinstance(v, bytes) else v.encode()), 1_700_000_000_000 + i)
                         for i, (k, v) in enumerate(zip(py_keys, py_values))]
    consumer = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, consumer_timeout_ms=3000)
    try:
        consumer.assign([kafka.TopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        got = [(m.key, m.value, m.timestamp) for m in consumer]
    finally:
        consumer.close()
    assert got == expected


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_of_batch_size_are_read_back(broker, codec):
    """issue 16, send_batch: compression.type applies to every batch, each at most
    batch.size before compression, and librdkafka decompresses them."""
    topic = fresh(f"z-{codec}")
    values = [b"compressible value %05d " % i * 4 for i in range(2000)]
    with Producer(bootstrap_servers=broker.bootstrap_servers, compression_type=codec, batch_size=16384) as producer:
        batches = producer.send_batch(topic, values, partition=0).result(15)
    assert len(batches) > 5 and [b.base_offset for b in batches] == sorted(b.base_offset for b in batches)
    stored = log_batches(broker, topic)
    assert {b.compression for b in stored} == {codec_id(codec)}
    assert all(uncompressed_size(b) <= 16384 for b in stored) and len(stored) == len(batches)
    assert [v for _, _, _, v, _, _ in read_back(broker.bootstrap_servers, topic, len(values), [0])] == values


def uncompressed_size(batch):
    """A batch's size before compression: its header and its records as encoded (no keys
    nor headers here)."""
    size = 61
    for j, r in enumerate(batch.records()):
        body = 1 + size_of_varlong(r.timestamp - batch.base_timestamp) + size_of_varint(j) + 1
        body += size_of_varint(len(r.value)) + len(r.value) + 1
        size += size_of_varint(body) + body
    return size


def codec_id(name):
    from kproto.compression import codec_id as cid
    return cid(name)


def test_idempotent_send_batch_keeps_sequences_and_order_with_send(broker):
    """issue 16, send_batch: an idempotent producer's batches from send and send_batch carry
    one producer id and consecutive sequences, and records keep the order of the calls."""
    topic = fresh("idem")
    with Producer(bootstrap_servers=broker.bootstrap_servers, batch_size=1000, linger_ms=50) as producer:
        assert producer._core.idempotent
        first = producer.send(topic, b"before", partition=0)
        batch = producer.send_batch(topic, [b"in-%03d" % i for i in range(100)], partition=0)
        last = producer.send(topic, b"after", partition=0)
        producer.flush(15)
        assert first.result().offset == 0 and last.result().offset == 101
        assert [b.base_offset for b in batch.result()][0] == 1
    stored = log_batches(broker, topic)
    assert len(stored) > 3 and len({b.producer_id for b in stored}) == 1 and stored[0].producer_id >= 0
    expected = 0
    for b in stored:
        assert b.base_sequence == expected
        expected += b.records_count
    assert [r.value for b in stored for r in b.records()] == [b"before"] + [b"in-%03d" % i for i in range(100)] + [b"after"]


def test_transactions_commit_and_abort_send_batch_records(broker):
    """issue 16, send_batch: in a transaction its batches are transactional; a committed
    transaction's records are read by read_committed consumers, an aborted one's are not;
    outside a transaction send_batch raises, as send does."""
    topic = fresh("txn")
    with Producer(bootstrap_servers=broker.bootstrap_servers, transactional_id=fresh("t")) as producer:
        producer.init_transactions()
        with pytest.raises(TransactionStateError):
            producer.send_batch(topic, [b"outside"], partition=0)
        producer.begin_transaction()
        producer.send_batch(topic, [b"aborted-%d" % i for i in range(50)], partition=0)
        producer.abort_transaction()
        with producer.transaction():
            future = producer.send_batch(topic, [b"committed-%d" % i for i in range(50)], partition=0)
        assert sum(b.record_count for b in future.result(5)) == 50
    assert all(b.is_transactional for b in log_batches(broker, topic) if not b.is_control)
    got = read_back(broker.bootstrap_servers, topic, 50, [0], committed=True)
    assert [v for _, _, _, v, _, _ in got] == [b"committed-%d" % i for i in range(50)]


def test_bad_input_fails_the_call_and_queues_nothing(broker):
    """issue 16, send_batch: a record over max.request.size is MessageTooLargeError (Java's
    RecordTooLargeException), as send's; a value of the wrong type TypeError; columns of
    different lengths or a partition not the topic's ValueError; in each case nothing
    is sent."""
    topic = fresh("bad")
    with Producer(bootstrap_servers=broker.bootstrap_servers, max_request_size=10_000) as producer:
        with pytest.raises(MessageTooLargeError, match="record 2 of the batch"):
            producer.send_batch(topic, [b"ok", b"ok", b"x" * 20_000], partition=0)
        with pytest.raises(TypeError, match="value must be bytes-like or None, not str"):
            producer.send_batch(topic, [b"ok", "text"], partition=0)
        with pytest.raises(ValueError, match="keys has 1 entries for 2 values"):
            producer.send_batch(topic, [b"a", b"b"], [b"k"])
        with pytest.raises(ValueError, match="partition 9"):
            producer.send_batch(topic, [b"a"], partition=9)
        assert producer._core._acc.unsettled == 0
        producer.send_batch(topic, [b"good"], partition=0).result(10)
    assert [v for _, _, _, v, _, _ in read_back(broker.bootstrap_servers, topic, 1, [0])] == [b"good"]


def test_serializers_and_callable_partitioner_apply_per_record(broker):
    """issue 16, send_batch: key.serializer and value.serializer apply to Python columns as
    send applies them, and partitioner.class decides each record's partition."""
    topic = fresh("ser")
    with Producer(bootstrap_servers=broker.bootstrap_servers, value_serializer=lambda v: v.encode(),
                  key_serializer=lambda k: k.encode(),
                  partitioner_class=lambda key, n, topic: int(key) % n) as producer:
        batches = producer.send_batch(topic, ["a", "b", "c", "d", "e"], ["0", "1", "2", "3", "5"]).result(10)
    assert sorted((b.partition, list(b.rows)) for b in batches) == [(0, [0]), (1, [1, 4]), (2, [2]), (3, [3])]
    got = read_back(broker.bootstrap_servers, topic, 5)
    assert [(p, k, v) for p, _, k, v, _, _ in got] == [(0, b"0", b"a"), (1, b"1", b"b"), (1, b"5", b"e"),
                                                        (2, b"2", b"c"), (3, b"3", b"d")]


def test_send_batch_waits_for_buffer_memory_and_every_record_arrives(broker):
    """issue 16, send_batch: more data than buffer.memory is queued as batches settle
    (the call waits), and everything arrives, acks=all."""
    topic = fresh("mem")
    values = [b"%06d" % i + b"v" * 94 for i in range(20_000)]  # ~2 MB, buffer.memory 256 kB
    with Producer(bootstrap_servers=broker.bootstrap_servers, buffer_memory=256 * 1024,
                  batch_size=64 * 1024) as producer:
        batches = producer.send_batch(topic, values, partition=0).result(30)
        assert producer._core._acc.used == 0
    assert sum(b.record_count for b in batches) == len(values)
    assert [r.value for b in log_batches(broker, topic) for r in b.records()] == values


def test_send_batch_gives_up_after_max_block_ms_when_memory_stays_full():
    """issue 16, send_batch: with no broker answering, memory never frees: the call raises
    KafkaTimeoutError after max.block.ms, saying how many records it queued."""
    from minibroker import MiniBroker

    with MiniBroker(config={"num.partitions": 1}) as b:
        with Producer(bootstrap_servers=b.bootstrap_servers, buffer_memory=20_000, batch_size=10_000,
                      max_block_ms=300, delivery_timeout_ms=2000, request_timeout_ms=1000) as producer:
            producer.partitions_for("t")
            b.stop()
            start = time.monotonic()
            with pytest.raises(KafkaTimeoutError, match="max.block.ms.*records were queued"):
                producer.send_batch("t", [b"x" * 100] * 1000, partition=0)
            assert time.monotonic() - start < 5
            producer.close(0)


def test_aio_send_batch_returns_an_awaitable_future(broker):
    """issue 16, send_batch: AIOProducer.send_batch queues on the loop and returns the
    batch future, which is awaited on the same loop."""
    topic = fresh("aio")

    async def main():
        async with AIOProducer(bootstrap_servers=broker.bootstrap_servers, batch_size=1000) as producer:
            future = await producer.send_batch(topic, [b"a%d" % i for i in range(100)], partition=1,
                                               headers={"h": b"1"})
            return await future
    batches = asyncio.run(main())
    assert [b.base_offset for b in batches][0] == 0 and sum(b.record_count for b in batches) == 100
    got = read_back(broker.bootstrap_servers, topic, 100, [1])
    assert [(v, h) for _, _, _, v, h, _ in got] == [(b"a%d" % i, [("h", b"1")]) for i in range(100)]


def test_a_batch_the_broker_refuses_fails_the_future_and_the_others_are_listed(broker):
    """issue 16, send_batch: a topic whose max.message.bytes is under batch.size refuses the
    first batch (MESSAGE_TOO_LARGE, not retriable); the future raises that error, and its
    ``batches`` list every batch with its own outcome; a batch small enough is written."""
    from kproto.admin import AdminClient, NewTopic

    topic = fresh("refused")
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, 2, 1, {"max.message.bytes": "3000"})])
    with Producer(bootstrap_servers=broker.bootstrap_servers, batch_size=100_000) as producer:
        big, small = (next(k for k in (b"k%d" % i for i in range(20)) if murmur2_partition(k, 2) == p) for p in (0, 1))
        future = producer.send_batch(topic, [b"x" * 100] * 60, [big] * 50 + [small] * 10)
        with pytest.raises(MessageTooLargeError):
            future.result(15)
    outcomes = sorted((b.record_count, b.base_offset, type(b.error).__name__) for b in future.batches)
    assert outcomes == [(10, 0, "NoneType"), (50, -1, "MessageTooLargeError")]


def test_later_calls_write_into_settled_batches_memory_and_every_record_arrives(broker):
    """issue 16, send_batch item 2 (memory): batches of a producer's later send_batch calls
    are written into the memory of its earlier, settled ones (Java's BufferPool), and what
    the broker holds is exactly what each call gave (nothing written twice or mixed)."""
    topic = fresh("sb-spare")
    calls = [[b"%d-%06d-" % (c, i) + bytes([65 + c]) * 90 for i in range(3000)] for c in range(4)]
    config = {"bootstrap.servers": broker.bootstrap_servers, "batch.size": 100_000, "linger.ms": 0}
    with Producer(config) as producer:
        for values in calls:
            producer.send_batch(topic, values, partition=0).result(15)
        spares = producer._core._batch_spares
        assert spares.items and all(len(b) >= spares.SMALLEST for b in spares.items)
        # calls after the first took settled batches' memory (the twin writes into its own)
        assert (spares.reused > 0) == (codec._BACKEND == "cython")
        assert len(spares.items) <= spares.KEPT
    got = read_back(broker.bootstrap_servers, topic, 4 * 3000, partitions=[0])
    assert [v for *_, v, _, _ in got] == [v for values in calls for v in values]


def test_spares_stay_within_buffer_memory(broker):
    """issue 16, send_batch item 2 (memory): kept spares count against ``buffer.memory``
    (as Java's BufferPool counts its free buffers in its total): a settled batch is kept
    only while it and the memory in use fit, at most KEPT of them, only batches of at
    least SMALLEST bytes (the oldest let go first), and taking one gives its bytes back."""
    from kproto.codec import BatchBuilder
    from kproto.producer.batches import _Spares

    big = _Spares.SMALLEST
    config = {"bootstrap.servers": broker.bootstrap_servers, "buffer.memory": 2 * big}
    with Producer(config) as producer:
        acc = producer._core._acc
        spares = _Spares()
        spares.offer(b"x" * (big - 1), acc)
        spares.offer(bytearray(big), acc)
        assert spares.items == [] and acc.used == 0
        spares.offer(b"a" * big, acc)
        assert acc.used == big == spares.held
        acc.appender.used += big // 2  # a batch of send's in flight
        spares.offer(b"b" * big, acc)  # it, the spares and what is in use: over buffer.memory
        assert [b[:1] for b in spares.items] == [b"a"] and acc.used == big + big // 2
        acc.appender.used -= big // 2
        builder = BatchBuilder(max_bytes=big)
        taken = spares.take(builder, acc)
        assert taken == (codec._BACKEND == "cython")  # the twin writes into its own buffer
        assert acc.used == (0 if taken else big) and spares.held == acc.used
        acc.buffer_memory = 1 << 30
        for i in range(_Spares.KEPT + 2):
            spares.offer(bytes([48 + i]) * big, acc)
        assert len(spares.items) == _Spares.KEPT and spares.items[0][:1] == bytes([48 + 2])
        assert acc.used == spares.held == _Spares.KEPT * big
        assert spares.release(acc) and acc.used == spares.held == 0 and spares.items == []
        assert not spares.release(acc)


def test_a_send_that_needs_the_spares_memory_gets_it_at_once(broker):
    """issue 16, send_batch item 2 (memory): the spares a ``send_batch`` left fill
    ``buffer.memory``; a later ``send`` (and ``send_batch``) that needs that memory frees them
    at once instead of waiting ``max.block.ms`` for batches that will never settle, and the
    memory the producer holds never goes past ``buffer.memory``."""
    topic = fresh("sb-spare-full")
    memory = 1 << 20
    config = {"bootstrap.servers": broker.bootstrap_servers, "batch.size": 200_000, "linger.ms": 0,
              "buffer.memory": memory, "max.block.ms": 300}
    with Producer(config) as producer:
        values = [b"%06d" % i + b"v" * 94 for i in range(8000)]
        producer.send_batch(topic, values, partition=0).result(15)
        spares = producer._core._batch_spares
        acc = producer._core._acc
        assert spares.held > 0 and acc.used == spares.held <= memory
        producer.send(topic, b"b" * (memory - spares.held // 2), partition=0).result(15)
        assert spares.held == 0
        producer.send_batch(topic, values, partition=0).result(15)
        assert acc.used == spares.held <= memory
        producer.flush(15)
    assert spares.held == 0 and acc.used == 0  # close lets them go
    assert len(read_back(broker.bootstrap_servers, topic, 16001, partitions=[0])) == 16001


def test_an_asyncio_send_that_needs_the_spares_memory_gets_it_at_once(broker):
    """issue 16, send_batch item 2 (memory): as above, through AIOProducer's slow path."""
    topic = fresh("sb-spare-full-aio")
    memory = 1 << 20

    async def main():
        config = {"bootstrap.servers": broker.bootstrap_servers, "batch.size": 200_000, "linger.ms": 0,
                  "buffer.memory": memory, "max.block.ms": 300}
        async with AIOProducer(config) as producer:
            await (await producer.send_batch(topic, [b"%06d" % i + b"v" * 94 for i in range(8000)], partition=0))
            spares = producer._batch_spares
            assert spares.held > 0 and producer._acc.used == spares.held <= memory
            await producer.send(topic, b"b" * (memory - spares.held // 2), partition=0)
            assert spares.held == 0

    asyncio.run(main())
    assert len(read_back(broker.bootstrap_servers, topic, 8001, partitions=[0])) == 8001


def test_a_batch_written_into_a_spare_counts_the_spare_until_it_is_sent(broker):
    """issue 16, send_batch item 2 (memory; found by review): with the default idempotent,
    uncompressed producer the sender builds ``send_batch``'s batches, so a small batch
    written into a 1 MB spare holds the whole spare while queued; it must count that, not
    its records' size, or the producer holds more than ``buffer.memory`` while it counts
    less (1.55x measured)."""
    topic = fresh("sb-spare-counted")
    memory = 4 << 20
    config = {"bootstrap.servers": broker.bootstrap_servers, "batch.size": 1 << 20, "linger.ms": 0,
              "buffer.memory": memory, "max.block.ms": 300}
    with Producer(config) as producer:
        acc = producer._core._acc
        values = [b"v" * 100] * 40000
        producer.send_batch(topic, values, partition=0).result(15)
        spares = producer._core._batch_spares
        assert spares.items
        ready = acc.ready
        acc.ready = lambda now: ([], None)  # the sender takes nothing for now (a leader gone)
        try:
            for _ in range(len(spares.items)):
                producer.send_batch(topic, values[:10], partition=0)
            with contextlib.suppress(KafkaTimeoutError):
                for _ in range(20_000):  # fill what is counted as free
                    producer.send(topic, b"x" * 1000, partition=0)
            queued = [b for queue in acc.queues.values() for b in queue]
            held = sum(b.builder.capacity for b in queued if b.builder is not None) + spares.held
            assert acc.used <= memory and held <= memory
        finally:
            acc.ready = ready
        producer.flush(15)
