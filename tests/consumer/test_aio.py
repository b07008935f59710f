"""The asyncio face, :class:`kproto.aio.AIOConsumer`, against minibroker: the same calls as
the threads' face in test_consumer.py and test_group.py — positions, seeks,
pauses, offset lookups, commits (sync and async, with plain and async callbacks), headers
and deserializers — awaited on the caller's own loop, which it leaves without a task."""

import asyncio
import json

import pytest

from kproto.admin import AdminClient, NewTopic
from kproto.aio import AIOConsumer
from kproto.consumer import RecordDeserializationError
from kproto.errors import InvalidGroupIdError
from kproto.serialization import json_deserializer, string_deserializer
from kproto.structs import OffsetAndMetadata, TopicPartition

ck = pytest.importorskip("confluent_kafka")

DEADLINE = 15
FAST = {"fetch_max_wait_ms": 100, "auto_offset_reset": "earliest"}


@pytest.fixture(scope="module")
def minibroker_config():
    return {"group.min.session.timeout.ms": 1000}


def create(broker, topic, partitions=1):
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, partitions)])


def run(main):
    """``asyncio.run(main())``, then check that the consumer left no task behind."""
    async def checked():
        await main()
        assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
    asyncio.run(checked())


async def consume(consumer, count, timeout=DEADLINE):
    got, deadline = [], asyncio.get_running_loop().time() + timeout
    while len(got) < count and asyncio.get_running_loop().time() < deadline:
        got += await consumer.poll(0.5)
    return got


def test_positions_seeks_pauses_and_offset_lookups(broker, producer):
    create(broker, "aio-pos", 2)
    for partition in (0, 1):
        for i in range(50):
            producer.produce("aio-pos", b"%d" % i, partition=partition, timestamp=5000 + 10 * i)
    assert producer.flush(DEADLINE) == 0
    p0, p1 = TopicPartition("aio-pos", 0), TopicPartition("aio-pos", 1)

    async def main():
        async with AIOConsumer(bootstrap_servers=broker.bootstrap_servers, max_poll_records=7, **FAST) as consumer:
            consumer.assign([p0, p1])
            assert consumer.assignment() == {p0, p1}
            assert await consumer.position(p0) == 0
            assert await consumer.end_offsets([p0, p1]) == {p0: 50, p1: 50}
            assert await consumer.beginning_offsets([p0]) == {p0: 0}
            times = await consumer.offsets_for_times({p0: 5101, p1: 999_999})
            assert (times[p0].offset, times[p0].timestamp, times[p1]) == (11, 5110, None)
            batch = await consumer.poll(DEADLINE)
            assert 0 < len(batch) <= 7
            consumer.pause([p1])
            assert consumer.paused() == {p1}
            got = await consume(consumer, 50 - sum(r.partition == 0 for r in batch), timeout=3)
            assert {r.partition for r in got} <= {0} and await consumer.position(p0) == 50
            consumer.resume([p1])
            assert consumer.paused() == set()
            rest = await consume(consumer, 50 - sum(r.partition == 1 for r in batch))
            assert [r.offset for r in batch + rest if r.partition == 1] == list(range(50))
            consumer.seek(p1, 45)
            assert [r.offset for r in await consume(consumer, 5)] == [45, 46, 47, 48, 49]
            consumer.seek(p1, OffsetAndMetadata(48))
            assert await consumer.position(p1) == 48
            assert [r.offset for r in await consume(consumer, 2)] == [48, 49]
            consumer.seek_to_beginning([p0])
            assert (await consumer.poll(DEADLINE))[0].offset == 0
            consumer.seek_to_end()
            assert (await consumer.position(p0), await consumer.position(p1)) == (50, 50)
            assert await consumer.poll(0.2) == []
            with pytest.raises(ValueError, match="not assigned"):
                consumer.seek(TopicPartition("aio-pos", 7), 1)
    run(main)


def test_commits_sync_and_async_with_plain_and_async_callbacks(broker, producer):
    create(broker, "aio-commits", 2)
    for partition in (0, 1):
        for i in range(10):
            producer.produce("aio-commits", b"%d" % i, partition=partition)
    assert producer.flush(DEADLINE) == 0
    tp0, tp1 = TopicPartition("aio-commits", 0), TopicPartition("aio-commits", 1)
    results = []

    async def on_commit(offsets, error):
        await asyncio.sleep(0)
        results.append(("async", offsets, error))

    async def main():
        config = {"group_id": "aio-commits-g", "enable_auto_commit": False, "session_timeout_ms": 2000,
                  "heartbeat_interval_ms": 200, **FAST}
        async with AIOConsumer(bootstrap_servers=broker.bootstrap_servers, **config) as consumer:
            consumer.subscribe(["aio-commits"])
            assert len(await consume(consumer, 20)) == 20
            await consumer.commit({tp0: OffsetAndMetadata(4, "four")})
            assert await consumer.committed([tp0, tp1]) == {tp0: OffsetAndMetadata(4, "four"), tp1: None}
            consumer.commit_async(callback=lambda offsets, error: results.append(("plain", offsets, error)))
            consumer.commit_async({tp1: 7}, callback=on_commit)
            while len(results) < 2:  # callbacks run in a later poll
                await consumer.poll(0.05)
            assert [(kind, error) for kind, _, error in results] == [("plain", None), ("async", None)]
            assert {tp: o.offset for tp, o in results[0][1].items()} == {tp0: 10, tp1: 10}
            assert results[1][1] == {tp1: OffsetAndMetadata(7)}
            committed = await consumer.committed([tp0, tp1])
            assert (committed[tp0].offset, committed[tp1].offset) == (10, 7)
        async with AIOConsumer(bootstrap_servers=broker.bootstrap_servers, **config) as again:
            again.subscribe(["aio-commits"])
            assert [(r.partition, r.offset) for r in await consume(again, 3)] == [(1, 7), (1, 8), (1, 9)]
        async with AIOConsumer(bootstrap_servers=broker.bootstrap_servers) as no_group:
            with pytest.raises(InvalidGroupIdError):
                await no_group.commit({tp0: 1})
            with pytest.raises(InvalidGroupIdError):
                no_group.commit_async({tp0: 1})
    run(main)


def test_headers_and_deserializers_and_a_record_they_cannot_read(broker, producer):
    create(broker, "aio-deser")
    headers = [("trace", b"\x00\x01"), ("empty", b""), ("dup", b"1"), ("dup", b"2")]
    producer.produce("aio-deser", json.dumps({"n": 1}).encode(), "ключ".encode(), headers=headers)
    producer.produce("aio-deser", b"{not json", b"k")
    producer.produce("aio-deser", b"[2]", None)
    assert producer.flush(DEADLINE) == 0
    tp = TopicPartition("aio-deser", 0)

    async def main():
        async with AIOConsumer(bootstrap_servers=broker.bootstrap_servers, key_deserializer=string_deserializer(),
                               value_deserializer=json_deserializer(), **FAST) as consumer:
            consumer.assign([tp])
            (first,) = await consume(consumer, 1)
            assert (first.key, first.value, first.headers) == ("ключ", {"n": 1}, tuple(headers))
            with pytest.raises(RecordDeserializationError) as raised:
                await consume(consumer, 1)
            assert raised.value.offset == 1 and await consumer.position(tp) == 1
            consumer.seek(tp, 2)
            (last,) = await consume(consumer, 1)
            assert (last.key, last.value, last.headers) == (None, [2], ())
    run(main)


def test_the_metadata_task_ends_on_a_cancel_that_meets_a_wanted_refresh(broker):
    """Issue 16 (found measuring poll_arrow): ``close()`` hung forever when its cancel of the
    metadata task met a refresh being wanted in the same loop turn: Python 3.11's
    ``asyncio.wait_for`` dropped the cancel and the task ran on. kproto._loop.wait_for keeps it."""
    create(broker, "aio-meta-cancel")

    async def main():
        async with AIOConsumer(bootstrap_servers=broker.bootstrap_servers, **FAST) as consumer:
            consumer.assign([TopicPartition("aio-meta-cancel", 0)])
            await consumer.poll(0)
            task = next(t for t in consumer._tasks if t.get_name() == "kproto-metadata")
            await asyncio.sleep(0.2)  # in its wait for the next refresh
            consumer._metadata_wanted.set()
            task.cancel()
            await asyncio.wait({task}, timeout=5)
            assert task.cancelled()

    run(main)
