"""Fixtures for tests of a whole MiniCluster: a fresh cluster per test (function scope),
with and without racks, on the cluster's test-friendly defaults (failover within
about 400 ms). Each test waits for the states it needs (``wait_for_isr``,
``wait_for_leader``); none sleeps."""

import contextlib
import gc
import os
import threading
import time

import pytest


def _sockets():
    """This process's sockets that hold a port or a connection (in /proc/net/tcp, tcp6 or
    unix). A socket whose connect was refused holds neither and is in no table: peer
    clients (kafka-python) keep such sockets of their failed reconnects to a killed broker
    until their own objects go, which says nothing of the cluster's."""
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed while we looked
        if link.startswith("socket:["):
            mine.add(link[8:-1])
    held = set()
    for table, column in (("tcp", 9), ("tcp6", 9), ("unix", 6)):
        for line in open(f"/proc/net/{table}").read().splitlines()[1:]:
            fields = line.split()
            if len(fields) > column and fields[column] in mine:
                held.add(fields[column])
    return len(held)


@contextlib.contextmanager
def _nothing_left(**kwargs):
    """A started MiniCluster; after it stops, none of its threads or sockets is left
    (clients' sockets get a short grace to close)."""
    from minibroker.cluster import MiniCluster  # here: the directory's unit tests need none of it

    threads, sockets = set(threading.enumerate()), _sockets()
    with MiniCluster(**kwargs) as cluster:
        yield cluster
    deadline = time.monotonic() + 5
    while _sockets() > sockets and time.monotonic() < deadline:
        gc.collect()  # a peer client's closed objects may hold their sockets until collected
        time.sleep(0.05)
    leaked = [t for t in threading.enumerate() if t not in threads and t.name.startswith("minicluster")]
    assert not leaked, f"threads left running: {leaked}"
    assert _sockets() <= sockets, f"{_sockets() - sockets} socket(s) left open"


@pytest.fixture
def cluster3(tmp_path):
    """Three brokers, their data under the test's tmp_path (kept for a post-mortem)."""
    with _nothing_left(brokers=3, data_dir=tmp_path / "cluster") as cluster:
        yield cluster


@pytest.fixture
def cluster4(tmp_path):
    """Four brokers: an RF=3 topic leaves one broker out of its replicas, which keeps the
    controller alive while every replica is killed."""
    with _nothing_left(brokers=4, data_dir=tmp_path / "cluster") as cluster:
        yield cluster


@pytest.fixture
def cluster3_racks(tmp_path):
    """Three brokers on racks a, b, c."""
    with _nothing_left(brokers=3, racks=["a", "b", "c"], data_dir=tmp_path / "cluster") as cluster:
        yield cluster


def ck_metadata(bootstrap, topic=None):
    """confluent-kafka's module, an AdminClient, and its Metadata answer (``list_topics``)."""
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return ck, admin, admin.list_topics(topic, timeout=10)


def replica_log(cluster, node_id, topic, partition=0):
    """Broker ``node_id``'s local log of a partition (None: no replica there), read on the
    cluster's loop: what the broker itself holds, not what a client is shown."""
    def read():
        state = cluster._nodes[node_id].server.state
        t = state.topics.get(topic)
        return None if t is None else t.partitions[partition].log
    return cluster._read(read)


def replica(cluster, node_id, topic, partition=0):
    """Broker ``node_id``'s :class:`~minibroker.cluster.partition.Partition` object."""
    return cluster._read(lambda: cluster._nodes[node_id].server.state.topics[topic].partitions[partition])


def produce_raw(port, topic, values, *, acks=-1, timeout_ms=10000, partition=0):
    """One Produce v9 of ``values`` (one batch) to the broker at ``port``; its error code
    and base offset, exactly as the broker answered."""
    from kproto.protocol import ApiKey
    from kproto.protocol.messages import ProduceRequest
    from kproto.records import BatchBuilder
    from tests.support.raw_client import RawClient

    now = int(time.time() * 1000)
    builder = BatchBuilder()
    for value in values:
        builder.append(now, None, value)
    request = ProduceRequest(acks=acks, timeout_ms=timeout_ms, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=builder.build())])])
    client = RawClient(port, timeout=timeout_ms / 1000 + 10)
    try:
        answer = client.request(ApiKey.PRODUCE, 9, request).responses[0].partition_responses[0]
    finally:
        client.close()
    return answer.error_code, answer.base_offset


def replica_files(cluster, node_id, topic, partition=0):
    """A replica's segment files and leader-epoch-checkpoint, by name: what must be byte
    for byte the same on every in-sync replica."""
    d = cluster.brokers[node_id].data_dir / f"{topic}-{partition}"
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())
            if p.suffix == ".log" or p.name == "leader-epoch-checkpoint"}


def wait_same_files(cluster, a, b, topic, timeout=10.0):
    """Brokers ``a`` and ``b``'s files of ``topic``-0 once equal, or as they are at the
    timeout (the follower's last fetch may still be landing)."""
    deadline = time.monotonic() + timeout
    while True:
        fa, fb = replica_files(cluster, a, topic), replica_files(cluster, b, topic)
        if fa == fb or time.monotonic() > deadline:
            return fa, fb
        time.sleep(0.02)
