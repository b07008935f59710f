"""One asyncio TCP connection to one broker: pipelined requests, version negotiation.

Theory of operation. :meth:`Connection.open` connects and sends ApiVersions first (v3;
an old broker answers UNSUPPORTED_VERSION in a v0 body and we ask again at its highest
version, as KIP-511 intends). From then on :meth:`Connection.request` picks, for each
API, the highest version both sides support within the caller's bounds (and within
the versions kproto's clients send, :mod:`kproto.io.versions`), writes the
frame at once (requests are pipelined: many may be in flight) and awaits the response,
which the reading side matches by correlation id. A broker answers a connection's
requests in order, so an out-of-order or unknown correlation id means the stream is
broken: the connection fails every pending request and closes.

Reading. The connection is an :class:`asyncio.BufferedProtocol` whose buffers are its
:class:`~kproto.protocol.FrameReader`'s: the transport reads (``recv_into``; with TLS,
asyncio's SSL transport decrypts) straight into them, small responses many at a time into
a scratch buffer copied out once each, a large one (a Fetch) into a buffer of its own that
becomes the frame the decoder reads, without a copy. No ``StreamReader`` sits in between.
On a plaintext connection a large frame costs one or two turns of the event loop, not one
per segment: after a read that filled its buffer, the connection reads the rest of the
frame itself in the same turn, and while some of it is still due it sets ``SO_RCVLOWAT``
to that (Linux), so that the loop wakes once it is all queued (``_read_rest``).

Writing. A request is encoded as pieces (:func:`~kproto.protocol.frames.encode_request_parts`):
a Produce request's record batches are the producer's own objects, never joined into the
frame. On a plaintext connection before Python 3.12 the connection writes them itself with
``os.writev`` and keeps what the socket did not take as views of them, where asyncio's
transport would join them and copy the rest into its buffer (issue 16: two copies of every
batch, and memory that ``buffer.memory`` did not count); with TLS the SSL transport's
``writelines`` takes them, on Python 3.12+ the transport's ``write`` one by one (see
``_Writer``).

Without the event loop. A caller that owns the loop's thread and has nothing else for the
loop to do (a Spark task's Fetch loop: issue 16) may write a request with
:meth:`Connection.send_now` and read its answer with :meth:`Connection.wait_now`, which
polls the socket and reads it as the loop's transport would, into the same
FrameReader, with the same correlation ids and failures, bounded by the same timeout. It
works where the connection reads and writes its socket itself (plaintext, before Python
3.12); elsewhere, or while a throttle holds the connection or a re-authentication is due,
``send_now`` declines and the caller uses :meth:`Connection.request`. Each answer then
costs a ``writev``, a ``poll`` and the reads, where the loop took two runs, a task and
seven ``epoll_wait`` (a Spark task's CPU per record: 7% less outside Spark).

Quotas (KIP-219): a broker that throttles a client answers at once with
``throttle_time_ms`` > 0 and expects nothing more on that connection until the time
is up. Any response saying so holds the connection: requests made meanwhile get their
correlation ids (their order is kept) but are written only when the time ends, and
their timeout starts then. :attr:`Connection.throttled_until` lets a caller with a
choice (the producer's sender) keep its data back rather than queue it here.

A connection with nothing in flight and no traffic for ``connections.max.idle.ms``
closes itself, as Java's client does; the cluster opens a new one when next needed.
One timer checks at most once per idle period, so busy connections pay nothing.

Security. With an ``ssl_context`` (:func:`kproto.security.tls.client_context`) the
connection is TLS, the broker's host name sent and checked as the context says; with a
``sasl`` client (:func:`kproto.security.sasl.client_sasl`) it authenticates after
ApiVersions, as Java's ``SaslClientAuthenticator`` does: SaslHandshake v1 names the
mechanism, then SaslAuthenticate requests (the highest version both sides have) carry the
mechanism's messages (:meth:`~kproto.security.sasl.SaslClient.conversation`). No other
request goes out before that ends. A broker that answers SaslAuthenticate v1+ with a
``session_lifetime_ms`` (KIP-368) gets the exchange again on the same connection before
the session ends: at a random point between 85% and 95% of it (Java's
``SaslClientAuthenticator``: network latency and clock drift, and no storm of
re-authentications at once), when the next request is made. Requests already sent get
their answers as usual (the broker answers in order); requests made meanwhile wait and go
out once the session is renewed, as Java's ``KafkaChannel`` holds its sends.

A TLS or SASL failure is an :class:`~kproto.errors.AuthenticationError` (not retriable):
:class:`~kproto.errors.SslAuthenticationError` names the broker's certificate and the
check that failed (it is fetched again, unverified, only to say so), or says that the
listener does not speak what ``security.protocol`` says (a TLS client on a plaintext
listener, the reverse), which would otherwise look like a broker that closes at once;
:class:`~kproto.errors.SaslAuthenticationError` (a wrong password, a refused or expired
token) carries the broker's message, :class:`~kproto.errors.UnsupportedSaslMechanismError`
the broker's enabled mechanisms. The TLS handshake and the SASL exchange are bounded by
``socket.connection.setup.timeout.ms`` as connecting is.

Every wait is bounded, whatever the peer does (a broker that is alive but reads
nothing fills the socket's buffers): connecting and ApiVersions by
``socket.connection.setup.timeout.ms``, a request by ``request.timeout.ms`` from the
moment it is written, including the time its write waits for buffer space, and
:meth:`Connection.close` by its timeout, after which unsent bytes are dropped. A
connection that failed is aborted at once: nothing on it is worth sending.

Failures are typed: :class:`~kproto.errors.KafkaConnectionError` when the socket fails
(connect, write or read; every in-flight request gets it), :class:`~kproto.errors.KafkaTimeoutError`
when one request outlives ``request.timeout.ms`` (the connection is closed too, as
Java's client does, since a late answer would arrive out of step), and
:class:`~kproto.errors.UnsupportedVersionError` when the broker and kproto share no
version of an API.
"""

from __future__ import annotations

import asyncio
import errno
import itertools
import logging
import os
import random
import select
import socket
import ssl
import sys
import time
from collections import deque
from collections.abc import Callable
from typing import Any, NoReturn

from kproto._loop import wait_for
from kproto._streams import StreamProtocol
from kproto.errors import (
    ClientClosedError,
    IllegalSaslStateError,
    KafkaConnectionError,
    KafkaTimeoutError,
    ProtocolError,
    SaslAuthenticationFailedError,
    SslAuthenticationError,
    UnsupportedSaslMechanismError,
    UnsupportedVersionError,
    for_code,
)
from kproto.io.versions import client_versions
from kproto.protocol import APIS, ApiKey, FrameReader, Message, decode_response
from kproto.protocol.frames import encode_request_parts
from kproto.protocol.messages import (
    REQUESTS,
    ApiVersionsRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from kproto.security.sasl import SaslClient
from kproto.security.tls import describe_failure

__all__ = ["Connection"]

log = logging.getLogger("kproto.connection")

_KEY_OF = {cls: key for key, cls in REQUESTS.items()}
_API_VERSIONS_FIRST = 3  # the version asked first; KIP-511's fallback covers older brokers
# SaslHandshake v1: the exchange travels in SaslAuthenticate requests (KIP-152); a broker
# with v0 only (Kafka before 1.0) takes the mechanism's tokens as raw size-prefixed frames
_SASL_HANDSHAKE = 1
# KIP-368, Java's SaslClientAuthenticator: re-authenticate at 85% of the session lifetime
# plus up to 10% of jitter, for network latency and clock drift and against a storm
_REAUTH_AT, _REAUTH_JITTER = 0.85, 0.10
_CONNECT_ERRNOS = frozenset({errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EADDRNOTAVAIL,
                             errno.ETIMEDOUT})
# Linux's epoll honours SO_RCVLOWAT for TCP (tcp_poll), and caps it at half the receive
# buffer itself (tcp_set_rcvlowat), growing an autotuned one to fit: see Connection._read_rest
_RCVLOWAT = sys.platform == "linux"
_READV = hasattr(os, "readv")  # (not on Windows: the transport reads every byte there)

SOFTWARE_NAME = "kproto"


def _software_version() -> str:
    from kproto import __version__  # late: kproto/__init__ imports the clients

    return __version__


class Connection:
    """A connection to the broker at ``host:port``.

    Args:
        host, port: where to connect.
        client_id: sent in every request header (``client.id``).
        request_timeout_ms: how long one request may wait for its response.
        connect_timeout_ms: how long the TCP connect and ApiVersions may take.
        max_frame_size: the largest response frame accepted.
        node_id: the broker's node id if known (-1 for a bootstrap server); for messages.
        send_buffer_bytes, receive_buffer_bytes: SO_SNDBUF / SO_RCVBUF (-1: the OS's).
        max_idle_ms: close the connection after this long without traffic
            (``connections.max.idle.ms``; -1: never).
        ssl_context: TLS with this context (None: plaintext); the broker's certificate is
            checked against ``host`` when the context checks host names.
        sasl: authenticate with this SASL client after ApiVersions (None: no SASL).

    Attributes:
        api_versions: what the broker offers, ``{api_key: (min_version, max_version)}``,
            known once :meth:`open` returned.
        finalized_features: the broker's finalized feature levels (KIP-584, ApiVersions
            v3+), ``{name: max_version_level}``, such as ``transaction.version``; empty
            for a broker that has none.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str = "kproto",
        request_timeout_ms: int = 30000,
        connect_timeout_ms: int = 10000,
        max_frame_size: int = 100 * 1024 * 1024,
        node_id: int = -1,
        send_buffer_bytes: int = -1,
        receive_buffer_bytes: int = -1,
        max_idle_ms: int = -1,
        ssl_context: ssl.SSLContext | None = None,
        sasl: SaslClient | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.node_id = node_id
        self.client_id = client_id
        self.request_timeout = request_timeout_ms / 1000
        self.connect_timeout = connect_timeout_ms / 1000
        self._buffers = (send_buffer_bytes, receive_buffer_bytes)
        self._frames = FrameReader(max_frame_size=max_frame_size)
        self._writer: _Writer | None = None
        self._pending: deque[tuple[int, int, int, asyncio.Future]] = deque()  # (correlation id, key, version, future)
        self._next_correlation_id = 0
        self._closed = False
        self._failure: BaseException | None = None
        self.throttled_until = 0.0
        """``time.monotonic()`` until which the broker asked for no requests (0: never)."""
        self._held: list[list[Any]] | None = None  # frames (pieces) written when the throttle ends
        self._release: asyncio.TimerHandle | None = None
        self._unheld: asyncio.Future | None = None  # done once the held frames are written
        self._max_idle = max_idle_ms / 1000 if max_idle_ms >= 0 else None
        self._last_active = time.monotonic()
        self._idle_timer: asyncio.TimerHandle | None = None
        self._idle_close: asyncio.Task | None = None
        self.api_versions: dict[int, tuple[int, int]] = {}  # the broker's: key -> (min, max)
        self.finalized_features: dict[str, int] = {}
        self._ssl = ssl_context
        self._sasl = sasl
        self.session_expires_at: float | None = None
        """``time.monotonic()`` when the broker's SASL session ends (KIP-368), None: never."""
        self._reauth_at: float | None = None  # when the next request re-authenticates first
        self._reauth: asyncio.Task | None = None  # a re-authentication under way
        self._first_bytes = True  # the first read of a plaintext connection: TLS answering?
        self._fd = -1  # a plaintext connection's socket, read directly for the rest of a large frame
        self._sock: Any = None  # the transport's socket (its setsockopt), when _fd is set
        self._asked = 0  # the size of the buffer handed to the transport's last read
        self._lowat = 1  # SO_RCVLOWAT as set (see _read_rest)
        self._lowat_cap = 0  # the most SO_RCVLOWAT may ask (0: never set it; -1: not known yet)
        self._raw: asyncio.Future | None = None  # SaslHandshake v0: the broker's next raw frame
        self._loop: Any = None  # the event loop it was opened on (send_now works without it running)

    metrics: Any = None  # kproto.metrics.NodeSensors of the client (set by the Cluster), or None

    def __repr__(self) -> str:
        return f"<Connection node {self.node_id} {self.host}:{self.port}{' closed' if self.closed else ''}>"

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def in_flight(self) -> int:
        """Requests sent and not yet answered."""
        return len(self._pending)

    def when_written(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (on the loop, without arguments) once every request written so
        far has gone to the socket, or the connection ended; at once, from here, when
        nothing waits. Requests held by a throttle (KIP-219) are not waited for. Where the
        transport writes (TLS, Python 3.12+: see ``_Writer``) at once, as its buffer says
        nothing when it empties.

        The producer's sender uses it to hand the loop back to a thread only once what it
        sent is in the kernel (:meth:`~kproto.producer.sender.Sender.hand_off`).
        """
        if self._writer is None or self._closed:
            callback()
        else:
            self._writer.when_written(callback)

    # -- life cycle -----------------------------------------------------------------------

    async def open(self) -> None:
        """Connect (with TLS when configured), negotiate API versions, and authenticate
        (SASL when configured).

        Raises:
            KafkaConnectionError: the broker cannot be reached, or it closed the connection.
            KafkaTimeoutError: connecting, the TLS handshake, ApiVersions or the SASL
                exchange took over ``connect_timeout_ms`` (together).
            SslAuthenticationError: the TLS handshake failed (the broker's certificate, the
                client's, or a listener that does not speak TLS), or the listener speaks TLS
                to a plaintext connection.
            SaslAuthenticationError, UnsupportedSaslMechanismError: SASL failed.
        """
        deadline = time.monotonic() + self.connect_timeout
        what = "connecting to" if self._ssl is None else "connecting and the TLS handshake with"
        loop = self._loop = asyncio.get_running_loop()
        stream = _Stream(self, loop)
        try:
            transport, _ = await wait_for(self._connect(loop, stream), self.connect_timeout)
        except TimeoutError:
            raise KafkaTimeoutError(f"{what} {self.host}:{self.port} took over {self.connect_timeout:g} s") from None
        except ssl.SSLCertVerificationError as exc:
            der = await _tls_probe(self.host, self.port, deadline - time.monotonic())
            raise SslAuthenticationError(describe_failure(exc, self.host, self.port, der)) from None
        except ssl.SSLError as exc:
            raise SslAuthenticationError(f"TLS handshake with {self.host}:{self.port} failed: "
                                         f"{exc.reason or exc}") from None
        except OSError as exc:
            if self._ssl is not None and _after_connect(exc):
                # Connected, then closed in the handshake: what a plaintext listener does with a
                # ClientHello (Kafka's reads it as an oversized request)
                raise SslAuthenticationError(
                    f"TLS handshake with {self.host}:{self.port} failed: the broker closed the connection "
                    f"({str(exc) or type(exc).__name__}); is the listener PLAINTEXT? (security.protocol says TLS)"
                ) from None
            raise KafkaConnectionError(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        sock = transport.get_extra_info("socket")
        if sock is not None and not transport.is_closing():  # a peer may have closed at once
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # requests are small and latency-bound
        self._writer = _Writer(transport, stream, loop, self._write_failed)
        step = "ApiVersions"
        try:
            await wait_for(self._negotiate(), max(deadline - time.monotonic(), 0))
            if self._sasl is not None:
                step = "the SASL exchange"
                await wait_for(self._authenticate(), max(deadline - time.monotonic(), 0))
        except BaseException as exc:
            await self.close()
            if isinstance(exc, asyncio.TimeoutError):
                raise KafkaTimeoutError(f"{self.host}:{self.port} did not complete {step} within "
                                        f"{self.connect_timeout:g} s (socket.connection.setup.timeout.ms)") from None
            if isinstance(exc, KafkaConnectionError) and step == "ApiVersions":
                if self._ssl is not None:
                    # TLS 1.3: the client's handshake ends before the broker has checked the
                    # client's certificate; a broker refusing it closes the connection then
                    # (an asyncio broker without even an alert)
                    raise SslAuthenticationError(
                        f"{self.host}:{self.port} closed the TLS connection without answering ApiVersions: a broker "
                        f"that requires client certificates (ssl.client.auth=required) does this when it gets none "
                        f"or one it does not trust: check ssl.keystore.* / ssl.certificate.location ({exc})") from None
                # A TLS listener closes on a plaintext ApiVersions (an asyncio one without an
                # alert): asked of bootstrap servers only, where a wrong protocol shows first,
                # so that a broker that keeps hanging up does not cost two connections a try
                if self.node_id == -1 and await _tls_probe(self.host, self.port, deadline - time.monotonic()):
                    raise SslAuthenticationError(
                        f"{self.host}:{self.port} closed the connection without answering ApiVersions, and it speaks "
                        "TLS: the listener is SSL or SASL_SSL, set security.protocol to match") from None
            raise
        if self._max_idle is not None:
            self._idle_timer = asyncio.get_running_loop().call_later(self._max_idle, self._check_idle)

    def _check_idle(self) -> None:
        if self._closed:
            return
        quiet = time.monotonic() - self._last_active
        if self._pending or quiet < self._max_idle:
            wait = self._max_idle - quiet if not self._pending else self._max_idle
            self._idle_timer = asyncio.get_running_loop().call_later(max(wait, 0.001), self._check_idle)
            return
        log.debug("%r: idle for %.1f s, closing", self, quiet)
        self._idle_timer = None
        # Closed now, so nobody writes to it from here on; the socket's clean-up follows.
        self._fail(KafkaConnectionError(f"{self.host}:{self.port}: closed after {quiet:.0f} s idle "
                                        "(connections.max.idle.ms)"))
        self._idle_close = asyncio.get_running_loop().create_task(self.close())

    async def _negotiate(self) -> None:
        request = ApiVersionsRequest(client_software_name=SOFTWARE_NAME, client_software_version=_software_version())
        response = await self._send(ApiKey.API_VERSIONS, _API_VERSIONS_FIRST, request)
        if response.error_code == UnsupportedVersionError.code:
            # KIP-511: the broker answered in v0 with the versions it has; ask again in its highest.
            theirs = {k.api_key: k.max_version for k in response.api_keys}.get(ApiKey.API_VERSIONS, 0)
            response = await self._send(ApiKey.API_VERSIONS, min(theirs, _API_VERSIONS_FIRST), request)
        if response.error_code:
            raise for_code(response.error_code)(f"ApiVersions from {self.host}:{self.port}")
        self.api_versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        self.finalized_features = {f.name: f.max_version_level for f in response.finalized_features or ()}

    async def _authenticate(self) -> None:
        """SaslHandshake v1, then the mechanism's messages in SaslAuthenticate requests
        (Java's ``SaslClientAuthenticator``); also a KIP-368 re-authentication. With a
        broker that has SaslHandshake v0 only (before Kafka 1.0), the messages go as raw
        frames, as Java's client sends them to such a broker."""
        sasl = self._sasl
        assert sasl is not None
        send = self._send_auth
        if ApiKey.SASL_HANDSHAKE not in self.api_versions:
            raise UnsupportedSaslMechanismError(
                f"{self.host}:{self.port} does not speak SASL (no SaslHandshake in its ApiVersions): its listener is "
                "PLAINTEXT or SSL, not what security.protocol says")
        token = await sasl.token() if sasl.mechanism == "OAUTHBEARER" else None
        version = self.version_for(ApiKey.SASL_HANDSHAKE, 0, _SASL_HANDSHAKE)
        handshake = await send(ApiKey.SASL_HANDSHAKE, version, SaslHandshakeRequest(mechanism=sasl.mechanism))
        if handshake.error_code == UnsupportedSaslMechanismError.code:
            raise UnsupportedSaslMechanismError(
                f"{self.host}:{self.port}: client SASL mechanism '{sasl.mechanism}' not enabled in the server, "
                f"enabled mechanisms are [{', '.join(handshake.mechanisms or ())}] (sasl.mechanism)")
        if handshake.error_code:
            # ILLEGAL_SASL_STATE: Kafka's KafkaApis answers a SaslHandshake on a listener without SASL so
            hint = ": is the listener PLAINTEXT or SSL? (security.protocol says SASL)" if handshake.error_code == IllegalSaslStateError.code else ""
            raise for_code(handshake.error_code)(f"SaslHandshake with {self.host}:{self.port} "
                                                 f"(mechanism {sasl.mechanism}){hint}")
        conversation = sasl.conversation(token)
        message, lifetime_ms = next(conversation), 0
        if version == 0:  # Kafka before 1.0: raw tokens, and a refusal is a closed connection
            while True:
                reply = await self._raw_exchange(message, sasl.mechanism)
                try:
                    message = conversation.send(reply)
                except StopIteration:
                    break
            self.session_expires_at = self._reauth_at = None
            return
        version = self.version_for(ApiKey.SASL_AUTHENTICATE)
        while True:
            response = await send(ApiKey.SASL_AUTHENTICATE, version, SaslAuthenticateRequest(auth_bytes=message))
            if response.error_code:
                conversation.close()
                detail = response.error_message or "no message"
                if response.error_code == SaslAuthenticationFailedError.code:
                    expiry = f" (the token expired at {token.expires_at:.0f}, epoch seconds)" if (
                        token is not None and token.expires_at is not None and token.expires_at < time.time()) else ""
                    raise SaslAuthenticationFailedError(
                        f"{self.host}:{self.port} refused {sasl.mechanism} authentication"
                        f"{'' if sasl.username is None else f' of user {sasl.username!r}'}: {detail}{expiry}")
                raise for_code(response.error_code)(f"SaslAuthenticate with {self.host}:{self.port}: {detail}")
            lifetime_ms = getattr(response, "session_lifetime_ms", 0) or 0
            try:
                message = conversation.send(response.auth_bytes)
            except StopIteration:
                break
        now = time.monotonic()
        if lifetime_ms > 0:
            self.session_expires_at = now + lifetime_ms / 1000
            self._reauth_at = now + (_REAUTH_AT + _REAUTH_JITTER * random.random()) * lifetime_ms / 1000
            log.debug("%r: SASL session of %d ms; re-authenticating in %.1f s", self, lifetime_ms,
                      self._reauth_at - now)
        else:
            self.session_expires_at = self._reauth_at = None

    async def _raw_exchange(self, token: bytes, mechanism: str) -> bytes:
        """SaslHandshake v0: ``token`` as a raw size-prefixed frame, and the broker's raw
        answer. Such a broker refuses by closing the connection, with no error text."""
        assert self._writer is not None and not self._pending
        self._raw = asyncio.get_running_loop().create_future()
        self._writer.write([len(token).to_bytes(4, "big"), token])
        try:
            return await wait_for(asyncio.shield(self._raw), self.request_timeout)
        except KafkaConnectionError as exc:
            raise SaslAuthenticationFailedError(
                f"{self.host}:{self.port} closed the connection during {mechanism} authentication (SaslHandshake "
                f"v0, a broker before Kafka 1.0, gives no reason): wrong credentials? ({exc})") from None
        except TimeoutError:
            error = KafkaTimeoutError(f"{self.host}:{self.port} did not answer a SASL token within "
                                      f"{self.request_timeout:g} s")
            self._fail(error)
            raise error from None
        finally:
            self._raw = None

    async def _send_auth(self, api_key: int, version: int, body: Message) -> Any:
        return await self._send(api_key, version, body, authenticating=True)

    async def _reauthenticate(self) -> None:
        """KIP-368: the SASL exchange again on this connection; a failure fails it."""
        log.debug("%r: re-authenticating (KIP-368)", self)
        # The broker answers in order: the answers already due come first, each bounded by
        # its own request.timeout.ms (which fails the connection), so only the SASL
        # exchange after them is timed here (Java queues those answers: KafkaChannel).
        try:
            due = [future for *_, future in self._pending]
            if due:
                await asyncio.wait(due)
            await wait_for(self._authenticate(), self.connect_timeout)
        except TimeoutError:
            error: BaseException = KafkaTimeoutError(
                f"re-authentication with {self.host}:{self.port} took over {self.connect_timeout:g} s")
        except BaseException as exc:
            error = exc
        else:
            return
        finally:
            self._reauth = None
        self._fail(error)
        raise error

    async def close(self, timeout: float | None = None) -> None:
        """Close the socket; requests still in flight fail with :class:`ClientClosedError`.

        Bytes written and not yet sent (a Produce with acks=0) get ``timeout`` seconds
        (None: ``request.timeout.ms``) to leave; a peer that reads nothing meanwhile (a
        frozen broker) is cut off then, so a close never waits longer whatever the peer does.
        Also the clean-up of a connection that failed (or closed itself when idle).
        """
        self._fail(ClientClosedError(f"connection to {self.host}:{self.port} closed"))
        if self._writer is not None:
            self._writer.close()
            closed = asyncio.ensure_future(self._writer.wait_closed())
            try:
                # shielded: a cancelled wait_closed() cancels the close waiter it shares
                await wait_for(asyncio.shield(closed), self.request_timeout if timeout is None else timeout)
            except TimeoutError:
                self._writer.abort()  # what is left unsent is dropped
                await asyncio.gather(closed, return_exceptions=True)
            except OSError:
                pass
            except asyncio.CancelledError:
                # The close waiter was cancelled (it is the stream's, shared): nothing to do.
                # But a cancel of the closing task itself goes on up, the socket cut off, or
                # a loop that closes its connection on the way out would never end (issue 13).
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    self._writer.abort()
                    raise

    # -- requests -------------------------------------------------------------------------

    def version_for(self, api_key: int, min_version: int = 0, max_version: int | None = None) -> int:
        """The highest version of ``api_key`` that kproto, the caller and the broker share.

        kproto's are the versions its clients send (:func:`kproto.io.versions.client_versions`:
        the schema table's, narrowed where a client does not use what a version adds);
        ``min_version``/``max_version`` narrow them for one request.

        Raises:
            UnsupportedVersionError: there is none.
        """
        ours = client_versions(api_key)
        theirs = self.api_versions.get(api_key)
        hi = ours.hi if max_version is None else min(ours.hi, max_version)
        lo = max(ours.lo, min_version)
        if theirs is not None:
            lo, hi = max(lo, theirs[0]), min(hi, theirs[1])
        if theirs is None or lo > hi:
            name = APIS[api_key].name
            offered = f"{theirs[0]}-{theirs[1]}" if theirs else "none"
            raise UnsupportedVersionError(
                f"{self.host}:{self.port} offers {name} versions {offered}; kproto needs {max(ours.lo, min_version)}-{hi}")
        return hi

    async def request(
        self,
        body: Message,
        *,
        min_version: int = 0,
        max_version: int | None = None,
        expect_response: bool = True,
        timeout: float | None = None,
    ) -> Any:
        """Send ``body`` at the best shared version and return the decoded response.

        ``expect_response=False`` is for Produce with acks=0, which the broker does not
        answer: the call returns None once the frame is written. ``timeout`` (seconds)
        overrides ``request.timeout.ms`` for requests that wait on purpose (a held
        JoinGroup, a long-polled Fetch).
        """
        api_key = _KEY_OF[type(body)]
        version = self.version_for(api_key, min_version, max_version)
        return await self._send(api_key, version, body, expect_response, timeout)

    async def request_versioned(self, body: Message, version: int, *, timeout: float | None = None) -> Any:
        """Send ``body`` at exactly ``version`` (the caller already chose it)."""
        return await self._send(_KEY_OF[type(body)], version, body, True, timeout)

    async def _send(self, api_key: int, version: int, body: Message, expect_response: bool = True,
                    timeout: float | None = None, *, authenticating: bool = False) -> Any:
        if not authenticating and self._reauth_at is not None and not self._closed:
            if self._reauth is None and time.monotonic() >= self._reauth_at:
                self._reauth_at = None
                self._reauth = asyncio.get_running_loop().create_task(self._reauthenticate())
                # retrieved here too: the requests that waited for it may all have gone
                self._reauth.add_done_callback(lambda t: t.cancelled() or t.exception())
            if self._reauth is not None:  # Java holds new sends while re-authenticating
                await asyncio.shield(self._reauth)
        if self._closed:
            if isinstance(self._failure, ClientClosedError):  # its owner closed it
                raise ClientClosedError(f"connection to {self.host}:{self.port} is closed")
            # It failed or closed itself: a retriable condition, a new connection may work.
            raise KafkaConnectionError(f"connection to {self.host}:{self.port} is closed: {self._failure}")
        future, data = self._enqueue(api_key, version, body, expect_response)
        wait = self.request_timeout if timeout is None else timeout
        written = self._unheld
        started = time.monotonic()
        if self._held is not None:
            self._held.append(data)
        else:
            try:
                self._writer.write(data)
                if self._writer.buffered > 1 << 20:
                    # Back-pressure only when the kernel buffer is full. The request's time
                    # runs meanwhile, as in Java (its timeout starts once the request is
                    # handed to the network layer): a broker that stopped reading must not
                    # hold the caller for longer than request.timeout.ms (issue 10, item 14).
                    await wait_for(self._writer.drain(), wait)
            except TimeoutError:
                await self._timed_out(api_key, version, wait, "could not write")
            except (OSError, RuntimeError) as exc:
                error = KafkaConnectionError(f"writing to {self.host}:{self.port} failed: {exc}")
                self._fail(error)
                raise error from exc
        if self.metrics is not None:  # observability (kproto.metrics)
            self.metrics.sent(sum(map(len, data)))
        if future is None:
            return None
        if written is not None:
            await asyncio.shield(written)  # the request's time starts when it goes out
            started = time.monotonic()
        # asyncio.wait, not wait_for: before Python 3.12, wait_for returns the answer when a
        # cancellation comes in the turn the answer arrives, and the cancellation is lost
        # (CPython gh-86296); wait never cancels the future and always raises the cancel.
        done, _ = await asyncio.wait((future,), timeout=max(wait - (time.monotonic() - started), 0))
        if not done:
            await self._timed_out(api_key, version, wait, "got no response")
        if self.metrics is not None:  # observability (kproto.metrics)
            self.metrics.answered(time.monotonic() - started)
        return future.result()

    def _enqueue(self, api_key: int, version: int, body: Message, expect_response: bool
                 ) -> tuple[asyncio.Future | None, list[Any]]:
        """A request's correlation id, frame (as pieces) and future, in the queue of those
        awaiting an answer: what every way of sending a request does first."""
        self._next_correlation_id = (self._next_correlation_id + 1) & 0x7FFFFFFF
        correlation_id = self._next_correlation_id
        self._last_active = time.monotonic()
        # Pieces, not one joined frame: a Produce request's record batches go to the
        # socket as they are, not copied (issue 16; _Writer).
        data = encode_request_parts(api_key, version, correlation_id, self.client_id, body)
        future = None
        if expect_response:
            future = self._loop.create_future()
            self._pending.append((correlation_id, api_key, version, future))
        return future, data

    # -- requests without the event loop ----------------------------------------------------

    def send_now(self, body: Message) -> asyncio.Future | None:
        """Write ``body`` (at the best shared version) at once, from outside the event loop,
        for a caller that then reads the answer with :meth:`wait_now` on this same thread,
        with the loop not running; None, having sent nothing, where only the loop may send
        it: a connection that is TLS (asyncio's SSL transport owns its bytes), closed,
        throttled (KIP-219: its requests wait), due to re-authenticate, or whose earlier
        writes still wait for the socket, and on Python 3.12+ (the transport writes there,
        see ``_Writer``).

        Issue 16: a Spark task's Fetch loop. Each answer taken through :meth:`request`
        costs two runs of the event loop, a task and seven ``epoll_wait``; this costs one
        ``writev``, and :meth:`wait_now` a ``poll`` and the reads.
        """
        writer = self._writer
        if (writer is None or writer._fd < 0 or self._fd < 0 or self._closed or self._held is not None
                or self._raw is not None or writer.buffered or writer.transport.is_closing()
                or (self._reauth_at is not None and (self._reauth is not None or time.monotonic() >= self._reauth_at))):
            return None
        api_key = _KEY_OF[type(body)]
        future, data = self._enqueue(api_key, self.version_for(api_key), body, True)
        writer.write(data)  # (a failed write fails the connection, and so the future)
        if self.metrics is not None:  # observability (kproto.metrics)
            self.metrics.sent(sum(map(len, data)))
        return future

    def wait_now(self, future: asyncio.Future, timeout: float | None = None) -> Any:
        """The answer to a request of :meth:`send_now`: this connection's socket read here,
        with the event loop not running, until it comes (answers to requests sent before it
        are taken in on the way, as the loop would).

        Bounded as :meth:`request` is: after ``timeout`` seconds (``request.timeout.ms`` by
        default) the connection fails with :class:`~kproto.errors.KafkaTimeoutError`, and is
        closed once the loop next runs.

        Raises:
            KafkaTimeoutError: no answer within the timeout.
            KafkaConnectionError: the connection failed (it is closed).
        """
        wait = self.request_timeout if timeout is None else timeout
        started = time.monotonic()
        poller = select.poll()
        writer = self._writer
        writing = writer is not None and writer.buffered > 0  # what the socket did not take at once
        poller.register(self._fd, select.POLLIN | (select.POLLOUT if writing else 0))
        while not future.done() and not self._closed:
            left = wait - (time.monotonic() - started)
            if left <= 0:
                error = KafkaTimeoutError(f"{APIS[self._pending[0][1]].name} v{self._pending[0][2]} to "
                                          f"{self.host}:{self.port} got no response in {wait:g} s")
                self._fail(error)  # (the loop, when it next runs, sees the transport aborted)
                raise error
            events = poller.poll(max(left * 1000, 1))
            if writing and any(mask & select.POLLOUT for _, mask in events):
                writer._writable()  # type: ignore[union-attr]
                if not writer.buffered:  # type: ignore[union-attr]
                    writing = False
                    poller.modify(self._fd, select.POLLIN)
            if not any(mask & ~select.POLLOUT for _, mask in events):
                continue
            buf = self._get_buffer()
            try:
                n = os.readv(self._fd, [buf])
            except (BlockingIOError, InterruptedError):
                continue  # (the buffer is handed out again at the next read)
            except OSError as exc:
                self._frames.buffer_updated(0)
                self._read_failed(exc)
                break
            if n:
                self._received(n)
            else:
                self._received_eof()
        if self.metrics is not None and future.done() and not future.cancelled() and future.exception() is None:
            self.metrics.answered(time.monotonic() - started)
        if not future.done():  # (a future of send_now is failed when the connection fails)
            raise KafkaConnectionError(f"connection to {self.host}:{self.port} is closed: {self._failure}")
        return future.result()

    async def _timed_out(self, api_key: int, version: int, wait: float, what: str) -> NoReturn:
        """Give up on a request after ``wait`` seconds: the connection closes too (a late
        answer would arrive out of step), as Java's NetworkClient does."""
        error = KafkaTimeoutError(f"{APIS[api_key].name} v{version} to {self.host}:{self.port} {what} in {wait:g} s")
        self._fail(error)
        await self.close()
        raise error from None

    # -- the reader -----------------------------------------------------------------------

    # Called by _Stream, the connection's asyncio protocol: the transport reads (or TLS
    # decrypts) straight into the buffers the FrameReader hands out, so a response's bytes
    # are copied once at most (a large one not at all) on their way to the decoder.

    async def _connect(self, loop: asyncio.AbstractEventLoop,
                       stream: _Stream) -> tuple[asyncio.BaseTransport, asyncio.BaseProtocol]:
        """A transport over a socket whose buffer sizes (``send.buffer.bytes``,
        ``receive.buffer.bytes``) are set before connect(2), as Java's Selector sets them:
        tcp(7) has them take effect only then. Set after, a receive buffer smaller than
        loopback's 64 KiB segments let a Fetch answer come one window probe (8 KiB) per
        200 ms. The addresses are tried in getaddrinfo's order, as create_connection does."""
        errors: list[OSError] = []
        try:  # an address as it is, as create_connection takes it: no resolver thread
            addresses = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM,
                                           flags=socket.AI_NUMERICHOST)
        except socket.gaierror:
            addresses = await loop.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
        for family, kind, proto, _, address in addresses:
            sock = socket.socket(family, kind, proto)
            try:
                for option, size in zip((socket.SO_SNDBUF, socket.SO_RCVBUF), self._buffers):
                    if size > 0:
                        sock.setsockopt(socket.SOL_SOCKET, option, size)
                sock.setblocking(False)
                await loop.sock_connect(sock, address)
            except OSError as exc:
                sock.close()
                errors.append(exc)
                continue
            except BaseException:
                sock.close()
                raise
            return await loop.create_connection(lambda: stream, sock=sock, ssl=self._ssl,
                                                server_hostname=self.host if self._ssl is not None else None)
        if len({str(exc) for exc in errors}) > 1:
            raise OSError(f"Multiple exceptions: {', '.join(str(exc) for exc in errors)}")
        raise errors[0] if errors else OSError(f"no address for {self.host}")

    def _get_buffer(self) -> memoryview:
        if not self._closed:
            try:
                buf = self._frames.get_buffer()
                self._asked = len(buf)
                return buf
            except Exception as exc:  # (next_frame refuses a bad size first) not the transport's to log
                self._read_failed(exc)
        return memoryview(bytearray(FrameReader.DIRECT_SIZE))  # closed: what still arrives is dropped

    def _connected(self, transport: asyncio.BaseTransport) -> None:
        """The transport is there: a plaintext one's socket is read by _read_rest too."""
        sock = transport.get_extra_info("socket")
        if self._ssl is None and _READV and sock is not None:  # (with TLS: see _read_rest)
            self._fd, self._sock = sock.fileno(), sock
            self._lowat_cap = -1 if _RCVLOWAT else 0  # known at its first use (open() sets SO_RCVBUF)

    def _received(self, nbytes: int) -> None:
        frames = self._frames
        if self._closed:
            return
        try:
            frames.buffer_updated(nbytes)
            if self._first_bytes and (size := frames.pending_size) is not None:
                self._first_bytes = False
                # a TLS record (alert 0x15 or handshake 0x16, version 3.x) where a size prefix belongs
                if self._ssl is None and size >> 24 in (0x15, 0x16) and size >> 16 & 0xFF == 3:
                    raise SslAuthenticationError(
                        f"{self.host}:{self.port} answered with TLS (a TLS record, not a Kafka response): the "
                        "listener is SSL or SASL_SSL, set security.protocol to match")
            more = self._fd >= 0 and nbytes == self._asked  # the read filled its buffer: more may be queued
            while True:
                while (frame := frames.next_frame()) is not None:
                    self._dispatch(frame)
                if self._fd < 0 or self._closed or not self._read_rest(more):
                    break
        except Exception as exc:
            self._read_failed(exc)

    def _read_rest(self, more: bool) -> bool:
        """After a read on a plaintext connection: read the rest of a large frame (a Fetch
        answer) in this same turn of the loop, straight into its buffer, when the last read
        filled its buffer (its size prefix alone, after a large frame: see FrameReader), so
        more is likely queued; True when the frame is now complete. Otherwise, while the
        rest is due, set ``SO_RCVLOWAT`` to it (at most half the receive buffer): Linux
        then wakes the loop once that much is queued (or at end of stream, an error, or
        a receive window too small to let it come, tcp_epollin_ready), not at every
        segment; back to 1 once no large frame is due.

        Issue 16: a Spark task's 2 MiB answer took two turns of the loop when queued
        whole (its size prefix, then the rest), and one more per 64-256 KiB when it
        was still arriving. Not with TLS: the socket's bytes are TLS records, more
        than the frame's, and the SSL transport may hold decrypted bytes back, so a low
        mark counted in frame bytes could wait for bytes that never come."""
        frames = self._frames
        size = frames.pending_size
        due = 0 if size is None or size < FrameReader.DIRECT_SIZE else size + 4 - frames.buffered
        if due and more:
            buf = frames.get_buffer()
            rest = len(buf)  # (buffer_updated releases buf)
            try:
                n = os.readv(self._fd, [buf])
            except (BlockingIOError, InterruptedError):
                n = 0
            except BaseException:
                frames.buffer_updated(0)  # (the buffer handed out is given back)
                raise  # as the transport's own read error: the connection fails
            frames.buffer_updated(n)
            if n == rest:
                return True  # complete: dispatched, then maybe the next one
            due -= n  # (n == 0 also at end of stream: the transport's next read sees it)
        if self._lowat_cap < 0:  # a receive.buffer.bytes set: at most half of it, as Linux caps it
            self._lowat_cap = self._sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) // 2 \
                if self._buffers[1] > 0 else 1 << 30
        want = min(due, self._lowat_cap) or 1
        if want != self._lowat and self._lowat_cap:
            self._lowat = want
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, want)
        return False

    def _received_eof(self) -> None:
        if self._closed:
            return
        try:
            self._frames.receive_data(b"")
            while (frame := self._frames.next_frame()) is not None:
                self._dispatch(frame)
            raise KafkaConnectionError(f"{self.host}:{self.port} closed the connection")
        except Exception as exc:
            self._read_failed(exc)

    def _lost(self, exc: BaseException | None) -> None:
        if not self._closed:
            self._read_failed(exc or KafkaConnectionError(f"{self.host}:{self.port} closed the connection"))

    def _read_failed(self, exc: BaseException) -> None:
        """Fail the connection for what reading found, typed as Connection's docstring says."""
        if isinstance(exc, (KafkaConnectionError, SslAuthenticationError)):
            self._fail(exc)
        elif isinstance(exc, ssl.SSLError):  # e.g. the broker refused our certificate (TLS 1.3 says so after the handshake)
            self._fail(SslAuthenticationError(f"TLS with {self.host}:{self.port} failed: {exc.reason or exc}"
                                              f"{_CLIENT_CERT_HINT if 'CERTIFICATE' in str(exc.reason) else ''}"))
        else:
            if not isinstance(exc, (OSError, ProtocolError)):
                log.error("%r: reading failed", self, exc_info=exc)
            self._fail(KafkaConnectionError(f"connection to {self.host}:{self.port} failed: {exc}"))

    def _dispatch(self, frame: bytes) -> None:
        if self._raw is not None and not self._pending:  # SaslHandshake v0's raw token answer
            if not self._raw.done():
                self._raw.set_result(frame)
            return
        if not self._pending:
            raise ProtocolError(f"{self.host}:{self.port} sent a response nobody asked for")
        correlation_id, api_key, version, future = self._pending[0]
        self._last_active = time.monotonic()
        if self.metrics is not None:  # observability (kproto.metrics)
            self.metrics.received(len(frame))
        got = int.from_bytes(frame[:4], "big", signed=True)
        if got != correlation_id:
            # (left in the queue: the connection's failure settles it with the others, at once)
            raise ProtocolError(f"{self.host}:{self.port} answered correlation id {got}, expected {correlation_id}")
        self._pending.popleft()
        if future.done():
            return  # its caller gave up (cancelled)
        try:
            _, response = decode_response(api_key, version, frame)
        except ProtocolError as exc:
            future.set_exception(exc)
            raise
        throttle_ms = getattr(response, "throttle_time_ms", 0)
        if throttle_ms > 0:
            self._throttle(throttle_ms, APIS[api_key].name)
        future.set_result(response)

    def _throttle(self, throttle_ms: int, api_name: str) -> None:
        until = time.monotonic() + throttle_ms / 1000
        if until <= self.throttled_until:
            return
        log.info("%r: throttled for %d ms (%s response)", self, throttle_ms, api_name)
        self.throttled_until = until
        if self._held is None:
            self._held = []
            self._unheld = self._loop.create_future()  # (not get_running_loop(): wait_now reads without it)
        if self._release is not None:
            self._release.cancel()
        self._release = self._loop.call_later(throttle_ms / 1000, self._write_held)

    def _write_held(self) -> None:
        held, unheld, self._held, self._release, self._unheld = self._held, self._unheld, None, None, None
        if held and not self._closed:
            try:
                self._writer.write([piece for frame in held for piece in frame])
            except (OSError, RuntimeError) as exc:
                self._fail(KafkaConnectionError(f"writing to {self.host}:{self.port} failed: {exc}"))
        if unheld is not None and not unheld.done():
            unheld.set_result(None)

    def _write_failed(self, exc: OSError) -> None:
        self._fail(KafkaConnectionError(f"writing to {self.host}:{self.port} failed: {exc}"))

    def _fail(self, error: BaseException) -> None:
        """Mark the connection broken and fail everything in flight with ``error``."""
        if not self._closed:
            self._closed = True
            self._failure = error
            if not isinstance(error, ClientClosedError):
                log.debug("%r: %s", self, error)
        while self._pending:
            future = self._pending.popleft()[3]
            if not future.done():
                future.set_exception(error)
                future.exception()  # retrieved: nobody may be awaiting it any more
        if self._raw is not None and not self._raw.done():
            self._raw.set_exception(error)
            self._raw.exception()
        for timer in (self._release, self._idle_timer):
            if timer is not None:
                timer.cancel()
        self._release = self._idle_timer = None
        if self._unheld is not None and not self._unheld.done():
            self._unheld.set_result(None)  # held requests stop waiting: theirs failed above
        if self._writer is not None:
            if isinstance(error, ClientClosedError):
                self._writer.close()  # its owner's close: what is written still leaves (close() bounds the wait)
            else:
                self._writer.abort()  # broken: nothing more to send, and a frozen peer would keep it open


class _Writer:
    """A :class:`Connection`'s write side: frames handed over as lists of pieces
    (:func:`~kproto.protocol.frames.encode_request_parts`), sent in order, never joined.

    Python 3.11's transport would copy a Produce request's record batches twice more on
    their way to the socket: ``writelines`` joins the pieces, and what the socket does not
    take at once (most of a megabyte request) is copied into the transport's buffer (issue
    16). So on a plaintext connection (SASL_PLAINTEXT included: Kafka's SASL mechanisms do
    not wrap the data) of a selector event loop before Python 3.12, this writes itself:
    ``os.writev`` of the pieces, at once when nothing waits, and what the socket did not
    take is kept as views of the caller's pieces (their objects, no copy) until the socket
    is writable again. The transport then never buffers anything and keeps the reading.

    Elsewhere the transport writes. TLS: the SSL transport's ``writelines`` (asyncio's
    ``sslproto``, every version) queues each piece and encrypts it as it comes; it refuses
    writes once closing, and its ciphertext goes through the socket transport's ``write``,
    which pauses the protocol. Plaintext on Python 3.12+: ``write`` of each piece, which
    keeps it uncopied (the 3.12 selector transport buffers views, sent with ``sendmsg``),
    pauses the protocol and drops writes after the connection was lost. Not the socket
    transport's ``writelines``: it did not pause the protocol before 3.12.9 / 3.13.2
    (CPython gh-127655: ``drain()`` never waited, a peer that read nothing let a producer
    pile up its whole buffer), and it registers a writer on a socket already closing
    (gh-136234: the next connection given the same fd number broke). In every mode a
    write once the transport is closing (its owner's ``close()``, or a read error that
    made it abort itself, before ``connection_lost``) is dropped: the connection fails the
    request when the loss is reported.

    ``close()`` lets what is queued leave first, then closes the transport; ``abort()``
    drops it; the stream's ``connection_lost`` calls ``lost()``, before the socket closes.
    """

    DRAINED = 1 << 20  # drain() returns once no more than this waits (Connection's threshold)

    def __init__(self, transport: asyncio.Transport, stream: _Stream, loop: asyncio.AbstractEventLoop,
                 failed: Callable[[OSError], None]) -> None:
        self.transport = transport
        self._failed = failed  # a write failed (the connection fails, and aborts this)
        self._stream = asyncio.StreamWriter(transport, stream, None, loop)  # the transport's way
        self._loop: Any = loop
        self._fd = -1  # writing here (os.writev) when >= 0
        self._tls = transport.get_extra_info("sslcontext") is not None  # else: write() per piece
        sock = transport.get_extra_info("socket")
        if (_OWN_WRITEV and sock is not None and not self._tls
                and isinstance(loop, asyncio.selector_events.BaseSelectorEventLoop)):
            self._fd = sock.fileno()
        self._queue: deque[Any] = deque()  # pieces (or views of their rests) not written yet
        self._queued = 0  # their bytes
        self._watching = False  # the loop calls _writable when the socket can take more
        self._closing = False
        self._done = False  # lost, aborted or failed: nothing more is written
        self._drained: asyncio.Future | None = None
        self._on_written: list[Callable[[], None]] = []  # when_written's callbacks

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.transport.get_extra_info(name, default)

    @property
    def buffered(self) -> int:
        """Bytes written and not yet taken by the socket."""
        return self._queued if self._fd >= 0 else self.transport.get_write_buffer_size()

    def write(self, pieces: list[Any]) -> None:
        """Send ``pieces`` (bytes-like, in order) after what was written before."""
        if self._done or self._closing or self.transport.is_closing():
            return  # as a closed transport's write: the connection fails (or failed) the request
        if self._fd < 0:
            if self._tls:
                self.transport.writelines(pieces)
            else:
                for piece in pieces:
                    if type(piece) is memoryview and piece.itemsize != 1:
                        piece = piece.cast("B")  # the transport slices the unsent rest by bytes sent
                    self.transport.write(piece)
            return
        pieces = [piece for piece in pieces if _nbytes(piece)]  # os.writev would take none of it
        self._queue.extend(pieces)
        self._queued += sum(map(_nbytes, pieces))
        if not self._watching:
            self._send()

    async def drain(self) -> None:
        """Wait until no more than :attr:`DRAINED` bytes wait for the socket.

        Raises:
            ConnectionResetError: the connection was lost meanwhile.
        """
        if self._fd < 0:
            await self._stream.drain()
            return
        while self._queued > self.DRAINED and not self._done:
            if self._drained is None:
                self._drained = self._loop.create_future()
            await asyncio.shield(self._drained)
        if self._done:
            raise ConnectionResetError("Connection lost")

    def when_written(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the queue is empty (all of it taken by the socket) or the
        connection is lost; at once when it is empty already, or when the transport writes
        (its buffer gives no signal when it empties)."""
        if self._fd < 0 or not self._queue or self._done:
            callback()
        else:
            self._on_written.append(callback)

    def close(self) -> None:
        """Close once what is queued has left (:meth:`wait_closed` waits for it)."""
        if self._fd < 0 or not self._queue:
            self._stream.close()
        self._closing = True

    async def wait_closed(self) -> None:
        await self._stream.wait_closed()

    def abort(self) -> None:
        """Close at once; what is queued is dropped."""
        self.lost()
        self.transport.abort()

    def lost(self) -> None:
        """The connection ended (or is being cut): stop writing, let go of the queue."""
        if self._done:
            return
        self._done = True
        if self._watching:
            self._loop._remove_writer(self._fd)
            self._watching = False
        self._queue.clear()
        self._queued = 0
        self._wake()
        self._written()

    # -- writing (os.writev) --------------------------------------------------------------

    def _send(self) -> None:
        queue = self._queue
        while queue:
            try:
                sent = os.writev(self._fd, queue if len(queue) <= _IOV_MAX else list(itertools.islice(queue, _IOV_MAX)))
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:  # the peer reset or closed the connection
                self.lost()
                self._failed(exc)
                return
            self._queued -= sent
            while sent:
                size = _nbytes(queue[0])
                if sent >= size:
                    queue.popleft()
                    sent -= size
                else:
                    queue[0] = memoryview(queue[0]).cast("B")[sent:]  # a view of the rest, no copy
                    sent = 0
        if queue and not self._watching:
            # The transport's way of waiting for its socket (asyncio's selector transports
            # call the same): the public add_writer refuses a socket a transport owns.
            self._loop._add_writer(self._fd, self._writable)
            self._watching = True
        elif not queue and self._watching:
            self._loop._remove_writer(self._fd)
            self._watching = False
        if self._queued <= self.DRAINED:
            self._wake()
        if not queue:
            self._written()
            if self._closing:
                self._stream.close()

    def _writable(self) -> None:
        if not self._done:
            self._send()

    def _wake(self) -> None:
        if self._drained is not None:
            if not self._drained.done():
                self._drained.set_result(None)
            self._drained = None

    def _written(self) -> None:
        if self._on_written:
            callbacks, self._on_written = self._on_written, []
            for callback in callbacks:
                callback()


def _nbytes(piece: Any) -> int:
    return piece.nbytes if type(piece) is memoryview else len(piece)


def _iov_max(sysconf: Callable[[str], int] | None = None) -> int:
    """Pieces per ``os.writev``: the system's IOV_MAX, at least POSIX's minimum of 16
    (``_POSIX_UIO_MAXIOV``), and 1024 (Linux's) at most or when the system has no limit
    (sysconf says -1) or does not say."""
    sysconf = sysconf or getattr(os, "sysconf", None)
    try:
        limit = sysconf("SC_IOV_MAX") if sysconf is not None else -1
    except (ValueError, OSError):
        limit = -1
    return 1024 if limit < 0 else min(max(limit, 16), 1024)


_IOV_MAX = _iov_max()
_OWN_WRITEV = sys.version_info < (3, 12) and hasattr(os, "writev")  # else the transport writes (_Writer)


class _Stream(StreamProtocol):
    """A :class:`Connection`'s asyncio protocol. Reading: a :class:`asyncio.BufferedProtocol`
    whose buffers are the FrameReader's (asyncio's TLS transport fills them as it decrypts).
    Writing: an :class:`asyncio.StreamWriter`'s, whose ``drain()`` and ``wait_closed()`` take
    their flow control and close waiter from here (:class:`~kproto._streams.StreamProtocol`)."""

    def __init__(self, connection: Connection, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self._connection = connection

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._connection._connected(transport)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._connection._get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self._connection._received(nbytes)

    def eof_received(self) -> bool:
        self._connection._received_eof()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self._connection._writer is not None:
            self._connection._writer.lost()  # before the transport closes the socket
        self._connection._lost(exc)


_CLIENT_CERT_HINT = " (the broker refused the client certificate: check ssl.keystore.* / ssl.certificate.location)"


def _after_connect(exc: OSError) -> bool:
    """Whether an error of ``open_connection`` came after the TCP connection was made (in
    the TLS handshake) rather than from connecting."""
    return not isinstance(exc, (ConnectionRefusedError, socket.gaierror)) and exc.errno not in _CONNECT_ERRNOS


async def _tls_probe(host: str, port: int, timeout: float) -> bytes | None:
    """The certificate (DER) of a TLS server at ``host:port``, not verified; None when it
    does not complete a TLS handshake within ``timeout``. Only to explain a failure."""
    if timeout <= 0:
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        _, writer = await wait_for(asyncio.open_connection(host, port, ssl=context), timeout)
    except (TimeoutError, OSError):
        return None
    try:
        return writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.transport.abort()
