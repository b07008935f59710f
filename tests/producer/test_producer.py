"""kproto's Producer and AIOProducer against minibroker; peers' consumers read what it
wrote, byte for byte, and confluent-kafka's murmur2 partitioner agrees with it (the same
against Tansu: ``test_tansu_clients.py``)."""

import asyncio
import random
import threading
import time

import pytest

from kproto.codec import read_batches
from kproto.compression import codec_id
from kproto.errors import ConfigError, KafkaTimeoutError, MessageTooLargeError
from kproto.producer import AIOProducer, Producer, RecordMetadata
from kproto.protocol import ApiKey
from kproto.serialization import json_serializer, string_serializer
from minibroker import MiniBroker
from tests.producer.test_faults import never_answer_produce
from tests.support.proxy import FORWARD, FaultProxy

kafka = pytest.importorskip("kafka")
confluent = pytest.importorskip("confluent_kafka")


@pytest.fixture(scope="module")
def minibroker_config():
    return {"num.partitions": 4}


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


EARLY = 0.05  # timers may fire up to a clock tick early


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
    log = broker._server.state.topics["idem"].partitions[0].log
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
    with pytest.raises(ConfigError, match=r"needed by transactional.id\) needs: acks must be all"):
        Producer(bootstrap_servers=broker.bootstrap_servers, transactional_id="t", acks=1)  # issue 14
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


def test_a_record_bigger_than_buffer_memory_is_refused_at_once(broker):
    """Issue 16, item 2 (buffer.memory is never exceeded): a record that could never fit in
    ``buffer.memory`` is refused at once with MessageTooLargeError (Java's
    ``KafkaProducer.ensureValidRecordSize``: RecordTooLargeException), not appended, and
    the producer goes on working."""
    with Producer(bootstrap_servers=broker.bootstrap_servers, buffer_memory=4096, max_block_ms=2000) as producer:
        producer.partitions_for("memory-big")
        started = time.monotonic()
        with pytest.raises(MessageTooLargeError, match="buffer.memory"):
            producer.send("memory-big", b"x" * 5000, partition=0)
        assert time.monotonic() - started < 1.0  # refused, not waited for
        assert producer._core._acc.used == 0
        assert producer.send("memory-big", b"y" * 1000, partition=0).result(10).offset == 0


def test_held_bytes_never_exceed_buffer_memory_and_a_record_waits_then_times_out():
    """Issue 16, item 2: with a broker that never answers, memory is never freed; records
    are appended while they fit, the accumulator's held bytes never go over
    ``buffer.memory`` (before the fix the record that crossed it was appended anyway),
    and the first record that does not fit blocks ``max.block.ms`` then raises
    KafkaTimeoutError naming buffer.memory (Java: BufferExhaustedException)."""
    with FaultProxy(never_answer_produce) as proxy:
        producer = Producer(bootstrap_servers=proxy.bootstrap_servers, buffer_memory=4096, linger_ms=0,
                            max_block_ms=400)
        try:
            producer.partitions_for("memory-held")
            acc = producer._core._acc
            appended = 0
            started = None
            with pytest.raises(KafkaTimeoutError, match="buffer.memory"):
                for _ in range(10):
                    started = time.monotonic()
                    producer.send("memory-held", b"x" * 1000, partition=0)
                    appended += 1
                    assert acc.used <= 4096
            assert 0.4 - EARLY <= time.monotonic() - started < 5
            assert 3 <= appended <= 4 and acc.used <= 4096
        finally:
            producer.close(0)


def test_held_bytes_stay_within_buffer_memory_while_records_flow(broker):
    """Issue 16, item 2: records much bigger than a batch's share of a small
    ``buffer.memory`` flow through a live broker, each one waiting for room; a thread
    watching the accumulator never sees more than ``buffer.memory`` held."""
    with Producer(bootstrap_servers=broker.bootstrap_servers, buffer_memory=4096, linger_ms=1,
                  max_block_ms=10000) as producer:
        producer.partitions_for("memory-flow")
        acc = producer._core._acc
        seen = []
        done = threading.Event()

        def watch():
            while not done.is_set():
                seen.append(acc.used)
                time.sleep(0.0005)
        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            futures = [producer.send("memory-flow", b"%04d" % i * 350, partition=0) for i in range(60)]
            producer.flush(10)
        finally:
            done.set()
            watcher.join()
        assert [f.result(0).offset for f in futures] == list(range(60))
        assert max(seen) <= 4096 and acc.used == 0


def test_a_sync_send_that_fills_a_batch_behind_another_hands_over_to_the_sender(broker, monkeypatch):
    """Issue 16, item 1: a thread appending records holds the GIL, so the sender's loop
    thread got it back only every switch interval (5 ms) after each system call and fell
    behind, leaving the records to flush. Now a send that opens a batch behind full ones
    the sender has not taken (here: one) waits (bounded) until the sender has looked: when
    it returns, the full batch has gone."""
    from kproto.producer import accumulator, sender

    monkeypatch.setattr(sender, "HAND_OFF_TIMEOUT", 10.0)  # a loaded machine must not make it flaky
    monkeypatch.setattr(accumulator, "BEHIND_BYTES", 1024)  # one batch behind (a megabyte by default)
    with Producer(bootstrap_servers=broker.bootstrap_servers, batch_size=1024, linger_ms=60000, acks=1) as producer:
        producer.send("hand-off", b"first", partition=0)
        producer.flush(10)  # connected: from now on the sender can send at once
        acc = producer._core._acc
        gone = []  # per send that opened a batch: was the full batch before it taken by then?
        last = None
        for i in range(300):
            producer.send("hand-off", b"%03d" % i * 30, partition=0)
            queue = acc.queues.get(("hand-off", 0), ())
            if queue and queue[-1] is not last:
                if last is not None:
                    gone.append(last not in queue)
                last = queue[-1]
        assert len(gone) > 5
        # Before, none was (the sender waited for the GIL); now all but those held back by
        # max.in.flight.requests.per.connection on a busy machine.
        assert sum(gone) >= len(gone) // 2, gone
        producer.flush(10)


# -- partitioners, compression levels, linger ---------------------------------------------

def log_batches(broker, topic, partition=0):
    log = broker._server.state.topics[topic].partitions[partition].log
    return list(read_batches(log.read(0, 1 << 24)))


def test_a_callable_partitioner_chooses_every_partition_from_the_serialized_key(broker):
    calls = []

    def by_last_byte(key, partitions, topic):
        calls.append((key, partitions, topic))
        return partitions - 1 if key is None else key[-1] % partitions

    with Producer(bootstrap_servers=broker.bootstrap_servers, partitioner_class=by_last_byte,
                  key_serializer=string_serializer()) as producer:
        keyed = [producer.send("custom-part", b"v%d" % i, f"k{i}") for i in range(12)]
        keyless = producer.send("custom-part", b"no key")
        given = producer.send("custom-part", b"given", "k1", partition=0)  # a given partition wins
        producer.flush(10)
    assert [f.result().partition for f in keyed] == [ord(str(i)[-1]) % 4 for i in range(12)]
    assert (keyless.result().partition, given.result().partition) == (3, 0)
    assert len(calls) == 13 and calls[0] == (b"k0", 4, "custom-part") and calls[12] == (None, 4, "custom-part")
    stored = {p: [r.value for b in log_batches(broker, "custom-part", p) for r in b.records()] for p in range(4)}
    assert stored[3][-1] == b"no key" and stored[0][-1] == b"given"
    assert sorted(v for values in stored.values() for v in values) == sorted(
        [b"v%d" % i for i in range(12)] + [b"no key", b"given"])
    with Producer(bootstrap_servers=broker.bootstrap_servers,
                  partitioner_class=lambda key, partitions, topic: partitions) as producer:
        with pytest.raises(ValueError, match="partitioner.class returned 4 for a topic with 4 partitions"):
            producer.send("custom-part", b"x")


def test_round_robin_spreads_records_evenly_per_topic_whatever_their_keys(broker):
    with Producer(bootstrap_servers=broker.bootstrap_servers, partitioner_class="round_robin") as producer:
        futures = {t: [producer.send(t, b"v", b"one key") for _ in range(40)] for t in ("rr-a", "rr-b")}
        producer.flush(10)
    for topic, fs in futures.items():
        partitions = [f.result().partition for f in fs]
        assert {p: partitions.count(p) for p in range(4)} == {0: 10, 1: 10, 2: 10, 3: 10}
        assert [sum(b.records_count for b in log_batches(broker, topic, p)) for p in range(4)] == [10] * 4


def compressible_values(n=300):
    rng = random.Random(7)
    words = [w.encode() for w in "alpha beta gamma delta kafka record batch offset topic partition".split()]
    return [b" ".join(rng.choice(words) for _ in range(40)) + b" %d" % i for i in range(n)]


@pytest.mark.parametrize(("codec", "low", "high"), [("gzip", 1, 9), ("lz4", 1, 17), ("zstd", 1, 19)])
def test_a_higher_compression_level_stores_a_smaller_batch(broker, codec, low, high):
    values = compressible_values()
    sizes = {}
    for level in (low, high):
        topic = f"level-{codec}-{level}"
        with Producer({"bootstrap.servers": broker.bootstrap_servers, "compression.type": codec,
                       f"compression.{codec}.level": level, "linger.ms": 5000, "batch.size": 1 << 20}) as producer:
            for v in values:
                producer.send(topic, v, partition=0)
            producer.flush(10)
        (batch,) = log_batches(broker, topic)  # one batch: flushed before linger.ms
        assert batch.compression == codec_id(codec)
        assert [r.value for r in batch.records()] == values
        sizes[level] = batch.size
    assert sizes[high] < sizes[low], sizes


def test_lz4_at_its_default_level_is_javas_fast_compressor(broker):
    """Java's Lz4BlockOutputStream uses lz4's fast compressor at the default level (9) and
    LZ4HC at any other: the frame header is Java's (FLG 0x60: no checksums; BD 0x40)."""
    for level, topic in ((None, "lz4-default"), (9, "lz4-nine")):
        extra = {} if level is None else {"compression.lz4.level": level}
        with Producer({"bootstrap.servers": broker.bootstrap_servers, "compression.type": "lz4", **extra}) as producer:
            producer.send(topic, b"lz4 " * 200, partition=0).result(10)
        raw = broker._server.state.topics[topic].partitions[0].log.read(0, 1 << 20)
        assert raw[61:67] == b"\x04\x22\x4d\x18\x60\x40"  # after the 61-byte batch header


@pytest.mark.parametrize(("codec", "key", "value"), [
    ("gzip", "compression.gzip.level", 10), ("gzip", "compression.gzip.level", 0),
    ("lz4", "compression.lz4.level", 18), ("zstd", "compression.zstd.level", 23),
    ("none", "compression.gzip.level", 42),  # checked whatever the codec, as Java does
])
def test_a_compression_level_out_of_range_is_a_config_error(broker, codec, key, value):
    config = {"bootstrap.servers": broker.bootstrap_servers, "compression.type": codec, key: value}
    with pytest.raises(ConfigError, match=rf"{key}={value}: \w+ level must be from"):
        Producer(config)
    with pytest.raises(ConfigError, match=key):
        AIOProducer(config)


def produce_arrivals():
    """A fault proxy rule that forwards everything and notes when each Produce arrives."""
    arrivals = []

    def rule(api_key, version, request, n):
        if api_key == ApiKey.PRODUCE:
            arrivals.append(time.monotonic())
        return FORWARD
    rule.arrivals = arrivals
    return rule


def test_linger_holds_a_lone_record_and_a_full_batch_goes_at_once():
    rule = produce_arrivals()
    with FaultProxy(rule) as proxy:
        with Producer(bootstrap_servers=proxy.bootstrap_servers, linger_ms=300) as producer:
            producer.partitions_for("linger")  # metadata known: the record is appended at once
            sent = time.monotonic()
            producer.send("linger", b"x", partition=0).result(5)
        assert 0.3 - EARLY <= rule.arrivals[0] - sent < 2.0
        with Producer(bootstrap_servers=proxy.bootstrap_servers, linger_ms=5000, batch_size=1000) as producer:
            producer.partitions_for("linger")
            sent = time.monotonic()
            futures = [producer.send("linger", b"%0400d" % i, partition=0) for i in range(3)]
            futures[0].result(3)  # the third record did not fit: the first batch went without lingering
            assert time.monotonic() - sent < 2.5
            assert futures[1].done() and not futures[2].done()  # the second batch lingers (close sends it)
        assert [f.result(0).offset for f in futures] == [1, 2, 3]
