"""The consumer without groups, against minibroker: what peers produced comes back byte
for byte; positions, seeks, pauses and offset lookups; resets when a position falls out of
the log; compacted topics; deserializers; iteration; both faces; nothing left behind."""

import asyncio
import inspect
import os
import threading
import time

import pytest

from kproto.admin import AdminClient as KprotoAdmin
from kproto.admin import NewTopic
from kproto.aio import AIOConsumer
from kproto.consumer import (
    Consumer,
    ConsumerRecord,
    NoOffsetForPartitionError,
    RecordDeserializationError,
)
from kproto.errors import ClientClosedError, ConfigError, OffsetOutOfRangeError
from kproto.serialization import string_deserializer
from kproto.structs import TopicPartition

ck = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")

DEADLINE = 15


@pytest.fixture(scope="module")
def minibroker_config():
    return {"log.retention.check.interval.ms": 100}


@pytest.fixture(autouse=True)
def nothing_left_behind(shared_producer):
    """No consumer thread or socket outlives a test (the broker's are there before and after)."""
    threads, fds = set(threading.enumerate()), len(os.listdir("/proc/self/fd"))
    yield
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and (set(threading.enumerate()) - threads or len(os.listdir("/proc/self/fd")) > fds):
        time.sleep(0.05)  # peers' threads wind down asynchronously
    assert not [t for t in set(threading.enumerate()) - threads if t.name.startswith("kproto")]
    assert len(os.listdir("/proc/self/fd")) <= fds


@pytest.fixture(scope="module")
def shared_producer(broker):
    """One confluent-kafka producer for the module (librdkafka winds down asynchronously)."""
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    producer.produce("warm-up", b"")  # its connections open now, before any test counts sockets
    assert producer.flush(DEADLINE) == 0
    yield producer
    producer.flush(DEADLINE)


@pytest.fixture
def produce(broker, shared_producer):
    """``produce(topic, [(key, value, headers, timestamp)], partition=0, **librdkafka_config)``."""
    def produce(topic, records, partition=0, **config):
        producer = shared_producer
        if config:
            producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5,
                                    **{k.replace("_", "."): v for k, v in config.items()}})
        for key, value, headers, timestamp in records:
            producer.produce(topic, value, key, partition=partition, headers=headers, timestamp=timestamp)
        assert producer.flush(DEADLINE) == 0
    return produce


def create(broker, topic, partitions=1, **config):
    with KprotoAdmin(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, partitions, configs=config)])


def consume(consumer, count, timeout=DEADLINE):
    got, deadline = [], time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        got += consumer.poll(0.5)
    return got


def consumer_for(broker, **config):
    # A short long-poll: the broker notices a closed connection only when it answers.
    return Consumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                    **{"fetch_max_wait_ms": 100, **config})


# -- records from peers, byte for byte -------------------------------------------------------------

def test_records_from_confluent_and_kafka_python_come_back_byte_equal(broker, produce):
    create(broker, "peers", 2)
    written = [(b"k%d" % i if i % 3 else None, None if i % 5 == 0 and i % 3 else b"\x00v%d" % i,
                [("h", b"x%d" % i), ("empty", b""), ("dup", b"1"), ("dup", b"2")] if i % 2 else None,
                1_600_000_000_000 + i) for i in range(300)]
    produce("peers", written, compression_type="lz4")
    producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, compression_type="gzip")
    for key, value, headers, timestamp in written:
        producer.send("peers", value, key, headers=headers or [], partition=1, timestamp_ms=timestamp)
    producer.flush(DEADLINE)
    producer.close(DEADLINE)
    with consumer_for(broker) as consumer:
        consumer.assign([TopicPartition("peers", 0), TopicPartition("peers", 1)])
        got = consume(consumer, 600)
    assert len(got) == 600
    for partition in (0, 1):
        mine = [r for r in got if r.partition == partition]
        assert [r.offset for r in mine] == list(range(300))
        assert [(r.key, r.value, list(r.headers), r.timestamp) for r in mine] == [
            (k, v, h or [], ts) for k, v, h, ts in written]
        assert all(r.timestamp_type == 0 and r.topic == "peers" and r.leader_epoch >= 0 for r in mine)


# -- positions, seeks, pauses, offset lookups --------------------------------------------------------

def test_positions_seeks_pauses_and_offset_lookups(broker, produce):
    create(broker, "pos", 2)
    for partition in (0, 1):
        produce("pos", [(None, b"%d" % i, None, 5000 + 10 * i) for i in range(50)], partition)
    p0, p1 = TopicPartition("pos", 0), TopicPartition("pos", 1)
    with consumer_for(broker, max_poll_records=7) as consumer:
        consumer.assign([p0, p1])
        assert consumer.assignment() == {p0, p1}
        assert consumer.position(p0) == 0  # looked up (auto.offset.reset=earliest)
        assert consumer.end_offsets([p0, p1]) == {p0: 50, p1: 50}
        assert consumer.beginning_offsets([p0]) == {p0: 0}
        times = consumer.offsets_for_times({p0: 5101, p1: 999_999})
        assert times[p0].offset == 11 and times[p0].timestamp == 5110 and times[p1] is None
        batch = consumer.poll(DEADLINE)
        assert 0 < len(batch) <= 7
        consumer.pause([p1])
        assert consumer.paused() == {p1}
        got = consume(consumer, 50 - sum(r.partition == 0 for r in batch), timeout=3)
        assert {r.partition for r in got} <= {0} and consumer.position(p0) == 50
        consumer.resume([p1])
        rest = consume(consumer, 50 - sum(r.partition == 1 for r in batch))
        assert [r.offset for r in batch + rest if r.partition == 1] == list(range(50))
        consumer.seek(p1, 45)
        assert [r.offset for r in consume(consumer, 5)] == [45, 46, 47, 48, 49]
        consumer.seek_to_beginning([p0])
        assert consumer.poll(DEADLINE)[0].offset == 0
        consumer.seek_to_end()
        assert consumer.position(p0) == 50 and consumer.position(p1) == 50
        assert consumer.poll(0.2) == []
        with pytest.raises(ValueError, match="not assigned"):
            consumer.seek(TopicPartition("pos", 7), 1)


def test_latest_reset_waits_for_new_records_and_fetch_wait_bounds_an_empty_poll(broker, produce):
    create(broker, "fresh")
    produce("fresh", [(None, b"old", None, 1)])
    with Consumer(bootstrap_servers=broker.bootstrap_servers, fetch_max_wait_ms=100) as consumer:  # latest
        consumer.assign([TopicPartition("fresh", 0)])
        start = time.monotonic()
        assert consumer.poll(0.5) == []
        assert time.monotonic() - start < 2
        produce("fresh", [(None, b"new", None, 2)])
        assert [r.value for r in consume(consumer, 1)] == [b"new"]


def test_fetch_size_limits_and_min_bytes(broker, produce):
    """max.partition.fetch.bytes below a batch still progresses (KIP-74: the first partition
    of a response gets a whole batch, and partitions take turns being first); fetch.min.bytes
    holds a fetch until fetch.max.wait.ms when less has arrived."""
    create(broker, "limits", 2)
    for partition in (0, 1):
        produce("limits", [(None, b"x" * 300, None, i) for i in range(40)], partition, linger_ms=50)
    with consumer_for(broker, max_partition_fetch_bytes=100, fetch_max_bytes=1000) as consumer:
        consumer.assign([TopicPartition("limits", 0), TopicPartition("limits", 1)])
        got = consume(consumer, 80)
        assert sorted((r.partition, r.offset) for r in got) == [(p, i) for p in (0, 1) for i in range(40)]
    with consumer_for(broker, fetch_min_bytes=1 << 20, fetch_max_wait_ms=300) as consumer:
        consumer.assign([TopicPartition("limits", 0)])
        start = time.monotonic()
        assert len(consume(consumer, 40)) == 40  # 12 KB < fetch.min.bytes: answered at max wait
        assert 0.25 < time.monotonic() - start < 5


# -- positions outside the log -------------------------------------------------------------------------

@pytest.mark.parametrize("reset, first", [("earliest", 6), ("latest", 10)])
def test_a_position_deleted_by_delete_records_resets_per_auto_offset_reset(broker, reset, first, produce):
    topic = f"deleted-{reset}"
    create(broker, topic)
    produce(topic, [(None, b"%d" % i, None, 1) for i in range(10)])
    tp = TopicPartition(topic, 0)
    with Consumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset=reset) as consumer:
        consumer.assign([tp])
        with KprotoAdmin(bootstrap_servers=broker.bootstrap_servers) as admin:
            assert admin.delete_records({tp: 6}) == {tp: 6}
        consumer.seek(tp, 2)  # below the log start now
        got, deadline = [], time.monotonic() + DEADLINE
        while consumer.position(tp) == 2 and time.monotonic() < deadline:
            got += consumer.poll(0.1)  # the fetch finds OFFSET_OUT_OF_RANGE and resets
        produce(topic, [(None, b"late", None, 1)])
        got += consume(consumer, 11 - first - len(got))
        assert [r.offset for r in got] == list(range(first, 11)) and got[-1].value == b"late"


def test_a_position_outside_the_log_raises_with_reset_none(broker, produce):
    create(broker, "oor")
    produce("oor", [(None, b"%d" % i, None, 1) for i in range(3)])
    tp = TopicPartition("oor", 0)
    with Consumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="none") as consumer:
        consumer.assign([tp])
        with pytest.raises(NoOffsetForPartitionError) as raised:
            consumer.poll(DEADLINE)
        assert raised.value.partitions == [tp]
        consumer.seek(tp, 40)
        with pytest.raises(OffsetOutOfRangeError) as out_of_range:
            consume(consumer, 1)
        assert out_of_range.value.partitions == {tp: 40}
        with pytest.raises(OffsetOutOfRangeError):  # again, until the application seeks
            consume(consumer, 1)
        consumer.seek(tp, 1)
        assert [r.offset for r in consume(consumer, 2)] == [1, 2]


# -- compaction ----------------------------------------------------------------------------------------

def test_a_compacted_topic_reads_the_last_value_per_key_across_offset_gaps(broker, produce):
    create(broker, "compacted", **{"cleanup.policy": "compact", "segment.bytes": "100", "segment.ms": "100",
                                   "min.cleanable.dirty.ratio": "0.01", "min.compaction.lag.ms": "0"})
    # Key "once" is written once, early; three others are overwritten to the end.
    writes = [(b"once" if i == 1 else b"k%d" % (i % 3), b"v%d" % i, None, 100 + i) for i in range(24)]
    produce("compacted", writes, batch_num_messages=3)
    produce("compacted", [(b"end", b"end", None, 200)])  # the active segment
    expected = {key: (offset, value) for offset, (key, value, _, _) in enumerate(writes)}
    expected[b"end"] = (24, b"end")
    expected = sorted((o, k, v) for k, (o, v) in expected.items())
    assert [o for o, _, _ in expected] == [1, 21, 22, 23, 24]
    tp = TopicPartition("compacted", 0)
    with consumer_for(broker) as consumer:
        consumer.assign([tp])
        deadline = time.monotonic() + DEADLINE
        while True:
            consumer.seek_to_beginning()
            got = []
            while consumer.position(tp) < 25 and time.monotonic() < deadline:
                got += consumer.poll(0.5)
            if len(got) == len(expected) or time.monotonic() > deadline:
                break
            time.sleep(0.1)  # the cleaner runs every 100 ms
        assert consumer.beginning_offsets([tp]) == {tp: 0}
    assert [(r.offset, r.key, r.value) for r in got] == expected


# -- deserializers, iteration, faces ---------------------------------------------------------------------

def test_deserializers_and_a_record_they_cannot_read(broker, produce):
    create(broker, "deser")
    produce("deser", [(b"k", "é".encode(), None, 1), (b"k", b"\xff", None, 1), (b"k", b"ok", None, 1)])
    tp = TopicPartition("deser", 0)
    with consumer_for(broker, key_deserializer=string_deserializer(), value_deserializer=string_deserializer()) as consumer:
        consumer.assign([tp])
        assert [(r.key, r.value) for r in consume(consumer, 1)] == [("k", "é")]
        with pytest.raises(RecordDeserializationError) as raised:
            consume(consumer, 1)
        assert raised.value.offset == 1 and consumer.position(tp) == 1
        consumer.seek(tp, 2)
        assert [r.value for r in consume(consumer, 1)] == ["ok"]


def test_iteration_counts_a_record_consumed_once_yielded(broker, produce):
    create(broker, "iter")
    produce("iter", [(None, b"%d" % i, None, 1) for i in range(20)])
    tp = TopicPartition("iter", 0)
    with consumer_for(broker) as consumer:
        consumer.assign([tp])
        consume(consumer, 0)
        seen = []
        for record in consumer:
            seen.append(record.offset)
            if record.offset == 4:
                assert consumer.position(tp) == 5  # inside the loop: up to the record in hand
                break
        assert consumer.position(tp) == 5
        assert [r.offset for r in consumer.poll(DEADLINE)][:1] == [5]  # nothing skipped

    async def run():
        async with AIOConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest") as aio:
            aio.assign([tp])
            async for record in aio:
                if record.offset == 12:
                    break
            assert (await aio.poll(DEADLINE))[0].offset == 13
        assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
    asyncio.run(run())


def test_close_is_idempotent_and_wakes_a_blocked_poll(broker):
    create(broker, "closing")
    consumer = consumer_for(broker)
    consumer.assign([TopicPartition("closing", 0)])
    results = []
    poller = threading.Thread(target=lambda: results.append(list(consumer)))
    poller.start()
    time.sleep(0.3)
    consumer.close()
    poller.join(5)
    assert results == [[]]
    consumer.close()
    with pytest.raises(ClientClosedError):
        consumer.poll(0)


def test_both_faces_have_the_same_methods_and_signatures():
    for name, method in inspect.getmembers(AIOConsumer, inspect.isfunction):
        if name.startswith("_") or name in ("start", "stop"):  # aiokafka's lifecycle, asyncio only
            continue
        assert inspect.signature(getattr(Consumer, name)) == inspect.signature(method), name


def test_config_errors_and_misuse_are_clear(broker):
    with pytest.raises(ConfigError, match="did you mean 'max.poll.records'"):
        Consumer(bootstrap_servers=broker.bootstrap_servers, max_poll_record=5)
    with Consumer(bootstrap_servers=broker.bootstrap_servers) as consumer:
        with pytest.raises(RuntimeError, match="subscribe\\(\\) or assign\\(\\)"):
            consumer.poll(0)
    assert ConsumerRecord._fields == ("topic", "partition", "offset", "timestamp", "timestamp_type", "key",
                                      "value", "headers", "leader_epoch")
