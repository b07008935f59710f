"""Real clients by others against minibroker: confluent-kafka, kafka-python, aiokafka.

Each produces with every codec, keys, headers and null values, and reads back exactly
what it wrote. Consumers use manual assignment here; groups are in test_groups.py.
"""

import asyncio
import time

import pytest

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
N = 60


def expected(n=N):
    return [(i, b"k%d" % i, None if i % 7 == 0 else b"v%d" % i, [("h", b"%d" % i)]) for i in range(n)]


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_kafka_round_trip(broker, codec):
    ck = pytest.importorskip("confluent_kafka")
    topic = f"ck-{codec}"
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "compression.type": codec,
                            "enable.idempotence": True, "linger.ms": 5})
    delivered = []
    for _, key, value, headers in expected():
        producer.produce(topic, key=key, value=value, headers=headers,
                         on_delivery=lambda err, msg: delivered.append((err, msg.offset())))
    assert producer.flush(15) == 0
    assert [err for err, _ in delivered] == [None] * N
    assert sorted(offset for _, offset in delivered) == list(range(N))

    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "unused",
                            "enable.auto.commit": False})
    try:
        consumer.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
        got = []
        deadline = time.monotonic() + 15
        while len(got) < N and time.monotonic() < deadline:
            for m in consumer.consume(N, timeout=1):
                assert m.error() is None, m.error()
                got.append((m.offset(), m.key(), m.value(), m.headers()))
    finally:
        consumer.close()
    assert got == [(o, k, v, h) for o, k, v, h in expected()]


@pytest.mark.parametrize("codec", [c for c in CODECS if c != "none"] + [None])
def test_kafka_python_round_trip(broker, codec):
    kafka = pytest.importorskip("kafka")
    topic = f"kp-{codec}"
    producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, compression_type=codec)
    futures = [producer.send(topic, key=k, value=v, headers=h) for _, k, v, h in expected()]
    producer.flush(15)
    assert [f.get(5).offset for f in futures] == list(range(N))
    producer.close(5)

    consumer = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False,
                                   consumer_timeout_ms=3000)
    try:
        tp = kafka.TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got = [(m.offset, m.key, m.value, list(m.headers)) for m in consumer]
    finally:
        consumer.close()
    assert got == expected()


@pytest.mark.parametrize("codec", [c for c in CODECS if c != "none"] + [None])
def test_aiokafka_round_trip(broker, codec):
    aiokafka = pytest.importorskip("aiokafka")
    topic = f"aio-{codec}"

    async def run():
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, compression_type=codec,
                                             enable_idempotence=True)
        await producer.start()
        try:
            for _, k, v, h in expected():
                await producer.send(topic, key=k, value=v, headers=h)
            await producer.flush()
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False)
        await consumer.start()
        try:
            tp = aiokafka.TopicPartition(topic, 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            got = []
            while len(got) < N:
                batch = await consumer.getmany(timeout_ms=3000)
                if not batch:
                    break
                for messages in batch.values():
                    got += [(m.offset, m.key, m.value, list(m.headers)) for m in messages]
            return got
        finally:
            await consumer.stop()

    assert asyncio.run(run()) == expected()


def test_admin_create_describe_delete_topics(broker):
    kafka = pytest.importorskip("kafka")
    from kafka.admin import NewTopic
    from kafka.errors import InvalidReplicationFactorError, TopicAlreadyExistsError

    admin = kafka.KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        admin.create_topics([NewTopic("orders", 3, 1)])
        assert "orders" in admin.list_topics()
        (described,) = admin.describe_topics(["orders"])
        assert sorted(p["partition_index"] for p in described["partitions"]) == [0, 1, 2]
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic("orders", 1, 1)])
        with pytest.raises(InvalidReplicationFactorError):
            admin.create_topics([NewTopic("replicated", 1, 3)])
        admin.delete_topics(["orders"])
        assert "orders" not in admin.list_topics()
    finally:
        admin.close()


def test_list_offsets_by_timestamp(broker):
    kafka = pytest.importorskip("kafka")
    producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0)
    for i, ts in enumerate([1_000, 2_000, 3_000, 4_000]):
        producer.send("timed", value=b"%d" % i, timestamp_ms=ts).get(5)  # one batch each
    producer.close(5)
    consumer = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
    try:
        tp = kafka.TopicPartition("timed", 0)
        found = consumer.offsets_for_times({tp: 2_500})[tp]
        assert (found.offset, found.timestamp) == (2, 3_000)
        assert consumer.offsets_for_times({tp: 9_999})[tp] is None
        assert consumer.beginning_offsets([tp]) == {tp: 0}
        assert consumer.end_offsets([tp]) == {tp: 4}
    finally:
        consumer.close()
