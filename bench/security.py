"""TLS and SASL side by side: what security costs kproto and confluent-kafka, one run.

- throughput: produce then consume ``--messages`` x 100 B values on one partition, through
  a minibroker in its own process, over PLAINTEXT and over SSL (TLS 1.3, server
  authentication), by kproto's Producer/Consumer and confluent-kafka's, each with its
  defaults and "tuned" (bench/clients.py's best settings); prints msg/s, the ratio SSL /
  PLAINTEXT per client, and kproto / confluent-kafka over SSL;
- connection set-up: a new connection made ready for requests (TCP, TLS handshake,
  ApiVersions, SaslHandshake and SaslAuthenticate) by kproto's ``Connection.open()``,
  for PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL with PLAIN, SCRAM-SHA-256 and
  SCRAM-SHA-512 (4096 iterations, Kafka's minimum and librdkafka's default); and, for both
  clients, a new admin client's first metadata answer (that includes each client's own
  start-up: librdkafka's threads, kproto's loop) over the same listeners.

The certificates are made for the run (tests/support/certs.py, EC P-256). Prints medians
of ``--runs`` runs. Usage:
``python bench/security.py [--runs R] [--messages N] [--connections C] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import confluent_kafka
from confluent_kafka.admin import AdminClient as ConfluentAdmin

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import kproto  # noqa: E402
from kproto.admin import AdminClient, ScramCredentialInfo, UserScramCredentialUpsertion  # noqa: E402
from kproto.config import ClientConfig  # noqa: E402
from kproto.consumer import Consumer  # noqa: E402
from kproto.io import Connection  # noqa: E402
from kproto.producer import Producer  # noqa: E402
from kproto.security.sasl import client_sasl  # noqa: E402
from kproto.security.tls import client_context  # noqa: E402
from kproto.structs import TopicPartition  # noqa: E402
from tests.support import process  # noqa: E402
from tests.support.certs import CertificateAuthority  # noqa: E402

VALUE = b"x" * 100
USER, PASSWORD = "bench", "bench-secret"
PLAIN_USERS = (f'org.apache.kafka.common.security.plain.PlainLoginModule required '
               f'user_{USER}="{PASSWORD}";')

KPROTO = {"defaults": {}, "tuned": {"linger.ms": 20, "batch.size": 1_000_000}}
CONFLUENT = {"defaults": {}, "tuned": {"linger.ms": 20, "batch.num.messages": 100_000,
                                       "queued.min.messages": 1_000_000, "fetch.wait.max.ms": 10}}


@contextmanager
def brokers(pki_dir: Path) -> Iterator[tuple[dict[str, str], Path]]:
    """One minibroker process with a listener per security protocol; yields each
    listener's bootstrap address by protocol name, and the CA's certificate."""
    ca = CertificateAuthority.create(pki_dir)
    server = ca.issue("localhost", hosts=("localhost", "127.0.0.1"))
    keystore = pki_dir / "server.pem"
    keystore.write_text(server.key_pem + server.cert_pem)
    ports = {name: _free_port() for name in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}
    listeners = ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items())
    overrides = {"listeners": listeners, "ssl.keystore.location": str(keystore),
                 "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_USERS,
                 "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_USERS}
    args = [a for key, value in overrides.items() for a in ("--override", f"{key}={value}")]
    with process.minibroker_process(*args, env=process.child_env()):
        yield {name: f"127.0.0.1:{port}" for name, port in ports.items()}, ca.cert_path


def _free_port() -> int:
    """A port free now (the broker process prints its first listener only, so each is chosen here)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def security(protocol: str, ca: Path, mechanism: str | None = None) -> dict[str, Any]:
    """Client settings, in the names kproto and librdkafka share."""
    out: dict[str, Any] = {"security.protocol": protocol}
    if "SSL" in protocol:
        out["ssl.ca.location"] = str(ca)
    if mechanism is not None:
        out.update({"sasl.mechanism": mechanism, "sasl.username": USER, "sasl.password": PASSWORD})
    return out


# -- throughput ------------------------------------------------------------------------------

def kproto_produce(bootstrap: str, topic: str, n: int, extra: dict[str, Any]) -> float:
    with Producer({"bootstrap.servers": bootstrap, "acks": 1, **extra}) as producer:
        producer.partitions_for(topic)
        send = producer.send
        start = time.perf_counter()
        for _ in range(n):
            send(topic, VALUE, partition=0)
        producer.flush()
        return time.perf_counter() - start


def kproto_consume(bootstrap: str, topic: str, n: int, extra: dict[str, Any]) -> float:
    settings = {k: v for k, v in extra.items() if k not in ("linger.ms", "batch.size")}
    with Consumer({"bootstrap.servers": bootstrap, "enable.auto.commit": False, "auto.offset.reset": "earliest",
                   **settings}) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        got = 0
        start = time.perf_counter()
        while got < n:
            for record in consumer.poll(1.0):
                got += len(record.value) > 0
        return time.perf_counter() - start


def confluent_produce(bootstrap: str, topic: str, n: int, extra: dict[str, Any]) -> float:
    settings = {k: v for k, v in extra.items() if k not in ("queued.min.messages", "fetch.wait.max.ms")}
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": 1, **settings})
    producer.list_topics(topic, timeout=10)
    produce, poll = producer.produce, producer.poll
    start = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                produce(topic, VALUE, partition=0)
                break
            except BufferError:  # queue.buffering.max.messages is full
                poll(0.005)
    if producer.flush(120):
        raise RuntimeError("confluent-kafka left records unflushed")
    return time.perf_counter() - start


def confluent_consume(bootstrap: str, topic: str, n: int, extra: dict[str, Any]) -> float:
    settings = {k: v for k, v in extra.items() if k not in ("linger.ms", "batch.num.messages")}
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "bench",
                                         "enable.auto.commit": False, **settings})
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
        got = 0
        start = time.perf_counter()
        while got < n:
            for message in consumer.consume(1000, 1.0):
                if message.error() is None:
                    got += len(message.value()) > 0
        return time.perf_counter() - start
    finally:
        consumer.close()


CLIENTS: dict[str, tuple[Callable[..., float], Callable[..., float], dict[str, dict[str, Any]]]] = {
    "kproto": (kproto_produce, kproto_consume, KPROTO),
    "confluent-kafka": (confluent_produce, confluent_consume, CONFLUENT),
}


def throughput(listeners: dict[str, str], ca: Path, n: int, runs: int) -> dict[tuple[str, str, str, str], float]:
    """msg/s by (client, setting, protocol, produce|consume), medians of ``runs``."""
    rates: dict[tuple[str, str, str, str], list[float]] = {}
    topics = iter(range(1_000_000))
    with AdminClient(bootstrap_servers=listeners["PLAINTEXT"]) as admin:
        for _ in range(runs):  # alternate clients and protocols, so they share the noise
            for client, (produce, consume, settings) in CLIENTS.items():
                for setting, extra in settings.items():
                    for protocol in ("PLAINTEXT", "SSL"):
                        topic = f"bench-{next(topics)}"
                        admin.create_topics([topic])
                        config = {**extra, **security(protocol, ca)}
                        bootstrap = listeners[protocol]
                        rates.setdefault((client, setting, protocol, "produce"), []).append(
                            n / produce(bootstrap, topic, n, config))
                        rates.setdefault((client, setting, protocol, "consume"), []).append(
                            n / consume(bootstrap, topic, n, config))
    return {key: statistics.median(r) for key, r in rates.items()}


# -- connection set-up ------------------------------------------------------------------------

SETUPS = [("PLAINTEXT", None), ("SSL", None), ("SASL_PLAINTEXT", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
          ("SASL_PLAINTEXT", "SCRAM-SHA-512"), ("SASL_SSL", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-256"),
          ("SASL_SSL", "SCRAM-SHA-512")]


def kproto_open(bootstrap: str, settings: dict[str, Any], count: int) -> list[float]:
    """Seconds for ``count`` ``Connection.open()`` (connect, TLS, ApiVersions, SASL)."""
    config = ClientConfig("admin", {"bootstrap.servers": bootstrap, **settings})
    context, sasl = client_context(config), client_sasl(config)
    host, port = bootstrap.rsplit(":", 1)

    async def run() -> list[float]:
        times = []
        for _ in range(count):
            connection = Connection(host, int(port), ssl_context=context, sasl=sasl)
            start = time.perf_counter()
            await connection.open()
            times.append(time.perf_counter() - start)
            await connection.close()
        return times

    return asyncio.run(run())


def first_metadata(client: str, bootstrap: str, settings: dict[str, Any], count: int) -> list[float]:
    """Seconds from making an admin client to its first metadata answer, ``count`` times."""
    times = []
    for _ in range(count):
        start = time.perf_counter()
        if client == "kproto":
            with AdminClient({"bootstrap.servers": bootstrap, **settings}) as admin:
                admin.list_topics()
                times.append(time.perf_counter() - start)
        else:
            admin_c = ConfluentAdmin({"bootstrap.servers": bootstrap, **settings})
            admin_c.list_topics(timeout=10)
            times.append(time.perf_counter() - start)
            del admin_c
    return times


def setup_times(listeners: dict[str, str], ca: Path, count: int) -> dict[tuple[str, str, str], float]:
    with AdminClient(bootstrap_servers=listeners["PLAINTEXT"]) as admin:
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):  # one request each: Kafka's DUPLICATE_RESOURCE rule
            admin.alter_user_scram_credentials([
                UserScramCredentialUpsertion(USER, ScramCredentialInfo(mechanism, 4096), PASSWORD)])
    out = {}
    for protocol, mechanism in SETUPS:
        settings = security(protocol, ca, mechanism)
        name = protocol if mechanism is None else f"{protocol} {mechanism}"
        out[name, "kproto", "open"] = statistics.median(kproto_open(listeners[protocol], settings, count))
        for client in ("kproto", "confluent-kafka"):
            out[name, client, "metadata"] = statistics.median(
                first_metadata(client, listeners[protocol], settings, max(count // 5, 3)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="1 run of 20,000 messages, 10 connections (a smoke run)")
    args = parser.parse_args(argv)
    runs, n, count = ((1, min(args.messages, 20_000), min(args.connections, 10)) if args.quick
                      else (args.runs, args.messages, args.connections))
    load = os.getloadavg()
    print(f"{platform.machine()} {platform.system()}, {os.cpu_count()} CPUs, load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; python {platform.python_version()}, kproto "
          f"{kproto.__version__}, confluent-kafka {confluent_kafka.__version__} (librdkafka "
          f"{confluent_kafka.libversion()[0]}); median of {runs} runs")
    with tempfile.TemporaryDirectory(prefix="bench-security-") as tmp, brokers(Path(tmp)) as (listeners, ca):
        rates = throughput(listeners, ca, n, runs)
        print(f"\nThroughput through one minibroker process, {n:,} x 100 B values, one partition (msg/s); "
              "tuned: kproto linger.ms=20 and 1 MB batches; confluent-kafka linger.ms=20, "
              "batch.num.messages=100000, queued.min.messages=1000000, fetch.wait.max.ms=10")
        print(f"{'':26} {'':8} {'PLAINTEXT':>12} {'SSL':>12} {'SSL/PLAIN':>10} {'kproto/confluent (SSL)':>24}")
        for client, (_, _, settings) in CLIENTS.items():
            for setting in settings:
                for op in ("produce", "consume"):
                    plain, tls = rates[client, setting, "PLAINTEXT", op], rates[client, setting, "SSL", op]
                    versus = rates["kproto", setting, "SSL", op] / rates["confluent-kafka", setting, "SSL", op]
                    cell = f"{versus:23.2f}x" if client == "kproto" else ""
                    print(f"{client + ' ' + setting:26} {op:8} {plain:12,.0f} {tls:12,.0f} {tls / plain:9.2f}x {cell}")
        times = setup_times(listeners, ca, count)
        print(f"\nConnection set-up (median ms): kproto Connection.open() ({count} connections: connect, TLS, "
              "ApiVersions, SASL), and a new admin client's first metadata answer (client start-up included); "
              "SCRAM at 4096 iterations")
        print(f"{'':30} {'kproto open':>12} {'kproto admin':>14} {'confluent admin':>16}")
        for protocol, mechanism in SETUPS:
            name = protocol if mechanism is None else f"{protocol} {mechanism}"
            print(f"{name:30} {times[name, 'kproto', 'open'] * 1000:12.2f} "
                  f"{times[name, 'kproto', 'metadata'] * 1000:14.2f} {times[name, 'confluent-kafka', 'metadata'] * 1000:16.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
