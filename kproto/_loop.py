"""The one background event loop behind the sync clients (``Producer``, ``Consumer``,
``AdminClient``), and the lifecycle rules every client follows.

Sync over async. A sync client is a facade over its asyncio core, and reaches the core
through one mechanism, a :class:`Portal` (modelled on anyio's ``BlockingPortal``):
``portal.call(fn, *args)`` runs ``fn`` on the loop (awaiting it when it returns an
awaitable) and returns its result, or raises its exception, in the caller's thread.
:func:`blocking` makes a sync method out of its async twin that way, so each method has
one implementation and one docstring. While it waits, ``call`` serves the coroutine's
:func:`run_in_caller` requests: a consumer's rebalance and commit callbacks run in the
thread that called ``poll`` (as in Java), so they may call the clients' blocking methods.
Calls wait in short slices so Ctrl-C interrupts them, and a call from the loop's own
thread (a callback on the loop calling back into a sync client) is refused instead of
deadlocking.

One loop thread per process, not one per client. Every portal is a lease on one shared
loop thread (``kproto-loop``, the shape of anyio's lease-counted
``BlockingPortalProvider``): the first client starts it, each client's ``close`` returns
its lease, and the last one stops the loop and joins the thread, so nothing outlives the
clients (a test suite sees no leftover thread). Why shared: the clients' work on the loop
is waiting on sockets and timers, which one loop does for all of them; a thread and a
loop per client bought nothing but threads (the GIL runs one at a time anyway), and a
program that consumes, transforms and produces ran two loops to do one job. The price,
said in the clients' docs: a callback that runs on the loop (a producer's delivery
callback) holds up every client's I/O while it runs, so it must be short, and it may not
call any sync client's blocking method (refused with RuntimeError: the loop it would
wait for is the one it is holding). A child process made by ``fork`` starts with no loop
thread (threads do not survive a fork), so its first client starts its own.

Two lifecycle rules of every client live here too (issue 11). A closed client refuses
every call with :class:`~kproto.errors.ClientClosedError` (:func:`refuse_when_closed`,
as Java's clients throw once closed). An asyncio client belongs to the event loop it
started on: its tasks, futures and sockets are that loop's. Used from another loop (a
second ``asyncio.run``, pytest-asyncio's loop per test) it would wait forever for a
loop that no longer runs, so :func:`check_loop` refuses at once, saying what to do.

Every bounded wait of kproto and minibroker goes through :func:`wait_for`, not
``asyncio.wait_for``: on Python 3.11 the latter drops a cancel that arrives as what it
awaits completes (CPython gh-86296), and a task that loses its cancel runs on, so the
close that cancelled it waits forever.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import inspect
import os
import queue
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar, overload

from kproto.errors import ClientClosedError

__all__ = ["Portal", "blocking", "check_loop", "refuse_when_closed", "run_in_caller", "wait_for"]

T = TypeVar("T")
P = ParamSpec("P")

_SLICE = 0.2  # seconds: how often a blocked call lets signals in


async def wait_for(aw: Awaitable[T], timeout: float | None) -> T:
    """``await aw`` for at most ``timeout`` seconds (None: no limit), else TimeoutError.

    ``asyncio.wait_for`` without its Python 3.11 flaw (see the module docstring): ``aw``
    is awaited in the calling task under ``asyncio.timeout``, so a cancel of the caller
    always ends it with CancelledError, whenever it arrives. On a timeout ``aw`` is
    cancelled (a shielded one keeps running), as ``asyncio.wait_for`` does.
    """
    async with asyncio.timeout(timeout):
        return await aw


class _LoopThread:
    """An asyncio loop running on a daemon thread until :meth:`stop`."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._main, args=(ready,), name="kproto-loop", daemon=True)
        self.thread.start()
        ready.wait()

    def _main(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(ready.set)
        self.loop.run_forever()

    def stop(self) -> None:
        """Cancel what still runs, stop the loop and join the thread."""
        if self.thread.is_alive():
            asyncio.run_coroutine_threadsafe(_cancel_all(), self.loop).result()
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join()
        self.loop.close()


async def _cancel_all() -> None:
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


_lock = threading.Lock()  # guards the two below
_shared: _LoopThread | None = None  # the loop thread, while any portal holds a lease
_leases = 0


def _forget_after_fork() -> None:
    """In a forked child: the parent's loop thread did not come along; start afresh."""
    global _lock, _shared, _leases
    _lock, _shared, _leases = threading.Lock(), None, 0


os.register_at_fork(after_in_child=_forget_after_fork)


class _Call:
    """One :meth:`Portal.call` in progress: the queue its caller's thread serves."""

    __slots__ = ("requests", "done")

    def __init__(self) -> None:
        self.requests: queue.SimpleQueue[tuple[Callable[..., Any], tuple, concurrent.futures.Future] | None] = \
            queue.SimpleQueue()
        self.done = False  # set on the loop when the call's coroutine ends


_caller: contextvars.ContextVar[_Call] = contextvars.ContextVar("kproto_portal_caller")


class Portal:
    """A sync client's lease on the shared loop thread; see the module doc.

    Args:
        what: the client, for errors ("the consumer is closed").
    """

    def __init__(self, what: str) -> None:
        global _shared, _leases
        self._what = what
        with _lock:
            if _shared is None:
                _shared = _LoopThread()
            _leases += 1
            self._thread: _LoopThread | None = _shared

    @property
    def closed(self) -> bool:
        """The lease was returned (:meth:`close`)."""
        return self._thread is None

    @overload
    def call(self, fn: Callable[P, Awaitable[T]], /, *args: P.args, **kwargs: P.kwargs) -> T: ...
    @overload
    def call(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T: ...
    def call(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` on the loop, awaiting what it returns if that is
        awaitable, and return its result (or raise its exception) here.

        Meanwhile this thread runs the callbacks that :func:`run_in_caller` hands it.
        Ctrl-C cancels the call. There is no timeout here: each async method bounds its
        own wait (``max.block.ms``, ``default.api.timeout.ms``, its ``timeout`` argument).

        Raises:
            RuntimeError: called from the loop's own thread (it would wait for itself).
            ClientClosedError: the portal was closed, or the call was cancelled by the
                loop stopping.
        """
        if self._thread is None:
            raise ClientClosedError(f"the {self._what} is closed")
        if threading.current_thread() is self._thread.thread:
            raise RuntimeError(f"a blocking {self._what} call was made on kproto's loop thread, from a callback "
                               f"that runs there (a delivery callback): it would wait for itself. Do it from "
                               f"another thread, or use the asyncio client")
        call = _Call()
        future = asyncio.run_coroutine_threadsafe(_run(call, fn, args, kwargs), self._thread.loop)
        future.add_done_callback(lambda _: call.requests.put(None))
        try:
            while (request := _next(call.requests)) is not None:
                callback, callback_args, reply = request
                try:
                    reply.set_result(callback(*callback_args))
                except Exception as exc:  # handed back to the coroutine, which raises it
                    reply.set_exception(exc)
        except BaseException:  # Ctrl-C, wherever it lands (in a callback too): the call stops too
            future.cancel()
            raise
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            raise ClientClosedError(f"the {self._what} was closed during the call") from None

    def call_plain(self, fn: Callable[..., T], /, *args: Any,
                   on_abandoned: Callable[[T], Any] | None = None) -> T:
        """Run the plain function ``fn(*args)`` on the loop and return its result (or raise
        its exception) here: :meth:`call` without a task, a future or a request queue, for a
        quick step of a client's state such as a consumer's poll of buffered records (about
        a third of :meth:`call`'s cost). ``fn`` must not block, and nothing it runs may use
        :func:`run_in_caller` (this thread serves no requests meanwhile).

        Ctrl-C (any exception) while waiting abandons the call: a ``fn`` still queued does
        not run, and the result of one that ran (or was running) is handed to
        ``on_abandoned`` on the loop, which undoes what nobody will receive (a consumer
        seeks back to the records of a poll).

        Raises:
            RuntimeError: called from the loop's own thread.
            ClientClosedError: the portal was closed, or the loop stopped before ``fn`` ran.
        """
        thread = self._thread
        if thread is None:
            raise ClientClosedError(f"the {self._what} is closed")
        if threading.current_thread() is thread.thread:
            raise RuntimeError(f"a blocking {self._what} call was made on kproto's loop thread: it would wait "
                               f"for itself")
        done = threading.Lock()
        done.acquire()
        outcome: list[Any] = []
        state = threading.Lock()  # guards `abandoned` and `outcome`, between the two threads
        abandoned = False

        def run() -> None:
            with state:
                if abandoned:
                    return
            try:
                result = (True, fn(*args))
            except BaseException as exc:  # handed to the caller, who raises it
                result = (False, exc)
            with state:  # exactly one of the caller and this undoes an abandoned result
                outcome.append(result)
                undo = abandoned and result[0] and on_abandoned is not None
            done.release()
            if undo:  # the caller left while fn ran
                on_abandoned(result[1])  # type: ignore[misc]

        try:
            thread.loop.call_soon_threadsafe(run)
        except RuntimeError:  # the loop is closed
            raise ClientClosedError(f"the {self._what} is closed") from None
        try:
            while not done.acquire(timeout=_SLICE):  # in slices, so that Ctrl-C gets in
                if not thread.thread.is_alive():
                    raise ClientClosedError(f"the {self._what} was closed during the call")
            ok, value = outcome[0]
        except BaseException:  # Ctrl-C: fn is skipped if still queued, undone if it ran
            with state:
                abandoned = True
                finished = bool(outcome)  # else run() sees `abandoned` (skips or undoes fn)
            if finished and outcome[0][0] and on_abandoned is not None:
                try:
                    thread.loop.call_soon_threadsafe(on_abandoned, outcome[0][1])
                except RuntimeError:  # the loop is closed: nothing left to undo
                    pass
            raise
        if ok:
            return value
        raise value

    def close_after(self, fn: Callable[..., Awaitable[Any]], /, *args: Any) -> None:
        """A client's ``close``: run ``fn(*args)`` (the asyncio client's close) on the loop,
        then return the lease, even if ``fn`` raised. Nothing once the lease is returned."""
        if self.closed:
            return
        try:
            self.call(fn, *args)
        finally:
            self.close()

    def close(self) -> None:
        """Return the lease; the last one stops the loop and joins its thread. Idempotent.

        What the client still runs on the loop must be finished first (its ``close``):
        the last lease cancels whatever is left.
        """
        global _shared, _leases
        thread, self._thread = self._thread, None
        if thread is None:
            return
        with _lock:
            if thread is not _shared:  # started before a fork: nothing of it is here
                return
            _leases -= 1
            if _leases:
                return
            _shared = None  # a client made from now on starts a new loop thread
        # Outside the lock: a task cancelled here may make a client, which takes the lock.
        thread.stop()


def _next(requests: queue.SimpleQueue[Any]) -> Any:
    """The next request, waiting in slices so that signals (Ctrl-C) get in."""
    while True:
        try:
            return requests.get(timeout=_SLICE)
        except queue.Empty:
            pass


async def _run(call: _Call, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    _caller.set(call)  # this task's context (and its children's): run_in_caller finds the call
    try:
        result = fn(*args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result
    finally:
        call.done = True


async def run_in_caller(callback: Callable[..., Any], *args: Any) -> Any:
    """Run a user callback in the thread blocked in the :meth:`Portal.call` whose coroutine
    runs this, or here on the loop when there is none (an asyncio client, or a task that
    outlived its call); an awaitable result is awaited on the loop."""
    call = _caller.get(None)
    if call is None or call.done:
        result = callback(*args)
    else:
        reply: concurrent.futures.Future[Any] = concurrent.futures.Future()
        call.requests.put((callback, args, reply))
        result = await asyncio.wrap_future(reply)
    if inspect.isawaitable(result):
        result = await result
    return result


_R = TypeVar("_R")


@overload
def blocking(method: Callable[Concatenate[Any, P], Coroutine[Any, Any, _R]]) -> Callable[Concatenate[Any, P], _R]: ...
@overload
def blocking(method: Callable[Concatenate[Any, P], _R]) -> Callable[Concatenate[Any, P], _R]: ...
def blocking(method: Callable[..., Any]) -> Callable[..., Any]:
    """The sync twin of an async client's ``method``: ``self._portal.call`` runs it on
    ``self._core`` and waits.

    The sync faces are built from the async ones with this, so there is one
    implementation and one docstring. Coroutine methods are awaited on the loop; plain
    ones are called there too (the core's state belongs to the loop's thread).
    """
    name = method.__name__

    @functools.wraps(method)
    def call(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        return self._portal.call(getattr(self._core, name), *args, **kwargs)

    return call


def check_loop(home: asyncio.AbstractEventLoop | None, client: str) -> asyncio.AbstractEventLoop:
    """The running loop, which must be ``home``, the loop ``client`` started on (None: not
    started yet, any loop will do).

    Raises:
        RuntimeError: another loop is running; the message says how to use the client.
    """
    loop = asyncio.get_running_loop()
    if home is not None and loop is not home:
        state = "closed now" if home.is_closed() else "not this one"
        raise RuntimeError(
            f"this {client} started on another event loop ({state}) and belongs to it. Create the "
            f"client inside the loop that uses it (one per asyncio.run(), one per test with "
            f"pytest-asyncio), or use the thread-safe {client.removeprefix('AIO')}, which works "
            f"from any thread and any loop")
    return loop


def refuse_when_closed(what: str, closed: Callable[[Any], bool], keep: tuple[str, ...] = ("close",),
                       bind: bool = False, before: Callable[[Any], Any] | None = None) -> Callable[[type], type]:
    """A class decorator: every public method (but ``keep``) of the client raises
    :class:`~kproto.errors.ClientClosedError` once ``closed(self)`` is true.

    One guard for all methods, so a method added later cannot forget it (a test walks
    every public method of every client). Methods the class gets from its bases (the
    consumer's parts, one job each) are guarded too, on the class. Async methods raise
    when awaited. With ``bind``, the first async call binds the client to its loop
    (``self._home``) and later ones go through :func:`check_loop`; ``before(self)`` is
    awaited before each async call.
    """
    def decorate(cls: type) -> type:
        methods: dict[str, Any] = {}
        for klass in reversed(cls.__mro__[:-1]):  # object's own are not the client's
            methods.update(vars(klass))
        for name, method in methods.items():
            if name.startswith("_") or name in keep or not inspect.isfunction(method):
                continue
            setattr(cls, name, _guarded(method, what, closed, cls.__name__ if bind else None, before))
        return cls
    return decorate


def _guarded(method: Any, what: str, closed: Callable[[Any], bool], bind: str | None,
             before: Callable[[Any], Any] | None) -> Any:
    if inspect.iscoroutinefunction(method):
        @functools.wraps(method)
        async def call_async(self: Any, *args: Any, **kwargs: Any) -> Any:
            if closed(self):
                raise ClientClosedError(f"the {what} is closed")
            if bind is not None:
                self._home = check_loop(self._home, bind)
            if before is not None:
                await before(self)
            return await method(self, *args, **kwargs)
        return call_async

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        if closed(self):
            raise ClientClosedError(f"the {what} is closed")
        return method(self, *args, **kwargs)
    return call
