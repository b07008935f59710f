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
