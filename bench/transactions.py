"""Transactions side by side: transactional produce throughput and commit latency, one run.

- throughput through one MiniBroker, one partition, 100 B values: an idempotent producer
  without transactions against a transactional one that commits every N records, for a
  few N, each timed once it has its producer id (``init_transactions()``, or one record
  sent and acknowledged), for kproto's Producer and confluent-kafka's, each with its defaults and "tuned"
  (``linger.ms=20`` and 1 MB batches, as bench/cluster.py); prints msg/s and the ratio
  transactional / idempotent per client and N. Every run checks the log: its end offset is
  the records sent plus one marker per transaction, and a read_committed end offset that
  reaches it (nothing left open);
- commit latency: ``begin_transaction()``, one record, ``commit_transaction()`` returning
  (the record's AddPartitionsToTxn, its Produce, EndTxn and, inside the broker, the marker),
  R times per client; prints the median and the 99th percentile.

Prints medians of ``--runs`` runs. Usage:
``python bench/transactions.py [--runs R] [--messages N] [--commits C] [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import confluent_kafka
from confluent_kafka import Consumer, TopicPartition

import kproto
from kproto.admin import AdminClient
from kproto.producer import Producer
from minibroker import MiniBroker

VALUE = b"x" * 100
EVERY = (100, 1_000, 10_000)  # records per transaction

KPROTO = {"defaults": {}, "tuned": {"linger.ms": 20, "batch.size": 1_000_000}}
CONFLUENT = {"defaults": {}, "tuned": {"linger.ms": 20, "batch.num.messages": 100_000}}


def kproto_send(bootstrap: str, topic: str, n: int, every: int, extra: dict[str, Any], txn_id: str) -> float:
    config = {"bootstrap.servers": bootstrap, "enable.idempotence": True, **extra}
    if every:
        config["transactional.id"] = txn_id
    with Producer(config) as producer:
        producer.partitions_for(topic)
        if every:
            producer.init_transactions()
        else:
            producer.send(topic, VALUE, partition=0).result(30)  # its producer id, as init_transactions gets one
        send = producer.send
        start = time.perf_counter()
        if not every:
            for _ in range(n):
                send(topic, VALUE, partition=0)
            producer.flush()
        else:
            for first in range(0, n, every):
                producer.begin_transaction()
                for _ in range(min(every, n - first)):
                    send(topic, VALUE, partition=0)
                producer.commit_transaction()
        return time.perf_counter() - start


def confluent_send(bootstrap: str, topic: str, n: int, every: int, extra: dict[str, Any], txn_id: str) -> float:
    failed: list[Any] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(err)

    config = {"bootstrap.servers": bootstrap, "enable.idempotence": True, **extra}
    if every:
        config["transactional.id"] = txn_id
    producer = confluent_kafka.Producer(config)
    producer.list_topics(topic, timeout=10)
    if every:
        producer.init_transactions(30)
    else:  # its producer id first, as init_transactions gets one (librdkafka may wait 500 ms for it)
        producer.produce(topic, VALUE, partition=0, on_delivery=on_delivery)
        producer.flush(30)
    produce, poll = producer.produce, producer.poll

    def send(count: int) -> None:
        for _ in range(count):
            while True:
                try:
                    produce(topic, VALUE, partition=0, on_delivery=on_delivery)
                    break
                except BufferError:  # queue.buffering.max.messages (its default, 100000) is full
                    poll(0.005)

    start = time.perf_counter()
    if not every:
        send(n)
        if producer.flush(120):
            failed.append("records left unflushed")
    else:
        for first in range(0, n, every):
            producer.begin_transaction()
            send(min(every, n - first))
            producer.commit_transaction(120)  # flushes first
    seconds = time.perf_counter() - start
    if failed:
        raise RuntimeError(f"confluent-kafka did not deliver everything: {failed[:3]}")
    return seconds


SENDERS: dict[str, tuple[Callable[..., float], dict[str, dict[str, Any]]]] = {
    "kproto": (kproto_send, KPROTO), "confluent-kafka": (confluent_send, CONFLUENT)}


def check_log(bootstrap: str, topic: str, n: int, every: int) -> None:
    """The partition holds the n records and one marker per transaction, all decided: the
    log end (read_uncommitted) and the last stable offset (read_committed) agree."""
    ends = {}
    for level in ("read_uncommitted", "read_committed"):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-check", "isolation.level": level})
        try:
            ends[level] = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
        finally:
            consumer.close()
    low, high = ends["read_uncommitted"]
    expected = n + (-(-n // every) if every else 1)  # the idempotent run's warm-up record
    if high - low != expected:
        raise RuntimeError(f"{topic}: {high - low} offsets, expected {expected} ({n} records, every {every})")
    if ends["read_committed"][1] != high:
        raise RuntimeError(f"{topic}: last stable offset {ends['read_committed'][1]} below the log end {high}")


def create_topic(broker: MiniBroker, name: str) -> None:
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([name])


def throughput(broker: MiniBroker, n: int, runs: int) -> dict[tuple[str, str, int], float]:
    rates: dict[tuple[str, str, int], list[float]] = {}
    names = iter(range(1_000_000))
    for _ in range(runs):  # runs alternate between clients and modes so they share the noise
        for client, (send, settings) in SENDERS.items():
            for setting, extra in settings.items():
                for every in (0, *EVERY):
                    i = next(names)
                    topic = f"bench-{i}"
                    create_topic(broker, topic)
                    seconds = send(broker.bootstrap_servers, topic, n, every, extra, f"bench-txn-{i}")
                    check_log(broker.bootstrap_servers, topic, n, every)
                    rates.setdefault((client, setting, every), []).append(n / seconds)
    return {key: statistics.median(r) for key, r in rates.items()}


def commit_latency(broker: MiniBroker, commits: int) -> dict[str, list[float]]:
    """Seconds per begin + one record + commit, ``commits`` times per client."""
    create_topic(broker, "bench-latency")
    bootstrap = broker.bootstrap_servers
    times: dict[str, list[float]] = {"kproto": [], "confluent-kafka": []}
    with Producer({"bootstrap.servers": bootstrap, "transactional.id": "lat-kproto", "linger.ms": 0}) as producer:
        producer.init_transactions()
        for _ in range(commits):
            start = time.perf_counter()
            producer.begin_transaction()
            producer.send("bench-latency", VALUE, partition=0)
            producer.commit_transaction()
            times["kproto"].append(time.perf_counter() - start)
    producer_c = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "transactional.id": "lat-confluent",
                                           "linger.ms": 0})
    producer_c.init_transactions(30)
    for _ in range(commits):
        start = time.perf_counter()
        producer_c.begin_transaction()
        producer_c.produce("bench-latency", VALUE, partition=0)
        producer_c.commit_transaction(30)
        times["confluent-kafka"].append(time.perf_counter() - start)
    return times


def ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"median {statistics.median(ordered) * 1000:7.2f} ms, p99 {p99 * 1000:7.2f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="2 runs of 10,000 messages, 20 commits (a smoke run)")
    args = parser.parse_args(argv)
    runs, n, commits = ((min(args.runs, 2), min(args.messages, 10_000), min(args.commits, 20)) if args.quick
                        else (args.runs, args.messages, args.commits))
    load = os.getloadavg()
    print(f"{platform.machine()} {platform.system()}, {os.cpu_count()} CPUs, load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; python {platform.python_version()}, kproto "
          f"{kproto.__version__}, confluent-kafka {confluent_kafka.__version__} (librdkafka "
          f"{confluent_kafka.libversion()[0]}); median of {runs} runs")
    with MiniBroker() as broker:
        rates = throughput(broker, n, runs)
        print(f"\nProduce through one MiniBroker, {n:,} x 100 B values to one partition (msg/s): idempotent "
              "without transactions, and transactional committing every N records; tuned: linger.ms=20, "
              "1 MB batches")
        header = "".join(f"{'every ' + format(e, ','):>18}" for e in EVERY)
        print(f"{'':26} {'idempotent':>12}{header}")
        for client, (_, settings) in SENDERS.items():
            for setting in settings:
                base = rates[client, setting, 0]
                cells = "".join(f"{rates[client, setting, e]:>11,.0f} {rates[client, setting, e] / base:5.2f}x"
                                for e in EVERY)
                print(f"{client + ' ' + setting:26} {base:12,.0f}{cells}")
        print("invariants held: every log holds its records and one marker per transaction, all decided "
              "(last stable offset = log end)")
        latency = commit_latency(broker, commits)
        print(f"\nCommit latency: begin_transaction, one record, commit_transaction; {commits} commits")
        for client, samples in latency.items():
            print(f"  {client:16} {ms(samples)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
