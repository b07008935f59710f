"""kproto's clients side by side with confluent-kafka, aiokafka and kafka-python, one run.

Produce N 100-byte values (acks=1, linger.ms=5, batches of up to 1 MB — librdkafka's
default, set on the others so every client batches alike; one partition) and then
consume them from the beginning, with every client against the same
broker: minibroker in its own process (memory storage), then Tansu. Each measurement
uses a fresh topic; runs alternate between clients so they share the machine's noise.
Prints median messages per second and kproto's ratio to each peer.

Goals (issue 4): produce >= 1.0x confluent-kafka, >= 5x aiokafka, >= 15x kafka-python;
consume >= 1.0x confluent-kafka.

Usage: ``python bench/clients.py [--messages N] [--runs R] [--brokers minibroker,tansu]``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import logging
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from broker import create_topic, minibroker_process, tansu_process  # noqa: E402  (bench/broker.py)

VALUE = b"x" * 100
BATCH = 1_000_000
_topics = itertools.count()


# -- producers: each returns seconds to send and flush n values ------------------------------

def kproto_sync(bootstrap: str, topic: str, n: int) -> float:
    from kproto.producer import Producer

    with Producer(bootstrap_servers=bootstrap, acks=1, linger_ms=5, batch_size=BATCH) as producer:
        producer.partitions_for(topic)
        send = producer.send
        start = time.perf_counter()
        for _ in range(n):
            send(topic, VALUE, partition=0)
        producer.flush()
        return time.perf_counter() - start


def kproto_async(bootstrap: str, topic: str, n: int) -> float:
    from kproto.producer import AIOProducer

    async def run() -> float:
        async with AIOProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=5, batch_size=BATCH) as producer:
            await producer.partitions_for(topic)
            send = producer.send
            start = time.perf_counter()
            for i in range(n):
                send(topic, VALUE, partition=0)
                if i % 1000 == 0:
                    await asyncio.sleep(0)  # let the sender run, as a real application would
            await producer.flush()
            return time.perf_counter() - start
    return asyncio.run(run())


def confluent_produce(bootstrap: str, topic: str, n: int) -> float:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5,
                         "queue.buffering.max.messages": n + 1000})
    producer.list_topics(topic, timeout=10)
    produce, poll = producer.produce, producer.poll
    start = time.perf_counter()
    for i in range(n):
        produce(topic, VALUE, partition=0)
        if i % 10_000 == 0:
            poll(0)
    if producer.flush(120):
        raise RuntimeError("confluent-kafka did not deliver everything")
    return time.perf_counter() - start


def aiokafka_produce(bootstrap: str, topic: str, n: int) -> float:
    from aiokafka import AIOKafkaProducer

    async def run() -> float:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=5, max_batch_size=BATCH)
        await producer.start()
        try:
            await producer.partitions_for(topic)
            start = time.perf_counter()
            futures = [await producer.send(topic, VALUE, partition=0) for _ in range(n)]
            await producer.flush()
            await asyncio.gather(*futures)
            return time.perf_counter() - start
        finally:
            await producer.stop()
    return asyncio.run(run())


def kafka_python_produce(bootstrap: str, topic: str, n: int) -> float:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=5, batch_size=BATCH)
    try:
        producer.partitions_for(topic)
        start = time.perf_counter()
        for _ in range(n):
            producer.send(topic, VALUE, partition=0)
        producer.flush(120)
        return time.perf_counter() - start
    finally:
        producer.close(5)


# -- consumers: each returns seconds to read n records from offset 0 -------------------------

def confluent_consume(bootstrap: str, topic: str, n: int) -> float:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got = 0
        start = time.perf_counter()
        while got < n:
            for message in consumer.consume(1000, 1.0):
                if message.error() is None:
                    got += 1
        return time.perf_counter() - start
    finally:
        consumer.close()


def aiokafka_consume(bootstrap: str, topic: str, n: int) -> float:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> float:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
        await consumer.start()
        try:
            consumer.assign([TopicPartition(topic, 0)])
            got = 0
            start = time.perf_counter()
            while got < n:
                batches = await consumer.getmany(timeout_ms=1000, max_records=10_000)
                got += sum(len(records) for records in batches.values())
            return time.perf_counter() - start
        finally:
            await consumer.stop()
    return asyncio.run(run())


def kafka_python_consume(bootstrap: str, topic: str, n: int) -> float:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition(topic, 0)])
        got = 0
        start = time.perf_counter()
        while got < n:
            got += sum(len(records) for records in consumer.poll(1000, max_records=10_000).values())
        return time.perf_counter() - start
    finally:
        consumer.close()


def kproto_consume(bootstrap: str, topic: str, n: int) -> float:
    from kproto.consumer import Consumer  # lands with the consumer (issue 4)
    from kproto.structs import TopicPartition

    with Consumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        got = 0
        start = time.perf_counter()
        while got < n:
            got += len(consumer.poll(1.0))
        return time.perf_counter() - start


PRODUCERS = {"kproto": kproto_sync, "kproto-async": kproto_async, "confluent-kafka": confluent_produce,
             "aiokafka": aiokafka_produce, "kafka-python": kafka_python_produce}
CONSUMERS = {"kproto": kproto_consume, "confluent-kafka": confluent_consume, "aiokafka": aiokafka_consume,
             "kafka-python": kafka_python_consume}
SLOW = {"kafka-python", "aiokafka"}  # they get n / 4 messages (rates are per message)


def measure(bootstrap: str, n: int, runs: int) -> dict[str, dict[str, float]]:
    rates: dict[str, dict[str, list[float]]] = {"produce": {}, "consume": {}}
    for _ in range(runs):
        for name, produce in PRODUCERS.items():
            count = n // 4 if name in SLOW else n
            topic = f"bench-{next(_topics)}"
            create_topic(bootstrap, topic)
            seconds = produce(bootstrap, topic, count)
            rates["produce"].setdefault(name, []).append(count / seconds)
            consume = CONSUMERS.get(name)
            if consume is None:
                continue
            try:
                seconds = consume(bootstrap, topic, count)
            except ImportError:
                continue  # kproto's consumer is not there yet
            rates["consume"].setdefault(name, []).append(count / seconds)
    return {phase: {name: statistics.median(r) for name, r in by.items()} for phase, by in rates.items()}


def report(broker: str, medians: dict[str, dict[str, float]]) -> None:
    print(f"\n{broker}: messages/s (median), and kproto's ratio to each")
    for phase, by_client in medians.items():
        ours = by_client.get("kproto")
        for name, rate in by_client.items():
            ratio = f"{ours / rate:6.2f}x" if ours and name != "kproto" else ""
            print(f"  {phase:8} {name:16} {rate:12,.0f}  {ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--brokers", default="minibroker,tansu")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    launchers = {"minibroker": minibroker_process, "tansu": tansu_process}
    for broker in args.brokers.split(","):
        with launchers[broker]() as bootstrap:
            report(broker, measure(bootstrap, args.messages, args.runs))


if __name__ == "__main__":
    main()
