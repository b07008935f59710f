"""A Spark worker's clients kept between its tasks (kproto.spark.fetch.TaskClients), against
minibroker: the next task of the same settings fetches on the same connections; a task that
failed or was stopped early, a client past the capacity and an idle one are closed; a
connection the broker closed meanwhile is opened again."""

from __future__ import annotations

import asyncio
import os
import socket
import time

import pytest

from kproto import AdminClient, Producer
from kproto.admin import NewTopic
from kproto.errors import ConfigError
from kproto.protocol import ApiKey
from kproto.spark.fetch import WORKER_CLIENTS, TaskClients
from kproto.spark.planning import DataLossError, OffsetRange, SourceOptions
from tests.support.leaks import nothing_left_behind  # noqa: F401  (autouse: no socket outlives a test)
from tests.support.sockets import tcp_connections

RECORDS = 3_000


@pytest.fixture(scope="module", autouse=True)
def topic(broker) -> str:
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("kept", 2, 1)])
    with Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=5) as producer:
        for i in range(RECORDS):
            producer.send("kept", b"value %d" % i, b"key-%d" % i, partition=i % 2)
        producer.flush()
    return "kept"


def options(broker, **kafka: str) -> SourceOptions:
    return SourceOptions.parse({"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": "kept",
                                **{f"kafka.{k}": v for k, v in kafka.items()}}, streaming=False)


def offsets(batches) -> list[int]:
    return [o for b in batches for o in b.column("offset").to_pylist()]


def broker_sockets(broker, *, side: str = "client") -> dict[int, int]:
    """Sockets of this process connected to the broker, {inode: a descriptor of it}: the
    clients' (``side="client"``), or the in-process broker's ends of them ("broker")."""
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    return {inode: fd for inode, fd, sock in tcp_connections()
            if (sock.getpeername() if side == "client" else sock.getsockname()) == (host, int(port))}


def test_the_next_task_of_the_same_settings_fetches_on_the_same_connections(broker):
    """Spark's connector keeps its executors' consumers between tasks and micro-batches: a
    task here takes the client an earlier task of its worker gave back (no connecting, no
    ApiVersions or Metadata again), and gives it back once it read its range."""
    clients = TaskClients()
    try:
        assert offsets(clients.read(options(broker), OffsetRange("kept", 0, 0, 700))) == list(range(700))
        assert len(clients) == 1
        first = broker_sockets(broker)
        assert first  # the kept client's connections stay open
        assert offsets(clients.read(options(broker), OffsetRange("kept", 1, 100, 1500))) == list(range(100, 1500))
        assert broker_sockets(broker) == first and len(clients) == 1
        # Other settings, another client.
        assert offsets(clients.read(options(broker, **{"client.id": "other"}), OffsetRange("kept", 0, 0, 10))) \
            == list(range(10))
        assert len(clients) == 2 and set(broker_sockets(broker)) > set(first)
    finally:
        clients.close()
    assert len(clients) == 0 and broker_sockets(broker) == {}


def test_a_task_fetches_without_running_the_event_loop_once_connected(broker, monkeypatch):
    """Issue 16: the event loop runs for a task's first Fetch (connecting, ApiVersions,
    Metadata) and not for the others: each is written, and its answer read, by the task
    itself on the open connection (Connection.send_now), the next one before the batch is
    handed over."""
    runs = []
    run_until_complete = asyncio.BaseEventLoop.run_until_complete
    monkeypatch.setattr(asyncio.BaseEventLoop, "run_until_complete",
                        lambda loop, future: runs.append(future) or run_until_complete(loop, future))
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("small-batches", 1, 1)])
    with Producer(bootstrap_servers=broker.bootstrap_servers, batch_size=1024) as producer:
        for i in range(1200):
            producer.send("small-batches", b"value %d" % i)
        producer.flush()
    fetches = broker.requests.control(ApiKey.FETCH)  # counts
    clients = TaskClients()
    try:
        small = SourceOptions.parse({"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": "small-batches",
                                     "kafka.max.partition.fetch.bytes": "1024"}, streaming=False)  # a Fetch a batch
        assert offsets(clients.read(small, OffsetRange("small-batches", 0, 0, 600))) == list(range(600))
        assert fetches.count >= 8 and len(runs) == 1, (fetches.count, runs)
        # A kept client: one turn of the loop (what came meanwhile), then no more.
        runs.clear()
        assert offsets(clients.read(small, OffsetRange("small-batches", 0, 600, 1200))) == list(range(600, 1200))
        assert fetches.count >= 16 and len(runs) == 1, (fetches.count, runs)
    finally:
        fetches.remove()
        clients.close()


def test_a_task_that_fails_or_is_stopped_early_closes_its_client(broker):
    """A client goes back only from a task that read its range to the end: one stopped early
    may have its Fetch ahead still in flight, one that failed may hold a broken connection."""
    clients = TaskClients()
    try:
        batches = clients.read(options(broker, **{"max.partition.fetch.bytes": "1024"}), OffsetRange("kept", 0, 0, 1500))
        assert next(batches).num_rows < 1500
        assert broker_sockets(broker)
        batches.close()  # Spark stops reading (a LIMIT)
        assert len(clients) == 0 and broker_sockets(broker) == {}
        with pytest.raises(DataLossError):  # the range runs past the log's end
            list(clients.read(options(broker), OffsetRange("kept", 0, 0, RECORDS)))
        assert len(clients) == 0 and broker_sockets(broker) == {}
    finally:
        clients.close()


def test_a_task_whose_client_cannot_be_made_leaves_nothing_open(broker, tmp_path):
    """Settings that pass the planner's checks but cannot make a client (a trust store that is
    not there): the task fails with Kafka's error, and its event loop is closed with it."""
    clients = TaskClients()
    bad = options(broker, **{"security.protocol": "SSL", "ssl.truststore.location": str(tmp_path / "missing.pem"),
                             "ssl.truststore.type": "PEM"})
    with pytest.raises(ConfigError):
        list(clients.read(bad, OffsetRange("kept", 0, 0, 10)))
    assert len(clients) == 0


def test_clients_past_the_capacity_or_unused_for_the_idle_timeout_are_closed(broker):
    clients = TaskClients(capacity=1)
    try:
        list(clients.read(options(broker), OffsetRange("kept", 0, 0, 10)))
        first = set(broker_sockets(broker))
        list(clients.read(options(broker, **{"client.id": "other"}), OffsetRange("kept", 0, 0, 10)))
        assert len(clients) == 1 and not first & set(broker_sockets(broker))  # the least recently used went
    finally:
        clients.close()
    clients = TaskClients(idle_timeout=-1.0)  # any time unused is too long
    try:
        list(clients.read(options(broker), OffsetRange("kept", 0, 0, 10)))
        first = set(broker_sockets(broker))
        list(clients.read(options(broker, **{"client.id": "other"}), OffsetRange("kept", 0, 0, 10)))
        assert len(clients) == 1 and not first & set(broker_sockets(broker))  # idle since: closed
    finally:
        clients.close()


def test_a_connection_the_broker_closed_between_tasks_is_opened_again(broker):
    """Brokers close connections idle for connections.max.idle.ms (10 minutes; some services
    sooner): the next task on a kept client takes the close in before it fetches, and
    fetches on a new connection at once, not after a failed Fetch and a retry backoff."""
    clients = TaskClients()
    slow_retries = {"retry.backoff.ms": "5000", "retry.backoff.max.ms": "5000"}
    try:
        list(clients.read(options(broker, **slow_retries), OffsetRange("kept", 0, 0, 10)))
        old = set(broker_sockets(broker))
        assert old
        for fd in broker_sockets(broker, side="broker").values():  # the broker ends them
            with socket.socket(fileno=os.dup(fd)) as sock:
                sock.shutdown(socket.SHUT_RDWR)
        started = time.monotonic()
        assert offsets(clients.read(options(broker, **slow_retries), OffsetRange("kept", 0, 0, 1500))) \
            == list(range(1500))
        assert time.monotonic() - started < 2.5  # no retry backoff of 5 s was waited out
        assert len(clients) == 1 and broker_sockets(broker) and not old & set(broker_sockets(broker))
    finally:
        clients.close()


def test_a_forked_child_does_not_inherit_the_kept_clients(broker):
    """A PySpark daemon forks its workers: a child of a process that kept clients must not
    fetch on their sockets, which are the parent's."""
    try:
        list(WORKER_CLIENTS.read(options(broker), OffsetRange("kept", 0, 0, 10)))
        assert len(WORKER_CLIENTS) == 1
        read_end, write_end = os.pipe()
        child = os.fork()
        if child == 0:  # pragma: no cover - the child's report goes through the pipe
            os.write(write_end, b"%d" % len(WORKER_CLIENTS))
            os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            assert pipe.read() == b"0"
        os.waitpid(child, 0)
        assert len(WORKER_CLIENTS) == 1  # the parent's are still there
    finally:
        WORKER_CLIENTS.close()
