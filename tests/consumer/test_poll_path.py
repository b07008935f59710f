"""The poll path made lean (issue 16, consume): records made by the codec as
ConsumerRecords, and the sync face's quick call for buffered records. What poll returns,
where positions stand and which thread runs the callbacks must not change."""

import asyncio
import threading
import time

import pytest

from kproto.aio import AIOConsumer
from kproto.consumer import Consumer, ConsumerRecord
from kproto.structs import TopicPartition
from tests.consumer.conftest import DEADLINE
from tests.consumer.test_consumer import create


@pytest.fixture
def filled(broker, producer):
    """A topic of 30 records in one partition, with headers on every third."""
    def fill(topic):
        create(broker, topic)
        for i in range(30):
            producer.produce(topic, b"v%d" % i, b"k%d" % i, partition=0,
                             headers=[("h", b"%d" % i)] if i % 3 == 0 else None, timestamp=1000 + i)
        assert producer.flush(DEADLINE) == 0
        return TopicPartition(topic, 0)
    return fill


def buffered(consumer, tp, at_least):
    """Wait until the consumer has ``at_least`` records of ``tp`` buffered (not yet returned)."""
    deadline = time.monotonic() + DEADLINE
    while True:
        chunks = consumer._portal.call(lambda: list(consumer._core._fetcher._buffered.get(tp, ())))
        if sum(c.end - c.position for c in chunks) >= at_least:
            return
        assert time.monotonic() < deadline, "nothing was fetched"
        time.sleep(0.02)


def test_sync_polls_of_buffered_records_return_them_in_order_with_positions(broker, filled):
    """issue 16 (consume): polls served from the buffer (the quick call) return the records
    as produced, ConsumerRecords with headers (a shared empty tuple when none), at most
    max.poll.records each, and move the position past what they returned."""
    tp = filled("lean-order")
    with Consumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest", max_poll_records=7,
                  fetch_max_wait_ms=100) as c:
        c.assign([tp])
        got = c.poll(DEADLINE)
        buffered(c, tp, 30 - len(got))
        while len(got) < 30:
            records = c.poll(DEADLINE)
            assert 0 < len(records) <= 7
            got += records
            assert c.position(tp) == got[-1].offset + 1
        assert all(type(r) is ConsumerRecord for r in got)
        assert [(r.offset, r.key, r.value, r.timestamp) for r in got] == \
            [(i, b"k%d" % i, b"v%d" % i, 1000 + i) for i in range(30)]
        assert [r.headers for r in got[:4]] == [(("h", b"0"),), (), (), (("h", b"3"),)]
        assert got[1].headers is got[2].headers  # one shared empty tuple
        assert {(r.topic, r.partition, r.timestamp_type) for r in got} == {("lean-order", 0, 0)}


def test_a_commit_callback_runs_in_the_polling_thread_while_records_are_buffered(broker, filled):
    """issue 16 (consume): with records buffered a poll takes the quick call, but a commit
    callback that is due makes it the full poll, which runs the callback in the thread
    that polls (as Java's), before the buffered records run out."""
    tp = filled("lean-commit")
    seen = []
    with Consumer(bootstrap_servers=broker.bootstrap_servers, group_id="lean-g", enable_auto_commit=False,
                  auto_offset_reset="earliest", max_poll_records=2, fetch_max_wait_ms=100) as c:
        c.assign([tp])
        got = c.poll(DEADLINE)
        buffered(c, tp, 30 - len(got))
        committing = c.position(tp)
        c.commit_async(callback=lambda offsets, error: seen.append((offsets, error, threading.current_thread())))
        deadline = time.monotonic() + DEADLINE
        while not seen:
            assert time.monotonic() < deadline, "the commit callback never ran"
            got += c.poll(DEADLINE)
            time.sleep(0.01)  # the commit's answer comes meanwhile
        assert len(got) < 30  # records were still buffered: polls took the quick call until then
        (offsets, error, thread), = seen
        assert error is None and offsets[tp].offset == committing and thread is threading.current_thread()


def test_iteration_over_buffered_batches_counts_what_was_yielded(broker, filled):
    """issue 16 (consume): ``for record in consumer`` takes buffered batches through the
    quick call and counts yielded records without per-record work: a commit and the
    position inside the loop stand right after the record in hand, and after leaving the
    loop mid-batch the next poll starts there."""
    tp = filled("lean-iter")
    with Consumer(bootstrap_servers=broker.bootstrap_servers, group_id="lean-iter-g", enable_auto_commit=False,
                  auto_offset_reset="earliest", max_poll_records=4, fetch_max_wait_ms=100) as c:
        c.assign([tp])
        got = c.poll(DEADLINE)
        buffered(c, tp, 30 - len(got))
        for record in c:
            if record.offset == 13:  # the second record of a batch of four
                assert c.position(tp) == 14
                c.commit()
                break
        assert c.committed([tp])[tp].offset == 14
        assert [r.offset for r in c.poll(DEADLINE)] == [14, 15, 16, 17]


def test_an_asyncio_poll_of_buffered_records_lets_the_loop_run(broker, filled):
    """issue 16 (consume): an AIOConsumer polled in a loop while records were buffered never
    gave the event loop a turn, so the fetcher could neither read the next response nor
    send the next fetch until the buffer ran dry (the consumer waited for each response in
    turn). Each poll now lets the loop run once, before it drains anything."""
    tp = filled("lean-aio")

    async def main():
        async with AIOConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                               max_poll_records=1, fetch_max_wait_ms=100) as c:
            c.assign([tp])
            got = await c.poll(DEADLINE)
            turns = 0

            async def other_work():
                nonlocal turns
                while True:
                    turns += 1
                    await asyncio.sleep(0)

            task = asyncio.get_running_loop().create_task(other_work())
            try:
                await asyncio.sleep(0.5)  # the whole topic is fetched meanwhile
                turns = 0
                for _ in range(10):
                    got += await c.poll(DEADLINE)
            finally:
                task.cancel()
            return got, turns

    got, turns = asyncio.run(main())
    assert [r.offset for r in got] == list(range(11))  # the buffered records, in order
    assert turns >= 5  # the other task ran while the consumer polled


def test_sync_poll_arrow_of_buffered_records_takes_the_quick_call(broker, filled):
    """issue 16 (consume2): the sync poll_arrow served buffered records through the full
    call (a task on the loop per poll), which a small max_records makes count per record;
    now it takes poll's quick call, with the same rows and positions."""
    tp = filled("lean-arrow")
    with Consumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                  fetch_max_wait_ms=100) as c:
        c.assign([tp])
        offsets = c.poll_arrow(DEADLINE, max_records=7).column("offset").to_pylist()
        buffered(c, tp, 30 - len(offsets))
        full_calls = []
        portal_call = c._portal.call

        def counting(fn, *args, **kwargs):
            full_calls.append(getattr(fn, "__name__", fn))
            return portal_call(fn, *args, **kwargs)

        c._portal.call = counting
        while len(offsets) < 30:
            batch = c.poll_arrow(DEADLINE, max_records=7)
            assert 0 < batch.num_rows <= 7
            offsets += batch.column("offset").to_pylist()
            assert portal_call(c._core.position, tp) == offsets[-1] + 1
        assert offsets == list(range(30))
        assert "poll_arrow" not in full_calls


@pytest.mark.parametrize("due", ["nothing", "commit-callback"])
def test_iterating_again_after_a_break_yields_the_rest_of_the_batch(broker, filled, due):
    """issue 16, review: ``for record in consumer``, break, ``for`` again: the records of the
    batch left behind come next, whether the next poll is the quick call or the full poll (a
    commit_async callback is due): only the quick call used to seek back."""
    tp = filled(f"lean-reiterate-{due}")
    with Consumer(bootstrap_servers=broker.bootstrap_servers, group_id=f"lean-reiterate-{due}",
                  enable_auto_commit=False, auto_offset_reset="earliest", max_poll_records=10,
                  fetch_max_wait_ms=100) as c:
        c.assign([tp])
        got = []
        for record in c:
            got.append(record.offset)
            if len(got) == 3:
                break
        if due == "commit-callback":
            done = threading.Event()
            c.commit_async(callback=lambda offsets, error: done.set())
            deadline = time.monotonic() + DEADLINE  # answered: its callback waits for a poll
            while not c._portal.call(lambda: bool(c._core._commit_results)):
                assert time.monotonic() < deadline, "the commit was not answered"
                time.sleep(0.02)
        for record in c:
            got.append(record.offset)
            if record.offset == 29:
                break
        assert got == list(range(30))
        if due == "commit-callback":
            assert done.is_set()


def test_async_iterating_again_after_a_break_yields_the_rest_of_the_batch(broker, filled):
    """issue 16, review: as above with ``async for`` (its polls are always the full poll)."""
    tp = filled("lean-reiterate-aio")

    async def main():
        async with AIOConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                               max_poll_records=10, fetch_max_wait_ms=100) as c:
            c.assign([tp])
            got = []
            async for record in c:
                got.append(record.offset)
                if len(got) == 3:
                    break
            async for record in c:
                got.append(record.offset)
                if record.offset == 29:
                    break
            return got
    assert asyncio.run(main()) == list(range(30))


@pytest.mark.parametrize("arrow", [False, True], ids=["poll", "poll_arrow"])
def test_ctrl_c_during_a_quick_poll_loses_no_record(broker, filled, arrow):
    """issue 16, review: Ctrl-C while a sync poll of buffered records waits for the busy
    loop: the poll (call_plain's fn) used to run afterwards, draining records nobody
    received, and the close on Ctrl-C committed past them. A fresh consumer of the group
    now gets every record the interrupted one did not return (poll and poll_arrow alike)."""
    import os
    import signal

    def polled(consumer, max_records):
        if arrow:
            return consumer.poll_arrow(DEADLINE, max_records=max_records).column("offset").to_pylist()
        return [r.offset for r in consumer.poll(DEADLINE, max_records=max_records)]

    tp = filled(f"lean-ctrl-c-{arrow}")
    group = f"lean-ctrl-c-{arrow}"
    got = []
    c = Consumer(bootstrap_servers=broker.bootstrap_servers, group_id=group, auto_offset_reset="earliest",
                 max_poll_records=5, fetch_max_wait_ms=100)
    try:
        c.assign([tp])
        got += polled(c, 5)
        buffered(c, tp, 30 - len(got))
        c._portal._thread.loop.call_soon_threadsafe(time.sleep, 1.0)  # another client's slow callback
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            polled(c, 5)
        timer.join()
    finally:
        c.close()  # as `with Consumer(...)` does after Ctrl-C: auto-commits the positions
    with Consumer(bootstrap_servers=broker.bootstrap_servers, group_id=group, auto_offset_reset="earliest",
                  max_poll_records=100) as again:
        again.assign([tp])
        got += polled(again, 100)
    assert got == list(range(30))
