"""An asyncio loop on a background thread, for the sync faces of MiniBroker and MiniCluster.

``start(start, stop)`` runs ``start()`` on a new daemon thread's loop and returns once it
has finished (raising what it raised, after the thread ended); the loop then waits until
``stop()`` of this object, which runs the given ``stop()`` there and joins the thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable

__all__ = ["BackgroundLoop"]


class BackgroundLoop:
    """One started-and-stopped ``what`` on its own loop thread named ``name``."""

    def __init__(self, name: str, what: str) -> None:
        self.name, self.what = name, what
        self.thread: threading.Thread | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Event | None = None

    def start(self, start: Callable[[], Awaitable[object]], stop: Callable[[], Awaitable[object]]) -> None:
        """Run ``start()`` on a new loop thread; return when it is done, or raise its error."""
        if self.thread is not None:
            raise RuntimeError(f"the {self.what} is already started")
        ready = threading.Event()
        failure: list[BaseException] = []

        async def main() -> None:
            self.loop = asyncio.get_running_loop()
            self._stopped = asyncio.Event()
            try:
                await start()
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            await self._stopped.wait()
            await stop()

        self.thread = threading.Thread(target=asyncio.run, args=(main(),), name=self.name, daemon=True)
        self.thread.start()
        ready.wait()
        if failure:
            self.thread.join()
            self.thread = None
            raise failure[0]

    def stop(self) -> None:
        """Run the ``stop`` given to :meth:`start` on the loop and join the thread (idempotent)."""
        if self.thread is None:
            return
        assert self.loop is not None and self._stopped is not None
        self.loop.call_soon_threadsafe(self._stopped.set)
        self.thread.join()
        self.thread = None
