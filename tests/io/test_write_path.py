"""The write path of a connection (issue 16, produce item 1): a request goes to the socket
as pieces (:func:`~kproto.protocol.frames.encode_request_parts`), a Produce request's record
batches as the objects they are, never joined into the frame nor copied into asyncio's
buffer; on a plaintext connection before Python 3.12 the connection writes them itself
(``os.writev``) and keeps what the socket did not take as views.

What is checked is what the broker and a peer client read back: byte-exact frames, in
order, whatever the socket takes per call (a 4 KiB ``SO_SNDBUF`` makes every request
leave in many partial writes), and bytes still queued at ``close()`` leave before the
socket closes.
"""

import asyncio
import signal
import socket

import pytest

from kproto import Producer
from kproto.io import Connection
from kproto.protocol import ApiKey, encode_request
from kproto.protocol.frames import OWN_PIECE, encode_request_parts
from kproto.protocol.messages import MetadataRequest, ProduceRequest
from kproto.records import BatchBuilder

kafka = pytest.importorskip("kafka")


def read_values(bootstrap, topic, count):
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000)
    try:
        tp = kafka.TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        out = []
        for message in consumer:
            out.append(message.value)
            if len(out) >= count:
                break
        return out
    finally:
        consumer.close()


def batch(values):
    builder = BatchBuilder()
    for value in values:
        builder.append(0, None, value)
    return builder.build()


def test_request_pieces_join_to_the_frame_and_keep_record_batches_uncopied():
    """The pieces, joined, are encode_request's frame; a record batch of at least
    OWN_PIECE bytes is a piece of its own, the very object given (no copy); smaller fields
    around it are joined into few pieces; a request without records is one piece."""
    big, small = batch([b"x" * 1000] * 40), batch([b"y"])
    assert len(big) >= OWN_PIECE > len(small)
    request = ProduceRequest(acks=1, timeout_ms=1000, topic_data=[
        ProduceRequest.TopicProduceData(name="a", partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=big),
            ProduceRequest.PartitionProduceData(index=1, records=small)]),
        ProduceRequest.TopicProduceData(name="b", partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=memoryview(big))])])
    for version in (3, 9, 12):
        pieces = encode_request_parts(ApiKey.PRODUCE, version, 7, "me", request)
        assert b"".join(pieces) == encode_request(ApiKey.PRODUCE, version, 7, "me", request)
        own = [p for p in pieces if len(p) >= OWN_PIECE]
        assert own[0] is big and isinstance(own[1], memoryview) and own[1].obj is big
        # the fields before big, big, those up to b's batch, b's batch, and (flexible) tagged fields
        assert len(pieces) == (5 if version >= 9 else 4)
    metadata = MetadataRequest(topics=None)
    assert encode_request_parts(ApiKey.METADATA, 12, 1, None, metadata) == [
        encode_request(ApiKey.METADATA, 12, 1, None, metadata)]


def test_produce_requests_the_socket_takes_in_many_writes_arrive_whole_and_in_order(broker):
    """Megabyte requests through a 4 KiB send buffer, several in flight: each leaves in
    many partial writes, the rest waiting as views; the broker takes every batch (it
    checks their CRCs) and a peer client reads every record back in order."""
    values = [b"%05d" % i + b"v" * 995 for i in range(3000)]
    with Producer(bootstrap_servers=broker.bootstrap_servers, batch_size=1 << 20, linger_ms=50,
                  send_buffer_bytes=4096, acks=1) as producer:
        futures = [producer.send("writev", value, partition=0) for value in values]
        producer.flush(30)
    assert [f.result(0).offset for f in futures] == list(range(len(values)))
    assert read_values(broker.bootstrap_servers, "writev", len(values)) == values


def test_bytes_still_queued_at_close_leave_before_the_socket_closes(broker):
    """acks=0: nothing answers, so close() is what lets the queued bytes go. A request of
    900 KB (under the broker's message.max.bytes) is partly queued when close() is called;
    every record arrives."""
    values = [b"%05d" % i + b"z" * 9995 for i in range(90)]
    host, port = broker.bootstrap_servers.rsplit(":", 1)

    async def run():
        conn = Connection(host, int(port), send_buffer_bytes=4096)
        await conn.open()
        await conn.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="queued")],
                                           allow_auto_topic_creation=True))
        request = ProduceRequest(acks=0, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
            name="queued", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch(values))])])
        assert await conn.request(request, expect_response=False) is None
        assert conn._writer.buffered > 0  # most of it is still waiting for the socket
        await conn.close(timeout=10)

    asyncio.run(run())
    assert read_values(broker.bootstrap_servers, "queued", len(values)) == values


@pytest.fixture(scope="module")
def secure_broker(pki, tmp_path_factory):
    """minibroker with the TLS and SASL listeners of tests/support/secure_broker.py."""
    from minibroker import MiniBroker
    from tests.support.secure_broker import secure_config

    with MiniBroker(config=secure_config(pki, tmp_path_factory.mktemp("write-path"))) as broker:
        yield broker


@pytest.mark.parametrize("listener", ["SSL", "SASL_PLAINTEXT", "SASL_SSL"])
def test_megabyte_requests_over_tls_and_sasl_arrive_whole(secure_broker, pki, listener):
    """TLS cannot writev (the transport encrypts each piece it is handed, Python 3.11's
    writelines); SASL_PLAINTEXT goes the plaintext way (Kafka's SASL does not wrap the
    data). Both carry megabyte requests of uncopied batches through a 4 KiB send buffer,
    and the records come back in order."""
    from kproto import Consumer
    from kproto.structs import TopicPartition
    from tests.support.secure_broker import PLAIN_USERS

    settings = {"bootstrap.servers": secure_broker.bootstrap_servers_for(listener), "security.protocol": listener}
    if "SSL" in listener:
        settings["ssl.ca.location"] = str(pki.ca.cert_path)
    if listener.startswith("SASL"):
        settings.update({"sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": PLAIN_USERS["alice"]})
    topic = f"big-{listener}".lower()
    values = [b"%05d" % i + b"s" * 995 for i in range(2500)]
    with Producer(settings, batch_size=1 << 20, linger_ms=50, send_buffer_bytes=4096) as producer:
        futures = [producer.send(topic, value, partition=0) for value in values]
        producer.flush(30)
    assert [f.result(0).offset for f in futures] == list(range(len(values)))
    with Consumer(settings, auto_offset_reset="earliest", enable_auto_commit=False) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        got: list[bytes] = []
        for _ in range(60):
            got += [r.value for r in consumer.poll(0.5)]
            if len(got) >= len(values):
                break
    assert got == values


# -- _Writer on its own, on a socket pair (issue 16b) ----------------------------------------


class _Pair:
    """A _Writer on one end of a socket pair, its transport asyncio's selector transport;
    ``peer`` is the other end, which reads only when the test says so."""

    def __init__(self, loop, send_buffer=None):
        from kproto.io.connection import _Writer  # noqa: F401

        self.a, self.peer = socket.socketpair()
        if send_buffer:
            self.a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
        self.peer.setblocking(False)
        self.loop = loop
        self.closed = loop.create_future()
        self.failures = []

    async def open(self):
        from kproto.io.connection import _Writer

        pair = self

        class Protocol(asyncio.streams.FlowControlMixin, asyncio.Protocol):  # as _Stream, for writing
            def _get_close_waiter(self, stream):
                return pair.closed

            def connection_lost(self, exc):
                super().connection_lost(exc)
                pair.writer.lost()
                if not pair.closed.done():
                    pair.closed.set_result(None)

        self.transport, protocol = await self.loop.connect_accepted_socket(Protocol, self.a)
        self.writer = _Writer(self.transport, protocol, self.loop, self.failures.append)
        return self

    async def read_all(self):
        """What the peer reads until the writer's side closes."""
        got = bytearray()
        while chunk := await self.loop.sock_recv(self.peer, 1 << 20):
            got += chunk
        return bytes(got)

    async def close_writer(self):
        """Close the writer's side and wait until it is closed (what it holds sent)."""
        self.writer.close()
        await asyncio.wait_for(self.writer.wait_closed(), 30)

    def close(self):
        if not self.transport.is_closing():  # (3.11's transport fails an abort() after its close())
            self.transport.abort()
        self.peer.close()


@pytest.fixture(params=["writev", "transport"])
def write_mode(request, monkeypatch):
    """Both ways _Writer writes on a plaintext selector transport: itself (os.writev, this
    Python 3.11) and the transport's ``write`` per piece (3.12+, forced here)."""
    from kproto.io import connection

    if request.param == "transport":
        monkeypatch.setattr(connection, "_OWN_WRITEV", False, raising=False)
    return request.param


def test_a_write_after_the_transport_began_closing_is_dropped(write_mode):
    """Issue 16b item 1: a request written in the turn between the transport's own close
    (a read error makes it abort itself: ``_force_close``) and ``connection_lost`` is
    dropped without error: nothing of it reaches the peer, and the socket is not watched
    for writing (CPython gh-136234: ``writelines`` registered a writer on a socket about
    to close, which broke the next connection given the same fd number)."""

    async def run():
        pair = await _Pair(asyncio.get_running_loop(), send_buffer=4096).open()
        try:
            assert (pair.writer._fd >= 0) == (write_mode == "writev")
            fd = pair.a.fileno()
            pair.transport.abort()  # what the transport does itself on a read error
            pair.writer.write([b"\0\0\0\x10", bytes(1 << 20)])  # no error
            assert pair.writer.buffered == 0
            assert fd not in pair.loop._selector.get_map()
            await pair.closed
            assert await pair.read_all() == b""  # nothing of it left
            assert pair.failures == []
        finally:
            pair.close()

    asyncio.run(run())


def test_drain_waits_while_the_peer_reads_nothing(write_mode, monkeypatch):
    """Issue 16b item 1: back-pressure in both modes. A producer writes megabyte requests
    and drains after each, as Connection does; a peer that reads nothing makes drain()
    wait once the socket and a little more are full (CPython gh-127655: the transport's
    ``writelines`` of 3.12.0-3.12.8 and 3.13.0-3.13.1 never paused, and 63 MiB piled up).
    The transport's ``writelines`` is not used on a plaintext transport; once the peer
    reads, everything arrives whole and in order."""

    def no_writelines(self, pieces):
        raise AssertionError("the selector transport's writelines (gh-127655, gh-136234)")

    monkeypatch.setattr(asyncio.selector_events._SelectorSocketTransport, "writelines", no_writelines)

    async def run():
        pair = await _Pair(asyncio.get_running_loop()).open()
        try:
            expected, blocked = bytearray(), False
            for i in range(64):
                pieces = [i.to_bytes(4, "big"), bytes([i]) * (1 << 20)]
                pair.writer.write(pieces)
                expected += b"".join(pieces)
                try:
                    await asyncio.wait_for(pair.writer.drain(), 0.5)
                except TimeoutError:
                    blocked = True
                    break
            assert blocked, "drain() never waited"
            assert pair.writer.buffered <= 4 << 20
            reading = asyncio.ensure_future(pair.read_all())
            await asyncio.wait_for(pair.writer.drain(), 30)  # the peer reads: drain returns
            await pair.close_writer()
            assert await asyncio.wait_for(reading, 30) == expected
        finally:
            pair.close()

    asyncio.run(run())


def test_an_empty_piece_is_written_as_nothing(write_mode):
    """Issue 16b item 2: a zero-length piece (SaslHandshake v0's raw frame of an empty
    token: ``[len(token).to_bytes(4), token]``) made the os.writev loop spin for ever
    (writev returned 0, nothing was taken off the queue). It is written as nothing, and
    the peer reads the rest whole."""

    def timed_out(signum, frame):
        raise _Hung("write() did not return")

    async def run():
        pair = await _Pair(asyncio.get_running_loop()).open()
        try:
            previous = signal.signal(signal.SIGALRM, timed_out)
            signal.setitimer(signal.ITIMER_REAL, 10)
            try:
                pair.writer.write([b"\0\0\0\0", b""])
                pair.writer.write([b"", b"\0\0\0\x02", b"", memoryview(b"ok"), bytearray()])
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
            await pair.close_writer()
            assert await pair.read_all() == b"\0\0\0\0\0\0\0\x02ok"
        finally:
            pair.close()

    asyncio.run(run())


class _Hung(Exception):
    """Not an OSError: the writer's loop must not take it for a socket error."""


@pytest.mark.parametrize("reported, used", [(-1, 1024), (None, 1024), (1, 16), (16, 16), (1024, 1024),
                                            (4096, 1024)])
def test_pieces_per_writev_is_sane_whatever_sysconf_says(reported, used):
    """Issue 16b item 3: ``sysconf(SC_IOV_MAX)`` is -1 where there is no limit (and
    may be unknown): os.writev is still handed at least POSIX's minimum of 16 pieces
    (``_POSIX_UIO_MAXIOV``), 1024 at most or when the system does not say."""
    from kproto.io.connection import _iov_max

    def sysconf(name):
        assert name == "SC_IOV_MAX"
        if reported is None:
            raise ValueError("unrecognized configuration name")
        return reported

    assert _iov_max(sysconf) == used


def test_pieces_of_any_buffer_format_arrive_byte_exact(write_mode):
    """Issue 16b item 1: with the transport's ``write`` per piece, a memoryview whose items
    are not bytes (a record batch handed over as ``memoryview(...).cast("i")``) is still
    sent as bytes: the transport slices what the socket did not take by the count it
    sent, which on such a view counts items. Through a 4 KiB send buffer, the peer reads
    exactly the pieces' bytes, in order."""

    async def run():
        pair = await _Pair(asyncio.get_running_loop(), send_buffer=4096).open()
        try:
            reading = asyncio.ensure_future(pair.read_all())
            expected = bytearray()
            for i in range(8):
                data = bytes(range(256)) * (1 << 10) + bytes([i]) * 4
                pieces = [b"%4d" % i, memoryview(data).cast("i"), memoryview(data)[3:], bytearray(data[:5])]
                pair.writer.write(pieces)
                expected += b"".join(bytes(p) for p in pieces)
                await pair.writer.drain()
            await pair.close_writer()
            assert await asyncio.wait_for(reading, 30) == expected
        finally:
            pair.close()

    asyncio.run(run())


def test_when_written_fires_once_the_socket_took_every_byte():
    """Issue 16, the send_batch stall: the producer's sender hands the loop back to a
    thread only once what it sent is in the kernel (``Sender.hand_off``), which it learns
    from ``when_written``. The callback runs at once when nothing waits; with a megabyte
    queued behind a 4 KiB send buffer, not before the peer has read enough for the socket
    to take all of it; and when the connection is lost with bytes still queued."""

    async def run():
        loop = asyncio.get_running_loop()
        pair = await _Pair(loop, send_buffer=4096).open()
        try:
            assert pair.writer._fd >= 0  # the writer's own writev (Python 3.11 in this venv)
            called = []
            pair.writer.when_written(lambda: called.append("idle"))
            assert called == ["idle"]
            pair.writer.write([b"\0\0\0\x10", bytes(1 << 20)])
            written = loop.create_future()
            pair.writer.when_written(lambda: written.set_result(pair.writer.buffered))
            assert pair.writer.buffered > 0
            got = 0
            while not written.done():
                assert got < (1 << 20) + 4, "everything was read and the callback did not run"
                got += len(await loop.sock_recv(pair.peer, 1 << 16))
                await asyncio.sleep(0)  # the loop's turn: the writer takes the room made
            assert await written == 0
            pair.writer.write([bytes(1 << 20)])
            lost = []
            pair.writer.when_written(lambda: lost.append(pair.writer.buffered))
            assert lost == []
            pair.writer.lost()
            assert lost == [0]
        finally:
            pair.close()

    asyncio.run(run())
