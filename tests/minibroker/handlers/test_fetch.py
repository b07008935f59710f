"""Fetch's answers as Kafka gives them, checked on the wire and with librdkafka.

A partition answered with an error still carries an empty records field, never a null
one (Kafka's ``FetchResponse.partitionResponse`` sets ``MemoryRecords.EMPTY``):
librdkafka refuses a whole response with a null records field, so a consumer never
resets its offset after retention, DeleteRecords or a deleted topic.
"""

import logging
import time
import uuid

import pytest

from kproto.protocol import ApiKey
from kproto.protocol.messages import FetchRequest, MetadataRequest
from minibroker import MiniBroker
from tests.minibroker.test_server import batch, create, fetch_request, produce

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402


def _fetch(client, version, topic, offset, topic_id=None, isolation_level=0):
    request = FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=isolation_level,
                           topics=[FetchRequest.FetchTopic(
                               topic=topic, topic_id=topic_id or uuid.UUID(int=0), partitions=[
                                   FetchRequest.FetchPartition(partition=0, fetch_offset=offset,
                                                               partition_max_bytes=1 << 20)])])
    return client.request(ApiKey.FETCH, version, request).responses[0].partitions[0]


@pytest.mark.parametrize("version", [4, 11, 12, 13, 17])
def test_error_partitions_carry_empty_records_not_null(raw, version):
    """Issue 10 item 15: OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION and
    UNKNOWN_TOPIC_ID partitions come with empty records (length 0), as Kafka sends."""
    client = raw()
    create(client, "known")
    produce(client, "known", batch(b"a", b"b"))
    topic_id = client.request(ApiKey.METADATA, 12, MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name="known")])).topics[0].topic_id
    by_id = version >= 13
    out_of_range = _fetch(client, version, "known", 99, topic_id=topic_id if by_id else None)
    assert out_of_range.error_code == 1
    unknown = _fetch(client, version, "unknown-topic", 0, topic_id=uuid.uuid4() if by_id else None)
    assert unknown.error_code == (100 if by_id else 3)
    for partition in (out_of_range, unknown):
        assert partition.records is not None and len(partition.records) == 0
        # Kafka's LogReadResult for an error: every offset unknown (ReplicaManager.readFromLog).
        assert (partition.high_watermark, partition.last_stable_offset, partition.log_start_offset) == (-1, -1, -1)


def test_aborted_transactions_follow_the_isolation_level(raw):
    """Issue 10 item 15 (neighbour): Kafka sends null aborted_transactions to
    read_uncommitted fetches and a list to read_committed ones, with or without records."""
    client = raw()
    create(client, "iso")
    produce(client, "iso", batch(b"a"))
    for offset in (0, 1):
        assert _fetch(client, 12, "iso", offset, isolation_level=0).aborted_transactions is None
        assert _fetch(client, 12, "iso", offset, isolation_level=1).aborted_transactions == []


class _CountingHandler(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record.getMessage())


def _consumer(broker, handler, reset="earliest"):
    logger = logging.getLogger(f"librdkafka-{uuid.uuid4()}")
    logger.propagate = False
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    return ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g-reset",
                        "enable.auto.commit": False, "auto.offset.reset": reset,
                        "topic.metadata.refresh.interval.ms": 1000, "fetch.error.backoff.ms": 100},
                       logger=logger)


def _consume_values(consumer, want, seconds=15, last=None):
    """Values consumed until ``want`` of them (or the value ``last``) or ``seconds``."""
    got = []
    deadline = time.monotonic() + seconds
    while len(got) < want and (last is None or last not in got) and time.monotonic() < deadline:
        for m in consumer.consume(want, timeout=0.5):
            if m.error() is None:
                got.append(m.value())
    return got


def _produce_all(broker, topic, values, config=None):
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0, **(config or {})})
    for v in values:
        producer.produce(topic, v, partition=0)
        producer.flush(10)  # one batch each, so segments can roll between them
    assert producer.flush(10) == 0


def test_confluent_consumer_resets_after_delete_records(broker):
    """Issue 10 item 15: a librdkafka consumer whose position was deleted (DeleteRecords)
    gets OFFSET_OUT_OF_RANGE, applies auto.offset.reset and goes on, with a bounded log."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic("dr", 1, 1)])["dr"].result(10)
    _produce_all(broker, "dr", [b"%d" % i for i in range(10)])
    (done,) = admin.delete_records([ck.TopicPartition("dr", 0, 6)]).values()
    assert done.result(10).low_watermark == 6
    handler = _CountingHandler()
    consumer = _consumer(broker, handler)
    try:
        consumer.assign([ck.TopicPartition("dr", 0, 2)])
        assert _consume_values(consumer, 4) == [b"6", b"7", b"8", b"9"]
    finally:
        consumer.close()
    assert len(handler.records) < 50, handler.records[:5]


def test_confluent_consumer_resets_after_retention():
    """Issue 10 item 15: segments deleted by retention.bytes move the log start past a
    consumer's position; librdkafka resets to the new start and reads what is left."""
    config = {"log.retention.check.interval.ms": 100}
    with MiniBroker(config=config) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic("ret", 1, 1, config={
            "segment.bytes": "100", "retention.bytes": "150"})])["ret"].result(10)
        _produce_all(broker, "ret", [b"x" * 60 + b"%d" % i for i in range(8)])
        probe = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "probe"})
        try:
            deadline = time.monotonic() + 10
            while probe.get_watermark_offsets(ck.TopicPartition("ret", 0), timeout=5)[0] == 0:
                assert time.monotonic() < deadline, "retention never ran"
                time.sleep(0.1)
        finally:
            probe.close()
        handler = _CountingHandler()
        consumer = _consumer(broker, handler)
        try:
            consumer.assign([ck.TopicPartition("ret", 0, 0)])
            low, high = consumer.get_watermark_offsets(ck.TopicPartition("ret", 0), timeout=5)
            assert 0 < low < high == 8
            got = _consume_values(consumer, high - low)
        finally:
            consumer.close()
        assert got == [b"x" * 60 + b"%d" % i for i in range(low, 8)]
        assert len(handler.records) < 50, handler.records[:5]


def test_confluent_consumer_of_a_deleted_topic_is_told_and_does_not_spin(broker):
    """Issue 10 item 15: a topic deleted under an assigned librdkafka consumer: the
    consumer does not refetch a garbled answer in a tight loop (its log stays small), and
    it reads the topic again once it is re-created."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic("gone", 1, 1)])["gone"].result(10)
    _produce_all(broker, "gone", [b"old"])
    handler = _CountingHandler()
    consumer = _consumer(broker, handler)
    try:
        consumer.assign([ck.TopicPartition("gone", 0, 0)])
        assert _consume_values(consumer, 1) == [b"old"]
        admin.delete_topics(["gone"])["gone"].result(10)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            consumer.consume(10, timeout=0.5)
        logged_while_gone = len(handler.records)
        admin.create_topics([NewTopic("gone", 1, 1)])["gone"].result(10)
        _produce_all(broker, "gone", [b"n0", b"n1", b"n2"])
        got = _consume_values(consumer, 3, seconds=10, last=b"n2")
    finally:
        consumer.close()
    assert logged_while_gone < 50, handler.records[:5]
    assert got and got[-1] == b"n2", got


def test_fetch_fills_partition_max_bytes_with_whole_batches(raw):
    """Issue 16 (librdkafka through minibroker): a response carries as many whole batches
    as ``partition_max_bytes`` holds, not fewer (each missing one costs the client a round
    trip), and never more than it allows past the first (KIP-74)."""
    client = raw()
    create(client, "fill")
    sizes = []
    for i in range(12):
        records = batch(*[b"%03d" % i + b"x" * 997] * 10)  # ten 1000-byte values: ~10 KB a batch
        sizes.append(len(records))
        produce(client, "fill", records)
    for count in (1, 3, 7, 12):
        limit = sum(sizes[:count]) + sizes[0] // 2  # room for ``count`` batches and half of the next
        response = client.request(ApiKey.FETCH, 12, fetch_request("fill", 0, partition_max_bytes=limit))
        records = response.responses[0].partitions[0].records
        assert len(records) == sum(sizes[:count]), (count, len(records))


def test_confluent_consumer_needs_few_fetch_round_trips(broker):
    """Issue 16 (librdkafka through minibroker): a librdkafka consumer with its defaults
    (max.partition.fetch.bytes 1 MiB) reads ~3 MB in about one Fetch per MiB, counted by
    librdkafka itself (its statistics' per-broker request counts): every response carries
    what it asked for."""
    import json

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic("trips", 1, 1)])["trips"].result(10)
    n, batch_size = 30_000, 64 * 1024
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20,
                            "batch.size": batch_size, "queue.buffering.max.messages": n})
    for _ in range(n):
        producer.produce("trips", b"x" * 100, partition=0)
    assert producer.flush(20) == 0
    stats = []
    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "trips",
                            "enable.auto.commit": False, "statistics.interval.ms": 100,
                            "stats_cb": stats.append})
    try:
        consumer.assign([ck.TopicPartition("trips", 0, ck.OFFSET_BEGINNING)])
        got = received = 0
        deadline = time.monotonic() + 20
        while got < n and time.monotonic() < deadline:
            got += sum(1 for m in consumer.consume(10_000, timeout=1) if m.error() is None)
        assert got == n
        seen = len(stats)
        while len(stats) == seen and time.monotonic() < deadline:  # a snapshot from after the last record
            consumer.poll(0.05)
        brokers = json.loads(stats[-1])["brokers"].values()
        fetches = sum(b["req"].get("Fetch", 0) for b in brokers)
        received = sum(b["rxbytes"] for b in brokers)
    finally:
        consumer.close()
    # Whole batches of <= 64 KiB fill each 1 MiB answer to within one batch; one or two
    # more requests wait at the end of the log (fetch.wait.max.ms).
    most = -(-received // ((1 << 20) - batch_size)) + 3
    assert 0 < fetches <= most, (fetches, most, received)
