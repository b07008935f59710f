"""Tests of kproto.protocol.frames: headers, size prefixes, the broker and client entry points."""

from __future__ import annotations

import struct
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kproto.errors import ProtocolError
from kproto.protocol import (
    ApiKey,
    FrameReader,
    RequestHeader,
    UnsupportedApiVersionError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    frame,
    request_header_version,
    response_header_version,
)
from kproto.protocol import messages as m
from kproto.protocol.schema import EncodeError
from tests.support.table_strategies import populated


class Pair:
    """A client role and a broker role joined in memory (h11's ConnectionPair idea).

    ``exchange`` sends a request from the client through a FrameReader on the broker side,
    answers it there and brings the response back through the client's FrameReader, so
    every frame crosses both entry points.
    """

    def __init__(self) -> None:
        self.to_broker = FrameReader()
        self.to_client = FrameReader()
        self.next_id = 0

    def exchange(self, version: int, request: m.Message, response: m.Message, client_id: str | None = "c"):
        self.next_id += 1
        api_key = request.API_KEY
        self.to_broker.receive_data(encode_request(api_key, version, self.next_id, client_id, request))
        header, got = decode_request(self.to_broker.next_frame())
        assert self.to_broker.next_frame() is None
        self.to_client.receive_data(encode_response(api_key, version, header.correlation_id, response))
        corr, answer = decode_response(api_key, version, self.to_client.next_frame())
        return header, got, corr, answer


@pytest.mark.parametrize("api", m.TABLE, ids=lambda a: a.name)
def test_every_api_through_a_client_broker_pair(api) -> None:
    pair = Pair()
    req_cls, resp_cls = m.REQUESTS[api.key], m.RESPONSES[api.key]
    for version in api.versions:
        req, resp = populated(req_cls, version), populated(resp_cls, version)
        header, got, corr, answer = pair.exchange(version, req, resp)
        assert header == RequestHeader(api.key, version, pair.next_id, "c")
        assert got == req and answer == resp and corr == pair.next_id


def test_request_header_v1() -> None:
    wire = encode_request(ApiKey.HEARTBEAT, 3, 0x01020304, "cli", m.HeartbeatRequest(group_id="g"))
    size, = struct.unpack_from(">i", wire)
    assert size == len(wire) - 4
    assert wire[4:17] == b"\x00\x0c\x00\x03\x01\x02\x03\x04\x00\x03cli"
    assert wire[17:] == m.HeartbeatRequest(group_id="g").encode(3)


def test_request_header_v2_keeps_a_classic_client_id_and_adds_tags() -> None:
    wire = encode_request(ApiKey.HEARTBEAT, 4, 7, "cli", m.HeartbeatRequest(group_id="g"))
    assert wire[4:17] == b"\x00\x0c\x00\x04\x00\x00\x00\x07\x00\x03cli"
    assert wire[17:18] == b"\x00"  # empty tagged fields
    header, _ = decode_request(wire[4:])
    assert header.client_id == "cli" and header.tagged_fields is None


def test_request_header_v2_tagged_fields_round_trip() -> None:
    wire = encode_request(18, 3, 7, None, m.ApiVersionsRequest(), header_tagged_fields={5: b"xy"})
    header, body = decode_request(wire[4:])
    assert header.client_id is None and header.tagged_fields == {5: b"xy"}
    assert body == m.ApiVersionsRequest()


def test_request_header_v0_for_controlled_shutdown_v0() -> None:
    assert request_header_version(7, 0) == 0
    assert request_header_version(7, 1) == 1
    assert request_header_version(ApiKey.PRODUCE, 8) == 1
    assert request_header_version(ApiKey.PRODUCE, 9) == 2


def test_response_headers() -> None:
    assert response_header_version(ApiKey.METADATA, 8) == 0
    assert response_header_version(ApiKey.METADATA, 9) == 1
    v0 = encode_response(ApiKey.METADATA, 8, 5, m.MetadataResponse())
    v1 = encode_response(ApiKey.METADATA, 9, 5, m.MetadataResponse())
    assert v0[4:8] == v1[4:8] == b"\x00\x00\x00\x05"
    assert v1[8:9] == b"\x00"  # response header v1: tagged fields
    assert v0[8:] == m.MetadataResponse().encode(8)
    assert v1[9:] == m.MetadataResponse().encode(9)


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions_response_always_uses_header_v0(version: int) -> None:
    assert response_header_version(ApiKey.API_VERSIONS, version) == 0
    body = m.ApiVersionsResponse(api_keys=[m.ApiVersionsResponse.ApiVersion(api_key=0, min_version=3, max_version=11)])
    wire = encode_response(ApiKey.API_VERSIONS, version, 9, body)
    assert wire[8:] == body.encode(version)  # no tag byte after the correlation id
    assert decode_response(ApiKey.API_VERSIONS, version, wire[4:]) == (9, body)


def test_api_versions_v0_fallback_for_an_unsupported_version() -> None:
    """KIP-511: the broker answers a version it lacks with a v0 body; the client reparses."""
    answer = m.ApiVersionsResponse(error_code=35, api_keys=[
        m.ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=2)])
    wire = encode_response(ApiKey.API_VERSIONS, 0, 3, answer)
    corr, got = decode_response(ApiKey.API_VERSIONS, 4, wire[4:])
    assert corr == 3 and got.error_code == 35 and got.api_keys == answer.api_keys


def test_unknown_api_version_is_reported_with_its_header() -> None:
    wire = encode_request(18, 3, 42, "librdkafka", m.ApiVersionsRequest())
    raw = bytearray(wire[4:])
    raw[2:4] = (77).to_bytes(2, "big")
    with pytest.raises(UnsupportedApiVersionError) as info:
        decode_request(bytes(raw))
    e = info.value
    assert (e.api_key, e.api_version, e.correlation_id, e.client_id, e.known_api) == (18, 77, 42, "librdkafka", True)
    assert isinstance(e, ProtocolError)
    import pickle

    again = pickle.loads(pickle.dumps(e))
    assert (again.api_version, again.correlation_id, again.client_id) == (77, 42, "librdkafka")


def test_unknown_api_key_is_reported() -> None:
    with pytest.raises(UnsupportedApiVersionError) as info:
        decode_request(b"\x03\xe7\x00\x00\x00\x00\x00\x01\xff\xff")
    assert info.value.api_key == 999 and not info.value.known_api and info.value.client_id is None


@pytest.mark.parametrize("data", [b"", b"\x00\x12", b"\x00\x12\x00\x03\x00\x00\x00", b"\x00\x12\x00\x03\x00\x00\x00\x01\x00"])
def test_short_request_frames(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_request(data)


def test_short_response_frames() -> None:
    with pytest.raises(ProtocolError):
        decode_response(ApiKey.METADATA, 1, b"\x00\x00")
    with pytest.raises(ProtocolError):
        decode_response(ApiKey.METADATA, 1, b"\x00\x00\x00\x01")


def test_our_misuse_is_a_value_error() -> None:
    with pytest.raises(EncodeError):
        encode_request(ApiKey.SASL_AUTHENTICATE, 1, 1, None, m.SaslAuthenticateRequest(auth_bytes="str"))
    with pytest.raises(ValueError):
        encode_request(999, 0, 1, None, m.ApiVersionsRequest())
    with pytest.raises(ValueError):
        encode_request(ApiKey.PRODUCE, 99, 1, None, m.ProduceRequest())
    with pytest.raises(ValueError):
        decode_response(ApiKey.PRODUCE, 99, b"\x00\x00\x00\x01")
    with pytest.raises(ValueError):
        request_header_version(999, 0)


# ---------------------------------------------------------------------------
# FrameReader
# ---------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(payloads=st.lists(st.binary(max_size=300), max_size=8), cuts=st.lists(st.integers(1, 50), max_size=40))
def test_frame_reader_reassembles_any_split(payloads: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(frame(p) for p in payloads)
    reader = FrameReader()
    got, pos = [], 0
    for n in cuts + [len(stream)]:
        reader.receive_data(stream[pos : pos + n])
        pos += n
        while (f := reader.next_frame()) is not None:
            got.append(f)
        if pos >= len(stream):
            break
    assert got == payloads
    assert reader.buffered == 0


def test_frame_reader_limits() -> None:
    reader = FrameReader(max_frame_size=10)
    reader.receive_data(frame(b"x" * 10))
    assert reader.next_frame() == b"x" * 10
    reader.receive_data(frame(b"x" * 11))
    with pytest.raises(ProtocolError, match="frame size 11"):
        reader.next_frame()
    negative = FrameReader()
    negative.receive_data(b"\xff\xff\xff\xfe")
    with pytest.raises(ProtocolError):
        negative.next_frame()


def test_frame_reader_rejects_http_on_a_kafka_port() -> None:
    reader = FrameReader()
    reader.receive_data(b"GET / HTTP/1.1\r\n\r\n")
    with pytest.raises(ProtocolError):
        reader.next_frame()


def test_frame_reader_end_of_stream() -> None:
    reader = FrameReader()
    reader.receive_data(frame(b"ab") + b"\x00\x00")
    reader.receive_data(b"")
    assert reader.at_eof
    assert reader.next_frame() == b"ab"
    with pytest.raises(ProtocolError, match="closed inside a frame"):
        reader.next_frame()
    with pytest.raises(RuntimeError):
        reader.receive_data(b"more")
    clean = FrameReader()
    clean.receive_data(b"")
    assert clean.next_frame() is None


def test_frame_reader_many_frames_in_one_buffer() -> None:
    reader = FrameReader()
    reader.receive_data(b"".join(frame(bytes([i % 256]) * 100) for i in range(2000)))
    frames = []
    while (f := reader.next_frame()) is not None:
        frames.append(f)
    assert frames == [bytes([i % 256]) * 100 for i in range(2000)]


def test_trailing_request_bytes_are_refused_unless_lenient():
    """librdkafka's all-topics Metadata v12 request ends with three bytes the schema does
    not have (captured from confluent-kafka 2.16); Kafka's broker ignores them."""
    from kproto.errors import ProtocolError
    from kproto.protocol import decode_request

    frame = bytes.fromhex("0003000c00000005000772646b61666b610000000000010000")
    with pytest.raises(ProtocolError, match="trailing"):
        decode_request(frame)
    header, body = decode_request(frame, strict=False)
    assert (header.api_version, header.client_id, body.topics) == (12, "rdkafka", None)


def test_next_frame_copies_a_large_frame_once():
    """issue 16, memory: taking a whole frame out of the reader's buffer allocates the frame
    once (the bytes handed out), not twice (a bytearray slice, then bytes of it): a consumer
    receiving a fetch.max.bytes response must not need three times that for a moment."""
    import tracemalloc

    size = 8 << 20
    reader = FrameReader()
    reader.receive_data(struct.pack(">i", size) + bytes(size))
    tracemalloc.start()
    try:
        frame = reader.next_frame()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(frame) == size and reader.buffered == 0
    assert peak < 1.5 * size


# ---------------------------------------------------------------------------
# FrameReader fed as a BufferedProtocol (get_buffer / buffer_updated)
# ---------------------------------------------------------------------------


def _feed(reader: FrameReader, data: bytes, got: list[bytes]) -> None:
    """What asyncio's transport does with a BufferedProtocol: recv_into the buffer handed
    out (as much of ``data`` as fits), say how much came, and take the frames."""
    data = memoryview(data)
    while data:
        buf = reader.get_buffer(-1)
        n = min(len(buf), len(data))
        buf[:n] = data[:n]
        reader.buffer_updated(n)
        data = data[n:]
        while (f := reader.next_frame()) is not None:
            got.append(f)


_PAYLOADS = [b"", b"a", b"x" * 40, b"bc", b"y" * 16, bytes(range(100)), b"z" * 15]


def test_frame_reader_buffers_reassemble_a_split_at_every_byte_boundary() -> None:
    """issue 16, receive path: whatever a read delivers (a size prefix cut anywhere, a
    frame cut anywhere, a small frame read with the start of a large one), the frames come
    out whole and in order; large frames (here >= 16 bytes) go through their own buffer."""
    stream = b"".join(frame(p) for p in _PAYLOADS)
    for k in range(len(stream) + 1):
        reader, got = FrameReader(), []
        reader.DIRECT_SIZE = 16
        _feed(reader, stream[:k], got)
        _feed(reader, stream[k:], got)
        assert got == _PAYLOADS, k
        assert reader.buffered == 0 and reader.pending_size is None
    reader, got = FrameReader(), []
    reader.DIRECT_SIZE = 16
    for i in range(len(stream)):
        _feed(reader, stream[i : i + 1], got)
        assert reader.buffered == len(stream[: i + 1]) - sum(4 + len(p) for p in got)
    assert got == _PAYLOADS


def test_a_large_frame_nobody_holds_any_more_is_filled_again_in_place() -> None:
    """issue 16 (poll_arrow 2): each large frame (a Fetch response) was read into a fresh
    buffer, whose every page faulted as the socket filled it: a quarter of a millisecond
    per megabyte under a hypervisor, between a response's first byte and the next Fetch.
    A frame of the same size (or up to a quarter larger) that nothing references any more
    is now filled again; one that is still referenced (a view of it, as a record set is)
    is never written."""
    size = 1_000_000  # more than one read brings: read into a buffer of its own
    first, second, third = (frame(bytes([c]) * size) for c in b"abc")
    reader, got = FrameReader(), []
    _feed(reader, first, got)
    held = memoryview(got.pop())[:10]
    _feed(reader, second, got)
    assert got.pop() == b"b" * size
    assert bytes(held) == b"a" * 10  # still referenced: not filled again
    del held  # nobody holds a frame now
    tracemalloc.start()
    try:
        _feed(reader, third, got)
        allocated = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == [b"c" * size]
    assert allocated < size // 2  # no new buffer for it
    # A smaller frame goes into a free larger one, cut to size when complete; what follows
    # it in the same read is the next frame's.
    got.clear()
    _feed(reader, frame(b"d" * (size - 1000)) + frame(b"e" * 10) + frame(b"f" * size), got)
    assert got == [b"d" * (size - 1000), b"e" * 10, b"f" * size]


def test_the_reader_keeps_at_most_one_large_frame_its_users_dropped() -> None:
    """issue 16b item 4: frames kept to be filled again are memory nobody else counts (a
    consumer's bound is about twice fetch.max.bytes, per broker): once their users drop
    them, the reader keeps at most one (it kept the last two, through idle time), and none
    once the stream ended. Fetch responses of 4, 2 and 1 MiB (none fits another's buffer),
    each held while the next one arrives, as a consumer decodes one while it fetches ahead."""
    mib = 1 << 20
    reader, got = FrameReader(), []
    tracemalloc.start()
    try:
        held = None
        for size in (4 * mib, 2 * mib, mib):
            _feed(reader, frame(bytes([size >> 20]) * size), got)
            held = got.pop()  # the previous frame's users let go of it now
            assert len(held) == size
        del held
        kept = tracemalloc.get_traced_memory()[0]  # what is still allocated: the reader's
        reader.receive_data(b"")  # the broker closed the connection
        kept_after_eof = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    scratch = FrameReader._SCRATCH + (64 << 10)  # the scratch buffer, and some slack
    assert kept <= mib + scratch  # the last frame, not the last two (3 MiB)
    assert kept_after_eof <= scratch


@settings(max_examples=50, deadline=None)
@given(payloads=st.lists(st.binary(max_size=300), max_size=8),
       cuts=st.lists(st.tuples(st.integers(1, 120), st.booleans()), max_size=40))
def test_frame_reader_reassembles_any_split_fed_either_way(payloads: list[bytes], cuts: list[tuple[int, bool]]) -> None:
    """issue 16: receive_data and get_buffer may take turns (each piece one way or the other)."""
    stream = b"".join(frame(p) for p in payloads)
    reader, got, pos = FrameReader(), [], 0
    reader.DIRECT_SIZE = 32
    for n, buffered in cuts + [(len(stream), True)]:
        piece = stream[pos : pos + n]
        pos += n
        if buffered:
            _feed(reader, piece, got)
        elif piece:
            reader.receive_data(piece)
            while (f := reader.next_frame()) is not None:
                got.append(f)
        if pos >= len(stream):
            break
    assert got == payloads
    assert reader.buffered == 0


def test_frame_reader_buffers_refuse_an_oversized_frame_before_allocating_it() -> None:
    """issue 16: a size prefix over max_frame_size is refused as soon as it is read; the
    reader never makes a buffer of that size (a TLS record or garbage must not cost 1 GiB)."""
    import tracemalloc

    reader = FrameReader(max_frame_size=100)
    _feed(reader, frame(b"x" * 100), got := [])
    assert got == [b"x" * 100]
    tracemalloc.start()
    try:
        buf = reader.get_buffer(-1)
        buf[:5] = struct.pack(">i", 1 << 30) + b"x"
        reader.buffer_updated(5)
        with pytest.raises(ProtocolError, match="frame size 1073741824 outside 0..100"):
            reader.next_frame()
        with pytest.raises(ProtocolError, match="frame size"):
            reader.get_buffer(-1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_frame_reader_buffers_end_of_stream_inside_a_large_frame() -> None:
    """issue 16: a peer that closes inside a frame read into its own buffer is an error
    naming what was pending, as with receive_data."""
    reader = FrameReader()
    reader.DIRECT_SIZE = 16
    _feed(reader, frame(b"ab") + frame(b"x" * 100)[:50], got := [])
    assert got == [b"ab"] and reader.pending_size == 100 and reader.buffered == 50
    _feed(reader, b"x" * 10, got)  # now into the frame's own buffer
    assert reader.buffered == 60
    reader.receive_data(b"")
    with pytest.raises(ProtocolError, match=r"closed inside a frame \(60 bytes pending\)"):
        reader.next_frame()
    with pytest.raises(RuntimeError):
        reader.get_buffer(-1)


def test_get_buffer_reads_a_large_frame_into_the_frame_itself():
    """issue 16, memory: a frame fed through get_buffer (as a BufferedProtocol is: the
    transport reads into the buffer handed out) is read straight into its own buffer and
    handed out as that buffer: receiving an 8 MiB frame needs about 8 MiB, not 2-3 times."""
    import tracemalloc

    size = 8 << 20
    wire = struct.pack(">i", size) + bytes(range(256)) * (size // 256)
    reader = FrameReader()
    tracemalloc.start()
    try:
        got: list[bytes] = []
        for pos in range(0, len(wire), 256 * 1024):  # asyncio's read size
            _feed(reader, wire[pos : pos + 256 * 1024], got)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(got) == 1 and got[0] == wire[4:] and type(got[0]) is bytes
    assert reader.buffered == 0
    assert peak < 1.5 * size


def test_frame_reader_mixed_feeding_and_misuse() -> None:
    """issue 16: receive_data after get_buffer fills the frame under way first, then the
    scratch's free room; an unused buffer may be asked for again (asyncio's TLS does that:
    a read that decrypted nothing); buffer_updated without a buffer, or with more than it
    holds, is our misuse."""
    reader = FrameReader()
    reader.DIRECT_SIZE = 16
    stream = frame(b"x" * 40) + frame(b"ab") + frame(b"y" * 20)
    _feed(reader, stream[:10], [])
    reader.get_buffer(-1)  # the first frame moves to its own buffer
    reader.buffer_updated(0)
    assert (reader.pending_size, reader.buffered) == (40, 10)
    reader.receive_data(stream[10:50])  # the rest of the first frame, into it, and some of the second
    assert reader.next_frame() == b"x" * 40
    buf = reader.get_buffer(-1)
    assert reader.get_buffer(-1) is not buf  # the first one was not used: given up
    reader.receive_data(stream[50:])  # into the scratch's free room
    assert [reader.next_frame(), reader.next_frame(), reader.next_frame()] == [b"ab", b"y" * 20, None]
    with pytest.raises(RuntimeError, match="without get_buffer"):
        FrameReader().buffer_updated(1)
    small = FrameReader()
    with pytest.raises(RuntimeError, match="with a buffer of"):
        small.buffer_updated(len(small.get_buffer(-1)) + 1)


def test_after_a_large_frame_the_next_read_is_its_size_prefix_alone() -> None:
    """issue 16 (1 MB Produce requests back to back): after a frame read into its own
    buffer, larger than the scratch, the reader's next buffer is just the next size prefix, so that a large frame
    after it is read into its own buffer whole (its first 256 KiB went through the scratch
    and were copied); a small one comes in the read after. With ``prefix_only`` (a broker
    answering a request) every buffer stops at the next size prefix."""
    size = 300_000  # more than the first read brings: read into its own buffer
    reader, got = FrameReader(), []
    _feed(reader, frame(b"a" * size), got)
    assert got == [b"a" * size]
    assert len(reader.get_buffer(-1)) == 4
    reader.buffer_updated(0)
    wire = frame(b"b" * size) + frame(b"c")
    buf = reader.get_buffer(-1)
    buf[:2] = wire[:2]  # a read may bring part of it: the rest of the prefix next
    reader.buffer_updated(2)
    buf = reader.get_buffer(-1)
    assert len(buf) == 2
    buf[:] = wire[2:4]
    reader.buffer_updated(2)
    buf = reader.get_buffer(-1)  # the frame's own buffer, nothing copied into it
    assert not isinstance(buf.obj, bytearray) and len(buf) == size
    buf[:] = wire[4 : 4 + size]
    reader.buffer_updated(size)
    assert reader.next_frame() == b"b" * size
    _feed(reader, wire[4 + size :], got)  # a small one: the prefix, then the rest
    assert got[1:] == [b"c"] and reader.buffered == 0
    assert len(reader.get_buffer(-1)) > 4  # the scratch again: after a small frame, any read size
    reader.buffer_updated(0)
    assert len(reader.get_buffer(-1, prefix_only=True)) == 4
    reader.buffer_updated(0)
    _feed(reader, frame(b"d") + frame(b"e"), got)
    assert got[2:] == [b"d", b"e"]
    # a frame of its own buffer that one read of the scratch could hold (here 110 KB, a
    # 1,000-record Produce): the next read may bring several such frames, not only a prefix
    wire = frame(b"f" * 110_000)
    buf = reader.get_buffer(-1)
    buf[:100] = wire[:100]
    reader.buffer_updated(100)
    _feed(reader, wire[100:], got)
    assert got[4:] == [b"f" * 110_000]
    assert len(reader.get_buffer(-1)) > 220_000


def test_a_read_before_a_large_frame_is_taken_goes_to_the_scratch() -> None:
    """issue 16: a broker no longer pauses reading when a frame is complete, and asyncio's
    TLS transport reads again before the frame is taken: the buffer handed out then is not
    the complete frame's (an empty one, which asyncio refuses and which kept the frame's
    buffer exported: BufferError when the frame was cut to size) but the scratch, up to the
    next size prefix; the frame comes out whole, then the next one."""
    size = 300_000
    wire = frame(b"a" * size) + frame(b"b" * 10)
    reader = FrameReader()
    pos = 0
    while pos < 4 + size:  # the first frame, complete, not taken
        buf = reader.get_buffer(-1)
        n = min(len(buf), 4 + size - pos)
        buf[:n] = wire[pos : pos + n]
        reader.buffer_updated(n)
        pos += n
    buf = reader.get_buffer(-1)
    assert isinstance(buf.obj, bytearray) and len(buf) == 4
    buf[:] = wire[pos : pos + 4]
    reader.buffer_updated(4)
    assert reader.next_frame() == b"a" * size
    _feed(reader, wire[pos + 4 :], got := [])
    assert got == [b"b" * 10] and reader.buffered == 0
