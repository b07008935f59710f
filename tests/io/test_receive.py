"""kproto.io.Connection's receive path (issue 16): responses read straight into their
frame's buffer, over plaintext and TLS, with the size limit and the peer closing inside a
response, against a broker in a thread that sends prepared bytes on a real socket."""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import threading
import time
import tracemalloc

import pytest

from kproto import Consumer, Producer
from kproto.errors import KafkaConnectionError
from kproto.io import Connection
from kproto.protocol import ApiKey, FrameReader, decode_request, encode_response
from kproto.protocol.messages import ApiVersionsResponse, FetchRequest, FetchResponse
from minibroker import MiniBroker

FETCH_VERSION = 12
FETCH_CORRELATION_ID = 2  # the connection's second request: ApiVersions is the first


def fetch_response(records: bytes) -> bytes:
    """A whole Fetch v12 response frame, size prefix included, holding ``records``."""
    body = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[
        FetchResponse.PartitionData(partition_index=0, high_watermark=1, records=records)])])
    return encode_response(ApiKey.FETCH, FETCH_VERSION, FETCH_CORRELATION_ID, body)


class PreparedBroker:
    """One connection on 127.0.0.1 (TLS with ``ssl_context``), served by a thread: it
    answers ApiVersions (Fetch v12 only), then sends ``reply`` (bytes prepared beforehand,
    sent without a copy, so that they do not count in the client's memory) to the next
    request, and closes when ``close`` says so."""

    def __init__(self, reply: bytes, *, close: bool = False, ssl_context: ssl.SSLContext | None = None) -> None:
        self.reply, self.close, self.ssl_context = reply, close, ssl_context
        self.versions = encode_response(ApiKey.API_VERSIONS, 0, 1, ApiVersionsResponse(api_keys=[
            ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, lo, hi in ((ApiKey.API_VERSIONS, 0, 3), (ApiKey.FETCH, FETCH_VERSION, FETCH_VERSION))]))

    def __enter__(self) -> PreparedBroker:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(10)
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.listener.close()
        self.thread.join(10)

    def _serve(self) -> None:
        try:
            sock, _ = self.listener.accept()
            sock.settimeout(10)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.ssl_context is not None:
                sock = self.ssl_context.wrap_socket(sock, server_side=True)
            with sock:
                frames = FrameReader()
                while data := sock.recv(65536):
                    frames.receive_data(data)
                    while (f := frames.next_frame()) is not None:
                        header, _ = decode_request(f, strict=False)
                        if header.api_key == ApiKey.API_VERSIONS:
                            sock.sendall(self.versions)
                        elif not self._answer(sock):
                            return
        except OSError:
            pass  # the client went away

    def _answer(self, sock: socket.socket) -> bool:
        """Answer a Fetch; False: close the connection."""
        sock.sendall(memoryview(self.reply))
        return not self.close


async def fetch(port: int, **settings) -> FetchResponse:
    """One Fetch on a new Connection to ``port``."""
    conn = Connection("127.0.0.1", port, **settings)
    await conn.open()
    try:
        return await conn.request(FetchRequest(topics=[]))
    finally:
        await conn.close()


def records_of(response: FetchResponse) -> bytes:
    return bytes(response.responses[0].partitions[0].records)


def test_an_8_mib_response_costs_about_8_mib_to_receive():
    """issue 16, receive path: a response's bytes are read straight into the frame handed
    to the decoder; receiving an 8 MiB Fetch response needs about 8 MiB (not the
    StreamReader's buffer, read()'s copies, the FrameReader's buffer and the frame)."""
    records = bytes(range(256)) * (32 * 1024)  # 8 MiB
    with PreparedBroker(fetch_response(records)) as broker:
        async def run():
            conn = Connection("127.0.0.1", broker.port)
            await conn.open()
            try:
                tracemalloc.start()
                try:
                    response = await conn.request(FetchRequest(topics=[]))
                    _, peak = tracemalloc.get_traced_memory()
                finally:
                    tracemalloc.stop()
                return response, peak
            finally:
                await conn.close()

        response, peak = asyncio.run(run())
    assert records_of(response) == records
    assert peak < 1.5 * len(records), peak


@pytest.mark.parametrize("size", [100, 70_000, 3 << 20])
def test_responses_arrive_whole_over_tls(pki, size):
    """issue 16: asyncio's TLS transport decrypts into the frame's buffer (a small
    response, one just over FrameReader.DIRECT_SIZE, a large one)."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(pki.server.cert_path, pki.server.key_path)
    context = ssl.create_default_context(cafile=str(pki.ca.cert_path))
    records = bytes(range(251)) * (size // 251) + b"end"
    with PreparedBroker(fetch_response(records), ssl_context=server) as broker:
        response = asyncio.run(fetch(broker.port, ssl_context=context))
    assert records_of(response) == records


def test_a_response_over_max_frame_size_fails_the_connection():
    """issue 16: a response larger than max_frame_size is refused from its size prefix."""
    with PreparedBroker(fetch_response(b"x" * (2 << 20))) as broker:
        with pytest.raises(KafkaConnectionError, match=r"frame size \d+ outside 0..1048576"):
            asyncio.run(fetch(broker.port, max_frame_size=1 << 20))


@pytest.mark.parametrize("cut", ["size prefix", "small frame", "large frame"])
def test_a_broker_closing_inside_a_response_fails_the_request(cut):
    """issue 16: the peer closing in the middle of a response (of its size prefix, of a
    small frame read in the scratch buffer, of a large one read into its own) fails the
    request with the connection, saying so."""
    whole = fetch_response(b"x" * (100 if cut == "small frame" else 1 << 20))
    reply = whole[:2] if cut == "size prefix" else whole[: len(whole) // 2]
    with PreparedBroker(reply, close=True) as broker:
        with pytest.raises(KafkaConnectionError, match=rf"closed inside a frame \({len(reply)} bytes pending\)"):
            asyncio.run(fetch(broker.port))


def test_responses_cut_in_pieces_on_the_wire_arrive_whole():
    """issue 16: two responses in one write, the second's size prefix split across TCP
    segments, each arriving as the reads deliver it."""
    first, second = fetch_response(b"a" * 100), fetch_response(b"b" * 200_000)
    second = second[:4] + struct.pack(">i", 3) + second[8:]  # its correlation id: the third request

    class Twice(PreparedBroker):
        def _serve(self) -> None:
            sock, _ = self.listener.accept()
            with sock:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                frames, answered = FrameReader(), 0
                while answered < 2 and (data := sock.recv(65536)):
                    frames.receive_data(data)
                    while (f := frames.next_frame()) is not None:
                        header, _ = decode_request(f, strict=False)
                        if header.api_key == ApiKey.API_VERSIONS:
                            sock.sendall(self.versions)
                        else:
                            answered += 1
                            if answered == 2:
                                for piece in (first + second[:2], second[2:7], second[7:]):
                                    sock.sendall(piece)
                sock.recv(1)  # until the client closes

    async def run(port):
        conn = Connection("127.0.0.1", port)
        await conn.open()
        try:
            return await asyncio.gather(conn.request(FetchRequest(topics=[])), conn.request(FetchRequest(topics=[])))
        finally:
            await conn.close()

    with Twice(b"") as broker:
        a, b = asyncio.run(run(broker.port))
    assert records_of(a) == b"a" * 100 and records_of(b) == b"b" * 200_000


class Trickle(PreparedBroker):
    """Answers the Fetch with ``first`` bytes of ``reply``, waits for ``resume``, then sends the
    rest: most of it at once, its last ``tail`` bytes in ``pieces`` writes a little apart."""

    first, tail, pieces = 100_000, 200_000, 100

    def __init__(self, reply: bytes, **kwargs) -> None:
        super().__init__(reply, **kwargs)
        self.resume = threading.Event()

    def _answer(self, sock: socket.socket) -> bool:
        reply = memoryview(self.reply)
        sock.sendall(reply[: self.first])
        self.resume.wait(10)
        cut = len(reply) - self.tail
        sock.sendall(reply[self.first : cut])
        step = self.tail // self.pieces
        for at in range(cut, len(reply), step):
            sock.sendall(reply[at : at + step])
            threading.Event().wait(0.001)
        return True


def rcvlowat(conn: Connection) -> int:
    return conn._writer.get_extra_info("socket").getsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT)


async def trickled_fetch(broker: Trickle, **settings) -> tuple[FetchResponse, int, int, int, int]:
    """A Fetch whose answer ``broker`` trickles; returns it, SO_RCVLOWAT while its rest was
    due, the bytes then due, SO_RCVLOWAT after it, and how many reads the transport made
    for the rest."""
    conn = Connection("127.0.0.1", broker.port, **settings)
    await conn.open()
    reads, received = 0, conn._received

    def counted(nbytes: int) -> None:
        nonlocal reads
        reads += 1
        received(nbytes)

    conn._received = counted  # what the connection's protocol calls after each read of the transport
    try:
        answer = asyncio.ensure_future(conn.request(FetchRequest(topics=[])))
        for _ in range(1000):  # until the client read all that was sent before the pause, or waits for more
            if rcvlowat(conn) > 1 or conn._frames.buffered == broker.first:
                break
            await asyncio.sleep(0.005)
        during, due, before = rcvlowat(conn), len(broker.reply) - conn._frames.buffered, reads
        assert during > 1 or conn._frames.buffered == broker.first
        broker.resume.set()
        response = await answer
        return response, during, due, rcvlowat(conn), reads - before
    finally:
        await conn.close()


def test_a_large_response_trickling_in_wakes_the_reader_once_it_is_all_there():
    """issue 16, Fetch read path: while the rest of a large response is due, the plaintext
    connection sets SO_RCVLOWAT to it, so the loop wakes once it is all queued rather than
    at every segment (a Spark task's 2 MiB answer took a turn of the loop per 64-256 KiB);
    back to 1 after it. The response, sent in a hundred small writes at the end, arrives
    whole and in order."""
    records = bytes(range(251)) * ((2 << 20) // 251)
    reply = fetch_response(records)
    with Trickle(reply) as broker:
        response, during, due, after, reads = asyncio.run(trickled_fetch(broker))
    assert records_of(response) == records
    assert during == due  # all that is still due
    assert after == 1
    assert reads <= 3, reads  # not one per write (100)


def test_a_small_receive_buffer_caps_the_low_mark_and_nothing_stalls():
    """issue 16: with receive.buffer.bytes set (locked), SO_RCVLOWAT asks at most half of the
    receive buffer, which the broker's window lets come: a 2 MiB response through a
    32 KiB buffer still arrives whole."""
    records = bytes(range(251)) * ((2 << 20) // 251)
    with Trickle(fetch_response(records)) as broker:
        response, during, _, after, _ = asyncio.run(trickled_fetch(broker, receive_buffer_bytes=32 * 1024))
    assert records_of(response) == records
    assert 1 < during <= 32 * 1024 and after == 1


def test_a_large_response_trickling_in_over_tls_leaves_the_low_mark_alone(pki):
    """issue 16: with TLS the socket's bytes are records, more than the frame's, and the SSL
    transport may hold decrypted bytes back: SO_RCVLOWAT stays 1 (a low mark in frame bytes
    could wait for bytes that never come), and the trickled response arrives whole."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(pki.server.cert_path, pki.server.key_path)
    context = ssl.create_default_context(cafile=str(pki.ca.cert_path))
    records = bytes(range(251)) * ((2 << 20) // 251)
    with Trickle(fetch_response(records), ssl_context=server) as broker:
        response, during, _, after, _ = asyncio.run(trickled_fetch(broker, ssl_context=context))
    assert records_of(response) == records
    assert during == 1 and after == 1


def test_a_small_receive_buffer_is_set_before_connecting_so_a_large_answer_flows():
    """Issue 16 (review): receive.buffer.bytes was set after connect(2), where tcp(7) says
    it does not take effect as it should: with 4096 on loopback (64 KiB segments) a 1 MB
    Fetch answer came 8 KiB per 200 ms window probe, and the consumer got 0 of 10,000
    records in 15 s (confluent-kafka with socket.receive.buffer.bytes 4096: all at once).
    Set before connecting, as Java's Selector does, the records come at once."""
    with MiniBroker() as broker:
        with Producer(bootstrap_servers=broker.bootstrap_servers, batch_size=1_000_000, linger_ms=5) as producer:
            for _ in range(10_000):
                producer.send("small-window", b"v" * 100, partition=0)
            producer.flush(15)
        with Consumer(bootstrap_servers=broker.bootstrap_servers, group_id=None, receive_buffer_bytes=4096,
                      auto_offset_reset="earliest", max_partition_fetch_bytes=4 << 20,
                      request_timeout_ms=30_000) as consumer:
            consumer.assign([("small-window", 0)])
            got, deadline = 0, time.monotonic() + 15
            while got < 10_000 and time.monotonic() < deadline:
                got += len(consumer.poll(1.0))
    assert got == 10_000
