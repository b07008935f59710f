"""Zero-copy Fetch (minibroker.server): the frame sent is byte for byte the plain encoding.

The plain encoding is ``encode_response`` of the handler's own answer with each
partition's records read into bytes; the sent frame comes off a real socket, from the
sendfile path, the copying path and logs in memory.
"""

import asyncio
import os
import socket
import time
import uuid

import pytest

from kproto.protocol import ApiKey, FrameReader, encode_request, encode_response
from kproto.protocol.frames import encode_response_parts
from kproto.protocol.messages import FetchRequest, FetchResponse
from kproto.records import BatchBuilder, decode_record_set
from minibroker import MiniBroker
from minibroker.handlers import RequestContext, fetch
from minibroker.log.config import LogConfig
from minibroker.log.partition import PartitionLog
from minibroker.log.store import RecordSlices
from minibroker.server import send_response
from tests.support.raw_client import RawClient, size_prefixed

VERSIONS = (4, 11, 12, 13, 17)


@pytest.fixture
def sendfile_calls(monkeypatch):
    """Counts os.sendfile calls (asyncio looks the function up on each call)."""
    calls = []
    real = os.sendfile

    def counting(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(os, "sendfile", counting)
    return calls


def batch(n: int, key_space: int | None = None, start: int = 0, size: int = 100) -> tuple[bytes, int]:
    builder = BatchBuilder()
    for i in range(start, start + n):
        key = b"k%d" % (i % key_space) if key_space else None
        builder.append(1_700_000_000_000 + i, key, b"%d-" % i + b"v" * size)
    return builder.build(), n


def append(log: PartitionLog, data_n: tuple[bytes, int]) -> None:
    data, n = data_n
    log.append(data, last_offset_delta=n - 1, max_timestamp=1_700_000_000_000 + log.log_end_offset + n, leader_epoch=0)


def on_loop(broker: MiniBroker, fn, *args):
    """Run ``fn(*args)`` (a coroutine function or a plain one) in the broker's loop."""

    async def call():
        result = fn(*args)
        return await result if asyncio.iscoroutine(result) else result

    return asyncio.run_coroutine_threadsafe(call(), broker._loop).result(10)


def build_topics(state) -> None:
    """Topic "t": 3 partitions, ~3 batches a segment (p0 40 batches, p1 5, p2 none);
    topic "c": compacted, with gaps inside and between its segments."""
    t = state.create_topic("t", 3, {"segment.bytes": "2000"})
    for i in range(40):
        append(t.partitions[0].log, batch(5, start=5 * i))
    for i in range(5):
        append(t.partitions[1].log, batch(3, start=3 * i))
    c = state.create_topic("c", 1, {"segment.bytes": "2000", "cleanup.policy": "compact"})
    log = c.partitions[0].log
    for i in range(30):
        append(log, batch(4, key_space=6, start=4 * i))
    log.roll()
    log.compact()


def requests(state, version: int) -> list[FetchRequest]:
    """Fetches that cover: several partitions and segments, size limits, empty and
    erroring partitions, an offset inside a batch and offsets in compaction gaps."""
    t, c = state.topics["t"], state.topics["c"]
    Topic, Partition = FetchRequest.FetchTopic, FetchRequest.FetchPartition

    def topic(name, *partitions):
        topic_id = state.topics[name].topic_id if name in state.topics else uuid.uuid4()
        return Topic(topic=name, topic_id=topic_id, partitions=[
            Partition(partition=p, fetch_offset=offset, partition_max_bytes=limit) for p, offset, limit in partitions])

    compacted = c.partitions[0].log
    gap = next(o for o in range(compacted.log_end_offset) if not _holds(compacted, o))
    big = 1 << 20
    return [
        FetchRequest(max_bytes=big, topics=[topic("t", (0, 0, big), (1, 0, big), (2, 0, big))]),
        FetchRequest(max_bytes=big, topics=[topic("t", (0, 17, 5000), (1, 4, 100))]),
        FetchRequest(max_bytes=big, topics=[topic("t", (0, 33, 1500), (1, 7, 2000))]),
        FetchRequest(max_bytes=3000, topics=[topic("t", (1, 0, big), (0, 0, big))]),
        FetchRequest(max_bytes=1, topics=[topic("t", (0, 123, big), (1, 0, big))]),
        FetchRequest(max_bytes=big, topics=[topic("t", (0, t.partitions[0].log.log_end_offset, big),
                                                  (1, 999, big), (9, 0, big)), topic("nope", (0, 0, big))]),
        FetchRequest(max_bytes=big, topics=[topic("c", (0, 0, big))]),
        FetchRequest(max_bytes=big, topics=[topic("c", (0, gap, 700))]),
    ]


def _holds(log: PartitionLog, offset: int) -> bool:
    return any(r.offset == offset for r in decode_record_set(log.read(offset, 1 << 20))[0])


def plain_frame(broker: MiniBroker, version: int, correlation_id: int, request: FetchRequest) -> bytes:
    """``encode_response`` of the handler's answer, with its records read into bytes."""
    context = RequestContext(ApiKey.FETCH, version, correlation_id, "test", None, "/127.0.0.1")

    async def answer():
        response = await fetch.handle(broker._server.state, context, request)
        for topic in response.responses:
            for p in topic.partitions:
                if p.records is not None:
                    assert isinstance(p.records, RecordSlices)
                    p.records = p.records.tobytes()
        return response

    return encode_response(ApiKey.FETCH, version, correlation_id, on_loop(broker, answer))


@pytest.mark.parametrize("storage", ["disk", "memory"])
@pytest.mark.parametrize("use_sendfile", [True, False])
def test_sent_frame_equals_the_plain_encoding(tmp_path, monkeypatch, sendfile_calls, storage, use_sendfile):
    monkeypatch.setenv("MINIBROKER_SENDFILE", "1" if use_sendfile else "0")
    with MiniBroker(data_dir=tmp_path if storage == "disk" else None) as broker:
        state = broker._server.state
        on_loop(broker, build_topics, state)
        assert len(state.topics["t"].partitions[0].log.segments) > 10
        assert len(state.topics["c"].partitions[0].log.segments) > 2
        assert len(state.topics["t"].partitions[0].log.read_slices(17, 5000)) > 1  # a limit across segments
        client = RawClient(broker.port)
        try:
            for version in VERSIONS:
                for request in requests(state, version):
                    expected = plain_frame(broker, version, client.correlation_id + 1, request)
                    client.send(ApiKey.FETCH, version, request)
                    frame = client.receive_frame()
                    assert size_prefixed(frame) == expected, (version, request)
                    assert client.frames.buffered == 0
        finally:
            client.close()
    # sendfile is used exactly when it can serve: on disk and not turned off
    assert bool(sendfile_calls) == (storage == "disk" and use_sendfile)


def test_the_environment_switch_reaches_the_server(monkeypatch):
    monkeypatch.setenv("MINIBROKER_SENDFILE", "0")
    with MiniBroker() as broker:
        assert broker._server.sendfile is False
    monkeypatch.delenv("MINIBROKER_SENDFILE")
    with MiniBroker() as broker:
        assert broker._server.sendfile is True


# -- a segment deleted while its slice is being sent ---------------------------------------


def _filled_log(directory, total: int) -> PartitionLog:
    log = PartitionLog(directory, config=LogConfig(segment_bytes=1 << 20))
    i = 0
    while log.size_in_bytes < total:
        append(log, batch(50, start=50 * i, size=1000))
        i += 1
    return log


@pytest.mark.parametrize("how", ["retention", "topic deleted"])
def test_segments_deleted_while_a_fetch_is_being_sent_are_sent_whole(tmp_path, sendfile_calls, how):
    """The response is stuck on a full socket when its segments go; the bytes arrive."""
    log = _filled_log(tmp_path / "t-0", 8 << 20)
    assert len(log.segments) >= 8
    response = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[
        FetchResponse.PartitionData(partition_index=0, high_watermark=log.high_watermark,
                                    records=RecordSlices(log.read_slices(0, 1 << 30)))])])
    parts = encode_response_parts(ApiKey.FETCH, 12, 7, response)
    records = response.responses[0].partitions[0].records.tobytes()
    response.responses[0].partitions[0].records = records
    expected = encode_response(ApiKey.FETCH, 12, 7, response)
    paths = [s.path for s in log.segments]

    async def main() -> bytes:
        accepted: asyncio.Future = asyncio.get_running_loop().create_future()

        async def serve(reader, writer):
            accepted.set_result(writer)

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        client = socket.socket()
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        client.setblocking(False)
        await asyncio.get_running_loop().sock_connect(client, server.sockets[0].getsockname())
        writer = await accepted
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        sending = asyncio.create_task(send_response(writer, parts))
        await asyncio.sleep(0.2)
        assert not sending.done()  # stuck: the client reads nothing yet
        if how == "retention":
            log.delete_records(log.log_end_offset)
            log.apply_retention()
        else:
            log.close()
            for path in paths:
                path.unlink(missing_ok=True)
        assert not any(p.exists() for p in paths[:-1])
        for _ in range(200):  # descriptors freed now would be reused by these
            open(tmp_path / "other", "wb").close()
        received = bytearray()
        loop = asyncio.get_running_loop()
        while len(received) < len(expected):
            reading = asyncio.ensure_future(loop.sock_recv(client, 1 << 20))
            await asyncio.wait([reading, sending], timeout=10, return_when=asyncio.FIRST_COMPLETED)
            if not reading.done():
                reading.cancel()
                if sending.done():
                    sending.result()  # raises what stopped the send
                sending.cancel()
                pytest.fail(f"the send stalled after {len(received)} of {len(expected)} bytes")
            data = reading.result()
            assert data, "connection closed early"
            received += data
        await sending
        client.close()
        writer.close()
        server.close()
        await server.wait_closed()
        return bytes(received)

    assert asyncio.run(main()) == expected
    assert len(sendfile_calls) > 1  # the send really went in several os.sendfile calls
    log.close()


# -- real clients ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def disk_broker(tmp_path_factory):
    """A broker on disk with "many": 2000 records of ~300 B over segments of 16 KiB."""
    with MiniBroker(data_dir=tmp_path_factory.mktemp("data")) as broker:
        state = broker._server.state

        def fill():
            topic = state.create_topic("many", 1, {"segment.bytes": str(16 << 10)})
            for i in range(100):
                append(topic.partitions[0].log, batch(20, start=20 * i, size=300))

        on_loop(broker, fill)
        assert len(state.topics["many"].partitions[0].log.segments) > 20
        yield broker


def expected_values():
    return [b"%d-" % i + b"v" * 300 for i in range(2000)]


def test_kafka_python_consumes_from_disk(disk_broker, sendfile_calls):
    kafka = pytest.importorskip("kafka")
    consumer = kafka.KafkaConsumer(bootstrap_servers=disk_broker.bootstrap_servers, enable_auto_commit=False,
                                   consumer_timeout_ms=3000, max_partition_fetch_bytes=20_000)
    try:
        tp = kafka.TopicPartition("many", 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        assert [m.value for m in consumer] == expected_values()
    finally:
        consumer.close()
    assert sendfile_calls


def test_confluent_kafka_consumes_from_disk(disk_broker, sendfile_calls):
    ck = pytest.importorskip("confluent_kafka")
    consumer = ck.Consumer({"bootstrap.servers": disk_broker.bootstrap_servers, "group.id": "sendfile",
                            "enable.auto.commit": False, "max.partition.fetch.bytes": 20_000})
    try:
        consumer.assign([ck.TopicPartition("many", 0, ck.OFFSET_BEGINNING)])
        values = []
        deadline = time.monotonic() + 30
        while len(values) < 2000 and time.monotonic() < deadline:
            for message in consumer.consume(500, timeout=1):
                assert message.error() is None, message.error()
                values.append(message.value())
        assert values == expected_values()
    finally:
        consumer.close()
    assert sendfile_calls


def test_aiokafka_consumes_from_disk(disk_broker, sendfile_calls):
    aiokafka = pytest.importorskip("aiokafka")

    async def main():
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=disk_broker.bootstrap_servers,
                                             enable_auto_commit=False, max_partition_fetch_bytes=20_000)
        await consumer.start()
        try:
            tp = aiokafka.TopicPartition("many", 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            values = []
            while len(values) < 2000:
                batches = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 30)
                values += [m.value for messages in batches.values() for m in messages]
            return values
        finally:
            await consumer.stop()

    assert asyncio.run(main()) == expected_values()
    assert sendfile_calls


def test_a_raw_request_pipeline_gets_answers_in_order(disk_broker):
    """Fetches and other requests sent back to back: each answer whole, in order."""
    state = disk_broker._server.state
    sock = socket.create_connection(("127.0.0.1", disk_broker.port), timeout=10)
    request = FetchRequest(max_bytes=1 << 20, topics=[FetchRequest.FetchTopic(topic="many", partitions=[
        FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
    from kproto.protocol.messages import ApiVersionsRequest

    wire = b"".join(encode_request(ApiKey.FETCH, 12, cid, "p", request) if cid % 2 else
                    encode_request(ApiKey.API_VERSIONS, 3, cid, "p", ApiVersionsRequest(
                        client_software_name="t", client_software_version="1")) for cid in range(1, 21))
    sock.sendall(wire)
    frames = FrameReader()
    got = []
    while len(got) < 20:
        data = sock.recv(1 << 20)
        assert data
        frames.receive_data(data)
        while (frame := frames.next_frame()) is not None:
            got.append(frame)
    sock.close()
    assert [int.from_bytes(f[:4], "big") for f in got] == list(range(1, 21))
    records = state.topics["many"].partitions[0].log.read(0, 1 << 20, at_least_one=True)
    assert all(records in f for f in got[::2])


def test_a_large_fetch_from_a_log_in_memory_is_sent_without_joining_its_records():
    """issue 16 (poll_arrow 2): a Fetch answered from a log in memory had its records copied
    three times before the socket (out of the log's buffer twice, then joined with the frame
    header). The records now leave as the one bytes object read from the log, as a piece of
    their own, and the frame sent is still byte for byte the plain encoding."""
    from minibroker.server import _pin

    with MiniBroker() as broker:
        state = broker._server.state

        def fill():
            log = state.create_topic("big", 1).partitions[0].log
            for i in range(10):
                append(log, batch(1000, start=1000 * i))  # about 110 kB a batch
            return log

        log = on_loop(broker, fill)
        request = FetchRequest(max_bytes=1 << 20, topics=[FetchRequest.FetchTopic(topic="big", partitions=[
            FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
        slices = on_loop(broker, log.read_slices, 0, 1 << 20)
        records = slices[0].source
        parts = encode_response_parts(ApiKey.FETCH, 12, 1, FetchResponse(responses=[FetchResponse.FetchableTopicResponse(
            topic="big", partitions=[FetchResponse.PartitionData(partition_index=0, records=RecordSlices(slices))])]))
        assert any(piece is records for piece in _pin(parts, sendfile=True))  # not copied into a join
        client = RawClient(broker.port)
        try:
            expected = plain_frame(broker, 12, client.correlation_id + 1, request)
            client.send(ApiKey.FETCH, 12, request)
            frame = client.receive_frame()
            assert len(frame) > 1_000_000
            assert size_prefixed(frame) == expected
        finally:
            client.close()
