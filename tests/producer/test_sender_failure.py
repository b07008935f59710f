"""A bug in the producer's sender (an unexpected exception in its loop or in one of its
request tasks) must not leave records pending: issue 16, item 2 of the produce part.

Last session a merge defect made the metrics of a request raise in the request's task
(``ProducerMetrics.request_sent`` read the builder that sealing had let go): the task
died, its batches were never settled and every ``flush()`` waited for ever. These tests
inject such failures (a bug, so a monkeypatch is the only way to get one) against a real
broker and check what the sender's docstring promises: the records fail with a
:class:`~kproto.errors.KafkaError` naming the cause, ``flush()`` raises it, a send waiting
for ``buffer.memory`` stops waiting, later sends raise, and ``close()`` returns. Every wait
is bounded so that a regression fails rather than hangs.
"""

import asyncio
import threading

import pytest

from kproto import Producer
from kproto.errors import ClientClosedError, KafkaError, KafkaTimeoutError
from kproto.metrics import ProducerMetrics
from kproto.producer import AIOProducer
from kproto.producer.accumulator import ProducerBatch
from minibroker import MiniBroker

CAUSE = "injected sender bug"


def _raise(*args, **kwargs):
    raise RuntimeError(CAUSE)


def test_a_bug_in_a_request_task_fails_its_records_and_flush_raises_instead_of_hanging(monkeypatch):
    """Issue 16, item 2: the request task dies (here its metrics raise, as in the merge
    defect); flush, which hung for ever, raises the sender's failure naming the cause."""
    with MiniBroker() as broker:
        # linger: the 20 records wait in one batch until flush, so the sender (its own
        # thread) cannot fail on the first of them while the others are still being sent
        producer = Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=60_000)
        try:
            producer.partitions_for("bug")
            monkeypatch.setattr(ProducerMetrics, "request_sent", _raise)  # fault injection: a bug
            futures = [producer.send("bug", b"%d" % i, partition=0) for i in range(20)]
            with pytest.raises(KafkaError, match=f"sender failed: RuntimeError.*{CAUSE}") as failed:
                producer.flush(5)  # 5 s: the old code timed out here (KafkaTimeoutError)
            assert not isinstance(failed.value, KafkaTimeoutError)
            for future in futures:
                with pytest.raises(KafkaError, match=CAUSE):
                    future.result(5)
            with pytest.raises(ClientClosedError, match=CAUSE):
                producer.send("bug", b"late", partition=0)
        finally:
            closing = threading.Thread(target=producer.close, args=(5,))
            closing.start()
            closing.join(10)
            assert not closing.is_alive(), "close() hung after the sender failed"


def test_a_batch_whose_sealing_raises_fails_its_records_rather_than_leaving_them_pending(monkeypatch):
    """Issue 16, item 2: a batch taken to be sent whose sealing raises was in no queue and
    no request: its records stayed pending for ever. They fail with the cause now."""

    async def main():
        async with AIOProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0) as producer:
            await producer.partitions_for("seal")
            monkeypatch.setattr(ProducerBatch, "seal", _raise)  # fault injection: a bug
            futures = [producer.send("seal", b"%d" % i, partition=0) for i in range(5)]
            for future in futures:
                with pytest.raises(KafkaError, match=CAUSE):
                    await asyncio.wait_for(future, 5)  # the old code: TimeoutError
            with pytest.raises(KafkaError, match=CAUSE):
                await asyncio.wait_for(producer.flush(), 5)

    with MiniBroker() as broker:
        asyncio.run(asyncio.wait_for(main(), 30))


def test_a_send_waiting_for_buffer_memory_stops_waiting_when_the_sender_fails(monkeypatch):
    """Issue 16, item 2: a sync send blocked on a full ``buffer.memory`` (for up to a
    minute of ``max.block.ms``) raises the sender's failure once it fails, not a
    timeout a minute later."""
    with MiniBroker() as broker:
        producer = Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=60000, batch_size=1000,
                            buffer_memory=4000, max_block_ms=60000)
        outcome = []
        try:
            producer.partitions_for("memory")
            monkeypatch.setattr(ProducerMetrics, "request_sent", _raise)  # fault injection: a bug

            def fill():
                try:
                    for _ in range(100):  # 40 KB of records into 4 KB: blocks once memory is full
                        producer.send("memory", b"v" * 400, partition=0)
                except BaseException as exc:
                    outcome.append(exc)

            sending = threading.Thread(target=fill)
            sending.start()
            sending.join(10)
            assert not sending.is_alive(), "a send waiting for buffer.memory hung after the sender failed"
            assert outcome and isinstance(outcome[0], KafkaError) and CAUSE in str(outcome[0])
        finally:
            closing = threading.Thread(target=producer.close, args=(5,))
            closing.start()
            closing.join(10)
            assert not closing.is_alive(), "close() hung after the sender failed"
