"""An idempotent kproto producer through a leader failover on a MiniCluster (issue 13
step 2, item 4.4): acks=all, several partitions, the leader of one partition killed
while records are in flight. Every acknowledged record is in the topic exactly once and
in the order sent, read back by a consumer; for the sync and the asyncio faces."""

import asyncio
import time

from kproto import Consumer, Producer
from kproto.aio import AIOProducer
from kproto.structs import TopicPartition

TOPIC = "t"
PARTITIONS = 3
N = 300


def _cluster_with_topic(cluster):
    cluster.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3, configs={"min.insync.replicas": "2"})
    for p in range(PARTITIONS):
        cluster.wait_for_isr(TOPIC, p, 3)
    return cluster.leader_of(TOPIC, 0)


def _config(cluster):
    return {"bootstrap_servers": cluster.bootstrap_servers, "acks": "all", "enable_idempotence": True,
            "linger_ms": 1, "retry_backoff_ms": 50, "batch_size": 512}


def _read_back(cluster):
    """Every record of the topic, ``{partition: [value, ...]}`` in log order."""
    got: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
    with Consumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False) as consumer:
        tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        consumer.seek_to_beginning()
        ends = consumer.end_offsets(tps)
        deadline = time.monotonic() + 30
        while any(consumer.position(tp) < ends[tp] for tp in tps) and time.monotonic() < deadline:
            for r in consumer.poll(0.5):
                got[r.partition].append(int(r.value))
    return got


def _check(cluster, acked, killed):
    assert cluster.wait_for_leader(TOPIC, 0, not_in=(killed,)) != killed
    assert len(acked) == N, f"only {len(acked)} of {N} acknowledged"
    got = _read_back(cluster)
    for p, values in got.items():
        assert len(values) == len(set(values)), f"partition {p}: a record was written twice"
        assert values == sorted(values), f"partition {p}: out of order"
        assert set(values) == {i for i in acked if i % PARTITIONS == p}


def test_the_sync_producer_keeps_every_acknowledged_record_once_and_in_order(cluster3):
    leader = _cluster_with_topic(cluster3)
    acked = []
    with Producer(**_config(cluster3)) as producer:
        futures = []
        for i in range(N):
            if i == N // 3:
                cluster3.kill(leader, wait=False)  # mid-stream: batches are in flight to it
            futures.append((i, producer.send(TOPIC, b"%d" % i, partition=i % PARTITIONS)))
            if i % 20 == 0:
                time.sleep(0.01)  # spread the sends over the failover
        producer.flush(30)
        for i, f in futures:
            f.result(30)
            acked.append(i)
    _check(cluster3, acked, leader)


def test_the_asyncio_producer_keeps_every_acknowledged_record_once_and_in_order(cluster3):
    leader = _cluster_with_topic(cluster3)

    async def run():
        acked = []
        async with AIOProducer(**_config(cluster3)) as producer:
            futures = []
            for i in range(N):
                if i == N // 3:
                    await asyncio.to_thread(cluster3.kill, leader, wait=False)  # the cluster runs on its own loop
                futures.append((i, producer.send(TOPIC, b"%d" % i, partition=i % PARTITIONS)))
                if i % 20 == 0:
                    await asyncio.sleep(0.01)
            await producer.flush(30)
            for i, f in futures:
                await asyncio.wait_for(f, 30)
                acked.append(i)
        return acked

    _check(cluster3, asyncio.run(run()), leader)


def test_a_produce_answer_naming_the_new_leader_is_taken_without_a_metadata_refresh(cluster3):
    """KIP-951 (Produce v10+): the old leader, back as a follower, answers the producer's
    batch with NOT_LEADER_OR_FOLLOWER and the new leader in current_leader; the producer
    sends there at once, asking no Metadata."""
    cluster3.create_topic(TOPIC, partitions=1, replication_factor=3)
    cluster3.wait_for_isr(TOPIC, 0, 3)
    old = cluster3.leader_of(TOPIC, 0)
    with Producer(**_config(cluster3)) as producer:
        producer.send(TOPIC, b"0", partition=0).result(30)
        cluster = producer._core._cluster
        cluster3.kill(old)
        new = cluster3.wait_for_leader(TOPIC, 0, not_in=(old,))
        cluster3.restart(old)
        cluster3.wait_for_isr(TOPIC, 0, 3)
        refreshes = []
        fetch_metadata = cluster._fetch_metadata

        async def counted(names):
            refreshes.append(names)
            await fetch_metadata(names)

        cluster._fetch_metadata = counted
        assert cluster.leader(TOPIC, 0) == old  # still the old view
        assert producer.send(TOPIC, b"1", partition=0).result(30).offset == 1
        assert cluster.leader(TOPIC, 0) == new and refreshes == []
