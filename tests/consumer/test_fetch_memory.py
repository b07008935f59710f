"""The fetcher's read-ahead is bounded in bytes (issue 16, "memory: consuming a 1 GB topic
keeps RSS under 2 x fetch.max.bytes + a constant"), against minibroker.

A buffered chunk is a view into its whole Fetch response, so what the fetcher holds is
the responses its chunks keep alive. With many partitions and an application that drains
slowly, reading ahead two chunks per partition kept one response per chunk alive: many
times ``fetch.max.bytes``. bench/memory.py measures the process's RSS; this test counts
the responses the fetcher holds.
"""

import asyncio
import os

import pytest

from kproto.admin import AdminClient, NewTopic
from kproto.aio import AIOConsumer
from kproto.structs import TopicPartition

ck = pytest.importorskip("confluent_kafka")

PARTITIONS = 8
FETCH_MAX_BYTES = 64 * 1024


@pytest.fixture(scope="module")
def topic(broker):
    """8 partitions of 400 KB each (4 KB values): many responses' worth each."""
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("fetch-memory", PARTITIONS)])
    # Batches of 4 records (16 KiB), so that a response holds several and a chunk stays
    # undecoded while one record at a time is taken.
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5, "batch.size": 16384})
    value = os.urandom(4000)
    for i in range(100 * PARTITIONS):
        producer.produce("fetch-memory", value, partition=i % PARTITIONS)
    assert producer.flush(15) == 0
    return "fetch-memory"


def held_responses(fetcher):
    """The Fetch responses (frames) that the fetcher's buffered chunks keep alive, by id."""
    frames = {}
    for chunks in fetcher._buffered.values():
        for chunk in chunks:
            for batch in chunk.batches:
                view = batch._buf
                frame = view.obj if isinstance(view, memoryview) else view
                frames[id(frame)] = len(frame)
    return frames


def test_a_slow_application_makes_the_fetcher_hold_at_most_two_fetch_max_bytes(broker, topic):
    """issue 16, memory: the application takes one record at a time and waits; the fetcher
    reads ahead meanwhile, but the responses its buffered chunks keep alive stay within
    2 x fetch.max.bytes, however many partitions it reads ahead for."""

    async def main():
        async with AIOConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                               fetch_max_bytes=FETCH_MAX_BYTES, max_partition_fetch_bytes=FETCH_MAX_BYTES,
                               fetch_max_wait_ms=10) as consumer:
            consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
            most, got = 0, 0
            for _ in range(20):
                got += len(await consumer.poll(5, max_records=1))
                await asyncio.sleep(0.05)  # the application at work: the fetcher reads ahead
                held = held_responses(consumer._fetcher)
                most = max(most, sum(held.values()))
            return most, got, len(consumer._fetcher._buffered)

    most, got, partitions_buffered = asyncio.run(main())
    assert got == 20
    assert partitions_buffered >= 1
    assert 0 < most <= 2 * FETCH_MAX_BYTES


@pytest.mark.parametrize("case, batching", [("small batches", {"batch.num.messages": 20}),
                                            ("one batch over fetch.max.bytes", {})])
def test_a_paused_partition_does_not_hold_back_the_others(broker, case, batching):
    """issue 16, memory bound (review): what a paused partition keeps buffered is not held
    against the bound, so the other partitions go on being fetched (as in Java); and a first
    batch larger than fetch.max.bytes (KIP-74), once decoded, lets fetching go on (the
    drain wakes a planner the bound held back). Before: partition 1 stopped at what was
    buffered when partition 0 was paused."""
    topic = "fetch-memory-pause-" + str(len(batching))
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, 2)])
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5, **batching})
    for i in range(4000):
        producer.produce(topic, b"x" * 200, partition=i % 2)
    assert producer.flush(15) == 0
    p0, p1 = TopicPartition(topic, 0), TopicPartition(topic, 1)

    async def run() -> dict[int, int]:
        got = {0: 0, 1: 0}
        async with AIOConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                               fetch_max_wait_ms=100, fetch_max_bytes=20000, max_partition_fetch_bytes=12000,
                               max_poll_records=10) as consumer:
            consumer.assign([p0, p1])
            for record in await consumer.poll(5):
                got[record.partition] += 1
            await asyncio.sleep(0.5)  # the fetcher reads ahead for both
            consumer.pause([p0])
            deadline = asyncio.get_running_loop().time() + 15
            while got[1] < 2000 and asyncio.get_running_loop().time() < deadline:
                for record in await consumer.poll(0.5):
                    got[record.partition] += 1
        return got

    got = asyncio.run(run())
    assert got[1] == 2000
