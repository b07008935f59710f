"""The background event loop behind each sync client (``Producer``, ``Consumer``...).

A sync client is a facade: it owns one :class:`LoopThread`, runs the asyncio core on it,
and blocks on the results. Calls wait in short slices so Ctrl-C interrupts them, and a
call from the loop's own thread (a callback calling back into the client) is refused
instead of deadlocking.

Two lifecycle rules of every client live here too (issue 11). A closed client refuses
every call with :class:`~kproto.errors.ClientClosedError` (:func:`refuse_when_closed`,
as Java's clients throw once closed). An asyncio client belongs to the event loop it
started on: its tasks, futures and sockets are that loop's. Used from another loop (a
second ``asyncio.run``, pytest-asyncio's loop per test) it would wait forever for a
loop that no longer runs, so :func:`check_loop` refuses at once, saying what to do.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

from kproto.errors import ClientClosedError, KafkaTimeoutError

__all__ = ["LoopThread", "check_loop", "refuse_when_closed"]

T = TypeVar("T")
P = ParamSpec("P")

_SLICE = 0.2  # seconds: how often a blocked call lets signals in


class LoopThread:
    """An asyncio loop running on a daemon thread until :meth:`stop`."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._thread = threading.Thread(target=self._main, args=(ready,), name=name, daemon=True)
        self._thread.start()
        ready.wait()

    def _main(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(ready.set)
        self.loop.run_forever()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; returns a thread-safe future of its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result.

        Raises:
            KafkaTimeoutError: ``timeout`` seconds passed (the coroutine is cancelled).
            RuntimeError: called from the loop's own thread.
            ClientClosedError: the loop was stopped (its client is closed).
        """
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("a blocking kproto call was made from its own callback thread")
        if self.loop.is_closed():
            coro.close()
            raise ClientClosedError(f"the {self._thread.name.removeprefix('kproto-')} is closed")
        future = self.submit(coro)
        return wait(future, timeout)

    def call_soon(self, fn: Any, *args: Any) -> None:
        self.loop.call_soon_threadsafe(fn, *args)

    def stop(self) -> None:
        """Stop the loop (after cancelling what still runs) and join the thread."""
        if not self.loop.is_closed():
            if self._thread.is_alive():
                self.submit(_cancel_all()).result()
                self.loop.call_soon_threadsafe(self.loop.stop)
                self._thread.join()
            self.loop.close()


def wait(future: concurrent.futures.Future[T], timeout: float | None = None) -> T:
    """``future.result(timeout)``, waking every 200 ms so Ctrl-C gets through."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = _SLICE if deadline is None else min(_SLICE, deadline - time.monotonic())
        if left <= 0:
            future.cancel()
            raise KafkaTimeoutError(f"gave up after {timeout:g} s")
        try:
            return future.result(left)
        except concurrent.futures.TimeoutError:
            continue
        except KeyboardInterrupt:
            future.cancel()
            raise


async def _cancel_all() -> None:
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def blocking(method: Callable[Concatenate[Any, P], Awaitable[T]]) -> Callable[Concatenate[Any, P], T]:
    """A sync method that runs the async ``method`` of ``self._core`` on ``self._loop``.

    The sync faces are built from the async ones with this, so there is one
    implementation and one docstring; the async method bounds its own wait.
    """
    name = method.__name__

    @functools.wraps(method)
    def call(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> T:
        result: T = self._loop.run(getattr(self._core, name)(*args, **kwargs))
        return result

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
    every public method of every client). Async methods raise when awaited. With
    ``bind``, the first async call binds the client to its loop (``self._home``) and
    later ones go through :func:`check_loop`; ``before(self)`` is awaited before each
    async call.
    """
    def decorate(cls: type) -> type:
        for name, method in list(vars(cls).items()):
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
