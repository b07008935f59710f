"""What the producer counts against ``buffer.memory`` is what its batches hold (issue 16,
memory: "producing with buffer.memory never exceeds it").

A batch counts ``max(batch.size, record size)`` bytes from its first record, as a Java
producer's batch takes them from its ``BufferPool``, and its builder never holds more:
records that leave batches mostly empty (one 1,000-byte record per 16 KiB batch) fill
``buffer.memory`` with few bytes written, and the next record that needs a batch waits.
"""

import time

import pytest

from kproto.codec import BATCH_HEADER_SIZE
from kproto.errors import KafkaTimeoutError
from kproto.producer import Producer
from tests.producer.test_faults import never_answer_produce
from tests.support.proxy import FaultProxy

EARLY = 0.05  # timers may fire up to a clock tick early


@pytest.fixture(scope="module")
def minibroker_config():
    return {"num.partitions": 8}


def test_each_open_batch_counts_batch_size_and_a_send_that_needs_another_waits():
    """Issue 16, memory: four 1,000-byte records on four partitions open four 16 KiB batches,
    which count all of a 64 KiB ``buffer.memory`` (before: 4.3 KiB counted, the bytes written,
    while the builders held 4 x 1 KiB). A record into an open batch takes no more;
    one that needs a fifth batch waits ``max.block.ms`` and raises (the broker never
    answers, so nothing is freed), and nothing is appended for it."""
    with FaultProxy(never_answer_produce, **{"num.partitions": 8}) as proxy:
        producer = Producer(bootstrap_servers=proxy.bootstrap_servers, buffer_memory=4 * 16384, batch_size=16384,
                            linger_ms=60_000, max_block_ms=300)
        try:
            assert len(producer.partitions_for("memory-capacity")) >= 5
            acc = producer._core._acc
            for p in range(4):
                producer.send("memory-capacity", b"x" * 1000, partition=p)
            assert acc.used == 4 * 16384  # each batch: its header and batch.size less it
            producer.send("memory-capacity", b"y" * 1000, partition=0)  # into the open batch
            assert acc.used == 4 * 16384
            started = time.monotonic()
            with pytest.raises(KafkaTimeoutError, match="buffer.memory"):
                producer.send("memory-capacity", b"z" * 1000, partition=4)
            assert 0.3 - EARLY <= time.monotonic() - started < 5
            assert acc.used == 4 * 16384 and 4 not in {b.partition for q in acc.queues.values() for b in q}
        finally:
            producer.close(0)


def test_a_record_waiting_for_memory_sends_the_open_batches_at_once(broker):
    """Issue 16, memory: batches that hold all of ``buffer.memory`` while lingering (a
    minute) are sent as soon as a record waits for memory, as Java's
    ``RecordAccumulator.ready`` sends every batch while its pool has waiters: the record
    goes in once they settle, well within ``max.block.ms``, not after ``linger.ms``."""
    with Producer(bootstrap_servers=broker.bootstrap_servers, buffer_memory=4 * 16384, batch_size=16384,
                  linger_ms=60_000, max_block_ms=20_000) as producer:
        producer.partitions_for("memory-exhausted")
        futures = [producer.send("memory-exhausted", b"x" * 1000, partition=p) for p in range(4)]
        started = time.monotonic()
        last = producer.send("memory-exhausted", b"z" * 1000, partition=4)
        assert time.monotonic() - started < 15
        assert [f.result(10).offset for f in futures] == [0, 0, 0, 0]
        producer.flush(10)
        assert last.result(0).partition == 4 and producer._core._acc.used == 0


@pytest.mark.parametrize("backend", ["cython", "python"])
def test_a_bounded_builder_never_holds_more_than_max_bytes_or_its_first_record(backend):
    """Issue 16, memory: a builder with ``max_bytes`` grows by doubling from 1 KiB but never
    past ``max(max_bytes, first record)`` (what the producer counts per batch, Java's
    ``BufferPool`` unit: ``max(batch.size, record size)``); without ``max_bytes`` it
    doubles. Both backends report the same :attr:`capacity`."""
    from kproto import _codec_py

    cls = _codec_py.BatchBuilder if backend == "python" else pytest.importorskip("kproto._codec").BatchBuilder
    builder = cls(max_bytes=16384)
    assert builder.capacity == BATCH_HEADER_SIZE  # nothing taken before a record
    builder.append(0, None, b"x" * 1000)
    assert builder.capacity == BATCH_HEADER_SIZE + 1024
    while builder.append(0, None, b"x" * 1000) >= 0:
        assert builder.size_in_bytes() <= builder.capacity <= 16384
    assert builder.capacity == 16384  # 16 x 1,010 bytes: doubled to 16 KiB, less the header
    big = cls(max_bytes=16384)
    big.append(0, None, b"x" * 20000)
    assert big.capacity == big.size_in_bytes() > 16384
    assert big.append(0, None, b"y") == -1 and big.capacity == big.size_in_bytes()
    lone = cls(max_bytes=16384)
    lone.append(0, None, b"x" * 10000)
    assert lone.capacity == 16384  # not 61 + 16 KiB
    unbounded = cls()
    unbounded.append(0, None, b"x" * 100)
    assert unbounded.capacity == BATCH_HEADER_SIZE + 1024
    unbounded.append(0, None, b"x" * 1000)
    assert unbounded.capacity == BATCH_HEADER_SIZE + 2048
    data = unbounded.build()
    assert unbounded.capacity == len(data)  # handed out without spare bytes
