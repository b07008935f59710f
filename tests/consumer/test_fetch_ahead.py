"""The next Fetch goes out before poll decodes (issue 16, poll_arrow's fetch path): when a
response arrives, its broker's next Fetch is written in the same turn of the loop, so the
broker serves it while the application decodes; still one Fetch in flight per broker."""

import asyncio

from kproto.aio import AIOConsumer
from kproto.structs import TopicPartition
from tests.consumer.conftest import DEADLINE
from tests.consumer.test_consumer import create


def test_the_next_fetch_is_on_the_wire_when_poll_returns_what_arrived(broker, producer):
    """issue 16 (poll_arrow 2): the fetcher planned the next Fetch only after poll had
    decoded the response that arrived (poll's wake-up came first), so the broker idled
    while the client decoded. Now, when poll returns the first response's rows, the next
    Fetch is already in flight, and only one: each response's rows come in order."""
    topic = "fetch-ahead"
    create(broker, topic)
    for i in range(300):
        producer.produce(topic, b"%099d" % i, partition=0)
        if i % 10 == 9:
            producer.flush(DEADLINE)  # batches of 10 records (about 1.3 kB each)
    assert producer.flush(DEADLINE) == 0
    tp = TopicPartition(topic, 0)

    async def main():
        async with AIOConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                               max_partition_fetch_bytes=4000, fetch_max_wait_ms=100) as c:
            c.assign([tp])
            polls = []  # (Fetch requests in flight to the leader when poll returned, offsets returned)
            got = 0
            async with asyncio.timeout(DEADLINE):
                while got < 300:
                    batch = await c.poll_arrow()  # no timeout: poll wakes the moment rows arrive
                    connection = c._cluster._connections[c._cluster.leader(topic, 0)]
                    polls.append((connection.in_flight, batch.column("offset").to_pylist()))
                    got += batch.num_rows
            return polls

    polls = asyncio.run(main())
    assert polls[0][0] == 1  # the second Fetch was written before the first's rows were returned
    assert all(in_flight <= 1 for in_flight, _ in polls)  # one Fetch in flight per broker
    assert [o for _, offsets in polls for o in offsets] == list(range(300))
