"""The classic replication demo with four real clients (issue 13, WP6 test 2).

RF=3, ``min.insync.replicas=2``, a producer with acks=all (idempotent for confluent-kafka,
aiokafka and kproto; one request in flight for kafka-python); the partition's leader is
killed mid-stream and the producer keeps going; once a new leader is elected, a consumer
reads from the beginning: every acknowledged record is there, in order, and the
idempotent producers wrote none twice.
"""

import asyncio
import time

import pytest

N = 200
TOPIC = "demo"


def _value(i):
    return b"%d" % i


def _check(acked, got, *, idempotent):
    """Every acknowledged record is read back, in the order sent."""
    assert len(acked) == N, f"only {len(acked)} of {N} acknowledged"
    assert set(acked) <= set(got), f"lost: {sorted(set(acked) - set(got))[:10]}"
    firsts = list(dict.fromkeys(got))  # first occurrences, in the order read
    assert firsts == sorted(firsts)
    if idempotent:
        assert len(got) == len(set(got)), "a record was written twice"


@pytest.fixture
def demo(cluster3):
    cluster3.create_topic(TOPIC, partitions=1, replication_factor=3, configs={"min.insync.replicas": "2"})
    cluster3.wait_for_isr(TOPIC, 0, 3)
    leader = cluster3.leader_of(TOPIC, 0)

    def kill_leader():
        cluster3.kill(leader, wait=False)  # mid-stream: records are in flight to it

    yield cluster3, kill_leader
    assert cluster3.wait_for_leader(TOPIC, 0, not_in=(leader,)) != leader


def test_confluent_kafka_keeps_every_acknowledged_record_across_a_leader_kill(demo):
    ck = pytest.importorskip("confluent_kafka")
    cluster, kill_leader = demo
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                            "enable.idempotence": True, "linger.ms": 1, "message.timeout.ms": 30000})
    acked = []

    def delivered(err, msg):
        if err is None:
            acked.append(int(msg.value()))
    for i in range(N):
        if i == N // 2:
            kill_leader()
        producer.produce(TOPIC, value=_value(i), partition=0, on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(30) == 0
    consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "ck-demo",
                            "enable.auto.commit": False})
    got = []
    try:
        consumer.assign([ck.TopicPartition(TOPIC, 0, ck.OFFSET_BEGINNING)])
        deadline = time.monotonic() + 30
        while len(set(got)) < N and time.monotonic() < deadline:
            for m in consumer.consume(N, timeout=1):
                if m.error() is None:
                    got.append(int(m.value()))
    finally:
        consumer.close()
    _check(acked, got, idempotent=True)


def test_kafka_python_keeps_every_acknowledged_record_across_a_leader_kill(demo):
    kafka = pytest.importorskip("kafka")
    cluster, kill_leader = demo
    producer = kafka.KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", retries=100,
                                   max_in_flight_requests_per_connection=1, retry_backoff_ms=50,
                                   request_timeout_ms=10000)
    futures = []
    try:
        for i in range(N):
            if i == N // 2:
                kill_leader()
            futures.append((i, producer.send(TOPIC, value=_value(i), partition=0)))
        producer.flush(30)
    finally:
        producer.close(10)
    acked = [i for i, f in futures if f.succeeded()]
    consumer = kafka.KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False,
                                   consumer_timeout_ms=3000)
    try:
        tp = kafka.TopicPartition(TOPIC, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got = [int(m.value) for m in consumer]
    finally:
        consumer.close()
    _check(acked, got, idempotent=False)


def test_aiokafka_keeps_every_acknowledged_record_across_a_leader_kill(demo):
    aiokafka = pytest.importorskip("aiokafka")
    cluster, kill_leader = demo

    async def run():
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all",
                                             enable_idempotence=True, request_timeout_ms=10000,
                                             retry_backoff_ms=50)
        await producer.start()
        acked = []
        try:
            for i in range(N):
                if i == N // 2:
                    await asyncio.to_thread(kill_leader)
                await producer.send_and_wait(TOPIC, value=_value(i), partition=0)
                acked.append(i)
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False)
        await consumer.start()
        got = []
        try:
            tp = aiokafka.TopicPartition(TOPIC, 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            deadline = time.monotonic() + 30
            while len(set(got)) < N and time.monotonic() < deadline:
                batches = await consumer.getmany(tp, timeout_ms=1000)
                got += [int(m.value) for m in batches.get(tp, [])]
        finally:
            await consumer.stop()
        return acked, got

    acked, got = asyncio.run(run())
    _check(acked, got, idempotent=True)


def test_kproto_keeps_every_acknowledged_record_across_a_leader_kill(demo):
    from kproto import Consumer, Producer
    from kproto.structs import TopicPartition
    cluster, kill_leader = demo
    acked = []
    with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all", enable_idempotence=True,
                  linger_ms=1, retry_backoff_ms=50) as producer:
        futures = []
        for i in range(N):
            if i == N // 2:
                kill_leader()
            futures.append((i, producer.send(TOPIC, _value(i), partition=0)))
        producer.flush(30)
        for i, f in futures:
            f.result(30)
            acked.append(i)
    got = []
    with Consumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False) as consumer:
        consumer.assign([TopicPartition(TOPIC, 0)])
        consumer.seek_to_beginning()
        deadline = time.monotonic() + 30
        while len(set(got)) < N and time.monotonic() < deadline:
            got += [int(r.value) for r in consumer.poll(1)]
    _check(acked, got, idempotent=True)
