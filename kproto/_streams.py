"""What an :class:`asyncio.StreamWriter` needs of the protocol beneath it, for protocols
that read into their own buffers: the base of a client connection's protocol
(:mod:`kproto.io.connection`) and of minibroker's server connection's
(:mod:`minibroker.server`).

A ``StreamWriter`` made over a protocol other than asyncio's ``StreamReaderProtocol`` takes
two things from it: flow control for ``drain()`` (asyncio's ``FlowControlMixin``, the base
``StreamReaderProtocol`` has too) and a close waiter for ``wait_closed()``
(``_get_close_waiter``). Both sides read through :class:`asyncio.BufferedProtocol` into a
:class:`~kproto.protocol.FrameReader`'s buffers, so both need that contract; it lives here,
in the base layer, because minibroker may use kproto's base but not its connections.
"""

from __future__ import annotations

import asyncio

__all__ = ["StreamProtocol"]


class StreamProtocol(asyncio.streams.FlowControlMixin, asyncio.BufferedProtocol):
    """A :class:`asyncio.BufferedProtocol` a ``StreamWriter`` can write through, as through a
    ``StreamReaderProtocol``. Subclasses say what a read fills (``get_buffer``,
    ``buffer_updated``) and extend :meth:`connection_lost`, calling it first."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self._closed = loop.create_future()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._closed.done():
            if exc is None:
                self._closed.set_result(None)
            else:
                self._closed.set_exception(exc)
                self._closed.exception()  # retrieved: wait_closed() may never be called
        super().connection_lost(exc)

    def _get_close_waiter(self, stream: asyncio.StreamWriter) -> asyncio.Future:
        return self._closed
