"""The sync clients' one sync-over-async mechanism (kproto._loop.Portal), issue 12, "One
client request layer": "the three sync faces use three mechanisms and each client owns a
loop thread". Every sync client runs on one shared loop thread, which the first client
starts and the last one's close stops."""

import asyncio
import multiprocessing
import os
import threading

import pytest

from kproto import AdminClient, Consumer, Producer
from kproto._loop import Portal, run_in_caller, wait_for
from kproto.errors import ClientClosedError

# Nothing listens there: the constructors need no broker (issue 11), and no call below
# reaches one.
NOWHERE = {"bootstrap.servers": "127.0.0.1:1"}


def _loop_threads():
    return [t for t in threading.enumerate() if t.name.startswith("kproto")]


def test_the_sync_clients_share_one_loop_thread_that_stops_with_the_last():
    """Issue 12: a producer, a consumer and an admin client made in one process run on
    one loop thread (they had one each), and closing the last of them joins it."""
    before = _loop_threads()
    producer = Producer(NOWHERE)
    consumer = Consumer({**NOWHERE, "group.id": "g"})
    admin = AdminClient(NOWHERE)
    try:
        assert len(_loop_threads()) == len(before) + 1
    finally:
        producer.close()
        consumer.close()
        assert len(_loop_threads()) == len(before) + 1  # the admin client holds it still
        admin.close()
    assert _loop_threads() == before
    with Producer(NOWHERE):  # and a later client starts it afresh
        assert len(_loop_threads()) == len(before) + 1
    assert _loop_threads() == before


def test_a_call_returns_or_raises_in_the_callers_thread():
    portal = Portal("test client")
    try:
        assert portal.call(threading.current_thread) is not threading.current_thread()  # ran on the loop

        async def add(a, b):
            return a + b
        assert portal.call(add, 1, b=2) == 3

        async def fail():
            raise ValueError("from the loop")
        with pytest.raises(ValueError, match="from the loop"):
            portal.call(fail)
    finally:
        portal.close()
    with pytest.raises(ClientClosedError, match="the test client is closed"):
        portal.call(add, 1, 2)
    portal.close()  # idempotent


def test_callbacks_handed_to_the_caller_run_in_its_thread_and_may_call_the_portal():
    """A consumer's rebalance callbacks run in the thread that polls, and may make
    blocking calls themselves (a commit in on_revoke)."""
    portal = Portal("test client")
    seen = []

    def callback(tag):
        seen.append((tag, threading.current_thread()))
        return portal.call(lambda: tag * 2)  # a nested call from the callback

    async def work():
        return await run_in_caller(callback, 21)
    try:
        assert portal.call(work) == 42
    finally:
        portal.close()
    assert seen == [(21, threading.current_thread())]


def test_a_blocking_call_from_the_loop_thread_is_refused_not_deadlocked():
    portal = Portal("test client")
    try:
        with pytest.raises(RuntimeError, match="on kproto's loop thread"):
            portal.call(portal.call, threading.current_thread)
    finally:
        portal.close()


def test_a_plain_call_returns_or_raises_in_the_callers_thread():
    """Issue 16 (consume): ``call_plain``, the quick call a sync poll of buffered records
    takes, runs a plain function on the loop thread, returns or raises in the caller's,
    refuses the loop thread itself and a closed portal."""
    portal = Portal("test client")
    try:
        assert portal.call_plain(threading.current_thread) is portal.call(threading.current_thread)
        assert portal.call_plain(divmod, 7, 2) == (3, 1)
        with pytest.raises(ZeroDivisionError):
            portal.call_plain(divmod, 1, 0)
        with pytest.raises(RuntimeError, match="on kproto's loop thread"):
            portal.call(portal.call_plain, threading.current_thread)
    finally:
        portal.close()
    with pytest.raises(ClientClosedError, match="the test client is closed"):
        portal.call_plain(divmod, 7, 2)


def test_ctrl_c_abandons_a_plain_call_skipping_fn_or_undoing_its_result():
    """issue 16, review: Ctrl-C while ``call_plain`` waits: a ``fn`` still queued behind a
    busy loop never runs; one already running hands its result to ``on_abandoned`` on the
    loop (a consumer seeks back to the records nobody received)."""
    import _thread
    import time

    portal = Portal("test client")
    ran, undone = [], []

    def slow():
        ran.append(threading.current_thread())
        time.sleep(0.6)
        return "result"
    try:
        for busy, fn in ((True, lambda: ran.append("queued")), (False, slow)):
            if busy:
                portal._thread.loop.call_soon_threadsafe(time.sleep, 0.6)  # fn waits behind it
            timer = threading.Timer(0.2, _thread.interrupt_main)  # Ctrl-C, as the main thread sees it
            timer.start()
            with pytest.raises(KeyboardInterrupt):
                portal.call_plain(fn, on_abandoned=lambda value: undone.append((value, threading.current_thread())))
            timer.join()
            portal.call(asyncio.sleep, 0)  # the loop is free again: whatever was left has run
            if busy:
                assert ran == [] and undone == []
        loop_thread = portal._thread.thread
        assert ran == [loop_thread] and undone == [("result", loop_thread)]
    finally:
        portal.close()


def _in_child(results):
    portal = Portal("child client")
    try:
        results.put(portal.call(os.getpid))
    finally:
        portal.close()
    results.put(len(_loop_threads()))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_a_forked_child_starts_its_own_loop_thread():
    """The parent's loop thread does not survive a fork: a client in the child must not
    wait for it (forever) but start its own."""
    portal = Portal("parent client")
    try:
        context = multiprocessing.get_context("fork")
        results = context.SimpleQueue()
        child = context.Process(target=_in_child, args=(results,))
        child.start()
        child.join(30)
        assert child.exitcode == 0
        assert results.get() == child.pid
        assert results.get() == 0
    finally:
        portal.close()


def test_ctrl_c_interrupts_a_blocked_call_and_cancels_its_coroutine():
    import _thread
    import asyncio

    portal = Portal("test client")
    cancelled = threading.Event()

    async def forever():
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
    timer = threading.Timer(0.3, _thread.interrupt_main)  # Ctrl-C, as the main thread sees it
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            portal.call(forever)
        assert cancelled.wait(5)
    finally:
        timer.join()
        portal.close()


async def _cancel_as_the_wait_ends(wait) -> str:
    """Set an event and cancel the task waiting on it in the same loop turn: how the task
    ends ("cancelled", or "ran on" when the cancel was dropped)."""
    event = asyncio.Event()

    async def waiter():
        await wait(event.wait(), 10)
        await asyncio.sleep(0.5)  # a cancel that was kept ends the task before this
        return "ran on"

    task = asyncio.get_running_loop().create_task(waiter())
    await asyncio.sleep(0)
    event.set()
    task.cancel()
    try:
        return await task
    except asyncio.CancelledError:
        return "cancelled"


def test_wait_for_keeps_a_cancel_that_arrives_as_the_wait_ends():
    """Issue 16 (found measuring poll_arrow): ``Consumer.close()`` hung forever when it
    cancelled the metadata task just as a refresh was wanted: on Python 3.11
    ``asyncio.wait_for`` drops that cancel (CPython gh-86296). kproto's wait_for keeps it."""
    assert asyncio.run(_cancel_as_the_wait_ends(wait_for)) == "cancelled"


def test_wait_for_times_out_and_returns_like_asyncio_wait_for():
    async def main():
        assert await wait_for(asyncio.sleep(0, "done"), 1) == "done"
        assert await wait_for(asyncio.sleep(0, "none"), None) == "none"
        inner = asyncio.ensure_future(asyncio.sleep(10))
        with pytest.raises(TimeoutError):
            await wait_for(inner, 0.01)
        assert inner.cancelled()
        shielded = asyncio.ensure_future(asyncio.sleep(0.05, "kept"))
        with pytest.raises(TimeoutError):
            await wait_for(asyncio.shield(shielded), 0.01)
        assert await shielded == "kept"

    asyncio.run(main())
