"""The asyncio TCP server: frames in, handlers, frames out.

Theory of operation: each connection is one task that reads frames and answers them
strictly in order, one at a time. A long-polled Fetch therefore holds back later
requests on its own connection (Kafka's guarantee, which kafka-python and aiokafka rely
on) and never anything on other connections. Bytes a peer sends that break the protocol
close that connection only; an unknown ApiVersions version gets the v0 answer with
UNSUPPORTED_VERSION (KIP-511); any other unknown API key or version closes the
connection, as Kafka does when it cannot parse a request.

Handlers get a :class:`~minibroker.handlers.RequestContext` (the header's fields and the
peer's address) and return a response object; the server does all the I/O.

Reading: each connection's asyncio protocol (``_RequestStream``) is a
:class:`asyncio.BufferedProtocol` whose buffers are the connection's
:class:`~kproto.protocol.FrameReader`'s, as a client's connection's are
(:mod:`kproto.io.connection`): a large request (a Produce's megabyte) is read into a
buffer of its own, which becomes the frame the handler decodes without a copy; small ones
into a scratch buffer, copied out once each. No ``StreamReader`` sits in between (issue 16:
it cost about four copies of every byte, and page faults, per Produce). A request's
memory is reserved (below) as soon as its size is read, when any is left, and reading is
paused only while the task answers and the next size is known, or while memory is short:
Produce requests sent back to back cost two receives and two loop turns each, and no
``epoll_ctl`` (issue 16: they cost four of each).

Zero-copy Fetch: a Fetch response's records are
:class:`~minibroker.log.segment.RecordSlices`, runs of segment bytes not yet read.
:func:`~kproto.protocol.frames.encode_response_parts` encodes the rest of the frame
around them (their lengths are known), and the server writes the pieces in order:
bytes with ``transport.write``, slices of segments on disk with ``loop.sendfile``, which
calls ``os.sendfile`` once the bytes before them have left, so records go from the page
cache to the socket without entering Python. The frame is byte for byte the one
:func:`~kproto.protocol.encode_response` gives with the records read. A segment that
retention or compaction deletes meanwhile stays readable through its open descriptor
(see :mod:`minibroker.log.segment`); against a topic deleted meanwhile, which closes its
logs' descriptors, each slice's descriptor is duplicated as soon as the handler returns,
before anything can await. Slices of logs in memory are bytes, or read-only views of
the log's own memory whose bytes never change (see
:class:`~minibroker.log.store.MemoryStore`), and are written as they are, not copied
to build the frame (what the socket does not take at once, asyncio's transport
buffers). The copying path, used when ``os.sendfile``
cannot serve (a TLS transport, a file system without it: asyncio reports
``SendfileNotAvailableError``) or when turned off, reads each slice with ``pread`` and
writes the bytes.

Idle connections and memory (Kafka's ``Selector`` and ``MemoryPool``): a connection
that has received and sent nothing for ``connections.max.idle.ms`` is closed, whatever
state its frame is in; time spent answering a request does not count, but a response
that the peer does not take within that time closes the connection too (the peer stopped
reading: Kafka sees no progress either). A large request's buffer is allocated at its
announced size only once that is reserved (below), and zeroed lazily by the system: its
pages are touched only as its bytes come. What partially received requests may hold,
across connections, is bounded by ``queued.max.request.bytes``: once a frame's size prefix is read, its announced size is
reserved (accounting only) from :class:`RequestMemory` before more of it is read, and
released when the frame is complete or the connection goes. While the reservations
reach the limit, a connection that starts a new frame stops reading (the peer's sends
block: back pressure, as Kafka mutes the channel) until memory is released. As Kafka's
non-strict pool, any memory left admits a whole frame, so the reservations stay below
the limit plus one ``socket.request.max.bytes``, and a frame once admitted always
completes. A frame above ``socket.request.max.bytes`` closes its connection.

Stopping: :meth:`Server.stop` is orderly (connections closed, state closed with its
files flushed); :meth:`Server.abort` is a MiniCluster broker's crash: the listener
closed, every connection reset (RST, as the kernel does for a killed process's sockets)
with no answer to requests in flight, every task cancelled, and the state's files left
to :meth:`~minibroker.state.BrokerState.abandon`. In a MiniCluster the server's state
gets the broker's :class:`~minibroker.cluster.api.ClusterContext` (``cluster=``).

Faults (:mod:`minibroker.faults`): every request passes :attr:`Server.faults` where it is
answered. While the broker is isolated from the request's kind of peer (a client, or a
follower's fetcher), the request waits unanswered, and so does an answer made before
the isolation began; then the request controls act (delay, fail, drop, hold) and a
request that writes the log waits for a slow disk. An answer that must wait is read into
bytes first, so that nothing it refers to may change meanwhile. A dropped request is
neither handled nor answered, and its connection answers nothing more (answers go in
order) until the peer closes it. Stopping or aborting removes the request controls.

Quotas (KIP-13/55/219): every request is run and encoded by :func:`minibroker.quotas.serve`,
which charges it to its client's quotas; over one, the answer carries ``throttle_time_ms``
and goes out at once, and the connection then reads nothing more until the throttle
ends (its :class:`~minibroker.quotas.ChannelMute`).

``MINIBROKER_SENDFILE=0`` in the environment (read when a :class:`Server` is created, so
it reaches a broker in a child process) turns ``os.sendfile`` off: the benchmark's way to
measure the copying path (``bench/broker.py``); Kafka has no such setting.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import os
import socket
import ssl
import struct
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from kproto._streams import StreamProtocol
from kproto.errors import ProtocolError, UnsupportedVersionError
from kproto.protocol import (
    ApiKey,
    FrameReader,
    UnsupportedApiVersionError,
    decode_request,
    encode_response,
)
from kproto.protocol.frames import encode_response_parts
from minibroker.config import BrokerConfig
from minibroker.faults import WRITE_APIS, BrokerFaults, Delay, Drop, Fail, Hold, error_response
from minibroker.handlers import HANDLERS, RequestContext, client_host
from minibroker.handlers.api_versions import api_versions_response
from minibroker.listeners import Channel, ListenerSecurity, listener_securities
from minibroker.log.store import LogSlice, SegmentFile
from minibroker.quotas import ChannelMute, serve
from minibroker.state import BrokerState

if TYPE_CHECKING:
    from minibroker.cluster.api import ClusterContext

__all__ = ["RequestMemory", "Server", "send_response"]

log = logging.getLogger("minibroker")

_DROPPED: Any = object()  # _answer's word for "never answer, and answer nothing more here"


class _CloseConnection(Exception):
    """A request whose failure Kafka answers by closing the connection (acks=0 Produce)."""


_OWN_PIECE = 64 * 1024  # a slice of a log in memory this large is written as it is, not joined
_AT_ONCE = 64 * 1024  # a response of bytes up to this size is written without a drain (_written_at_once)


def _pin(parts: list[Any], sendfile: bool) -> list[bytes | memoryview | LogSlice]:
    """The pieces of a response frame to write, with nothing left that can change.

    Runs of bytes are joined, but a large slice of a log in memory (bytes, or a read-only
    view of a map whose bytes never change, see :class:`~minibroker.log.store.MemoryStore`)
    stays a piece of its own, written as it is: joining would copy a Fetch's records once
    more. Each slice of a segment on disk becomes, with ``sendfile``, a slice of a duplicate descriptor of the file, owned by the piece: closing the log
    (DeleteTopics) cannot close it, nor hand its number to another file. That matters
    twice: sendfile would send another file's bytes, and asyncio (3.11) never finishes a
    ``loop.sendfile`` whose descriptor is closed midway (its error path ``lseek``s the
    closed descriptor and the exception is lost), stalling the connection for good.
    Without ``sendfile``, and for logs in memory, a slice becomes its bytes. Must run
    before the first ``await`` after the handler returns, so what is sent is what the
    handler chose.
    """
    pieces: list[bytes | memoryview | LogSlice] = []
    run: list[bytes] = []
    for part in parts:
        if type(part) is bytes:
            run.append(part)
            continue
        if type(part) is memoryview:  # pinned before (a held response): a piece of its own
            if run:
                pieces.append(b"".join(run))
                run = []
            pieces.append(part)
            continue
        for piece in part.slices:
            if sendfile and isinstance(piece.source, SegmentFile):
                if run:
                    pieces.append(b"".join(run))
                    run = []
                owned = SegmentFile(piece.source.path, os.dup(piece.source.fileno()))
                pieces.append(LogSlice(owned, piece.position, piece.length))
            elif not isinstance(piece.source, SegmentFile) and piece.length >= _OWN_PIECE:  # in memory
                if run:
                    pieces.append(b"".join(run))
                    run = []
                pieces.append(piece.source)  # written as it is, not joined (a Fetch's megabytes)
            else:
                run.append(piece.tobytes())
    if run:
        pieces.append(b"".join(run))
    return pieces


async def send_response(writer: asyncio.StreamWriter, parts: list[Any], *, sendfile: bool = True) -> None:
    """Write one response frame and wait until the transport has handed all of it on.

    Call it as soon as the handler returns: the slices are pinned (see :func:`_pin`)
    before its first ``await``.

    Args:
        writer: the connection.
        parts: :func:`~kproto.protocol.frames.encode_response_parts` of a response whose
            records fields hold ``bytes`` or :class:`~minibroker.log.segment.RecordSlices`.
        sendfile: send slices of segments on disk with ``os.sendfile`` when the transport
            allows (a plain TCP socket); else read them and write the bytes.

    Raises:
        ConnectionError: the peer went away (part of the frame may have been sent).
        OSError: a segment file ended early; the frame is incomplete and the connection
            must be closed.
    """
    sendfile = sendfile and writer.get_extra_info("sslcontext") is None  # TLS encrypts in user space
    pieces = _pin(parts, sendfile)
    try:
        loop = asyncio.get_running_loop()
        for piece in pieces:
            if type(piece) is bytes or type(piece) is memoryview:
                writer.write(piece)
                continue
            if writer.transport.is_closing():  # loop.sendfile would raise RuntimeError
                raise ConnectionResetError("the connection is closing")
            try:
                sent = await loop.sendfile(writer.transport, piece.source, piece.position, piece.length, fallback=False)
            except asyncio.SendfileNotAvailableError:  # raised before any byte went
                writer.write(piece.tobytes())
                continue
            if sent != piece.length:
                raise OSError(f"{piece.source.path} ended {piece.length - sent} bytes early at byte {piece.position + sent}")
        await writer.drain()
    finally:
        for piece in pieces:
            if type(piece) is LogSlice:
                piece.source.close()


def _written_at_once(writer: asyncio.StreamWriter, parts: list[Any]) -> bool:
    """Write a response frame made of bytes alone (a Produce's answer, most others) when
    nothing is waiting to be sent before it; False, with nothing written, otherwise, for
    :func:`send_response`.

    The transport then sends it at once or buffers what the socket does not take (at most
    ``_AT_ONCE`` bytes), and there is nothing to drain: no idle deadline and no
    ``drain()`` per request (issue 16: a Produce's per-request cost). Whatever stays
    buffered makes the next response go through :func:`send_response`, which waits for
    it under the idle deadline; a peer that sends nothing more is closed when idle (reset,
    as when it takes no response).
    """
    transport = writer.transport
    if transport.get_write_buffer_size() or transport.is_closing():
        return False
    size = 0
    for part in parts:
        if type(part) is not bytes:
            return False
        size += len(part)
    if size > _AT_ONCE:
        return False
    for part in parts:
        writer.write(part)
    return True


class RequestMemory:
    """The bytes reserved for requests being received, across a server's connections.

    Kafka's ``SimpleMemoryPool`` (non-strict) sized by ``queued.max.request.bytes``, as
    accounting only: nothing is allocated here.

    Args:
        limit: reservations beyond which new frames wait; negative for no limit.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.reserved = 0
        self._freed: asyncio.Event | None = None

    async def reserve(self, size: int) -> None:
        """Reserve ``size`` bytes, first waiting while nothing is left (any memory left
        admits the whole frame, as Kafka's non-strict pool does)."""
        while not self.try_reserve(size):
            if self._freed is None:
                self._freed = asyncio.Event()
            await self._freed.wait()

    def try_reserve(self, size: int) -> bool:
        """Reserve ``size`` bytes if any memory is left, else False (nothing reserved)."""
        if 0 <= self.limit <= self.reserved:
            return False
        self.reserved += size
        return True

    def release(self, size: int) -> None:
        if size:
            self.reserved -= size
            if self._freed is not None:
                self._freed.set()  # every waiter rechecks
                self._freed = None


class _RequestStream(StreamProtocol):
    """One connection's asyncio protocol, which starts its :meth:`Server._serve` task.

    Reading: a :class:`asyncio.BufferedProtocol` whose buffers are the connection's
    :class:`~kproto.protocol.FrameReader`'s (as a client's connection, :mod:`kproto.io.connection`):
    the transport reads (with TLS, asyncio's SSL transport decrypts) straight into them,
    small requests into a scratch buffer, a large one (a Produce's megabyte) into a buffer
    of its own that becomes the frame the handlers decode, without a copy (issue 16: a
    ``StreamReader`` in between copied every byte about four times). Reading goes on
    while the frame at the head is incomplete and its memory reserved. Once the head's
    size is known, its memory is reserved here when any is left; else (see the module
    docstring), or once the stream ended or failed, reading pauses and the task is woken,
    and it goes on once the task reserved it (:meth:`wait`). A complete frame wakes the
    task without pausing: from the time it takes the frame (:meth:`taken`) until it waits
    again, reads bring at most the next frame's size prefix, and reading pauses once that
    is known. So while the task answers, or is muted by a quota (KIP-219), nothing is read
    past the next frame's size prefix (Kafka mutes its channel), but a peer's close is
    seen; and a request answered without waiting, the next one already sent, costs no
    pause and resume of reading (issue 16: four ``epoll_ctl`` calls and two more loop
    turns per 1 MB Produce).

    Writing: an :class:`asyncio.StreamWriter`'s (``send_response``, ``loop.sendfile``), whose
    ``drain()`` and ``wait_closed()`` take their flow control and close waiter from here
    (:class:`~kproto._streams.StreamProtocol`, as a client's connection).
    """

    def __init__(self, server: Server, listener: ListenerSecurity) -> None:
        loop = asyncio.get_running_loop()
        super().__init__(loop)
        self._server = server
        self._memory = server.request_memory
        self._listener = listener
        self._loop = loop
        self.frames = FrameReader(max_frame_size=server.config["socket.request.max.bytes"])
        #: Bytes reserved from the server's RequestMemory for the frame at the head, None
        #: until the task reserved them (it releases them when the frame is complete).
        self.reserved: int | None = None
        self.eof = False  # the peer closed (or the connection ended without an error)
        self.error: BaseException | None = None  # the connection failed, or a bad size prefix
        self.transport: Any = None
        #: The task took a frame and has not come back to :meth:`wait`: reads stop at the next size.
        self.busy = False
        #: The task is over: nothing more is reserved for it.
        self.done = False
        self._reading = True
        self._waiter: asyncio.Future | None = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        writer = asyncio.StreamWriter(transport, self, None, self._loop)
        if self._listener.ssl_context is not None:
            self._pause()  # nothing is read before the TLS handshake (start_tls reads again)
        self._loop.create_task(self._server._serve(self, writer, listener=self._listener))

    # asyncio.StreamWriter.start_tls's contract with its protocol (as a StreamReaderProtocol's):
    # a protocol with a connection callback is the server side, and it is told of the TLS
    # transport, which the same writer then writes to (a second writer would close the
    # plain transport under the TLS one when collected: StreamWriter.__del__)
    _client_connected_cb = True

    def _replace_writer(self, writer: asyncio.StreamWriter) -> None:  # Python 3.11, 3.12
        self._replace_transport(writer.transport)

    def _replace_transport(self, transport: Any) -> None:  # Python 3.13+ calls this instead
        self.transport = transport
        self._reading = True  # the TLS transport reads from the start

    async def wait(self) -> None:
        """Read until a frame is complete at the head, or the head's size needs reserving
        (:attr:`reserved` is None), or the stream ended or failed."""
        self.busy = False
        if self._ready():
            return
        self._resume()
        self._waiter = self._loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def taken(self) -> None:
        """The task took a frame: until it waits again, read on only until the next
        frame's size prefix is known. While the task answers, the peer's close is seen (an
        SSL transport then closes at once, as with a ``StreamReaderProtocol``), and at most
        the next frame's size is read: a task muted by a quota reads nothing more."""
        self.busy = True
        if self.frames.pending_size is None:
            self._resume()
        else:
            self._pause()

    def _ready(self) -> bool:
        if self.eof or self.error is not None:
            return True
        size = self.frames.pending_size
        if size is None:
            return False
        return self.reserved is None or self.frames.buffered >= size + 4

    def _pause(self) -> None:
        if self._reading:
            self._reading = False
            self.transport.pause_reading()

    def _resume(self) -> None:
        if not self._reading:
            self._reading = True
            self.transport.resume_reading()

    def _wake(self) -> None:
        self._pause()
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self.error is None and not self.eof:
            try:
                return self.frames.get_buffer(prefix_only=self.busy)
            except Exception as exc:  # a bad size prefix: the task closes the connection
                self.error = exc
                self._wake()
        return memoryview(bytearray(FrameReader.DIRECT_SIZE))  # failed: what still arrives is dropped

    def buffer_updated(self, nbytes: int) -> None:
        if self.error is not None or self.eof:
            return
        frames = self.frames
        try:
            frames.buffer_updated(nbytes)
        except Exception as exc:
            self.error = exc
            self._wake()
            return
        if (size := frames.pending_size) is None:
            return
        if self.busy:  # the next frame's size is known: nothing more until the task is back
            self._pause()
            return
        if self.reserved is None and not self.done and 0 <= size <= frames.max_frame_size \
                and self._memory.try_reserve(size):
            self.reserved = size  # (released by the task when the frame is complete)
        if self.reserved is None:
            self._wake()  # the task reserves it once memory is left (or refuses the size)
        elif frames.buffered >= size + 4 and self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)  # reading goes on: see taken()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        # plaintext: keep the transport open to answer what came before (a half close), as
        # StreamReaderProtocol does; an SSL transport cannot
        return self.transport.get_extra_info("sslcontext") is None

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if exc is None:
            self.eof = True
        elif self.error is None:
            self.error = exc
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class Server:
    """One broker listening on each of its listeners (:mod:`minibroker.listeners`).

    Args:
        cluster: the broker's place in a MiniCluster (its node id, controller channel and
            metadata image), given to its :class:`~minibroker.state.BrokerState`; None for
            a single broker.
    """

    def __init__(self, config: BrokerConfig, host: str, port: int, advertised_host: str | None = None,
                 advertised_port: int | None = None, *, cluster: ClusterContext | None = None):
        self.config = config
        self.cluster = cluster
        self.sendfile = os.environ.get("MINIBROKER_SENDFILE", "1") != "0"  # see the module docstring
        self.host = host
        self.port = port
        self._advertised = (advertised_host, advertised_port)
        #: Every listener (see :mod:`minibroker.listeners`); the first binds ``host:port``.
        self.listeners: list[ListenerSecurity] = listener_securities(config)
        #: The bound port of each listener by name, once started.
        self.ports: dict[str, int] = {}
        self.state: BrokerState | None = None
        self._server: asyncio.base_events.Server | None = None  # the first listener's
        self._servers: list[asyncio.base_events.Server] = []
        self._connections: dict[asyncio.Task, asyncio.StreamWriter] = {}
        self._maintenance: list[asyncio.Task] = []
        self.request_memory = RequestMemory(config["queued.max.request.bytes"])
        #: This broker's faults (request controls, isolation, slow disk): see :mod:`minibroker.faults`.
        self.faults = BrokerFaults(f"broker {cluster.node_id}" if cluster is not None else f"minibroker {host}:{port}")

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            for listener in self.listeners:  # a JWKS validator fetches its keys (minibroker.sasl)
                if listener.sasl is not None:
                    await asyncio.to_thread(listener.sasl.open)
            for i, listener in enumerate(self.listeners):
                host, port = (self.host, self.port) if i == 0 else (listener.bind.host or "0.0.0.0", listener.bind.port)
                server = await loop.create_server(functools.partial(_RequestStream, self, listener), host, port)
                self._servers.append(server)
                self.ports[listener.name] = server.sockets[0].getsockname()[1]
        except BaseException:  # a port taken: nothing stays bound
            await self._close_servers()
            self._close_security()
            raise
        self._server = self._servers[0]
        self.port = self.ports[self.listeners[0].name]
        if self.cluster is None:
            self.faults.name = f"minibroker {self.host}:{self.port}"
        host = self._advertised[0] or self.host
        port = self._advertised[1] or self.port
        try:
            self.state = BrokerState(self.config, host, port, cluster=self.cluster)
        except BaseException:  # e.g. a log directory locked by another broker: stop listening too
            await self._close_servers()
            self._close_security()
            self._server = None
            raise
        self.state.endpoints[self.listeners[0].name] = (host, port)
        for listener in self.listeners[1:]:
            self.state.endpoints[listener.name] = (listener.advertised.host or socket.getfqdn(),
                                                   listener.advertised.port or self.ports[listener.name])
        self._maintenance = [
            asyncio.create_task(self._every("log.retention.check.interval.ms", "log maintenance", self.state.maintain)),
            asyncio.create_task(self._every("offsets.retention.check.interval.ms", "group expiry", self.state.groups.expire)),
        ]
        log.info("minibroker listening on %s:%d (advertised %s:%d)", self.host, self.port, host, port)
        for listener in self.listeners[1:]:
            log.info("minibroker listener %s (%s) on port %d (advertised %s:%d)", listener.name, listener.protocol,
                     self.ports[listener.name], *self.state.endpoints[listener.name])

    def _close_security(self) -> None:
        """Stop what :meth:`start` opened for the listeners' SASL (a JWKS refresh thread)."""
        for listener in self.listeners:
            if listener.sasl is not None:
                listener.sasl.close()

    async def _close_servers(self) -> None:
        for server in self._servers:
            server.close()
            await server.wait_closed()
        self._servers = []

    async def _close_listener(self) -> None:
        """Stop accepting, and let connections already accepted reach _serve (a few loop
        turns: an accept task, the transport, connection_made, then the task). Closed at
        once, asyncio 3.11's Server refuses such a half-made connection by an
        AssertionError it swallows, leaving its socket open (CLOSE_WAIT) until a garbage
        collection."""
        loop = asyncio.get_running_loop()
        for server in self._servers:
            for sock in server.sockets:
                loop.remove_reader(sock.fileno())
        for _ in range(10):
            await asyncio.sleep(0)
        for server in self._servers:
            server.close()

    async def _end_tasks(self) -> None:
        """Cancel every connection's task and the upkeep tasks, and wait for them."""
        while self._connections:
            tasks = list(self._connections)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()
        self._servers = []
        self._server = None
        for task in self._maintenance:
            task.cancel()
        await asyncio.gather(*self._maintenance, return_exceptions=True)
        self._maintenance = []

    async def stop(self) -> None:
        if self._server is not None:
            await self._close_listener()
            await self._end_tasks()
            self.state.groups.close()  # cancels group timers, answers held joins and syncs
            self.state.close()
            self.faults.requests.clear()
            self._close_security()

    async def abort(self) -> None:
        """Crash (a MiniCluster's ``kill``): stop listening, reset every connection (RST:
        peers see a reset, as when a broker's process dies, with no answer to what they
        sent) and cancel every task. The state's files are left to the caller
        (:meth:`BrokerState.abandon`: nothing flushed, no checkpoints); group timers are
        cancelled, being this loop's and not the files'."""
        if self._server is None:
            return
        await self._close_listener()
        for writer in self._connections.values():
            sock = writer.get_extra_info("socket")
            if sock is not None:
                try:  # linger 0: close sends RST, not FIN
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:
                    pass
            writer.transport.abort()
        await self._end_tasks()
        self.state.groups.close()
        self.faults.requests.clear()
        self._close_security()
        log.info("minibroker on %s:%d aborted", self.host, self.port)

    async def _every(self, interval_key: str, what: str, job: Callable[[], Awaitable[object] | object]) -> None:
        """Run ``job`` every ``config[interval_key]`` ms: retention and compaction
        (:meth:`BrokerState.maintain`), expiry of offsets and empty groups
        (:meth:`~minibroker.coordinator.GroupCoordinator.expire`)."""
        interval = self.config[interval_key] / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                result = job()
                if inspect.isawaitable(result):
                    await result
            except Exception:  # one failure must not stop the upkeep for good
                log.exception("%s failed", what)

    async def _serve(self, stream: _RequestStream, writer: asyncio.StreamWriter, *,
                     listener: ListenerSecurity) -> None:
        task = asyncio.current_task()
        self._connections[task] = writer
        channel = None
        try:  # a stop() may cancel the TLS handshake: the connection must go all the same
            channel = await self._open_channel(listener, writer)
        finally:
            if channel is None:
                self._connections.pop(task, None)
                writer.close()
        if channel is None:
            return
        frames = stream.frames
        if channel.authenticator is not None:  # SaslServerAuthenticator's saslAuthRequestMaxReceiveSize
            frames.max_frame_size = min(frames.max_frame_size, self.config["sasl.server.max.receive.size"])
        host = client_host(writer.get_extra_info("peername"))
        loop = asyncio.get_running_loop()
        idle = self.config["connections.max.idle.ms"] / 1000
        memory = self.request_memory
        dropped = False  # a request control dropped a request: answer nothing more
        mute = ChannelMute()  # KIP-219: over a quota, nothing more is read until the throttle ends
        try:
            while True:
                try:  # the deadline restarts after every read and every answer: idle time only
                    async with asyncio.timeout_at(loop.time() + idle):
                        if stream.reserved is None and (size := frames.pending_size) is not None and 0 <= size <= frames.max_frame_size:
                            await memory.reserve(size)  # (stream.reserved is what the finally releases)
                            stream.reserved = size
                        await stream.wait()
                except TimeoutError:
                    log.info("closing connection from %s: idle for connections.max.idle.ms (%d ms)",
                             writer.get_extra_info("peername"), self.config["connections.max.idle.ms"])
                    if writer.transport.get_write_buffer_size():  # an answer it never took
                        writer.transport.abort()  # close() would wait to flush what it never reads
                    return
                if stream.error is not None:
                    raise stream.error
                if stream.eof:
                    frames.receive_data(b"")
                while (frame := frames.next_frame()) is not None:
                    memory.release(stream.reserved or 0)
                    stream.reserved = None
                    stream.taken()
                    if dropped:
                        continue
                    if channel.authenticator is not None and not await self._authenticate(channel, frame, writer, frames):
                        continue
                    parts = await self._answer(frame, host, stream, channel, mute)
                    if parts is _DROPPED:
                        dropped = True
                    elif parts is not None and not _written_at_once(writer, parts):
                        try:  # a peer that takes nothing is as idle as one that sends nothing
                            async with asyncio.timeout_at(loop.time() + idle):
                                await send_response(writer, parts, sendfile=self.sendfile)
                        except TimeoutError:
                            log.info("closing connection from %s: it took no response for connections.max.idle.ms (%d ms)",
                                     writer.get_extra_info("peername"), self.config["connections.max.idle.ms"])
                            writer.transport.abort()  # close() would wait to flush what it never reads
                            return
                    await mute.wait()
                if stream.eof:
                    return
        except (ProtocolError, _CloseConnection) as exc:
            log.info("closing connection from %s on listener %s: %s", writer.get_extra_info("peername"),
                     channel.listener_name, exc)
        except ConnectionError:
            pass
        except asyncio.CancelledError:
            pass
        except Exception:  # a handler bug must cost one connection, never the broker
            log.exception("closing connection after an internal error")
        finally:
            stream.done = True
            memory.release(stream.reserved or 0)
            stream.reserved = None
            self._connections.pop(task, None)
            writer.close()

    async def _open_channel(self, listener: ListenerSecurity, writer: asyncio.StreamWriter) -> Channel | None:
        """The connection's :class:`~minibroker.listeners.Channel`, after its TLS handshake
        on an SSL or SASL_SSL listener; None when that fails (logged at info: a client
        speaking plaintext to a TLS listener, an untrusted or missing client certificate)."""
        # the state is read at each look-up: a connection may come in before it is made
        channel = Channel(listener, lambda user, mechanism: self.state.scram_credentials.get(user, mechanism))
        if listener.ssl_context is None:
            return channel
        peer = writer.get_extra_info("peername")
        try:  # a handshake that stalls is idle time (Kafka's Selector counts it so)
            await writer.start_tls(listener.ssl_context,
                                   ssl_handshake_timeout=self.config["connections.max.idle.ms"] / 1000)
            channel.tls_established(writer.get_extra_info("ssl_object"))
        except (ssl.SSLError, ConnectionError, TimeoutError) as exc:
            log.info("closing connection from %s on listener %s: TLS handshake failed: %s", peer, listener.name, exc)
            return None
        except ValueError as exc:  # no ssl.principal.mapping.rules rule applies
            log.info("closing connection from %s on listener %s: %s", peer, listener.name, exc)
            return None
        return channel

    async def _authenticate(self, channel: Channel, frame: bytes, writer: asyncio.StreamWriter,
                            frames: FrameReader) -> bool:
        """Pass a frame through the connection's SASL authenticator (:mod:`minibroker.sasl`):
        True when it is a request for the handlers; else it was answered here. Once the
        connection is authenticated its frames may be as large as any connection's.

        Raises:
            _CloseConnection: authentication failed, or the session expired (KIP-368).
        """
        authenticator = channel.authenticator
        assert authenticator is not None
        step = authenticator.receive(frame, int(time.time() * 1000))
        if authenticator.authenticated:
            frames.max_frame_size = self.config["socket.request.max.bytes"]
        if step.dispatch:
            return True
        if step.failed and authenticator.settings.failed_delay_ms > 0:
            # Kafka's connection.failed.authentication.delay.ms: no fast retry loop
            await asyncio.sleep(authenticator.settings.failed_delay_ms / 1000)
        if step.reply is not None:
            writer.write(step.reply)
            await writer.drain()
        if step.close is not None:
            raise _CloseConnection(step.close)
        return False

    async def _answer(self, frame: bytes, host: str, stream: _RequestStream, channel: Channel,
                      mute: ChannelMute) -> list[Any] | None:
        """The pieces of the response frame (see :func:`send_response`), None when none is
        due, or ``_DROPPED`` (a request control dropped the request, or it was held by an
        isolation during which its peer went away)."""
        try:
            header, request = decode_request(frame, strict=False)  # lenient as Kafka: see decode_request
        except UnsupportedApiVersionError as exc:
            if exc.api_key == ApiKey.API_VERSIONS:
                return [encode_response(ApiKey.API_VERSIONS, 0, exc.correlation_id, api_versions_response(UnsupportedVersionError.code))]
            raise ProtocolError(f"unsupported API key {exc.api_key} version {exc.api_version}") from None
        entry = HANDLERS.get(header.api_key)
        if entry is None or not entry[0] <= header.api_version <= entry[1]:
            if header.api_key == ApiKey.API_VERSIONS:
                return [encode_response(ApiKey.API_VERSIONS, 0, header.correlation_id, api_versions_response(UnsupportedVersionError.code))]
            raise ProtocolError(f"API key {header.api_key} version {header.api_version} is not served by minibroker")
        faults = self.faults
        if faults.silent_to(header.client_id):  # isolated: as if the request were still on its way
            await faults.reachable(header.client_id)
            if stream.eof:
                return _DROPPED  # the peer gave up meanwhile: its request never arrives
        control = faults.requests.match(header.api_key, header.client_id)
        action = control.action if control is not None else None
        if isinstance(action, Drop):
            return _DROPPED
        if isinstance(action, Fail):
            if header.api_key == ApiKey.PRODUCE and getattr(request, "acks", None) == 0:
                # KafkaApis.handleProduceRequest: an acks=0 request's error closes the connection
                raise _CloseConnection(f"request control {action} on an acks=0 Produce")
            response = error_response(header.api_key, header.api_version, request, action.error_code)
            return encode_response_parts(header.api_key, header.api_version, header.correlation_id, response)
        if isinstance(action, Delay):
            await asyncio.sleep(action.seconds)
        if header.api_key in WRITE_APIS and faults.disk.delay_ms:
            await faults.disk.write()
        context = RequestContext.of(header, host, channel.principal, channel.listener_name)
        parts = await serve(self.state.quotas, entry[2], self.state, header, context, request,
                            len(frame), mute)  # the client's quotas (minibroker.quotas)
        if parts is None:
            return None
        if isinstance(action, Hold) or faults.silent_to(header.client_id):
            parts = _pin(parts, sendfile=False)  # bytes (views that never change) now: safe while it waits
            if control is not None and isinstance(action, Hold):
                await control.wait_released()
            await faults.reachable(header.client_id)
        return parts
