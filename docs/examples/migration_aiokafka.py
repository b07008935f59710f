"""aiokafka's calls and kproto's, row by row (docs/migration/aiokafka.rst).

Each block is one row of the table, run against minibroker:
``python docs/examples/migration_aiokafka.py``.
"""

import asyncio

from kproto.aio import AIOConsumer, AIOProducer
from kproto.structs import TopicPartition
from minibroker import MiniBroker


async def main(servers: str) -> None:
    # Row: AIOKafkaProducer(...); await start(); ...; await stop()  (the same here)
    producer = AIOProducer(bootstrap_servers=servers)
    await producer.start()
    try:
        # Row: await send_and_wait(t, value, key=...)  (the same here)
        metadata = await producer.send_and_wait("clicks", b"c1", key=b"u1")
        assert metadata.offset == 0
        # Row: fut = await send(...); md = await fut -> md = await send(...)  (one await)
        metadata = await producer.send("clicks", b"c2", key=b"u1")
        assert metadata.offset == 1
    finally:
        await producer.stop()  # or close(), or 'async with AIOProducer(...)'

    # Row: AIOKafkaConsumer("t", group_id="g", ...); await start()  (the same here)
    consumer = AIOConsumer("clicks", bootstrap_servers=servers, group_id="stats", auto_offset_reset="earliest")
    await consumer.start()
    try:
        # Row: await getone() -> async for record in consumer (or poll(max_records=1))
        async for record in consumer:
            assert record.value == b"c1"
            break
        # Row: await getmany(timeout_ms=1000) -> {tp: [records]} / kproto: poll(timeout_ms=1000), a list
        records = await consumer.poll(timeout_ms=1000)
        assert [r.value for r in records] == [b"c2"]
        # Row: await commit(); await committed(tp) -> committed([tp]) gives {tp: OffsetAndMetadata}
        await consumer.commit()
        tp = TopicPartition("clicks", 0)
        committed = (await consumer.committed([tp]))[tp]  # None where nothing is committed
        assert committed is not None and committed.offset == 2
    finally:
        await consumer.stop()
    print("aiokafka rows: ok")


with MiniBroker(config={"num.partitions": 1}) as broker:
    asyncio.run(main(broker.bootstrap_servers))
