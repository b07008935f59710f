"""minibroker's protocol behaviour, checked with exact requests over a real socket:
ordering, long polls, size limits, and what happens to bad input."""

import random
import struct
import threading
import time

import pytest

from kproto import compression
from kproto.codec import crc32c
from kproto.errors import (
    CorruptMessageError,
    InvalidRecordError,
    InvalidTopicError,
    MessageTooLargeError,
    UnsupportedVersionError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateTopicsRequest,
    FetchRequest,
    MetadataRequest,
    ProduceRequest,
)
from kproto.records import BatchBuilder, decode_record_set
from minibroker import MiniBroker
from tests.support.raw_client import RawClient, size_prefixed


def batch(*values, ts=1_000):
    builder = BatchBuilder()
    for v in values:
        builder.append(ts, None, v)
    return builder.build()


def produce(client, topic, records, acks=1, version=9):
    request = ProduceRequest(acks=acks, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)])])
    if acks == 0:
        client.send(ApiKey.PRODUCE, version, request)
        return None
    return client.request(ApiKey.PRODUCE, version, request).responses[0].partition_responses[0]


def fetch_request(topic, offset, max_wait_ms=0, min_bytes=1, partition_max_bytes=1 << 20, max_bytes=1 << 24):
    return FetchRequest(max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes, topics=[FetchRequest.FetchTopic(
        topic=topic, partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=partition_max_bytes)])])


def create(client, topic):
    client.request(ApiKey.METADATA, 9, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]))


def test_start_is_ready_and_stop_is_idempotent():
    broker = MiniBroker().start()
    try:
        assert broker.port > 0
        assert broker.bootstrap_servers == f"127.0.0.1:{broker.port}"
    finally:
        broker.stop()
    broker.stop()
    # The same port can be bound again at once.
    with MiniBroker(port=broker.port) as again:
        assert again.port == broker.port


def test_unknown_config_key_names_the_closest():
    with pytest.raises(ValueError, match="num.partitions"):
        MiniBroker(config={"num.partition": 3})


def test_api_versions_advertises_the_handlers(raw):
    response = raw().request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    keys = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    # Produce v12: transaction.version 2 finalized by default (KIP-890 part 2, issue 14 step 2).
    assert keys[ApiKey.PRODUCE] == (3, 12) and keys[ApiKey.FETCH] == (4, 17) and keys[ApiKey.API_VERSIONS] == (0, 4)


def test_unknown_api_versions_version_gets_the_v0_answer(raw):
    client = raw()
    # ApiVersions v99: header v2 but a body nobody can parse; the broker answers in v0.
    client.send_raw(size_prefixed(struct.pack(">hhi", ApiKey.API_VERSIONS, 99, 7) + b"\x00\x01x\x00garbage"))
    frame = client.receive_frame()
    (correlation_id,) = struct.unpack_from(">i", frame)
    body = ApiVersionsResponse.decode(frame[4:], 0)
    assert correlation_id == 7 and body.error_code == UnsupportedVersionError.code
    assert any(k.api_key == ApiKey.API_VERSIONS for k in body.api_keys)


def test_metadata_auto_creates_and_rejects_bad_names(raw):
    client = raw()
    response = client.request(ApiKey.METADATA, 12, MetadataRequest(topics=[
        MetadataRequest.MetadataRequestTopic(name="fresh"), MetadataRequest.MetadataRequestTopic(name="bad name!")]))
    fresh, bad = response.topics
    assert fresh.error_code == 0 and len(fresh.partitions) == 1 and fresh.topic_id.int != 0
    assert bad.error_code == InvalidTopicError.code
    everything = client.request(ApiKey.METADATA, 12, MetadataRequest(topics=None))
    assert [t.name for t in everything.topics] == ["fresh"]


def test_produce_validates_before_appending(raw):
    client = raw()
    create(client, "t")
    good = batch(b"a", b"b")
    assert (produce(client, "t", good).error_code, produce(client, "t", good).base_offset) == (0, 2)
    corrupt = bytearray(good)
    corrupt[-3] ^= 0xFF
    assert produce(client, "t", bytes(corrupt)).error_code == CorruptMessageError.code
    big = batch(b"x" * 2_000_000)
    assert produce(client, "t", big).error_code == MessageTooLargeError.code
    response = client.request(ApiKey.FETCH, 12, fetch_request("t", 0))
    records, next_offset, _ = decode_record_set(response.responses[0].partitions[0].records)
    assert [r.value for r in records] == [b"a", b"b", b"a", b"b"] and next_offset == 4


def create_compacted(client, topic):
    request = CreateTopicsRequest(timeout_ms=5000, validate_only=False, topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=1, replication_factor=1, assignments=[],
        configs=[CreateTopicsRequest.CreatableTopicConfig(name="cleanup.policy", value="compact")])])
    assert client.request(ApiKey.CREATE_TOPICS, 5, request).topics[0].error_code == 0


def keyed_batch(*keys, codec=0):
    builder = BatchBuilder(2, codec)
    for k in keys:
        builder.append(1_000, k, b"x" * 100)
    return builder.build()


def reseal(raw, payload):
    """``raw``'s v2 header over ``payload``, with its batch length and CRC made right."""
    out = bytearray(raw[:61] + payload)
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def test_produce_walks_every_record_before_appending(raw):
    """A batch whose CRC is right can still hold records that do not parse (plain or
    compressed), or keyless records for a compacted topic: refused, nothing appended.
    A batch that does not parse is corrupt even where keys are required."""
    client = raw()
    create(client, "plain")
    create_compacted(client, "compacted")
    keyless = keyed_batch(None, None)
    bad_header_count = keyless[61:-1] + b"\x02"  # the last record: 1 header, and no bytes for it
    lz4 = keyed_batch(b"a", b"b", codec=compression.LZ4)
    assert lz4[22] & 7 == compression.LZ4
    cases = [
        ("plain", reseal(keyless, bad_header_count), CorruptMessageError.code, "bad header count"),
        ("plain", reseal(keyless, keyless[61:-1]), CorruptMessageError.code, "record length runs past the batch"),
        ("plain", reseal(lz4, compression.compress(compression.LZ4, bad_header_count)), CorruptMessageError.code, "bad header count"),
        ("compacted", reseal(keyless, bad_header_count), CorruptMessageError.code, "bad header count"),
        ("compacted", keyed_batch(b"k", None), InvalidRecordError.code, "Compacted topic cannot accept message without key"),
    ]
    for topic, records, code, message in cases:
        response = produce(client, topic, records)
        assert (response.error_code, response.base_offset) == (code, -1), (topic, message)
        assert message in response.error_message
    assert produce(client, "plain", keyless).error_code == 0
    assert produce(client, "compacted", lz4).error_code == 0
    for topic, keys in (("plain", [None, None]), ("compacted", [b"a", b"b"])):
        response = client.request(ApiKey.FETCH, 12, fetch_request(topic, 0))
        records, next_offset, _ = decode_record_set(response.responses[0].partitions[0].records)
        assert [r.key for r in records] == keys and next_offset == 2


def test_acks_zero_gets_no_response(raw):
    client = raw()
    create(client, "quiet")
    produce(client, "quiet", batch(b"fire-and-forget"), acks=0)
    # The next answer on the connection belongs to the next request.
    response = client.request(ApiKey.FETCH, 12, fetch_request("quiet", 0))
    assert response.responses[0].partitions[0].high_watermark == 1


def test_fetch_returns_a_whole_batch_even_above_max_bytes(raw):
    client = raw()
    create(client, "big")
    produce(client, "big", batch(b"y" * 50_000))
    response = client.request(ApiKey.FETCH, 12, fetch_request("big", 0, partition_max_bytes=100, max_bytes=100))
    assert len(decode_record_set(response.responses[0].partitions[0].records)[0]) == 1


def test_long_poll_is_woken_by_produce_and_keeps_order(raw):
    waiting, producing = raw(), raw()
    create(producing, "poll")
    started = time.monotonic()
    waiting.send(ApiKey.FETCH, 12, fetch_request("poll", 0, max_wait_ms=10_000))
    api_versions_id = waiting.send(ApiKey.API_VERSIONS, 0, ApiVersionsRequest())
    threading.Timer(0.3, lambda: produce(producing, "poll", batch(b"wake"))).start()
    _, response = waiting.receive(ApiKey.FETCH, 12)
    assert time.monotonic() - started < 5, "the produce did not wake the fetch"
    assert decode_record_set(response.responses[0].partitions[0].records)[0][0].value == b"wake"
    # The ApiVersions sent behind the fetch is answered after it, never before.
    correlation_id, _ = waiting.receive(ApiKey.API_VERSIONS, 0)
    assert correlation_id == api_versions_id


def test_long_poll_blocks_only_its_own_connection(raw):
    waiting, other = raw(), raw()
    create(other, "idle")
    waiting.send(ApiKey.FETCH, 12, fetch_request("idle", 0, max_wait_ms=3_000))
    started = time.monotonic()
    other.request(ApiKey.API_VERSIONS, 0, ApiVersionsRequest())
    assert time.monotonic() - started < 1
    waiting.receive(ApiKey.FETCH, 12)  # times out empty after ~3 s


def test_fetch_out_of_range_and_unknown_partition(raw):
    client = raw()
    create(client, "r")
    response = client.request(ApiKey.FETCH, 12, fetch_request("r", 5, max_wait_ms=10_000))
    assert response.responses[0].partitions[0].error_code == 1  # OFFSET_OUT_OF_RANGE, at once
    response = client.request(ApiKey.FETCH, 12, fetch_request("nope", 0, max_wait_ms=10_000))
    assert response.responses[0].partitions[0].error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize("garbage", [
    b"\x00\x00\x00\x02\x00",                                   # frame shorter than a header
    size_prefixed(struct.pack(">hhi", 12345, 0, 1)),            # unknown API key
    size_prefixed(struct.pack(">hhi", ApiKey.METADATA, 99, 1)),  # unknown version
    size_prefixed(struct.pack(">hhih", ApiKey.METADATA, 9, 1, 5) + b"ab"),  # truncated header
    b"\xff\xff\xff\xff",                                        # negative size
    struct.pack(">i", 200 * 1024 * 1024),                       # above socket.request.max.bytes
])
def test_bad_frames_close_only_their_connection(broker, raw, garbage):
    bad, good = raw(), raw()
    create(good, "kept")
    produce(good, "kept", batch(b"acknowledged"))
    bad.send_raw(garbage)
    if garbage[:4] != b"\x00\x00\x00\x02":  # the short one is still waiting for bytes
        assert bad.is_closed_by_peer()
    response = good.request(ApiKey.FETCH, 12, fetch_request("kept", 0))
    assert decode_record_set(response.responses[0].partitions[0].records)[0][0].value == b"acknowledged"


def test_random_request_bytes_never_take_the_broker_down(broker, raw):
    """Fuzz, bounded: random and mutated frames on many connections; the broker keeps
    serving and keeps acknowledged data."""
    rng = random.Random(20261122)
    good = raw()
    create(good, "safe")
    produce(good, "safe", batch(b"before"))
    valid = ProduceRequest(acks=1, timeout_ms=100, topic_data=[ProduceRequest.TopicProduceData(
        name="safe", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch(b"z"))])]).encode(9)
    header = struct.pack(">hhih", ApiKey.PRODUCE, 9, 1, 1) + b"x\x00"
    for _ in range(150):
        client = raw()
        body = bytearray(header + valid)
        for _ in range(rng.randrange(1, 6)):
            body[rng.randrange(len(body))] = rng.randrange(256)
        if rng.random() < 0.3:
            body = bytearray(rng.randbytes(rng.randrange(1, 64)))
        client.send_raw(size_prefixed(bytes(body)))
        client.sock.settimeout(2)
        try:
            client.receive_frame()
        except (ConnectionResetError, TimeoutError):
            pass
        client.close()
    response = good.request(ApiKey.FETCH, 12, fetch_request("safe", 0))
    assert decode_record_set(response.responses[0].partitions[0].records)[0][0].value == b"before"


def test_broker_log_settings_govern_topics_without_their_own():
    """A topic without cleanup.policy follows log.cleanup.policy, for produce checks too."""

    def produce(client, topic, key):
        builder = BatchBuilder()
        builder.append(1, key, b"v")
        request = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
            name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=builder.build())])])
        return client.request(ApiKey.PRODUCE, 9, request).responses[0].partition_responses[0].error_code

    with MiniBroker(config={"log.cleanup.policy": "compact", "offsets.topic.num.partitions": 1}) as broker:
        client = RawClient(broker.port)
        try:
            client.request(ApiKey.METADATA, 9, MetadataRequest(topics=[
                MetadataRequest.MetadataRequestTopic(name="inherits"),
                MetadataRequest.MetadataRequestTopic(name="__consumer_offsets")]))
            assert produce(client, "inherits", None) == InvalidRecordError.code
            assert produce(client, "inherits", b"k") == 0
            assert produce(client, "__consumer_offsets", b"k") == InvalidTopicError.code  # clients may not write it
        finally:
            client.close()


def _own_buffer_spy(into_own, taken):
    """A FrameReader for minibroker.server that calls ``into_own(nbytes)`` for the bytes read
    into a frame's own buffer (not the scratch) and ``taken(frame)`` for each frame taken."""
    from kproto.protocol import FrameReader

    class Spy(FrameReader):
        def get_buffer(self, sizehint=-1, **kwargs):
            view = super().get_buffer(sizehint, **kwargs)
            self._spy_own = not isinstance(view.obj, bytearray)  # a frame's own buffer, not the scratch
            return view

        def buffer_updated(self, nbytes):
            if self._spy_own:
                into_own(nbytes)
            super().buffer_updated(nbytes)

        def next_frame(self):
            frame = super().next_frame()
            if frame is not None:
                taken(frame)
            return frame

    return Spy


def test_a_large_produce_request_is_read_into_its_own_frame_buffer(monkeypatch):
    """Issue 16, the broker's read path: the server reads through the FrameReader's
    buffers (get_buffer / buffer_updated, as a client's connection does), so a large
    Produce request is read straight into a buffer of its own that becomes the frame the
    handler decodes; no bytes go through receive_data (a StreamReader's chunks, each
    copied into the reader and then out of it) on the way."""
    seen = {"received": 0, "into_own": 0, "frames": []}

    def into_own(nbytes):
        seen["into_own"] += nbytes

    class Spy(_own_buffer_spy(into_own, lambda frame: seen["frames"].append(len(frame)))):
        def receive_data(self, data):
            seen["received"] += len(data)
            super().receive_data(data)

    monkeypatch.setattr("minibroker.server.FrameReader", Spy)
    records = batch(*[bytes([i % 251]) * 1000 for i in range(900)])  # ~900 KB: a send_batch request
    with MiniBroker() as broker:
        client = RawClient(broker.port)
        try:
            create(client, "big")
            assert produce(client, "big", records).error_code == 0
            answer = client.request(ApiKey.FETCH, 12, fetch_request("big", 0, partition_max_bytes=4 << 20))
            assert len(answer.responses[0].partitions[0].records) == len(records)  # (the broker sets the epoch)
        finally:
            client.close()
    assert seen["received"] == 0
    large = [size for size in seen["frames"] if size >= len(records)]
    assert len(large) == 1
    # all of it but what came in the read that brought its size prefix (at most the scratch)
    assert seen["into_own"] >= large[0] - 256 * 1024


def test_pipelined_large_produce_requests_are_read_without_a_copy_or_a_pause(monkeypatch):
    """Issue 16 (send_batch at 1 MB, the broker's per-request cost): a 1 MB Produce
    request's first 256 KiB were read into the FrameReader's scratch buffer and copied into
    the frame's own buffer, and reading was paused and resumed twice per request (once to
    reserve the frame's memory, once to answer it: four epoll_ctl calls and two more loop
    turns). Requests sent back to back are now each read straight into their own buffer,
    all of it (after the first, whose size came with the requests before it), and reading
    is never paused: memory is left, and each is answered without waiting."""
    from minibroker.server import _RequestStream

    seen = {"own": [], "pauses": 0}

    def into_own(nbytes):
        seen["own"][-1] += nbytes

    Spy = _own_buffer_spy(into_own, lambda frame: seen["own"].append(0))

    pause = _RequestStream._pause

    def counted(self):
        seen["pauses"] += self._reading
        pause(self)

    monkeypatch.setattr("minibroker.server.FrameReader", Spy)
    monkeypatch.setattr(_RequestStream, "_pause", counted)
    records = batch(*[bytes([i % 251]) * 1000 for i in range(900)])  # ~900 KB: a send_batch request
    request = ProduceRequest(acks=1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name="big", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)])])
    with MiniBroker() as broker:
        client = RawClient(broker.port)
        try:
            create(client, "big")
            seen["own"], seen["pauses"] = [0], 0
            for _ in range(5):  # all sent before any answer is read (5 in flight, as a producer's)
                client.send(ApiKey.PRODUCE, 9, request)
            answers = [client.receive(ApiKey.PRODUCE, 9)[1].responses[0].partition_responses[0] for _ in range(5)]
            pauses = seen["pauses"]  # (the close pauses reading: it is the end)
        finally:
            client.close()
    assert [(a.error_code, a.base_offset) for a in answers] == [(0, 900 * i) for i in range(5)]
    frame_size = len(records) + 100  # header and fields: under 100 bytes
    own = seen["own"][:5]
    assert all(n <= frame_size for n in own)
    assert all(n >= frame_size - 100 for n in own[1:]), own  # all of each frame after the first
    assert pauses == 0


def test_while_a_request_is_answered_nothing_is_read_past_the_next_size(monkeypatch):
    """Issue 16 (reading is no longer paused when a frame is complete, only once the next
    size is known): while the broker answers a request (here held 0.3 s by a request
    control, as a quota's mute or acks=all hold it), it reads at most the next frame's size
    prefix (Kafka mutes its channel); it read one read's worth (up to 256 KiB) of the next
    frame before. That one is read, and answered, once the first is answered."""
    from kproto.protocol import FrameReader
    from minibroker.faults import Delay

    seen = {"held": None}

    class Spy(FrameReader):
        def buffer_updated(self, nbytes):
            super().buffer_updated(nbytes)
            if seen["held"] is not None:
                seen["held"] = max(seen["held"], self.buffered)

    monkeypatch.setattr("minibroker.server.FrameReader", Spy)
    with MiniBroker() as broker:
        client = RawClient(broker.port)
        try:
            create(client, "held")
            broker.requests.control(ApiKey.PRODUCE, Delay(0.3), times=1)
            client.send(ApiKey.PRODUCE, 9, ProduceRequest(acks=1, timeout_ms=5000, topic_data=[
                ProduceRequest.TopicProduceData(name="held", partition_data=[
                    ProduceRequest.PartitionProduceData(index=0, records=batch(b"a"))])]))
            time.sleep(0.1)  # the first is being answered
            seen["held"] = 0
            client.send(ApiKey.PRODUCE, 9, ProduceRequest(acks=1, timeout_ms=5000, topic_data=[
                ProduceRequest.TopicProduceData(name="held", partition_data=[
                    ProduceRequest.PartitionProduceData(index=0, records=batch(b"b" * 100_000))])]))
            time.sleep(0.1)
            held = seen["held"]
            answers = [client.receive(ApiKey.PRODUCE, 9)[1].responses[0].partition_responses[0] for _ in range(2)]
        finally:
            client.close()
    assert [(a.error_code, a.base_offset) for a in answers] == [(0, 0), (0, 1)]
    assert held <= 4  # the next frame's size at most
