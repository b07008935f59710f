"""A broker whose log dir fills up: a real tmpfs, a real MiniBroker, real clients.

Issue 10, items 1, 2 and 13a. When a write fails for lack of space, Produce answers
KAFKA_STORAGE_ERROR (56) for that partition, on a connection that stays up, other
partitions unaffected; the log is left exactly as before the write, so once space is
back the retry gets the next offset (never one handed out already), and after a restart
every acknowledged record is read back in order with no garbage between batches.

The disk is a tmpfs of a few hundred KiB mounted for the test (we run as root), filled
to the last page by a filler file: then a write that fits in a page a file already has
succeeds, and one that needs a new page fails, byte for byte as on a real full disk. The
same failures injected at the file layer are in test_write_failures.py, which also
covers these paths where mounting is not permitted.
"""

from __future__ import annotations

import errno
import os
import time

import pytest

from kproto.errors import KafkaStorageError
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    CreateTopicsRequest,
    FetchRequest,
    MetadataRequest,
    ProduceRequest,
)
from kproto.records import BatchBuilder, decode_record_set, read_batches
from minibroker import MiniBroker
from tests.support.raw_client import RawClient


def create_topic(client: RawClient, name: str, partitions: int, **configs: str) -> None:
    request = CreateTopicsRequest(timeout_ms=5000, validate_only=False, topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1, assignments=[],
        configs=[CreateTopicsRequest.CreatableTopicConfig(name=k.replace("_", "."), value=v) for k, v in configs.items()])])
    assert client.request(ApiKey.CREATE_TOPICS, 5, request).topics[0].error_code == 0


def batch(value: bytes, key: bytes = b"k") -> bytes:
    builder = BatchBuilder()
    builder.append(1_000, key, value)
    return builder.build()


def produce(client: RawClient, topic: str, batches: dict[int, bytes]):
    """One Produce request (v9) with a batch per partition; the partition responses by index."""
    request = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=i, records=b) for i, b in batches.items()])])
    response = client.request(ApiKey.PRODUCE, 9, request)
    return {p.index: p for p in response.responses[0].partition_responses}


def fetch(client: RawClient, topic: str, partition: int) -> bytes:
    request = FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 24, topics=[FetchRequest.FetchTopic(
        topic=topic, partitions=[FetchRequest.FetchPartition(partition=partition, fetch_offset=0, partition_max_bytes=1 << 24)])])
    answer = client.request(ApiKey.FETCH, 12, request).responses[0].partitions[0]
    assert answer.error_code == 0
    return bytes(answer.records or b"")


def only_valid_batches(data: bytes) -> list[tuple[int, bytes]]:
    """``(offset, value)`` of every record, after checking that ``data`` is valid batches
    end to end (CRC included) with offsets that only go up: no garbage, no offset twice."""
    batches = list(read_batches(data, True))
    assert sum(b.size for b in batches) == len(data), "bytes that are not batches were served"
    records = decode_record_set(data)[0]
    offsets = [r.offset for r in records]
    assert offsets == sorted(set(offsets)), f"an offset twice or out of order: {offsets}"
    return [(r.offset, r.value) for r in records]


def test_disk_full_on_the_index_answers_storage_error_and_loses_nothing(small_disk):
    """Issue 10 items 1 and 13a: the .log write succeeds, the .index write does not.

    Before the fix the connection was closed, the next batch got the offset the failed
    one had had, and after a restart everything from that second batch on was gone.
    """
    with MiniBroker(data_dir=small_disk.path) as broker:
        port = broker.port
        client = RawClient(port)
        try:
            create_topic(client, "t", 2, index_interval_bytes="100")
            first = produce(client, "t", {0: batch(b"a" * 200), 1: batch(b"p")})
            assert (first[0].error_code, first[0].base_offset, first[1].base_offset) == (0, 0, 0)
            small_disk.fill()
            # Partition 0's batch fits in its .log's page but needs a first page for an
            # index entry; partition 1's fits where it is, and needs no index entry.
            full = produce(client, "t", {0: batch(b"b" * 200), 1: batch(b"q")})
            assert full[0].error_code == KafkaStorageError.code and full[0].base_offset == -1
            assert "No space left" in full[0].error_message
            assert (full[1].error_code, full[1].base_offset) == (0, 1)
            # The same connection goes on, and serves partition 0 as it was.
            assert only_valid_batches(fetch(client, "t", 0)) == [(0, b"a" * 200)]
            small_disk.free()
            retried = produce(client, "t", {0: batch(b"b" * 200)})
            assert (retried[0].error_code, retried[0].base_offset) == (0, 1)
            assert produce(client, "t", {0: batch(b"c" * 200)})[0].base_offset == 2
        finally:
            client.close()
    with MiniBroker(port=port, data_dir=small_disk.path) as broker:
        client = RawClient(broker.port)
        try:
            assert only_valid_batches(fetch(client, "t", 0)) == [(0, b"a" * 200), (1, b"b" * 200), (2, b"c" * 200)]
            assert only_valid_batches(fetch(client, "t", 1)) == [(0, b"p"), (1, b"q")]
        finally:
            client.close()


def test_disk_full_mid_batch_leaves_no_garbage_for_confluent_kafka(small_disk):
    """Issue 10 items 2 and 13a, through librdkafka: the disk fills in the middle of a
    batch (a short write of ~3.8 KB, then ENOSPC).

    Before the fix the partial batch stayed in the file past the segment's size in
    memory; once the segment rolled and the broker restarted, Fetch served it between two
    valid batches. Now the delivery report says KAFKA_STORAGE_ERROR, the retry succeeds
    once space is back, and the restarted broker serves exactly what was acknowledged.
    """
    ck = pytest.importorskip("confluent_kafka")
    with MiniBroker(data_dir=small_disk.path) as broker:
        port = broker.port
        client = RawClient(port)
        try:
            create_topic(client, "big", 1, segment_bytes="9000")
        finally:
            client.close()
        producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "retries": 0, "linger.ms": 0,
                                "enable.idempotence": False, "compression.type": "none"})
        reports = []

        def send(value: bytes, producer=producer) -> tuple:
            reports.clear()
            producer.produce("big", value, key=b"k", partition=0, on_delivery=lambda err, msg: reports.append((err, msg)))
            assert producer.flush(15) == 0
            (err, msg), = reports
            return (err.code() if err else 0), msg.offset()

        assert send(b"a" * 300) == (0, 0)
        small_disk.fill()
        assert send(b"b" * 6_000) == (ck.KafkaError.KAFKA_STORAGE_ERROR, None)
        small_disk.free()
        # Space is back. This batch rolls the segment, so the one the write failed on is
        # inactive: its size comes from the file after the restart.
        assert send(b"c" * 8_000) == (0, 1)
        assert send(b"b" * 6_000) == (0, 2)  # the retry
        del producer, send  # librdkafka goes before the broker it talks to
    expected = [(0, b"a" * 300), (1, b"c" * 8_000), (2, b"b" * 6_000)]
    with MiniBroker(port=port, data_dir=small_disk.path) as broker:
        client = RawClient(broker.port)
        try:
            assert only_valid_batches(fetch(client, "big", 0)) == expected
        finally:
            client.close()
        consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g",
                                "auto.offset.reset": "earliest", "enable.auto.commit": False})
        try:
            consumer.assign([ck.TopicPartition("big", 0, 0)])
            seen = []
            while len(seen) < 3:
                msg = consumer.poll(10)
                assert msg is not None and not msg.error(), msg and msg.error()
                seen.append((msg.offset(), msg.value()))
            assert seen == expected
        finally:
            consumer.close()


def test_an_offline_partition_answers_storage_error_to_produce_and_fetch(tmp_path, monkeypatch):
    """Issue 10 item 13a: a write fails and so does the undo (EIO on truncate): the
    partition is offline, Produce and Fetch for it get KAFKA_STORAGE_ERROR on a
    connection that stays up, the other partition goes on, and a restart recovers it."""
    with MiniBroker(data_dir=tmp_path) as broker:
        port = broker.port
        client = RawClient(port)
        try:
            create_topic(client, "t", 2)
            assert produce(client, "t", {0: batch(b"a"), 1: batch(b"x")})[0].error_code == 0
            log = broker._server.state.topics["t"].partitions[0].log
            real_pwrite, real_ftruncate = os.pwrite, os.ftruncate

            def broken(fd):
                return os.readlink(f"/proc/self/fd/{fd}").startswith(str(log.directory))

            def pwrite(fd, data, offset):  # a short write of 10 bytes, then EIO
                if broken(fd):
                    return real_pwrite(fd, bytes(memoryview(data)[:10]), offset) if len(data) > 10 else _eio()
                return real_pwrite(fd, data, offset)

            def ftruncate(fd, length):
                return _eio() if broken(fd) else real_ftruncate(fd, length)

            monkeypatch.setattr(os, "pwrite", pwrite)
            monkeypatch.setattr(os, "ftruncate", ftruncate)
            failed = produce(client, "t", {0: batch(b"b" * 100), 1: batch(b"y")})
            assert failed[0].error_code == KafkaStorageError.code and failed[1].error_code == 0
            monkeypatch.undo()  # the disk works again; the partition stays offline
            again = produce(client, "t", {0: batch(b"c"), 1: batch(b"z")})
            assert again[0].error_code == KafkaStorageError.code and "offline" in again[0].error_message
            assert (again[1].error_code, again[1].base_offset) == (0, 2)
            request = FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[FetchRequest.FetchTopic(
                topic="t", partitions=[FetchRequest.FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=1 << 20)
                                       for p in (0, 1)])])
            answers = client.request(ApiKey.FETCH, 12, request).responses[0].partitions
            assert answers[0].error_code == KafkaStorageError.code and answers[0].records is None
            assert answers[1].error_code == 0
            assert [v for _, v in only_valid_batches(bytes(answers[1].records))] == [b"x", b"y", b"z"]
            client.request(ApiKey.METADATA, 9, MetadataRequest(topics=None))  # still connected
        finally:
            client.close()
    with MiniBroker(port=port, data_dir=tmp_path) as broker:
        client = RawClient(broker.port)
        try:
            assert only_valid_batches(fetch(client, "t", 0)) == [(0, b"a")]
            assert produce(client, "t", {0: batch(b"d")})[0].base_offset == 1
        finally:
            client.close()


def _eio():
    raise OSError(errno.EIO, os.strerror(errno.EIO))


def test_kprotos_idempotent_producer_retries_through_a_full_disk(small_disk, caplog):
    """Issue 10 item 1 with kproto's own producer: KAFKA_STORAGE_ERROR is retriable, so
    the producer retries the batch the full disk refused (its .index write failed) until
    space is back; it lands once, at the next offset, and survives a restart."""
    from kproto import Producer

    with MiniBroker(data_dir=small_disk.path) as broker:
        port = broker.port
        client = RawClient(port)
        try:
            create_topic(client, "t", 1, index_interval_bytes="100")
        finally:
            client.close()
        with Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0, "retry.backoff.ms": 20}) as producer:
            assert producer.send("t", b"a" * 200, key=b"k", partition=0).result(10).offset == 0
            small_disk.fill()
            refused = producer.send("t", b"b" * 200, key=b"k", partition=0)
            deadline = time.monotonic() + 10
            while "No space left on device" not in caplog.text and time.monotonic() < deadline:
                time.sleep(0.02)  # until the broker has refused the batch at least once
            assert "No space left on device" in caplog.text and not refused.done()
            small_disk.free()
            assert refused.result(15).offset == 1
            assert producer.send("t", b"c" * 200, key=b"k", partition=0).result(10).offset == 2
    with MiniBroker(port=port, data_dir=small_disk.path) as broker:
        client = RawClient(broker.port)
        try:
            assert only_valid_batches(fetch(client, "t", 0)) == [(0, b"a" * 200), (1, b"b" * 200), (2, b"c" * 200)]
        finally:
            client.close()
