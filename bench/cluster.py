"""MiniCluster side by side: start-up, replicated produce throughput and leader failover, one run.

- start-to-ready of ``MiniCluster(brokers=3)`` in-process: constructor and ``start()`` until
  every broker accepts a connection and a controller is active (goal <= 100 ms);
- produce throughput through one 3-broker cluster, acks=all to a topic of RF=3 against
  acks=1 to a topic of RF=1 (one partition, 100 B values, a fresh topic per measurement),
  for kproto's Producer and confluent-kafka's, each with its defaults and "tuned":
  ``linger.ms=20`` and 1 MB batches (``batch.size`` for kproto, librdkafka's
  ``batch.num.messages=100000`` on top of its 1 MB ``batch.size``), so that a batch waits
  out more of the replication round trip; prints msg/s and the ratio acks=all / acks=1
  per client;
- failover: a producer (acks=all, idempotent) sends to a topic of RF=3 with
  min.insync.replicas=2, then ``kill(leader, wait=False)``; the time to the first
  acknowledgement of a record sent after the kill, on a fresh cluster per run (goal
  < 500 ms). After each run a consumer reads the partition back and every acknowledged
  record must be there, at its offset, once; a loss fails the run loudly.

Prints medians (and the failover's max) of ``--runs`` runs. Usage:
``python bench/cluster.py [--runs R] [--messages N] [--quick]``.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import confluent_kafka
from confluent_kafka import Consumer, TopicPartition

import kproto
from kproto.producer import Producer
from minibroker.cluster.minicluster import MiniCluster

VALUE = b"x" * 100
FAILOVER_GOAL = 0.5
FAILOVER_CONFIG = {"min.insync.replicas": 2}
KILL_TIMEOUT = 10.0  # seconds a producer gets for its first acknowledgement after the kill

# What each client is given besides bootstrap.servers and acks: its defaults, and "tuned".
KPROTO = {"defaults": {}, "tuned": {"linger.ms": 20, "batch.size": 1_000_000}}
CONFLUENT = {"defaults": {}, "tuned": {"linger.ms": 20, "batch.num.messages": 100_000}}
# librdkafka's defaults that bound its failover (CONFIGURATION.md; it has no getter). Seen
# with debug=metadata,broker: its refresh right after the disconnect still names the old
# leader (not fenced yet), and the next comes from its once-a-second leader re-query; the
# new leader's Metadata no longer lists the fenced broker (as Kafka's), so librdkafka
# decommissions it, parks the partition on its internal broker and waits one more re-query.
QUIET = logging.getLogger("bench.librdkafka")  # its disconnect lines after a kill are expected
LIBRDKAFKA_REFRESH = ("topic.metadata.refresh.fast.interval.ms 100, retry.backoff.ms 100, "
                      "leader re-query every 1 s")


# -- 1. start-to-ready --------------------------------------------------------------------------

def start_to_ready() -> float:
    start = time.perf_counter()
    cluster = MiniCluster(brokers=3).start()
    try:
        for broker in cluster.brokers:
            socket.create_connection((broker.host, broker.port), timeout=1).close()
        if cluster.controller_id < 0:
            raise RuntimeError("MiniCluster started without an active controller")
        return time.perf_counter() - start
    finally:
        cluster.stop()


# -- 2. throughput: each returns seconds to send and acknowledge n values -----------------------

def kproto_produce(bootstrap: str, topic: str, n: int, acks: str, extra: dict[str, Any]) -> float:
    with Producer({"bootstrap.servers": bootstrap, "acks": acks, **extra}) as producer:
        producer.partitions_for(topic)
        send = producer.send
        start = time.perf_counter()
        for _ in range(n):
            send(topic, VALUE, partition=0)
        producer.flush()
        return time.perf_counter() - start


def confluent_produce(bootstrap: str, topic: str, n: int, acks: str, extra: dict[str, Any]) -> float:
    failed: list[Any] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(err)

    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": acks, **extra})
    producer.list_topics(topic, timeout=10)
    produce, poll = producer.produce, producer.poll
    start = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                produce(topic, VALUE, partition=0, on_delivery=on_delivery)
                break
            except BufferError:  # queue.buffering.max.messages (its default, 100000) is full
                poll(0.005)
    if producer.flush(120) or failed:
        raise RuntimeError(f"confluent-kafka did not deliver everything: {failed[:3]}")
    return time.perf_counter() - start


PRODUCERS: dict[str, tuple[Callable[..., float], dict[str, dict[str, Any]]]] = {
    "kproto": (kproto_produce, KPROTO), "confluent-kafka": (confluent_produce, CONFLUENT)}
MODES = {"acks=all RF=3": ("all", 3), "acks=1 RF=1": ("1", 1)}


def throughput(n: int, runs: int) -> dict[tuple[str, str, str], float]:
    rates: dict[tuple[str, str, str], list[float]] = {}
    topics = iter(range(1_000_000))
    with MiniCluster(brokers=3) as cluster:
        for _ in range(runs):  # runs alternate between clients and modes so they share the noise
            for client, (produce, settings) in PRODUCERS.items():
                for setting, extra in settings.items():
                    for mode, (acks, rf) in MODES.items():
                        topic = f"bench-{next(topics)}"
                        cluster.create_topic(topic, replication_factor=rf)
                        if rf > 1:
                            cluster.wait_for_isr(topic, 0, rf)
                        seconds = produce(cluster.bootstrap_servers, topic, n, acks, extra)
                        rates.setdefault((client, setting, mode), []).append(n / seconds)
    return {key: statistics.median(r) for key, r in rates.items()}


# -- 3. failover ----------------------------------------------------------------------------------

class Acks:
    """Records sent and acknowledged by one producer (callbacks come from its own thread)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent: dict[int, float] = {}  # record number -> when sent
        self.acked: dict[int, tuple[int, float]] = {}  # record number -> (offset, when acknowledged)
        self.errors: list[str] = []

    def ack(self, i: int, offset: int) -> None:
        with self.lock:
            self.acked[i] = (offset, time.perf_counter())

    def first_ack_sent_after(self, t0: float) -> float | None:
        with self.lock:
            times = [t for i, (_, t) in self.acked.items() if self.sent[i] >= t0]
        return min(times) if times else None


class KprotoSender:
    name = "kproto"

    def __init__(self, bootstrap: str, acks: Acks) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 0})
        self.acks = acks
        cfg = self.producer.config
        self.refresh = (f"retry.backoff.ms {cfg['retry.backoff.ms']}, reconnect.backoff.ms "
                        f"{cfg['reconnect.backoff.ms']}")

    def send(self, topic: str, i: int) -> None:
        def done(err: BaseException | None, md: Any) -> None:
            if err is not None:
                self.acks.errors.append(repr(err))
            else:
                self.acks.ack(i, md.offset)
        self.producer.send(topic, b"%d" % i, partition=0, on_delivery=done)

    def close(self) -> None:
        self.producer.flush(30)
        self.producer.close(5)


class ConfluentSender:
    name = "confluent-kafka"
    refresh = LIBRDKAFKA_REFRESH

    def __init__(self, bootstrap: str, acks: Acks) -> None:
        self.producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                                  "enable.idempotence": True, "linger.ms": 0}, logger=QUIET)
        self.acks = acks

    def send(self, topic: str, i: int) -> None:
        def done(err: Any, msg: Any) -> None:
            if err is not None:
                self.acks.errors.append(str(err))
            else:
                self.acks.ack(i, msg.offset())
        self.producer.produce(topic, b"%d" % i, partition=0, on_delivery=done)
        self.producer.poll(0)

    def close(self) -> None:
        if self.producer.flush(30):
            self.acks.errors.append("confluent-kafka: records left unflushed after 30 s")


SENDERS = {"kproto": KprotoSender, "confluent-kafka": ConfluentSender}


def read_back(bootstrap: str, topic: str) -> dict[int, bytes]:
    """Every record of partition 0 up to its high watermark: offset -> value."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-readback",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"}, logger=QUIET)
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        consumer.assign([TopicPartition(topic, 0, low)])
        log: dict[int, bytes] = {}
        deadline = time.monotonic() + 30
        while len(log) < high - low and time.monotonic() < deadline:
            for message in consumer.consume(1000, 1.0):
                if message.error() is None:
                    log[message.offset()] = message.value()
        return log
    finally:
        consumer.close()


def failover_once(client: str) -> tuple[float, int, str]:
    """One run on a fresh cluster: seconds from the kill to the next acknowledgement, how many
    acknowledged records were checked, and what bounds the client's side."""
    topic = "failover"
    with MiniCluster(brokers=3, config=FAILOVER_CONFIG) as cluster:
        cluster.create_topic(topic, replication_factor=3)
        cluster.wait_for_isr(topic, 0, 3)
        acks = Acks()
        sender = SENDERS[client](cluster.bootstrap_servers, acks)
        stop = threading.Event()

        def loop() -> None:
            i = 0
            while not stop.is_set():
                with acks.lock:
                    acks.sent[i] = time.perf_counter()
                sender.send(topic, i)
                i += 1
                time.sleep(0.002)  # ~500 records/s: a steady stream, not a flood

        thread = threading.Thread(target=loop, name=f"bench-{client}")
        thread.start()
        try:
            deadline = time.monotonic() + 10
            while len(acks.acked) < 50 and time.monotonic() < deadline:  # warm: connected, acks flowing
                time.sleep(0.01)
            leader = cluster.leader_of(topic, 0)
            assert leader is not None
            t0 = time.perf_counter()
            cluster.kill(leader, wait=False)
            deadline = time.monotonic() + KILL_TIMEOUT
            while (first := acks.first_ack_sent_after(t0)) is None and time.monotonic() < deadline:
                time.sleep(0.002)
            time.sleep(0.1)  # a few more records through the new leader
        finally:
            stop.set()
            thread.join()
            sender.close()
        if first is None:
            raise SystemExit(f"FAILED: {client} got no acknowledgement within {KILL_TIMEOUT} s of killing "
                             f"broker {leader}; errors: {acks.errors[:3]}")
        log = read_back(cluster.bootstrap_servers, topic)
        lost = [(i, off) for i, (off, _) in acks.acked.items() if log.get(off) != b"%d" % i]
        values = list(log.values())
        duplicates = len(values) - len(set(values))
        if lost or duplicates:
            raise SystemExit(f"FAILED: invariants broken with {client}: {len(lost)} acknowledged record(s) "
                             f"not at their offset (first: {lost[:3]}), {duplicates} duplicate(s) in the log")
        return first - t0, len(acks.acked), sender.refresh


# -- the report -----------------------------------------------------------------------------------

def ms(seconds: list[float]) -> str:
    return (f"median {statistics.median(seconds) * 1000:7.1f} ms (min {min(seconds) * 1000:.1f}, "
            f"max {max(seconds) * 1000:.1f})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="2 runs of 10,000 messages (a smoke run)")
    args = parser.parse_args(argv)
    runs, n = (min(args.runs, 2), min(args.messages, 10_000)) if args.quick else (args.runs, args.messages)
    logging.basicConfig(level=logging.CRITICAL)  # a killed leader's clients log their disconnects
    QUIET.setLevel(logging.CRITICAL)
    load = os.getloadavg()
    print(f"{platform.machine()} {platform.system()}, {os.cpu_count()} CPUs, load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; python {platform.python_version()}, kproto "
          f"{kproto.__version__}, confluent-kafka {confluent_kafka.__version__} (librdkafka "
          f"{confluent_kafka.libversion()[0]}); median of {runs} runs")

    ready = [start_to_ready() for _ in range(runs)]
    ok = "ok" if statistics.median(ready) <= 0.1 else "MISSED"
    print(f"\nMiniCluster(brokers=3) start-to-ready, in-process (every broker accepts, controller active): "
          f"{ms(ready)}; goal <= 100 ms {ok}")

    rates = throughput(n, runs)
    print(f"\nProduce through one 3-broker MiniCluster, {n:,} x 100 B values to one partition (msg/s); "
          "tuned: linger.ms=20, 1 MB batches")
    print(f"{'':26} {'acks=all RF=3':>14} {'acks=1 RF=1':>14} {'ratio':>8}")
    for client, (_, settings) in PRODUCERS.items():
        for setting in settings:
            replicated, single = rates[client, setting, "acks=all RF=3"], rates[client, setting, "acks=1 RF=1"]
            print(f"{client + ' ' + setting:26} {replicated:14,.0f} {single:14,.0f} {replicated / single:7.2f}x")

    cfg = MiniCluster(brokers=3, config=FAILOVER_CONFIG).config  # the failover runs' own
    print("\nFailover: kill(leader, wait=False) to the next acknowledged record; acks=all, idempotent, "
          "linger.ms=0, RF=3, min.insync.replicas=2, a fresh cluster per run")
    print(f"bounded by the cluster's broker.session.timeout.ms {cfg['broker.session.timeout.ms']} "
          f"(heartbeat every {cfg['broker.heartbeat.interval.ms']} ms) and the client's metadata refresh")
    checked = 0
    for client in SENDERS:
        times, refresh = [], ""
        for _ in range(runs):
            seconds, count, refresh = failover_once(client)
            times.append(seconds)
            checked += count
        ok = "ok" if max(times) < FAILOVER_GOAL else "MISSED"
        print(f"  {client:16} {ms(times)}  goal max < 500 ms {ok}  ({refresh})")
    print(f"invariants held: {checked:,} acknowledged records read back at their offsets, no duplicates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
