"""kproto's Producer and AIOProducer against minibroker and Tansu; peers' consumers read
what it wrote, byte for byte, and confluent-kafka's murmur2 partitioner agrees with it."""

import asyncio
import threading
import time

import pytest

from kproto.codec import read_batches
from kproto.errors import ConfigError, KafkaTimeoutError, MessageTooLargeError
from kproto.producer import AIOProducer, Producer, RecordMetadata
from kproto.serialization import json_serializer, string_serializer
from minibroker import MiniBroker
from tests.minibroker.tansu import tansu_fixture

kafka = pytest.importorskip("kafka")
confluent = pytest.importorskip("confluent_kafka")

tansu_broker = tansu_fixture(scope="module")


@pytest.fixture(scope="module")
def broker():
    with MiniBroker(config={"num.partitions": 4}) as b:
        yield b


def consume(bootstrap, topic, partitions=(0,), count=None, timeout_ms=3000):
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=timeout_ms)
    try:
        tps = [kafka.TopicPartition(topic, p) for p in partitions]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        out = []
        for m in consumer:
            out.append(m)
            if count is not None and len(out) >= count:
                break
        return out
    finally:
        consumer.close()


def test_records_round_trip_to_every_peer_byte_for_byte(broker):
    records = [(b"k%d" % i if i % 3 else None, b"v%d" % i if i % 4 else None, 1_600_000_000_000 + i,
                [("h", b"x%d" % i), ("empty", None)] if i % 2 else []) for i in range(50)]
    with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
        futures = [producer.send("rt", v, k, partition=0, timestamp_ms=ts, headers=h) for k, v, ts, h in records]
        producer.flush(10)
        metadata = [f.result(0) for f in futures]
    assert [m.offset for m in metadata] == list(range(50))
    assert metadata[7] == RecordMetadata("rt", 0, 7, 1_600_000_000_007)
    got = consume(broker.bootstrap_servers, "rt", count=50)
    assert [(m.key, m.value, m.timestamp, [(k, v) for k, v in m.headers]) for m in got] == [
        (k, v, ts, h) for k, v, ts, h in records]
    c = confluent.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "rt-check",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.assign([confluent.TopicPartition("rt", 0, 0)])
        seen = []
        deadline = time.monotonic() + 10
        while len(seen) < 50 and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                seen.append((m.key(), m.value(), m.timestamp()[1], [(k, v) for k, v in (m.headers() or [])]))
    finally:
        c.close()
    assert seen == [(k, v, ts, h) for k, v, ts, h in records]


def test_keys_land_where_javas_partitioner_puts_them(broker):
    keys = [b"user-%d" % i for i in range(200)] + [b"", "ünïcode".encode(), bytes(range(256))]
    with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
        ours = [producer.send("keyed", b"x", key).result(10).partition for key in keys]
    theirs = {}  # librdkafka reports deliveries partition by partition, not in order
    p = confluent.Producer({"bootstrap.servers": broker.bootstrap_servers, "partitioner": "murmur2_random"})
    for key in keys:
        p.produce("keyed", b"x", key, on_delivery=lambda err, msg: theirs.__setitem__(msg.key(), msg.partition()))
    assert p.flush(10) == 0
    assert ours == [theirs[k] for k in keys] and len(set(ours)) == 4


def test_null_keys_stick_to_one_partition_per_batch(broker):
    with Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=1000, batch_size=1_000_000) as producer:
        futures = [producer.send("sticky", b"v%d" % i) for i in range(100)]
        producer.flush(10)
    assert len({f.result().partition for f in futures}) == 1
    with Producer(bootstrap_servers=broker.bootstrap_servers, partitioner_class="round_robin") as producer:
        assert [producer.send("rr", b"v").result(10).partition for _ in range(8)] == [0, 1, 2, 3, 0, 1, 2, 3]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compression_types_are_read_by_peers(broker, codec):
    topic = f"z-{codec}"
    with Producer(bootstrap_servers=broker.bootstrap_servers, compression_type=codec) as producer:
        for i in range(30):
            producer.send(topic, b"value %d " % i * 20, partition=0)
        producer.flush(10)
    assert [m.value for m in consume(broker.bootstrap_servers, topic, count=30)] == [b"value %d " % i * 20 for i in range(30)]


def test_idempotent_batches_carry_a_producer_id_and_increasing_sequences(broker):
    with Producer(bootstrap_servers=broker.bootstrap_servers, batch_size=200, linger_ms=0) as producer:
        assert producer._core.idempotent
        for i in range(20):
            producer.send("idem", b"%030d" % i, partition=0)
        producer.flush(10)
    log = broker._server.state.topics["idem"].partitions[0]
    batches = list(read_batches(log.read(0, 1 << 20)))
    assert len(batches) > 3 and len({b.producer_id for b in batches}) == 1 and batches[0].producer_id >= 0
    expected = 0
    for b in batches:
        assert b.base_sequence == expected
        expected += b.records_count
    with Producer(bootstrap_servers=broker.bootstrap_servers, acks=1) as producer:
        assert not producer._core.idempotent  # Java turns implicit idempotence off for acks=1
        assert producer.send("idem", b"x", partition=0).result(10).offset == 20


def test_acks_zero_sends_without_offsets(broker):
    with Producer(bootstrap_servers=broker.bootstrap_servers, acks=0) as producer:
        assert producer.send("acks0", b"x", partition=0).result(10).offset == -1
    assert len(consume(broker.bootstrap_servers, "acks0", count=1)) == 1


def test_errors_are_typed_and_immediate(broker):
    with pytest.raises(ConfigError, match="enable.idempotence=true needs: acks must be all"):
        Producer(bootstrap_servers=broker.bootstrap_servers, enable_idempotence=True, acks=1)
    with pytest.raises(ConfigError, match="transactions are not supported"):
        Producer(bootstrap_servers=broker.bootstrap_servers, transactional_id="t")
    with Producer(bootstrap_servers=broker.bootstrap_servers, max_request_size=1000) as producer:
        with pytest.raises(MessageTooLargeError, match="max.request.size"):
            producer.send("big", b"x" * 2000)
        with pytest.raises(TypeError):
            producer.send("big", "not bytes")
        with pytest.raises(ValueError, match="partition 9"):
            producer.send("big", b"x", partition=9)
    with MiniBroker(config={"auto.create.topics.enable": False}) as strict:
        with Producer(bootstrap_servers=strict.bootstrap_servers, max_block_ms=300) as producer:
            started = time.monotonic()
            with pytest.raises(KafkaTimeoutError, match="max.block.ms"):
                producer.send("missing", b"x")
            assert time.monotonic() - started < 5


def test_serializers_callbacks_and_no_leftovers(broker):
    before = set(threading.enumerate())
    delivered = []
    with Producer(bootstrap_servers=broker.bootstrap_servers, key_serializer=string_serializer(),
                  value_serializer=json_serializer()) as producer:
        producer.send("ser", {"a": 1}, "key", partition=0, on_delivery=lambda err, md: delivered.append((err, md.offset)))
        producer.flush(10)
    assert delivered == [(None, 0)]
    (m,) = consume(broker.bootstrap_servers, "ser", count=1)
    assert (m.key, m.value) == (b"key", b'{"a":1}')
    producer.close()  # idempotent
    assert set(threading.enumerate()) == before


def test_async_producer_keeps_order_through_the_waiting_path(broker):
    async def run():
        async with AIOProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
            first = producer.send("aio-new", b"0", partition=0)  # metadata unknown: waits
            rest = [producer.send("aio-new", b"%d" % i, partition=0) for i in range(1, 20)]
            results = [await f for f in [first, *rest]]
            assert [r.offset for r in results] == list(range(20))
            assert (await producer.send_and_wait("aio-new", b"last", partition=0)).offset == 20
            assert await producer.partitions_for("aio-new") == [0, 1, 2, 3]
        assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
    asyncio.run(run())
    assert [m.value for m in consume(broker.bootstrap_servers, "aio-new", count=21)][:3] == [b"0", b"1", b"2"]


def test_producing_to_tansu(tansu_broker):
    with Producer(bootstrap_servers=tansu_broker.bootstrap_servers) as producer:
        futures = [producer.send("tansu-p", b"v%d" % i, b"k%d" % (i % 5), headers=[("n", b"%d" % i)]) for i in range(40)]
        producer.flush(15)
        metadata = [f.result(0) for f in futures]
    by_partition = {}
    for md in metadata:
        by_partition.setdefault(md.partition, []).append(md.offset)
    assert all(offsets == sorted(offsets) for offsets in by_partition.values())
    partitions = sorted(by_partition)
    got = consume(tansu_broker.bootstrap_servers, "tansu-p", partitions, count=40)
    assert sorted(m.value for m in got) == sorted(b"v%d" % i for i in range(40))


def test_broker_restart_mid_produce_loses_nothing_and_duplicates_nothing(tmp_path):
    """Idempotence across a broker restart: every record exactly once, in order."""
    broker = MiniBroker(data_dir=tmp_path)
    broker.start()
    port = broker.port
    total = 3000
    try:
        with Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=2, batch_size=2000,
                      reconnect_backoff_ms=20, retry_backoff_ms=20, delivery_timeout_ms=30000) as producer:
            futures = []
            for i in range(total):
                futures.append(producer.send("restart", b"%d" % i, partition=0))
                if i == total // 3:
                    futures[-1].result(10)
                    broker.stop()
                    time.sleep(0.3)
                    broker = MiniBroker(port=port, data_dir=tmp_path)
                    broker.start()
            producer.flush(30)
            offsets = [f.result(0).offset for f in futures]
        assert offsets == sorted(offsets)
        values = [m.value for m in consume(broker.bootstrap_servers, "restart", count=total + 10, timeout_ms=3000)]
        assert values == [b"%d" % i for i in range(total)]
    finally:
        broker.stop()


def test_an_unreachable_broker_fails_records_after_delivery_timeout_and_blocks_on_memory():
    broker = MiniBroker()
    broker.start()
    try:
        producer = Producer(bootstrap_servers=broker.bootstrap_servers, delivery_timeout_ms=800, request_timeout_ms=300,
                            linger_ms=0, buffer_memory=4096, max_block_ms=400, reconnect_backoff_ms=20)
        producer.partitions_for("gone")
        broker.stop()
        first = producer.send("gone", b"x" * 1000, partition=0)
        with pytest.raises(KafkaTimeoutError):
            first.result(10)  # expired: delivery.timeout.ms
        for _ in range(3):
            producer.send("gone", b"y" * 1000, partition=0)
        started = time.monotonic()
        with pytest.raises(KafkaTimeoutError, match="buffer.memory"):
            for _ in range(10):
                producer.send("gone", b"z" * 1000, partition=0)  # memory is full: send blocks, then gives up
        assert 0.3 < time.monotonic() - started < 5
        producer.close(0.5)
    finally:
        broker.stop()
