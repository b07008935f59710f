"""Client quotas over the wire (issue 15, client quotas, items 2, 4 and 6): real clients held
to their byte rates, the answers that carry ``throttle_time_ms`` and go out at once, the
channel muted until the throttle ends (KIP-219), the request quota (KIP-124), quotas kept
across a restart.

Rates are measured after the first second: a client's first requests are measured over
``quota.window.num - 1`` empty windows (Kafka's ``Rate``), which lets it burst that many
windows' worth before the first throttle. These tests set ``quota.window.num`` 2 so that
the burst is one second's worth and the steady rate shows within a few seconds (Kafka's
default, 11, would need ten). Bounds are generous: 0.4x to 1.5x the quota for a throttled
client, above 3x for one without a quota.
"""

import logging
import time

import pytest

from kproto import Consumer, Producer
from kproto.protocol import ApiKey, encode_request
from kproto.protocol.messages import (
    AlterClientQuotasRequest,
    DescribeClientQuotasRequest,
    FetchRequest,
    MetadataRequest,
    ProduceRequest,
)
from kproto.records import BatchBuilder
from kproto.structs import TopicPartition
from minibroker import MiniBroker
from tests.support.raw_client import RawClient

QUOTA = 200_000  # bytes/s
CONFIG = {"quota.window.num": 2}
VALUE = b"x" * 1000


@pytest.fixture
def broker():
    with MiniBroker(config=CONFIG) as b:
        yield b


def set_quota(port, entity, key, value):
    client = RawClient(port)
    try:
        answer = client.request(ApiKey.ALTER_CLIENT_QUOTAS, 1, AlterClientQuotasRequest(entries=[
            AlterClientQuotasRequest.EntryData(
                entity=[AlterClientQuotasRequest.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                ops=[AlterClientQuotasRequest.OpData(key=key, value=value, remove=value is None)])],
            validate_only=False))
    finally:
        client.close()
    assert answer.entries[0].error_code == 0, answer


def steady_rate(sent_bytes, duration=4.0, start=1.0):
    """Bytes per second ``sent_bytes()`` grows by from ``start`` s to ``duration`` s."""
    t0 = time.monotonic()
    time.sleep(start)
    first = sent_bytes()
    time.sleep(duration - start)
    return (sent_bytes() - first) / (time.monotonic() - t0 - start)


class Acked:
    def __init__(self):
        self.bytes = 0

    def __call__(self, error, metadata):
        if error is None:
            self.bytes += len(VALUE)


def produce_rate(settings, topic, duration):
    """Acknowledged bytes per second of a kproto producer (``settings``) sending to
    ``topic`` as fast as it can."""
    import threading

    acked, stop = Acked(), threading.Event()
    with Producer(settings, buffer_memory=65536, linger_ms=5) as producer:
        def pump():
            while not stop.is_set():
                producer.send(topic, VALUE, on_delivery=acked)
        thread = threading.Thread(target=pump)
        thread.start()
        try:
            rate = steady_rate(lambda: acked.bytes, duration)
        finally:
            stop.set()
            thread.join()
    return rate


def kproto_produce_rate(bootstrap, client_id, duration):
    return produce_rate({"bootstrap.servers": bootstrap, "client.id": client_id}, f"t-{client_id}", duration)


def test_kproto_producer_is_held_to_its_byte_rate_and_others_are_not(broker, caplog):
    """Issue 15, client quotas item 6: a producer_byte_rate quota on a client id throttles
    that client's producer to it, and kproto's producer sees throttle_time_ms; another
    client id, without a quota, is not throttled."""
    set_quota(broker.port, [("client-id", "slow")], "producer_byte_rate", QUOTA)
    with caplog.at_level(logging.INFO, logger="kproto.connection"):
        slow = kproto_produce_rate(broker.bootstrap_servers, "slow", 4.0)
    assert 0.4 * QUOTA < slow < 1.5 * QUOTA, slow
    assert any("throttled for" in r.getMessage() and "Produce" in r.getMessage() for r in caplog.records)
    fast = kproto_produce_rate(broker.bootstrap_servers, "fast", 1.5)
    assert fast > 3 * QUOTA, fast


def test_a_user_default_quota_holds_unauthenticated_clients(broker):
    """Issue 15, client quotas item 2: without authentication the principal is
    User:ANONYMOUS, which the user default quota (/users/<default>) matches (KIP-55)."""
    set_quota(broker.port, [("user", None)], "producer_byte_rate", QUOTA)
    rate = kproto_produce_rate(broker.bootstrap_servers, "anyone", 4.0)
    assert 0.4 * QUOTA < rate < 1.5 * QUOTA, rate


def test_confluent_kafka_producer_is_held_to_its_byte_rate(broker):
    """Issue 15, client quotas item 6: librdkafka honours KIP-219 too (the oracle)."""
    ck = pytest.importorskip("confluent_kafka")
    set_quota(broker.port, [("client-id", "rdkafka")], "producer_byte_rate", QUOTA)
    acked = Acked()
    throttles = []
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "client.id": "rdkafka",
                            "linger.ms": 5, "queue.buffering.max.kbytes": 64,
                            "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    t0 = time.monotonic()
    marks = {}
    while (now := time.monotonic() - t0) < 4.0:
        try:
            producer.produce("t-rdkafka", VALUE, on_delivery=acked)
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
        if now >= 1.0 and not marks:
            marks[1.0] = (acked.bytes, now)
    producer.poll(0)
    first, at = marks[1.0]
    rate = (acked.bytes - first) / (time.monotonic() - t0 - at)
    producer.purge()
    producer.flush(5)
    assert 0.4 * QUOTA < rate < 1.5 * QUOTA, rate
    assert throttles and max(throttles) > 0


def test_consumer_is_held_to_its_consumer_byte_rate(broker, caplog):
    """Issue 15, client quotas item 6: a consumer_byte_rate quota throttles a consumer's
    fetches to it, and kproto's consumer sees throttle_time_ms; the same records are read
    by an unthrottled client far faster."""
    topic = "to-read"
    with Producer(bootstrap_servers=broker.bootstrap_servers, client_id="filler", linger_ms=5) as producer:
        for _ in range(1500):
            producer.send(topic, VALUE)
        producer.flush()
    set_quota(broker.port, [("client-id", "reader")], "consumer_byte_rate", QUOTA)

    def read_rate(client_id, duration):
        with Consumer(bootstrap_servers=broker.bootstrap_servers, client_id=client_id, fetch_max_wait_ms=50,
                      max_partition_fetch_bytes=16384) as consumer:
            consumer.assign([TopicPartition(topic, 0)])
            consumer.seek(TopicPartition(topic, 0), 0)
            got, t0, first = 0, time.monotonic(), None
            while (now := time.monotonic() - t0) < duration and got < 1500 * len(VALUE):
                got += sum(len(r.value) for r in consumer.poll(0.1))
                if first is None and now >= 1.0:
                    first = (got, now)
            return (got - first[0]) / (time.monotonic() - t0 - first[1]) if first else got / (time.monotonic() - t0)

    with caplog.at_level(logging.INFO, logger="kproto.connection"):
        slow = read_rate("reader", 4.0)
    assert 0.4 * QUOTA < slow < 1.5 * QUOTA, slow
    assert any("throttled for" in r.getMessage() and "Fetch" in r.getMessage() for r in caplog.records)
    fast = read_rate("free-reader", 4.0)
    assert fast > 3 * QUOTA, fast


def _produce_request(values, acks=1, topic="t"):
    builder = BatchBuilder()
    for v in values:
        builder.append(1000, None, v)
    return ProduceRequest(acks=acks, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=builder.build())])])


def _metadata_latency(client, topic="t"):
    """How long a Metadata request takes to be answered (it creates ``topic``)."""
    start = time.monotonic()
    client.request(ApiKey.METADATA, 9, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]))
    return time.monotonic() - start


@pytest.mark.parametrize("acks", [1, 0])
def test_a_throttled_produce_is_answered_at_once_and_the_channel_muted(broker, acks):
    """Issue 15, client quotas item 2 (KIP-219): over its quota, a Produce is answered at
    once with throttle_time_ms, and nothing more is read on that connection until the
    throttle ends; an acks=0 Produce gets no answer but the same mute. Another connection
    of another client id is not held."""
    set_quota(broker.port, [("client-id", "raw-test")], "producer_byte_rate", 10_000)
    client = RawClient(broker.port)
    try:
        _metadata_latency(client)  # the topic is made; the client id's Rate is fresh
        # 30 KB over a 1 s window at 10 KB/s: (30000 - 10000) / 10000 * 1000 ms ~ 2 s
        request = _produce_request([b"y" * 1000] * 30, acks=acks)
        start = time.monotonic()
        if acks:
            answer = client.request(ApiKey.PRODUCE, 9, request)
            answered = time.monotonic() - start
            throttle_ms = answer.throttle_time_ms
            assert answer.responses[0].partition_responses[0].error_code == 0
            assert 1500 < throttle_ms < 2500, throttle_ms
            assert answered < 1.0  # sent at once, not held for the throttle
        else:
            client.send(ApiKey.PRODUCE, 9, request)
            throttle_ms = 2000
        other = RawClient(broker.port)  # another connection (same client id): another channel
        try:
            assert _metadata_latency(other) < 1.0
        finally:
            other.close()
        waited = _metadata_latency(client)
        assert waited > 0.5 * throttle_ms / 1000, (waited, throttle_ms)
    finally:
        client.close()


def test_a_throttled_fetch_is_answered_empty(broker):
    """Issue 15, client quotas item 2: a consumer's Fetch over its consumer_byte_rate is
    answered empty with throttle_time_ms (FullFetchContext.getThrottledResponse) and its
    bytes are not counted; the records come once the throttle has passed."""
    client = RawClient(broker.port)
    try:
        _metadata_latency(client, "f")
        for _ in range(3):
            client.request(ApiKey.PRODUCE, 9, _produce_request([b"z" * 1000] * 4, topic="f"))
        set_quota(broker.port, [("client-id", "raw-test")], "consumer_byte_rate", 5000)

        def fetch(offset):
            return client.request(ApiKey.FETCH, 12, FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[
                FetchRequest.FetchTopic(topic="f", partitions=[FetchRequest.FetchPartition(
                    partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])]))

        first = fetch(0)  # capped at 5000 B (a window's worth): one 4 KB batch
        assert first.throttle_time_ms == 0
        assert len(first.responses[0].partitions[0].records) < 5000
        second = fetch(4)  # 8 KB in a 1 s window: over
        assert second.throttle_time_ms > 0
        assert second.responses == [] and second.error_code == 0
        time.sleep(second.throttle_time_ms / 1000 + 1.1)
        third = fetch(4)
        assert third.throttle_time_ms == 0 and third.responses[0].partitions[0].records
    finally:
        client.close()


def test_request_percentage_throttles_by_handler_time(broker):
    """Issue 15, client quotas item 6 (KIP-124): request_percentage limits the time handlers
    spend on a client's requests; its throttle is at most quota.window.size.seconds; a
    client id without the quota is never throttled."""
    set_quota(broker.port, [("client-id", "raw-test")], "request_percentage", 0.5)
    busy, free = RawClient(broker.port), RawClient(broker.port)
    try:
        throttles = []
        deadline = time.monotonic() + 10
        while not throttles and time.monotonic() < deadline:
            answer = busy.request(ApiKey.METADATA, 9, MetadataRequest(topics=None))
            if answer.throttle_time_ms:
                throttles.append(answer.throttle_time_ms)
        assert throttles and 0 < throttles[0] <= 1000, throttles
        for i in range(200):  # the same requests from client id "other"

            free.sock.sendall(encode_request(ApiKey.METADATA, 9, i, "other", MetadataRequest(topics=None)))
            _, answer = free.receive(ApiKey.METADATA, 9)
            assert answer.throttle_time_ms == 0
    finally:
        busy.close()
        free.close()


def test_a_full_disk_refuses_the_change_and_keeps_the_quotas(small_disk):
    """Issue 15, client quotas item 4: AlterClientQuotas that cannot write its file answers
    KAFKA_STORAGE_ERROR for the valid entities (an invalid one keeps its own error) and
    changes nothing; with room again it succeeds."""
    with MiniBroker(data_dir=small_disk.path, config=CONFIG) as broker:
        set_quota(broker.port, [("client-id", "a")], "producer_byte_rate", 1000)
        small_disk.fill()
        client = RawClient(broker.port)
        try:
            E = AlterClientQuotasRequest
            answer = client.request(ApiKey.ALTER_CLIENT_QUOTAS, 1, E(validate_only=False, entries=[
                E.EntryData(entity=[E.EntityData(entity_type="client-id", entity_name="a")],
                            ops=[E.OpData(key="producer_byte_rate", value=2000, remove=False)]),
                E.EntryData(entity=[E.EntityData(entity_type="client-id", entity_name="b")],
                            ops=[E.OpData(key="producer_byte_rate", value=0.5, remove=False)])]))
            assert [e.error_code for e in answer.entries] == [56, 42]
            assert answer.entries[0].error_message.startswith("cannot record the client quotas")
            assert answer.entries[1].error_message == "producer_byte_rate cannot be a fractional value."
            described = client.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, DescribeClientQuotasRequest(
                components=[], strict=False))
            assert [[v.value for v in e.values] for e in described.entries] == [[1000.0]]
        finally:
            client.close()
        small_disk.free()
        set_quota(broker.port, [("client-id", "a")], "producer_byte_rate", 2000)


def test_a_fetch_over_the_request_quota_is_answered_empty_too(broker):
    """Issue 15, client quotas item 2: KafkaApis answers a consumer's Fetch empty when either
    quota throttles it, the request quota included (no consumer_byte_rate here)."""
    client = RawClient(broker.port)
    try:
        _metadata_latency(client, "rq")
        client.request(ApiKey.PRODUCE, 9, _produce_request([b"r" * 100], topic="rq"))
        set_quota(broker.port, [("client-id", "raw-test")], "request_percentage", 0.5)
        request = FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[FetchRequest.FetchTopic(
            topic="rq", partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
        deadline = time.monotonic() + 10
        while (answer := client.request(ApiKey.FETCH, 12, request)).throttle_time_ms == 0:
            assert answer.responses[0].partitions[0].records, "an unthrottled fetch has the record"
            assert time.monotonic() < deadline, "never throttled"
        assert answer.responses == [] and answer.error_code == 0
    finally:
        client.close()


def test_quotas_survive_a_restart(tmp_path):
    """Issue 15, client quotas item 4: quotas set on a broker with log.dirs are there after
    a restart, and enforced."""
    with MiniBroker(data_dir=tmp_path, config=CONFIG) as broker:
        set_quota(broker.port, [("user", "ANONYMOUS"), ("client-id", "raw-test")], "producer_byte_rate", 10_000)
        set_quota(broker.port, [("client-id", None)], "request_percentage", 50.5)
    with MiniBroker(data_dir=tmp_path, config=CONFIG) as broker:
        client = RawClient(broker.port)
        try:
            described = client.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, DescribeClientQuotasRequest(components=[],
                                                                                                     strict=False))
            got = {tuple((e.entity_type, e.entity_name) for e in entry.entity): {v.key: v.value for v in entry.values}
                   for entry in described.entries}
            assert got == {(("client-id", "raw-test"), ("user", "ANONYMOUS")): {"producer_byte_rate": 10_000.0},
                           (("client-id", None),): {"request_percentage": 50.5}}
            answer = client.request(ApiKey.PRODUCE, 9, _produce_request([b"y" * 1000] * 30))
            assert answer.throttle_time_ms > 0
        finally:
            client.close()
