"""kproto.aio.AIOProducer, the asyncio face, against minibroker: the sync face's behaviour
(tests/producer/test_producer.py) on a loop of the caller's — delivery callbacks, headers,
serializers, flush, and send waiting (not failing) for ``buffer.memory`` up to ``max.block.ms``."""

import asyncio
import threading
import time

import pytest

from kproto.aio import AIOProducer
from kproto.codec import read_batches
from kproto.errors import KafkaTimeoutError, TopicAuthorizationFailedError
from kproto.producer import RecordFuture, RecordMetadata
from kproto.protocol import ApiKey
from kproto.serialization import json_serializer, string_serializer
from tests.producer.test_faults import error_response, never_answer_produce
from tests.support.proxy import FORWARD, FaultProxy

EARLY = 0.05  # timers may fire up to a clock tick early


@pytest.fixture(scope="module")
def minibroker_config():
    return {"num.partitions": 2}


def stored(broker, topic, partition=0):
    log = broker._server.state.topics[topic].partitions[partition].log
    return [r for b in read_batches(log.read(0, 1 << 24)) for r in b.records()]


def run(coro):
    """Run ``coro`` on a fresh loop and check that it left no task behind."""
    async def checked():
        try:
            return await coro
        finally:
            assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
    return asyncio.run(checked())


def test_delivery_callbacks_headers_and_serializers(broker):
    delivered = []

    def on_delivery(error, metadata):
        delivered.append((error, metadata, threading.get_ident()))

    async def main():
        async with AIOProducer(bootstrap_servers=broker.bootstrap_servers, key_serializer=string_serializer(),
                               value_serializer=json_serializer()) as producer:
            await producer.partitions_for("aio-ser")  # metadata known: send appends at once, a future
            futures = [
                producer.send("aio-ser", {"n": 0}, "k0", partition=0, timestamp_ms=1_600_000_000_000,
                              headers=[("h", b"x"), ("empty", None)], on_delivery=on_delivery),
                producer.send("aio-ser", {"n": 1}, None, partition=0, headers={"one": b"1"}, on_delivery=on_delivery),
                producer.send("aio-ser", None, "tombstone", partition=0, on_delivery=on_delivery),
            ]
            await producer.flush()
            assert all(f.done() for f in futures)  # flush waited for every record
            return [await f for f in futures], threading.get_ident()

    metadata, loop_thread = run(main())
    assert [m.offset for m in metadata] == [0, 1, 2]
    assert metadata[0] == RecordMetadata("aio-ser", 0, 0, 1_600_000_000_000)
    assert [(e, m) for e, m, _ in delivered] == [(None, m) for m in metadata]
    assert {thread for _, _, thread in delivered} == {loop_thread}  # callbacks run on the caller's loop
    records = stored(broker, "aio-ser")
    assert [(r.key, r.value, r.headers) for r in records] == [
        (b"k0", b'{"n":0}', (("h", b"x"), ("empty", None))),
        (None, b'{"n":1}', (("one", b"1"),)),
        (b"tombstone", None, ()),
    ]
    assert records[0].timestamp == 1_600_000_000_000


def test_a_send_from_another_thread_than_the_loops_is_refused(broker):
    """Issue 16, asyncio send: an AIOProducer appends without a lock, which is safe because
    only its loop's thread may send; a send from another thread raises RuntimeError naming
    the thread-safe Producer (and appends nothing), while the loop's own sends go on."""
    async def main():
        async with AIOProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
            await producer.partitions_for("aio-thread")
            refused = []

            def elsewhere():
                try:
                    producer.send("aio-thread", b"from a thread", partition=0)
                except RuntimeError as exc:
                    refused.append(exc)

            await asyncio.to_thread(elsewhere)
            metadata = await producer.send("aio-thread", b"from the loop", partition=0)
            return refused, metadata

    refused, metadata = run(main())
    assert len(refused) == 1 and "thread-safe Producer" in str(refused[0])
    assert metadata.offset == 0  # the refused record was not appended
    assert [r.value for r in stored(broker, "aio-thread")] == [b"from the loop"]


def test_a_failed_record_reaches_its_callback_and_its_awaiter():
    def rule(api_key, version, request, n):
        return error_response(request, TopicAuthorizationFailedError.code) if api_key == ApiKey.PRODUCE else FORWARD

    delivered = []

    async def main(bootstrap):
        async with AIOProducer(bootstrap_servers=bootstrap) as producer:
            future = producer.send("aio-denied", b"x", partition=0,
                                   on_delivery=lambda error, metadata: delivered.append((error, metadata)))
            with pytest.raises(TopicAuthorizationFailedError):
                await future

    with FaultProxy(rule) as proxy:
        run(main(proxy.bootstrap_servers))
    ((error, metadata),) = delivered
    assert isinstance(error, TopicAuthorizationFailedError) and metadata is None


def test_flush_sends_lingering_records_at_once(broker):
    async def main():
        async with AIOProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=10_000) as producer:
            await producer.partitions_for("aio-flush")
            futures = [producer.send("aio-flush", b"%d" % i, partition=i % 2) for i in range(100)]
            started = time.monotonic()
            await producer.flush(5)
            assert time.monotonic() - started < 3  # not the 10 s of linger.ms
            return [f.result() for f in futures]

    metadata = run(main())
    for p in (0, 1):
        assert [m.offset for m in metadata if m.partition == p] == list(range(50))


def test_send_waits_for_buffer_memory_instead_of_failing(broker):
    async def main():
        async with AIOProducer(bootstrap_servers=broker.bootstrap_servers, buffer_memory=4096, linger_ms=0,
                               max_block_ms=5000) as producer:
            await producer.partitions_for("aio-memory")
            sent = [producer.send("aio-memory", b"%04d" % i * 250, partition=0) for i in range(30)]
            assert not all(isinstance(f, RecordFuture) for f in sent)  # some had to wait for memory
            return [await f for f in sent]

    metadata = run(main())
    assert [m.offset for m in metadata] == list(range(30))  # in the order they were sent
    assert [r.value for r in stored(broker, "aio-memory")] == [b"%04d" % i * 250 for i in range(30)]


def test_send_gives_up_after_max_block_ms_when_memory_stays_full():
    """The broker never answers: memory is never freed, the waiting record fails with
    KafkaTimeoutError after max.block.ms, and close(timeout) fails the rest."""
    async def main(bootstrap):
        producer = AIOProducer(bootstrap_servers=bootstrap, buffer_memory=4096, linger_ms=0, max_block_ms=400)
        try:
            await producer.start()
            await producer.partitions_for("aio-full")
            appended = []
            while (f := producer.send("aio-full", b"x" * 1000, partition=0)) is not None and isinstance(f, RecordFuture):
                appended.append(f)  # memory is checked before each append: 3 fit (issue 16: with their batch headers)
                assert len(appended) <= 4
            started = time.monotonic()
            with pytest.raises(KafkaTimeoutError, match="buffer.memory"):
                await f  # it waited for memory, up to max.block.ms
            assert 0.4 - EARLY <= time.monotonic() - started < 2.0
            started = time.monotonic()
            await producer.close(0.3)
            assert time.monotonic() - started < 1.5
        finally:
            await producer.close(0)
        assert len(appended) >= 3
        for f in appended:
            with pytest.raises(KafkaTimeoutError):
                f.result(0)

    with FaultProxy(never_answer_produce) as proxy:
        run(main(proxy.bootstrap_servers))


def test_flush_and_close_with_a_timeout_against_a_broker_that_never_answers():
    async def main(bootstrap):
        producer = AIOProducer(bootstrap_servers=bootstrap, linger_ms=0)
        try:
            await producer.start()
            await producer.partitions_for("aio-silent")
            futures = [producer.send("aio-silent", b"%d" % i, partition=0) for i in range(3)]
            started = time.monotonic()
            with pytest.raises(KafkaTimeoutError, match="flush"):
                await producer.flush(0.3)
            assert 0.3 - EARLY <= time.monotonic() - started < 1.5
            assert not any(f.done() for f in futures)
            started = time.monotonic()
            await producer.close(0.3)
            assert time.monotonic() - started < 1.5
        finally:
            await producer.close(0)
        for f in futures:
            with pytest.raises(KafkaTimeoutError):
                await f

    with FaultProxy(never_answer_produce) as proxy:
        run(main(proxy.bootstrap_servers))
