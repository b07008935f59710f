"""The next Fetch goes out before poll decodes (issue 16, poll_arrow's fetch path): when a
response arrives, its broker's next Fetch is written in the same turn of the loop, so the
broker serves it while the application decodes; still one Fetch in flight per broker; and
not while the responses held reach half of fetch.max.bytes (memory)."""

import asyncio

from kproto.aio import AIOConsumer
from kproto.structs import TopicPartition
from tests.consumer.conftest import DEADLINE
from tests.consumer.test_consumer import create


def fill(broker, producer, topic):
    """300 records of 100 B in batches of 10 (about 1.3 kB each), partition 0."""
    create(broker, topic)
    for i in range(300):
        producer.produce(topic, b"%099d" % i, partition=0)
        if i % 10 == 9:
            producer.flush(DEADLINE)
    assert producer.flush(DEADLINE) == 0
    return TopicPartition(topic, 0)


def polls(broker, tp, **config):
    """Each poll_arrow's (Fetch requests in flight to the leader when it returned, its offsets)."""
    async def main():
        async with AIOConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                               max_partition_fetch_bytes=4000, fetch_max_wait_ms=100, **config) as c:
            c.assign([tp])
            out, got = [], 0
            async with asyncio.timeout(DEADLINE):
                while got < 300:
                    batch = await c.poll_arrow()  # no timeout: poll wakes the moment rows arrive
                    connection = c._cluster._connections[c._cluster.leader(tp.topic, tp.partition)]
                    out.append((connection.in_flight, batch.column("offset").to_pylist()))
                    got += batch.num_rows
            return out

    return asyncio.run(main())


def test_the_next_fetch_is_on_the_wire_when_poll_returns_what_arrived(broker, producer):
    """issue 16 (poll_arrow 2): the fetcher planned the next Fetch only after poll had
    decoded the response that arrived (poll's wake-up came first), so the broker idled
    while the client decoded. Now, when poll returns the first response's rows, the next
    Fetch is already in flight, and only one: each response's rows come in order."""
    seen = polls(broker, fill(broker, producer, "fetch-ahead"))
    assert seen[0][0] == 1  # the second Fetch was written before the first's rows were returned
    assert all(in_flight <= 1 for in_flight, _ in seen)  # one Fetch in flight per broker
    assert [o for _, offsets in seen for o in offsets] == list(range(300))


def test_with_large_responses_held_poll_decodes_before_the_next_fetch(broker, producer):
    """issue 16 (poll_arrow 2, memory): sending the next Fetch before poll decoded let a
    response arrive on top of poll_arrow's decoding of everything buffered (bench/memory.py:
    1.3-1.5x its bound, from 0.55x). With the responses held at half of fetch.max.bytes or
    more, poll decodes first, as before: no Fetch is in flight when it returns."""
    seen = polls(broker, fill(broker, producer, "fetch-ahead-large"), fetch_max_bytes=6000)
    assert seen[0][0] == 0
    assert [o for _, offsets in seen for o in offsets] == list(range(300))
