"""The background event loop behind each sync client (``Producer``, ``Consumer``...).

A sync client is a facade: it owns one :class:`LoopThread`, runs the asyncio core on it,
and blocks on the results. Calls wait in short slices so Ctrl-C interrupts them, and a
call from the loop's own thread (a callback calling back into the client) is refused
instead of deadlocking.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

from kproto.errors import KafkaTimeoutError

__all__ = ["LoopThread"]

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
        """
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("a blocking kproto call was made from its own callback thread")
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
