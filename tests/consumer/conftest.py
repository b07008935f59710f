"""Tests of kproto.consumer: none may leave a kproto thread or a socket behind; ``producer``
writes what they read."""

import pytest

from tests.minibroker.cluster.conftest import cluster3, cluster4  # noqa: F401  (MiniCluster fixtures)
from tests.support.leaks import nothing_left_behind  # noqa: F401  (autouse)

DEADLINE = 20  # seconds for the producer's flush


@pytest.fixture(scope="module")
def producer(broker):
    """A confluent-kafka producer on this module's broker, shared by its tests. Its
    connections open at once, before a test counts sockets."""
    ck = pytest.importorskip("confluent_kafka")
    p = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 2})
    p.produce("warm-up", b"")
    assert p.flush(DEADLINE) == 0
    yield p
    p.flush(DEADLINE)
