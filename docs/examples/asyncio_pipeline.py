"""The asyncio faces: a producer and a consumer group member in one event loop.
Run it: ``python docs/examples/asyncio_pipeline.py``."""

import asyncio

from kproto.aio import AIOConsumer, AIOProducer
from minibroker import MiniBroker


async def main(bootstrap: str) -> None:
    async with AIOProducer(bootstrap_servers=bootstrap, linger_ms=1) as producer:
        # send() queues at once and returns an awaitable; gather awaits them together.
        metadata = await asyncio.gather(*(producer.send("clicks", b"click-%d" % i) for i in range(10)))
        print("last offset", metadata[-1].offset)

    async with AIOConsumer(bootstrap_servers=bootstrap, group_id="clicks-reader",
                           auto_offset_reset="earliest") as consumer:
        consumer.subscribe(["clicks"])
        values: list[bytes] = []
        async for record in consumer:
            values.append(record.value)
            if len(values) == 10:
                break
        print("read", len(values), "clicks, the last", values[-1].decode())


# minibroker can run inside the same loop (await MiniBroker().start_async()); here it
# runs on its own thread, as it would for a test suite.
with MiniBroker() as broker:
    asyncio.run(main(broker.bootstrap_servers))
