"""Whole frames: size prefix, request and response headers, and a sans-I/O frame reader.

This is where peer bytes enter kproto's protocol layer, for both roles: a client calls
:func:`encode_request` (or :func:`encode_request_parts`, which leaves large record batches
as they are, for a writer that takes a list of buffers) and :func:`decode_response`, a broker :func:`decode_request` and
:func:`encode_response` (or :func:`encode_response_parts`, which leaves records unread for
a broker that sends them from files); :class:`FrameReader` cuts a byte stream into frames
for either. Nothing here touches a socket or a clock.

Facts (Kafka protocol guide, "Common Request and Response Structure"; RequestHeader.json,
ResponseHeader.json):

* Every message on the wire is ``INT32 size`` followed by ``size`` bytes (the frame).
* Request header v0: ``api_key INT16, api_version INT16, correlation_id INT32``. v1 adds
  ``client_id NULLABLE_STRING``; v2 adds TAGGED_FIELDS. ``client_id`` stays a non-compact
  NULLABLE_STRING even in v2, so a broker can read it before knowing the version.
* Response header v0: ``correlation_id INT32``; v1 adds TAGGED_FIELDS.
* A flexible API version uses request header v2 and response header v1, others v1 and v0.
  Exceptions: ApiVersions responses always use header v0, so a client can read one whatever
  version the broker chose (KIP-511); ControlledShutdown v0 requests use header v0 (that API
  is broker-internal and not in the table, but the rule lives here).
* After SaslHandshake v0 the SASL tokens travel as bare size-prefixed frames without any
  header (the io layer handles that; v1 wraps them in SaslAuthenticate instead).

Errors: garbage from a peer raises :class:`~kproto.errors.ProtocolError` (the connection is
unusable). A request for an API key or version the table lacks raises its subclass
:class:`UnsupportedApiVersionError` instead, carrying the header, so a broker can still
answer (Kafka answers an unknown ApiVersions version with a v0 body, KIP-511).
"""

from __future__ import annotations

import io
import struct
import sys
from typing import Any, NamedTuple

from kproto.codec import uninitialized_bytes
from kproto.errors import ProtocolError
from kproto.protocol.messages import APIS, REQUESTS, RESPONSES, ApiKey
from kproto.protocol.schema import EncodeError, Message, join_parts
from kproto.protocol.types import NULLABLE_STRING, TAGGED_FIELDS, write_tagged_fields

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "OWN_PIECE",
    "RequestHeader",
    "UnsupportedApiVersionError",
    "request_header_version",
    "response_header_version",
    "encode_request",
    "encode_request_parts",
    "decode_request",
    "encode_response",
    "encode_response_parts",
    "decode_response",
    "frame",
    "FrameReader",
]

#: Kafka's ``socket.request.max.bytes`` default (100 MiB): the largest frame accepted.
DEFAULT_MAX_FRAME_SIZE = 100 * 1024 * 1024

_CONTROLLED_SHUTDOWN = 7

_SIZE = struct.Struct(">i")
_REQ_HEAD = struct.Struct(">hhi")
_PACK_H = struct.Struct(">h").pack
_UNPACK_H = struct.Struct(">h").unpack_from

# Per API key: (message class, codec, lowest version, highest version, first flexible
# version), read from the table once so the per-frame path does plain int comparisons.
_REQUEST_INFO = {k: (c, c._codec, c.VERSIONS.lo, c.VERSIONS.hi, c.FLEXIBLE.lo if c.FLEXIBLE else 1 << 16)
                 for k, c in REQUESTS.items()}
_RESPONSE_INFO = {k: (c, c._codec, c.VERSIONS.lo, c.VERSIONS.hi, c.FLEXIBLE.lo if c.FLEXIBLE else 1 << 16)
                  for k, c in RESPONSES.items()}


class RequestHeader(NamedTuple):
    """A decoded request header (a named tuple: cheap on the broker's hot path).

    Attributes:
        api_key: the API key.
        api_version: the API version.
        correlation_id: echoed in the response.
        client_id: the client's id; None in header v0 or when the client sent null.
        tagged_fields: ``{tag: bytes}`` of header v2 tagged fields, or None.
    """

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None
    tagged_fields: dict[int, bytes] | None = None


class UnsupportedApiVersionError(ProtocolError):
    """A request names an API key or version that the table does not have.

    The body was not parsed. Kafka answers with UNSUPPORTED_VERSION (code 35); for an
    ApiVersions request it answers in the v0 body format with its supported ranges (KIP-511).

    Attributes:
        api_key: the requested API key.
        api_version: the requested version.
        correlation_id: the request's correlation id, for the answer.
        client_id: the client id if it could be read, else None.
        known_api: True when only the version is unknown.
    """

    def __init__(self, api_key: int, api_version: int, correlation_id: int, client_id: str | None, known_api: bool):
        what = f"version {api_version} of API key {api_key}" if known_api else f"API key {api_key}"
        super().__init__(f"unsupported request: {what}")
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id
        self.known_api = known_api

    def __reduce__(self) -> tuple[Any, ...]:  # keep the fields across pickling
        return (type(self), (self.api_key, self.api_version, self.correlation_id, self.client_id, self.known_api))


def _api(api_key: int) -> Any:
    try:
        return APIS[api_key]
    except KeyError:
        raise ValueError(f"API key {api_key} is not in kproto's schema table") from None


def request_header_version(api_key: int, api_version: int) -> int:
    """Return the request header version (0, 1 or 2) for an API version.

    Raises:
        ValueError: the API key is not in the table (ControlledShutdown aside).
    """
    if api_key == _CONTROLLED_SHUTDOWN:
        return 0 if api_version == 0 else (2 if api_version >= 3 else 1)
    return 2 if api_version in _api(api_key).flexible else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """Return the response header version (0 or 1): ApiVersions is always 0.

    Raises:
        ValueError: the API key is not in the table.
    """
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if api_version in _api(api_key).flexible else 0


def frame(payload: bytes) -> bytes:
    """Prefix ``payload`` with its INT32 size."""
    return _SIZE.pack(len(payload)) + payload


def _finish(parts: list[Any]) -> bytes:
    # parts[0] is a placeholder for the size prefix: one join, one copy of the records.
    try:
        parts[0] = _SIZE.pack(sum(map(len, parts)))
    except TypeError:
        pass  # a non-bytes value: join_parts names the problem
    return join_parts(parts)


def encode_request(
    api_key: int,
    api_version: int,
    correlation_id: int,
    client_id: str | None,
    body: Message,
    *,
    header_tagged_fields: dict[int, bytes] | None = None,
) -> bytes:
    """Encode a request frame, **including** its 4-byte size prefix, ready to send.

    Args:
        api_key: the API key; must match ``body``'s class.
        api_version: the version to encode.
        correlation_id: the id the response will echo.
        client_id: the client id (dropped in header v0).
        body: the request body, e.g. a :class:`~kproto.protocol.messages.ProduceRequest`.
        header_tagged_fields: raw tagged fields for header v2 (rarely needed).

    Raises:
        ValueError: unknown API key or version (a :class:`~kproto.protocol.schema.EncodeError`
            when ``body`` cannot be encoded).
    """
    return _finish(_request_parts(api_key, api_version, correlation_id, client_id, body, header_tagged_fields))


#: A bytes-like part of a request at least this long is a piece of its own in
#: :func:`encode_request_parts` (a Produce request's record batches); shorter runs are joined.
OWN_PIECE = 16 * 1024


def encode_request_parts(
    api_key: int,
    api_version: int,
    correlation_id: int,
    client_id: str | None,
    body: Message,
) -> list[Any]:
    """:func:`encode_request`'s frame as pieces to send in order, for a writer that takes a
    list of buffers (``writev``, ``sendmsg``, a transport's ``writelines``).

    A bytes-like value of at least :data:`OWN_PIECE` bytes (a Produce request's record
    batches) is a piece of its own, the caller's object itself, not copied; the runs of
    smaller parts between them (size prefix, header, fields) are joined. Joined, the pieces
    are exactly what :func:`encode_request` returns.

    Raises:
        ValueError: as :func:`encode_request`.
    """
    parts = _request_parts(api_key, api_version, correlation_id, client_id, body, None)
    try:
        parts[0] = _SIZE.pack(sum(map(len, parts)))
    except TypeError:
        return [join_parts(parts)]  # a value without a len(): join_parts names the problem
    pieces: list[Any] = []
    run: list[Any] = []
    for part in parts:
        if len(part) >= OWN_PIECE and isinstance(part, _BYTES_LIKE):
            if run:
                pieces.append(join_parts(run))
                run = []
            pieces.append(part)
        else:
            run.append(part)
    if run:
        pieces.append(join_parts(run))
    return pieces


def _request_parts(api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: Message,
                   header_tagged_fields: dict[int, bytes] | None) -> list[Any]:
    # parts[0] is left for the size prefix (see _finish).
    info = _REQUEST_INFO.get(api_key)
    if info is None:
        raise ValueError(f"API key {api_key} is not in kproto's schema table")
    codec, flex = info[1], api_version >= info[4]
    parts: list[Any] = [b"", _REQ_HEAD.pack(api_key, api_version, correlation_id)]
    if client_id is None:
        parts.append(b"\xff\xff")
    else:
        cid = client_id.encode()
        parts.append(_PACK_H(len(cid)))
        parts.append(cid)
    if flex:
        if header_tagged_fields:
            write_tagged_fields(parts.append, None, header_tagged_fields)
        else:
            parts.append(b"\x00")
    codec.encode_into(body, api_version, parts.append)
    return parts


def _response_parts(api_key: int, api_version: int, correlation_id: int, body: Message) -> list[Any]:
    # parts[0] is left for the size prefix (see _finish).
    info = _RESPONSE_INFO.get(api_key)
    if info is None:
        raise ValueError(f"API key {api_key} is not in kproto's schema table")
    parts: list[Any] = [b"", _SIZE.pack(correlation_id)]
    if api_version >= info[4] and api_key != ApiKey.API_VERSIONS:
        parts.append(b"\x00")  # response header v1: empty tagged fields
    info[1].encode_into(body, api_version, parts.append)
    return parts


def encode_response(api_key: int, api_version: int, correlation_id: int, body: Message) -> bytes:
    """Encode a response frame, **including** its 4-byte size prefix, ready to send.

    Raises:
        ValueError: unknown API key or version (a :class:`~kproto.protocol.schema.EncodeError`
            when ``body`` cannot be encoded).
    """
    return _finish(_response_parts(api_key, api_version, correlation_id, body))


_BYTES_LIKE = (bytes, bytearray, memoryview)


def encode_response_parts(api_key: int, api_version: int, correlation_id: int, body: Message) -> list[Any]:
    """Encode a response frame as pieces to send in order, leaving stand-ins for records unread.

    For a broker that sends records straight from files (``os.sendfile``): a records field
    may hold, instead of bytes, any object whose ``len()`` is the size of the records it
    stands for. The encoder writes that size as the field's length and passes the object
    through; here it stays in its place, between ``bytes`` runs holding everything else
    (size prefix and header included). Sending each piece in order, each stand-in as the
    bytes it stands for, sends exactly what :func:`encode_response` gives for the same body
    with those bytes in the records fields.

    Returns:
        ``bytes`` and stand-in objects, never two ``bytes`` in a row; a body without
        stand-ins gives one ``bytes``, the whole frame.

    Raises:
        ValueError: as :func:`encode_response`; a :class:`~kproto.protocol.schema.EncodeError`
            also for a ``str`` in a bytes or records field.
    """
    parts = _response_parts(api_key, api_version, correlation_id, body)
    parts[0] = _SIZE.pack(sum(map(len, parts)))  # every part has a len(): the encoder took it
    pieces: list[Any] = []
    run: list[Any] = []
    for part in parts:
        if isinstance(part, _BYTES_LIKE):
            run.append(part)
        elif isinstance(part, str):  # has a len(), but is text: the caller's mistake
            raise EncodeError(f"a bytes or records field holds a str: {part[:40]!r}")
        else:
            if run:
                pieces.append(join_parts(run))
                run = []
            pieces.append(part)
    if run:
        pieces.append(join_parts(run))
    return pieces


def _as_bytes(data: Any) -> bytes:
    # Decoders slice records out of this object as memoryviews: it must be immutable.
    return data if type(data) is bytes else bytes(data)


def decode_request(data: Any, *, strict: bool = True) -> tuple[RequestHeader, Message]:
    """Decode a request frame (the bytes after the size prefix): the broker's entry point.

    With ``strict=False``, bytes after the last field of the body are ignored, as Kafka's
    own broker does: librdkafka's all-topics Metadata v12 request carries three such
    bytes, and a broker that refused them could not serve it.

    Returns:
        ``(header, body)``.

    Raises:
        UnsupportedApiVersionError: the API key or version is not in the table; the body
            was not read, the header fields needed to answer are on the exception.
        ProtocolError: anything else malformed: the connection should be closed.
    """
    b = _as_bytes(data)
    if len(b) < _REQ_HEAD.size:
        raise ProtocolError(f"request frame of {len(b)} bytes is shorter than a request header")
    api_key, api_version, correlation_id = _REQ_HEAD.unpack_from(b, 0)
    info = _REQUEST_INFO.get(api_key)
    if info is None or not info[2] <= api_version <= info[3]:
        client_id = None
        if api_key != _CONTROLLED_SHUTDOWN or api_version > 0:
            try:  # every header from v1 on starts with the same client_id
                client_id, _ = NULLABLE_STRING.read(b, _REQ_HEAD.size)
            except ProtocolError:
                pass
        raise UnsupportedApiVersionError(api_key, api_version, correlation_id, client_id, info is not None)
    # client_id: a classic NULLABLE_STRING in header v1 and v2 alike
    pos = _REQ_HEAD.size + 2
    if pos > len(b):
        raise ProtocolError("request header truncated in client_id")
    (n,) = _UNPACK_H(b, _REQ_HEAD.size)
    if n >= 0:
        if pos + n > len(b):
            raise ProtocolError("request header truncated in client_id")
        client_id = b[pos : pos + n].decode("utf-8", "replace")
        pos += n
    elif n == -1:
        client_id = None
    else:
        raise ProtocolError(f"request header: invalid client_id length {n}")
    tags = None
    if api_version >= info[4]:
        if pos < len(b) and b[pos] == 0:
            pos += 1
        else:
            tags, pos = TAGGED_FIELDS.read(b, pos)
    body, pos = info[1].decode_from(b, pos, api_version)
    if strict and pos != len(b):
        raise ProtocolError(f"{len(b) - pos} trailing bytes after {info[0].__name__} v{api_version}")
    return RequestHeader(api_key, api_version, correlation_id, client_id, tags or None), body


def decode_response(api_key: int, api_version: int, data: Any) -> tuple[int, Message]:
    """Decode a response frame (the bytes after the size prefix): the client's entry point.

    The caller knows ``api_key`` and ``api_version`` from the request it sent with the
    correlation id (check the returned one). Response header tagged fields are skipped.

    ApiVersions: a broker that does not support the requested version answers in the v0
    body format (KIP-511). As Java's ``ApiVersionsResponse.parse`` does, when a v1+ body
    does not parse, it is parsed again as v0; the v0 body's ``error_code`` then says
    UNSUPPORTED_VERSION and ``api_keys`` holds the broker's ApiVersions range.

    Returns:
        ``(correlation_id, body)``; records in the body are memoryviews into ``data``
        (or into a private copy of it when it is not ``bytes``).

    Raises:
        ProtocolError: the frame is malformed for this API version.
        ValueError: the API key or version is not in the table (our misuse).
    """
    info = _RESPONSE_INFO.get(api_key)
    if info is None:
        raise ValueError(f"API key {api_key} is not in kproto's schema table")
    cls, codec = info[0], info[1]
    if not info[2] <= api_version <= info[3]:
        raise ValueError(f"{cls.__name__} has no version {api_version}")
    b = _as_bytes(data)
    if len(b) < 4:
        raise ProtocolError(f"response frame of {len(b)} bytes is shorter than a response header")
    (correlation_id,) = _SIZE.unpack_from(b, 0)
    pos = 4
    try:
        if api_version >= info[4] and api_key != ApiKey.API_VERSIONS:
            if pos < len(b) and b[pos] == 0:
                pos += 1
            else:
                _, pos = TAGGED_FIELDS.read(b, pos)
        body, pos = codec.decode_from(b, pos, api_version)
        if pos != len(b):
            raise ProtocolError(f"{len(b) - pos} trailing bytes after {cls.__name__} v{api_version}")
    except ProtocolError:
        if api_key != ApiKey.API_VERSIONS or api_version == 0:
            raise
        body = codec.decode(b[4:], 0)  # the KIP-511 fallback; raises if v0 fails too
    return correlation_id, body


_getrefcount = getattr(sys, "getrefcount", None)  # CPython's: FrameReader reuses frames nobody holds


class FrameReader:
    """Cut a received byte stream into frames (h11-style, no I/O).

    Two ways to feed it, one framing:

    * :meth:`receive_data` with whatever the transport delivered (a broker's
      ``StreamReader.read``), then :meth:`next_frame` until it returns None;
    * :meth:`get_buffer` / :meth:`buffer_updated`, the shape of
      :class:`asyncio.BufferedProtocol`: the transport reads (``recv_into``, or TLS
      decrypts) straight into the buffer handed out, then :meth:`next_frame` as above.
      Small frames are read many at a time into a scratch buffer and copied out once; a
      frame of at least :attr:`DIRECT_SIZE` bytes is read into a buffer of its own, which
      becomes the frame handed out without a copy (only what arrived with its size
      prefix, at most one read, is copied into it). A client takes ``fetch.max.bytes``
      responses this way with about one frame's memory, not three; and once nothing
      references the last such frame any more, the next frame of its size (or up to a
      quarter smaller) is read into it again, whose pages are already mapped. Only the
      last one is kept: a frame kept is memory its users no longer count (a consumer's
      bound, about twice ``fetch.max.bytes``, grows by one frame per broker), and the
      reader lets go of it when the stream ends. After such a frame larger than one read
      of the scratch (256 KiB), the next read is only the next frame's size prefix:
      another such frame, which takes two reads either way, then goes to its own buffer
      without passing through the scratch (issue 16: a 1 MB Produce's first 256 KiB were
      read into the scratch and copied, 1.5 ns a record); a small one costs one read more.
      After a smaller one, many frames of its size still come in one read.

    Frames come out as ``bytes`` without the size prefix, ready for
    :func:`decode_request` / :func:`decode_response`.

    Args:
        max_frame_size: largest acceptable frame size; a larger size prefix raises
            :class:`~kproto.errors.ProtocolError` (a peer sending garbage, or an HTTP or
            TLS client on a plaintext Kafka port, must not make us buffer gigabytes).
    """

    #: Frames this large or larger are read straight into their own buffer by :meth:`get_buffer`.
    DIRECT_SIZE = 64 * 1024
    _SCRATCH = 256 * 1024  # the scratch buffer get_buffer hands out: asyncio's read size
    _REUSE = 1  # frames read into their own buffer kept to be filled again (see _start_frame)
    _MIN_ROOM = 16 * 1024  # less free room than this and the scratch is compacted first

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.max_frame_size = max_frame_size
        self._buf = bytearray()  # received bytes [_start, _end) not in a frame buffer; room after
        self._start = 0  # consumed prefix of _buf, dropped lazily to avoid O(n^2) copying
        self._end = 0
        self._keep = 0  # capacity of _buf kept when it empties: 0 until get_buffer is used
        # A frame read into its own buffer (get_buffer): a BytesIO over a bytes object, so
        # that the finished frame is that object itself (getvalue() of a BytesIO whose
        # buffer is not shared or exported returns it: CPython's bytesio.c, bpo-22003).
        self._frame: io.BytesIO | None = None
        self._frame_view: memoryview | None = None  # the frame's buffer, writable
        self._size = 0  # the frame's size
        self._filled = 0  # bytes of it received
        self._lent: memoryview | None = None  # handed out by get_buffer, until buffer_updated
        self._eof = False
        self._recent: list[bytes] = []  # the last frames read into their own buffers (see _start_frame)
        self._prefix_first = False  # a frame read into its own buffer just ended (see get_buffer)

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as frames (size prefixes included)."""
        pending = self._end - self._start
        return pending + 4 + self._filled if self._frame is not None else pending

    @property
    def pending_size(self) -> int | None:
        """The announced size of the incomplete frame at the head of the buffer, or None
        (fewer than 4 bytes buffered). Lets a server account for a frame before it
        arrives (Kafka's broker reserves it from its memory pool) without allocating it;
        an invalid size is left for :meth:`next_frame` to refuse."""
        if self._frame is not None:
            return self._size
        if self._end - self._start < 4:
            return None
        (size,) = _SIZE.unpack_from(self._buf, self._start)
        return size

    @property
    def at_eof(self) -> bool:
        """True once :meth:`receive_data` got ``b""`` (the peer closed)."""
        return self._eof

    def receive_data(self, data: bytes) -> None:
        """Add received bytes; ``b""`` means the peer closed the connection.

        Raises:
            RuntimeError: data after end of stream (our misuse).
        """
        if not data:
            self._eof = True
            self._recent.clear()  # nothing more will be read into it
            return
        if self._eof:
            raise RuntimeError("received data after end of stream")
        if self._frame is not None:  # a frame read by get_buffer so far: fill it first
            take = min(len(data), self._size - self._filled)
            self._frame_view[self._filled : self._filled + take] = data[:take]  # type: ignore[index]
            self._filled += take
            if take == len(data):
                return
            data = data[take:]  # (mixing both ways is rare: the copy of one read's rest will do)
        buf, end = self._buf, self._end
        if end + len(data) <= len(buf):  # room left by get_buffer
            buf[end : end + len(data)] = data
        else:
            del buf[end:]
            buf += data
        self._end = end + len(data)

    def get_buffer(self, sizehint: int = -1, *, prefix_only: bool = False) -> memoryview:
        """A writable buffer for the next received bytes (:meth:`asyncio.BufferedProtocol.get_buffer`):
        the unfilled part of the frame being read into its own buffer, else free room in
        the scratch buffer. Say how much was written with :meth:`buffer_updated`; the
        buffer must not be used after that, nor after another call (which means that
        nothing was written in the previous one).

        With ``prefix_only``, while the size prefix of the frame at the head is
        incomplete, the buffer holds just the bytes that complete it (a broker that
        answers a request reads no more than the next one's size, as Kafka mutes its
        channel); once it is complete, as without. The reader does the same by itself for
        the first read after a frame read into its own buffer (see the class docstring).

        Raises:
            ProtocolError: the frame at the head has a negative or oversized size.
            RuntimeError: the stream ended.
        """
        if self._lent is not None:  # nothing was written in it (asyncio's TLS may do that)
            self._lent.release()
            self._lent = None
        if self._eof:
            raise RuntimeError("received data after end of stream")
        self._keep = self._SCRATCH
        # a frame complete in its own buffer and not yet taken: what comes next goes to the scratch
        if (complete := self._frame is not None and self._filled == self._size) or self._frame is None:
            buf, start, end = self._buf, self._start, self._end
            if not complete and end - start >= 4:
                size = self._check_size(start)
                if size >= self.DIRECT_SIZE and start + 4 + size > end:
                    self._start_frame(size)
            if complete or self._frame is None:
                if len(buf) - end < self._MIN_ROOM:
                    if start:
                        del buf[:start]
                        self._start, self._end = 0, end - start
                    room = len(buf) - self._end
                    if room < self._MIN_ROOM:
                        buf += bytes(max(self._SCRATCH - len(buf), self._MIN_ROOM - room))
                if (prefix_only or complete or self._prefix_first) and (have := self._end - self._start) < 4:
                    self._lent = memoryview(buf)[self._end : self._end + 4 - have]
                else:
                    self._prefix_first = False
                    self._lent = memoryview(buf)[self._end :]
                return self._lent
        self._lent = self._frame_view[self._filled : self._size]  # type: ignore[index]
        return self._lent

    def buffer_updated(self, nbytes: int) -> None:
        """``nbytes`` were written at the start of the buffer :meth:`get_buffer` handed out
        (:meth:`asyncio.BufferedProtocol.buffer_updated`).

        Raises:
            RuntimeError: no buffer was handed out, or ``nbytes`` does not fit in it.
        """
        lent, self._lent = self._lent, None
        if lent is None:
            raise RuntimeError("buffer_updated() without get_buffer()")
        if not 0 <= nbytes <= len(lent):
            raise RuntimeError(f"buffer_updated({nbytes}) with a buffer of {len(lent)} bytes")
        lent.release()  # the scratch may be resized again, the frame handed out without a copy
        if self._frame is not None and self._filled < self._size:  # (else the scratch was lent)
            self._filled += nbytes
        else:
            self._end += nbytes

    def _check_size(self, start: int) -> int:
        (size,) = _SIZE.unpack_from(self._buf, start)
        if size < 0 or size > self.max_frame_size:
            raise ProtocolError(f"frame size {size} outside 0..{self.max_frame_size}")
        return size

    def _start_frame(self, size: int) -> None:
        """Move the incomplete frame at the head of the scratch buffer (all that the scratch
        holds) into a buffer of its own, of exactly its size.

        That buffer is, when there is one, a frame handed out before (one of the last
        :attr:`_REUSE`) of this size or up to a quarter larger (cut to size when complete),
        that nothing references any more: the bytes object is unreachable, so nobody sees
        it change, and it is filled again in place.
        A fresh buffer costs a page fault per 4 KiB page as the socket fills it (glibc maps
        each allocation of this size anew, and faults are dear under a hypervisor: a
        quarter of a millisecond per megabyte), on the path between a Fetch response's
        first byte and the next Fetch (issue 16). A frame is never hashed, so no cached
        hash outlives its bytes."""
        recent = self._recent
        for i in range(len(recent) if _getrefcount is not None else 0):
            # 2: the list's reference and the argument's; a view or a slice of it holds one more
            if size <= len(recent[i]) <= size + (size >> 2) and _getrefcount(recent[i]) == 2:
                self._frame = io.BytesIO(recent.pop(i))  # the BytesIO's is then the only reference
                break
        else:
            # Not bytes(size): calloc zeroes a block that the heap reuses, a memset of every
            # byte before the socket overwrites them (a tenth of a millisecond per 2 MiB Fetch
            # answer, issue 16). Nothing reads the buffer before it is filled.
            self._frame = io.BytesIO(uninitialized_bytes(size))
        self._frame_view = self._frame.getbuffer()
        start, end = self._start + 4, self._end
        with memoryview(self._buf) as scratch:
            self._frame_view[: end - start] = scratch[start:end]
        self._size, self._filled = size, end - start
        self._start = self._end = 0

    def next_frame(self) -> bytes | None:
        """Return the next complete frame, or None if more data is needed.

        Raises:
            ProtocolError: a negative or oversized frame size, or the stream ended in
                the middle of a frame. The reader is unusable afterwards.
        """
        if self._frame is not None:
            if self._filled == self._size:
                frame, self._frame = self._frame, None
                self._frame_view.release()  # type: ignore[union-attr]
                self._frame_view = None
                frame.truncate(self._size)  # a larger frame filled again: cut to size (no copy)
                out = frame.getvalue()  # the buffer itself (see __init__)
                self._recent.append(out)  # to be filled again once nobody holds it (_start_frame)
                # another may follow: its prefix alone first (get_buffer), when it took more than a read
                self._prefix_first = self._size > self._SCRATCH
                if len(self._recent) > self._REUSE:
                    del self._recent[0]
                return out
        else:
            buf, start, end = self._buf, self._start, self._end
            if end - start >= 4:
                size = self._check_size(start)
                stop = start + 4 + size
                if stop <= end:
                    # One copy: slicing the bytearray itself would copy the frame twice (a
                    # temporary bytearray, then bytes); a 1 MB Produce or Fetch costs a 1 MB
                    # allocation less (issue 16). The view is released before ``buf`` is resized.
                    with memoryview(buf) as view:
                        out = bytes(view[start + 4 : stop])
                    if stop == end:
                        self._start = self._end = 0
                        if len(buf) > self._keep:
                            buf.clear()
                    elif not self._keep and stop > 65536 and stop * 2 > end:
                        del buf[:stop]
                        self._start, self._end = 0, end - stop
                    else:
                        self._start = stop
                    return out
        if self._eof and self.buffered:
            raise ProtocolError(f"connection closed inside a frame ({self.buffered} bytes pending)")
        return None
