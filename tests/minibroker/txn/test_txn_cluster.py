"""Transactions on a replicated partition (issue 14 step 1, items 1-4 and 6, in a
MiniCluster): followers keep the producer state as they append, so their ``.txnindex``
is the leader's byte for byte and their LSO is right at once after a failover."""

import time

import pytest

from kproto.errors import NotLeaderOrFollowerError
from tests.minibroker.cluster.conftest import _nothing_left, replica  # noqa: F401 (the fixture)
from tests.minibroker.txn.conftest import NO_VERIFICATION
from tests.minibroker.txn.txn_wire import (
    describe_producers,
    fetch,
    produce,
    txn_batch,
    write_markers,
)

READ_COMMITTED = 1
INDEX = "00000000000000000000.txnindex"


def _wait(check, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.02)


def _read_committed(bootstrap, topic, count):
    ck = pytest.importorskip("confluent_kafka")
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                            "isolation.level": "read_committed", "fetch.wait.max.ms": 100})
    try:
        consumer.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
        got, deadline = [], time.monotonic() + 10
        while len(got) < count and time.monotonic() < deadline:
            for m in consumer.consume(10, timeout=0.2):
                assert m.error() is None, m.error()
                got.append(m.value())
        for m in consumer.consume(10, timeout=0.5):  # nothing more comes
            got.append(m.value())
        return got
    finally:
        consumer.close()


@pytest.fixture
def cluster3(tmp_path):
    """Three brokers; the test plays the coordinator, so KIP-890's verification is off."""
    with _nothing_left(brokers=3, data_dir=tmp_path / "cluster", config=NO_VERIFICATION) as cluster:
        yield cluster


def test_followers_index_aborts_as_the_leader_and_a_new_leader_has_the_lso_at_once(cluster3):
    cluster = cluster3
    cluster.create_topic("t", 1, replication_factor=3)
    leader = cluster.wait_for_leader("t", 0)
    followers = [b for b in range(3) if b != leader]
    port = cluster.brokers[leader].port
    assert produce(port, "t", txn_batch(1, 0, 0, [b"a1", b"a2"])) == (0, 0)
    assert produce(port, "t", txn_batch(2, 0, 0, [b"c1"])) == (0, 2)
    assert write_markers(port, 1, 0, False, [("t", 0)]) == {("t", 0): 0}  # 3: aborted, LSO 2
    assert write_markers(port, 2, 0, True, [("t", 0)]) == {("t", 0): 0}  # 4
    assert produce(port, "t", txn_batch(3, 0, 0, [b"o1"])) == (0, 5)  # left open
    assert produce(port, "t", txn_batch(-1, -1, -1, [b"p1"], transactional=False)) == (0, 6)
    # Items 6 and 7: a marker sent to a follower is refused; DescribeProducers is answered by
    # any replica (Kafka's Partition.activeProducerState), the follower's view as the leader's.
    assert write_markers(cluster.brokers[followers[0]].port, 3, 0, True, [("t", 0)]) == {
        ("t", 0): NotLeaderOrFollowerError.code}
    for at in (port, *(cluster.brokers[f].port for f in followers)):
        assert _wait(lambda at=at: {p.producer_id: p.current_txn_start_offset
                                    for p in describe_producers(at, "t", [0])[0].active_producers}
                     == {1: -1, 2: -1, 3: 5})

    leader_index = (cluster.brokers[leader].data_dir / "t-0" / INDEX).read_bytes()
    assert len(leader_index) == 34
    for f in followers:
        path = cluster.brokers[f].data_dir / "t-0" / INDEX
        assert _wait(lambda p=path: p.exists() and p.read_bytes() == leader_index), f"broker {f}'s {INDEX}"
        follower = replica(cluster, f, "t")
        assert _wait(lambda p=follower: cluster._read(lambda: p.high_watermark) == 7)
        assert cluster._read(lambda p=follower: p.last_stable_offset) == 5
    assert cluster._read(lambda: replica(cluster, leader, "t").last_stable_offset) == 5
    # KIP-392: a follower serves a consumer's read_committed fetch (v11+) with its own LSO.
    served = fetch(cluster.brokers[followers[0]].port, "t", 0, isolation_level=READ_COMMITTED, version=11)
    assert (served.error_code, served.last_stable_offset, served.high_watermark) == (0, 5, 7)
    assert [(a.producer_id, a.first_offset) for a in served.aborted_transactions] == [(1, 0)]
    assert len(served.records) > 0
    before = _read_committed(cluster.bootstrap_servers, "t", 1)
    assert before == [b"c1"]

    cluster.kill(leader)
    new = cluster.wait_for_leader("t", 0, not_in=[leader])
    new_port = cluster.brokers[new].port
    answer = fetch(new_port, "t", 0, isolation_level=READ_COMMITTED)
    assert answer.last_stable_offset == 5
    assert [(a.producer_id, a.first_offset) for a in answer.aborted_transactions] == [(1, 0)]
    bootstrap = ",".join(b.bootstrap_servers for b in cluster.brokers if b.alive)
    assert _read_committed(bootstrap, "t", 1) == before
    assert write_markers(new_port, 3, 0, True, [("t", 0)]) == {("t", 0): 0}
    assert _read_committed(bootstrap, "t", 3) == [b"c1", b"o1", b"p1"]
