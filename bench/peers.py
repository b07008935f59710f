"""The clients that bench/clients.py and bench/broker.py time, each at its defaults and at
its best settings: one function per client and direction, one settings table per client.

Every function takes ``(bootstrap, topic, n, settings)`` and returns the seconds that ``n``
records took; a table row (:class:`Contender`) binds a function to settings. What is timed
is the same for every client:

- producers: the client is created, learns the topic's metadata, connects to the leader
  and delivers one warm-up record (``flush``) before the clock starts; timed are ``n``
  100-byte values sent to partition 0 in a loop and the ``flush`` that delivers them.
  Every producer runs with ``acks=1`` (one guarantee for all: kproto's and librdkafka's
  default is ``acks=all``, aiokafka's and kafka-python's 1; on one broker with one replica
  both wait for the same write), given by the caller in ``settings``;
- consumers: the client is created and asks the partition's end offset (metadata, and a
  connection to the leader) before the clock starts; timed are assigning partition 0 from
  offset 0 and reading ``n`` records with the client's batch call, touching every value
  (``len(value)``) as an application would.

Best settings (the "best" entries of :data:`KPROTO`, :data:`CONFLUENT`, :data:`AIOKAFKA`,
:data:`KAFKA_PYTHON`): the fastest of a small sweep (``python bench/clients.py --sweep``;
the candidates are :data:`SWEEP`) on minibroker and Tansu, 200,000 x 100-byte values, one
partition, medians of 5 on a loaded 2-core machine (so: the candidate that was fastest or
close on both brokers in every sweep, not a fine optimum). What they are and why:

- confluent-kafka (librdkafka). Produce: ``queue.buffering.max.messages`` 1,000,000
  (default 100,000): a burst of sends no longer stops on BufferError to wait for
  deliveries; a longer ``linger.ms`` (20, 100) with ``batch.num.messages`` 100,000 was
  no faster (its default ``batch.size`` of 1 MB already fills large batches). Consume:
  ``queued.min.messages`` 1,000,000 (default 100,000: how far librdkafka prefetches into
  its queue) is what matters most, up to 6x on minibroker (which answers librdkafka's
  Fetches slowly, issue 16); ``fetch.wait.max.ms`` 10 (default 500: how long a Fetch
  with less than ``fetch.min.bytes`` waits) was on par with 100 on minibroker and better
  on Tansu, as issue 16 found; ``consume(1000)`` beat ``consume(10000)`` in every sweep;
  a larger ``max.partition.fetch.bytes`` (8 MB) did not help.
- aiokafka. Produce: ``max_batch_size`` 256 KB (default 16 KB) with ``linger_ms`` 5
  (default 0); 1 MB batches were faster on minibroker and slower on Tansu. Consume:
  ``max_partition_fetch_bytes`` 8 MB (default 1 MB) and ``fetch_max_wait_ms`` 10;
  ``getmany(max_records=10000)`` did not help.
- kafka-python. Produce: ``batch_size`` 256 KB (default 16 KB), ``linger_ms`` 5 (default
  0). Consume: its defaults (``max_poll_records`` 500); more records per poll or larger
  partition fetches were as fast or slower.
- kproto (Kafka's names). Produce: ``batch.size`` 1 MB (default 16 KB, 3-5x) with
  ``linger.ms`` 20 (default 5; 5 and 100 were on par) and ``send.buffer.bytes`` -1 (the
  OS's socket buffer, as librdkafka's default; Java's 128 KB takes a quarter of a 1 MB
  request at once, and the rest waits for the loop's thread: send_batch 7.4 -> 8.0-8.4 M
  rec/s on minibroker, issue 16). Consume: ``receive.buffer.bytes``
  -1 (the OS's socket buffer, which Linux sizes as the data comes; the default is Java's
  64 KB, which makes a 1 MB Fetch response arrive in about ten reads, each a turn of the
  event loop: 25% of the client's CPU per record went) and ``max.partition.fetch.bytes``
  2 MB (default 1 MB: half the Fetch round trips). Chosen for ``poll_arrow()`` (issue 16:
  1.2-1.4x its rate at the defaults on both brokers, medians of 5, 300,000 records;
  4 MB and 8 MB were on par or slower, and slower on Tansu); ``poll()`` was as fast or
  a little faster with them.

A new row (a new API such as ``Consumer.poll_arrow()``) is one function here with the
same signature and one :class:`Contender` line in the caller's table. Each function times
its loop with :func:`clock_start` and :func:`clock_stop`, which also take the CPU that this
process (every thread: librdkafka's, a sync producer's sender) and the broker's process
(:data:`CPU_OF`, when a caller sets it) used in that time: :data:`last_cpu`
(``bench/clients.py --cpu``).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AIOKAFKA", "CONFLUENT", "KAFKA_PYTHON", "KPROTO", "SWEEP", "VALUE", "Contender", "Settings",
           "aiokafka_consume", "aiokafka_produce", "confluent_consume", "confluent_produce",
           "kafka_python_consume", "kafka_python_produce", "kproto_async_produce", "kproto_consume",
           "kproto_produce", "clock_start", "clock_stop", "process_cpu"]

VALUE = b"x" * 100
TIMEOUT = 120.0  # seconds a measurement may take before it is called stuck
CHUNK = 1000  # confluent-kafka's producer loop serves delivery reports (poll(0)) every CHUNK sends

Measure = Callable[[str, str, int, "Settings"], float]

CPU_OF: int | None = None  # the broker's process id, whose CPU clock_stop takes (None: not taken)
last_cpu: tuple[float, float | None] = (0.0, None)  # (this process, the broker) CPU seconds of the last timing
_cpu_at_start: tuple[float, float | None] = (0.0, None)


def process_cpu(pid: int) -> float:
    """CPU seconds that every thread of process ``pid`` used so far (schedstat: nanoseconds,
    not the 10 ms ticks of /proc/PID/stat)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):  # a thread that just ended
            pass
    return total / 1e9


def clock_start() -> float:
    """Start timing a measurement's loop: its ``time.perf_counter()``."""
    global _cpu_at_start
    _cpu_at_start = (time.process_time(), None if CPU_OF is None else process_cpu(CPU_OF))
    return time.perf_counter()


def clock_stop(start: float) -> float:
    """The seconds since :func:`clock_start` returned ``start``; sets :data:`last_cpu`."""
    global last_cpu
    elapsed = time.perf_counter() - start
    client, broker = _cpu_at_start
    last_cpu = (time.process_time() - client, None if broker is None or CPU_OF is None else process_cpu(CPU_OF) - broker)
    return elapsed


@dataclass(frozen=True)
class Settings:
    """A client's configuration (its own names), for producing and for consuming; ``records``
    is the batch its consumer's call takes (confluent's ``consume(num_messages)``,
    aiokafka's ``getmany(max_records=)``, kafka-python's ``poll(max_records=)``; None: the
    call's default)."""

    produce: Mapping[str, Any] = field(default_factory=dict)
    consume: Mapping[str, Any] = field(default_factory=dict)
    records: int | None = None

    def describe(self, phase: str) -> str:
        config = dict(self.produce if phase == "produce" else self.consume)
        if phase == "consume" and self.records is not None:
            config["(records per call)"] = self.records
        return ", ".join(f"{key}={value}" for key, value in config.items()) or "defaults"


@dataclass(frozen=True)
class Contender:
    """One row of a table: ``client`` at ``label`` ("defaults" or "best") measured by
    ``measure`` with ``settings``; ``share`` is the fraction of the run's message count it
    gets (a slow client gets fewer: rates are per message)."""

    client: str
    label: str
    measure: Measure
    settings: Settings
    share: float = 1.0

    @property
    def name(self) -> str:
        return f"{self.client} ({self.label})"

    def __call__(self, bootstrap: str, topic: str, n: int) -> float:
        return self.measure(bootstrap, topic, n, self.settings)


def _check(got: int, n: int, start: float, client: str) -> None:
    if got < n and time.perf_counter() - start > TIMEOUT:
        raise RuntimeError(f"{client} read {got} of {n} records in {TIMEOUT:.0f} s")


# -- kproto ----------------------------------------------------------------------------------

def kproto_produce(bootstrap: str, topic: str, n: int, settings: Settings) -> float:
    """kproto's sync Producer, ``send()`` per record."""
    from kproto.producer import Producer

    with Producer({"bootstrap.servers": bootstrap, **settings.produce}) as producer:
        producer.send(topic, VALUE, partition=0)
        producer.flush()
        send = producer.send
        start = clock_start()
        for _ in range(n):
            send(topic, VALUE, partition=0)
        producer.flush()
        return clock_stop(start)


def kproto_async_produce(bootstrap: str, topic: str, n: int, settings: Settings) -> float:
    """kproto's AIOProducer, ``send()`` per record without awaiting each (yielding to the loop
    every 1000, as an application producing from a coroutine would), then ``flush()``."""
    from kproto.producer import AIOProducer

    async def run() -> float:
        async with AIOProducer({"bootstrap.servers": bootstrap, **settings.produce}) as producer:
            await producer.send(topic, VALUE, partition=0)
            send = producer.send
            start = clock_start()
            for i in range(n):
                send(topic, VALUE, partition=0)
                if i % 1000 == 0:
                    await asyncio.sleep(0)
            await producer.flush()
            return clock_stop(start)
    return asyncio.run(run())


def _kproto_sync_consume(bootstrap: str, topic: str, n: int, settings: Settings,
                         take: Callable[[Any], int], client: str) -> float:
    """kproto's sync Consumer from offset 0 of partition 0 until n records: ``take(consumer)``
    polls once, touches every value and returns how many records it got."""
    from kproto.consumer import Consumer
    from kproto.structs import TopicPartition

    config = {"bootstrap.servers": bootstrap, "enable.auto.commit": False, "auto.offset.reset": "earliest",
              **settings.consume}
    with Consumer(config) as consumer:
        partition = TopicPartition(topic, 0)
        consumer.end_offsets([partition])
        got = 0
        start = clock_start()
        consumer.assign([partition])
        while got < n:
            got += take(consumer)
            _check(got, n, start, client)
        return clock_stop(start)


def kproto_consume(bootstrap: str, topic: str, n: int, settings: Settings) -> float:
    """kproto's sync Consumer, ``poll()`` lists of records."""
    def take(consumer: Any) -> int:
        records = consumer.poll(1.0)
        for record in records:
            len(record.value)
        return len(records)

    return _kproto_sync_consume(bootstrap, topic, n, settings, take, "kproto")


def kproto_send_batch(bootstrap: str, topic: str, n: int, settings: Settings) -> float:
    """kproto's sync Producer, ``send_batch()`` of the n values at once (a list made before
    the clock, as the peers' inputs are), then the batch future's result (every record
    acknowledged) and ``flush()``."""
    from kproto.producer import Producer

    values = [VALUE] * n
    config = {"bootstrap.servers": bootstrap, **settings.produce}
    # one call holds n records: room for them all in memory, so that the call does not wait
    config["buffer.memory"] = max(config.get("buffer.memory", 0), 2 * n * (len(VALUE) + 64))
    with Producer(config) as producer:
        producer.send(topic, VALUE, partition=0)
        producer.flush()
        start = clock_start()
        batches = producer.send_batch(topic, values, partition=0).result(TIMEOUT)
        producer.flush()
        elapsed = clock_stop(start)
    if sum(b.record_count for b in batches) != n:
        raise RuntimeError("kproto send_batch wrote fewer records than it was given")
    return elapsed


def kproto_async_consume(bootstrap: str, topic: str, n: int, settings: Settings) -> float:
    """kproto's AIOConsumer, ``await poll()`` lists of records."""
    from kproto.consumer import AIOConsumer
    from kproto.structs import TopicPartition

    config = {"bootstrap.servers": bootstrap, "enable.auto.commit": False, "auto.offset.reset": "earliest",
              **settings.consume}

    async def run() -> float:
        async with AIOConsumer(config) as consumer:
            partition = TopicPartition(topic, 0)
            await consumer.end_offsets([partition])
            got = 0
            start = clock_start()
            consumer.assign([partition])
            poll = consumer.poll
            while got < n:
                records = await poll(1.0)
                for record in records:
                    len(record.value)
                got += len(records)
                _check(got, n, start, "kproto asyncio")
            return clock_stop(start)

    return asyncio.run(run())


def kproto_poll_arrow(bootstrap: str, topic: str, n: int, settings: Settings) -> float:
    """kproto's sync Consumer, ``poll_arrow()`` record batches (no headers column); every value
    touched through the value column's lengths, computed by Arrow."""
    import pyarrow.compute as pc

    def take(consumer: Any) -> int:
        batch = consumer.poll_arrow(1.0, include_headers=False)
        pc.sum(pc.binary_length(batch.column("value")))
        return batch.num_rows

    return _kproto_sync_consume(bootstrap, topic, n, settings, take, "kproto poll_arrow")


# -- confluent-kafka (librdkafka) --------------------------------------------------------------

def confluent_produce(bootstrap: str, topic: str, n: int, settings: Settings) -> float:
    """confluent-kafka's ``produce()`` per record, serving delivery reports with ``poll(0)``
    every CHUNK records and waiting in ``poll()`` when the queue is full (BufferError), as an
    application must; then ``flush()``."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, **settings.produce})
    producer.produce(topic, VALUE, partition=0)
    if producer.flush(30):
        raise RuntimeError("confluent-kafka did not deliver the warm-up record")
    produce, poll = producer.produce, producer.poll
    start = clock_start()
    for first in range(0, n, CHUNK):
        for _ in range(min(CHUNK, n - first)):
            try:
                produce(topic, VALUE, partition=0)
            except BufferError:  # queue.buffering.max.* reached: wait for deliveries
                while True:
                    poll(0.001)
                    try:
                        produce(topic, VALUE, partition=0)
                        break
                    except BufferError:
                        pass
        poll(0)
    left = producer.flush(TIMEOUT)
    elapsed = clock_stop(start)
    if left:
        raise RuntimeError(f"confluent-kafka did not deliver {left} records")
    return elapsed


def confluent_consume(bootstrap: str, topic: str, n: int, settings: Settings) -> float:
    """confluent-kafka's ``consume(num_messages)`` lists of messages."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                         **settings.consume})
    try:
        consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        batch = settings.records or 1000
        consume = consumer.consume
        got = 0
        start = clock_start()
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        while got < n:
            for message in consume(batch, 1.0):
                if message.error() is None:
                    len(message.value())
                    got += 1
            _check(got, n, start, "confluent-kafka")
        return clock_stop(start)
    finally:
        consumer.close()


# -- aiokafka ------------------------------------------------------------------------------------

def aiokafka_produce(bootstrap: str, topic: str, n: int, settings: Settings) -> float:
    """aiokafka's ``await send()`` per record (it queues; the future is not awaited), then
    ``flush()``."""
    from aiokafka import AIOKafkaProducer

    async def run() -> float:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **settings.produce)
        await producer.start()
        try:
            await producer.send_and_wait(topic, VALUE, partition=0)
            send = producer.send
            start = clock_start()
            for _ in range(n):
                await send(topic, VALUE, partition=0)
            await producer.flush()
            return clock_stop(start)
        finally:
            await producer.stop()
    return asyncio.run(run())


def aiokafka_consume(bootstrap: str, topic: str, n: int, settings: Settings) -> float:
    """aiokafka's ``getmany()`` dicts of record lists."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> float:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                    auto_offset_reset="earliest", **settings.consume)
        await consumer.start()
        try:
            partition = TopicPartition(topic, 0)
            await consumer.end_offsets([partition])
            got = 0
            start = clock_start()
            consumer.assign([partition])
            while got < n:
                batches = await consumer.getmany(timeout_ms=1000, max_records=settings.records)
                for records in batches.values():
                    for record in records:
                        len(record.value)
                    got += len(records)
                _check(got, n, start, "aiokafka")
            return clock_stop(start)
        finally:
            await consumer.stop()
    return asyncio.run(run())


# -- kafka-python --------------------------------------------------------------------------------

def kafka_python_produce(bootstrap: str, topic: str, n: int, settings: Settings) -> float:
    """kafka-python's ``send()`` per record, then ``flush()``."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, **settings.produce)
    try:
        producer.send(topic, VALUE, partition=0).get(30)
        send = producer.send
        start = clock_start()
        for _ in range(n):
            send(topic, VALUE, partition=0)
        producer.flush(TIMEOUT)
        return clock_stop(start)
    finally:
        producer.close(5)


def kafka_python_consume(bootstrap: str, topic: str, n: int, settings: Settings) -> float:
    """kafka-python's ``poll()`` dicts of record lists."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                             **settings.consume)
    try:
        partition = TopicPartition(topic, 0)
        consumer.end_offsets([partition])
        got = 0
        start = clock_start()
        consumer.assign([partition])
        while got < n:
            for records in consumer.poll(timeout_ms=1000, max_records=settings.records).values():
                for record in records:
                    len(record.value)
                got += len(records)
            _check(got, n, start, "kafka-python")
        return clock_stop(start)
    finally:
        consumer.close()


# -- settings ------------------------------------------------------------------------------------

KPROTO = {
    "defaults": Settings(),
    # Consuming: the socket's receive buffer left to the OS, 2 MB partition fetches (see above;
    # for poll(), max.poll.records 2,000 to 100,000 were as fast or slower).
    "best": Settings(produce={"linger.ms": 20, "batch.size": 1_000_000, "send.buffer.bytes": -1},
                     consume={"receive.buffer.bytes": -1, "max.partition.fetch.bytes": 2 << 20}),
}
CONFLUENT = {
    "defaults": Settings(records=1000),
    "best": Settings(produce={"queue.buffering.max.messages": 1_000_000},
                     consume={"queued.min.messages": 1_000_000, "fetch.wait.max.ms": 10}, records=1000),
}
AIOKAFKA = {
    "defaults": Settings(),
    "best": Settings(produce={"max_batch_size": 262_144, "linger_ms": 5},
                     consume={"max_partition_fetch_bytes": 8_388_608, "fetch_max_wait_ms": 10}),
}
KAFKA_PYTHON = {
    "defaults": Settings(),
    "best": Settings(produce={"batch_size": 262_144, "linger_ms": 5}),  # consuming: nothing beat its defaults
}

# The candidates ``bench/clients.py --sweep`` tries, by client: produce configurations, and
# consume configurations with the records per call; the fastest of each is "best" above.
SWEEP: dict[str, tuple[list[dict[str, Any]], list[tuple[dict[str, Any], int | None]]]] = {
    "kproto": (
        [{}, {"linger.ms": 20}, {"linger.ms": 20, "batch.size": 1_000_000},
         {"linger.ms": 100, "batch.size": 1_000_000}, {"linger.ms": 5, "batch.size": 262_144},
         {"batch.size": 1_000_000}, {"linger.ms": 20, "batch.size": 1_000_000, "send.buffer.bytes": -1}],
        [({}, None), ({"max.poll.records": 2000}, None), ({"max.poll.records": 10_000}, None),
         ({"max.poll.records": 10_000, "max.partition.fetch.bytes": 8_388_608}, None),
         ({"max.poll.records": 100_000, "max.partition.fetch.bytes": 8_388_608, "fetch.max.wait.ms": 10}, None)],
    ),
    "confluent-kafka": (
        [{}, {"queue.buffering.max.messages": 1_000_000},
         {"linger.ms": 20, "batch.num.messages": 100_000, "queue.buffering.max.messages": 1_000_000},
         {"linger.ms": 100, "batch.num.messages": 100_000, "queue.buffering.max.messages": 1_000_000,
          "queue.buffering.max.kbytes": 2_097_151}],
        [({}, 1000), ({}, 10_000), ({"fetch.wait.max.ms": 10}, 10_000),
         ({"queued.min.messages": 1_000_000}, 1000),
         ({"queued.min.messages": 1_000_000, "fetch.wait.max.ms": 100}, 1000),
         ({"queued.min.messages": 1_000_000, "fetch.wait.max.ms": 10}, 1000),
         ({"queued.min.messages": 1_000_000, "fetch.wait.max.ms": 100}, 10_000),
         ({"queued.min.messages": 1_000_000, "fetch.wait.max.ms": 10}, 10_000),
         ({"queued.min.messages": 1_000_000, "fetch.wait.max.ms": 10, "max.partition.fetch.bytes": 8_388_608},
          10_000)],
    ),
    "aiokafka": (
        [{}, {"linger_ms": 5}, {"max_batch_size": 262_144, "linger_ms": 5},
         {"max_batch_size": 1_000_000, "linger_ms": 20}, {"max_batch_size": 1_000_000, "linger_ms": 5}],
        [({}, None), ({}, 10_000), ({"max_partition_fetch_bytes": 8_388_608}, 10_000),
         ({"fetch_max_wait_ms": 10}, None), ({"max_partition_fetch_bytes": 8_388_608, "fetch_max_wait_ms": 10}, None)],
    ),
    "kafka-python": (
        [{}, {"linger_ms": 5}, {"batch_size": 262_144, "linger_ms": 5},
         {"batch_size": 1_000_000, "linger_ms": 20}],
        [({}, None), ({"max_poll_records": 2000}, None), ({"max_poll_records": 10_000}, None),
         ({"max_poll_records": 10_000, "max_partition_fetch_bytes": 8_388_608}, None),
         ({"max_partition_fetch_bytes": 8_388_608}, None)],
    ),
}
