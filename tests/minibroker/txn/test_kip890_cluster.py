"""KIP-890 part 1 in a MiniCluster (issue 14 step 2, item 1): the leader of a partition asks
the transaction coordinator on another broker, with AddPartitionsToTxn v4+ ``verify_only``
over a real connection (Kafka's ``AddPartitionsToTxnManager``)."""

import pytest

from kproto.errors import InvalidTxnStateError
from kproto.protocol import ApiKey
from kproto.protocol import messages as m
from kproto.records import ControlType
from minibroker.coordinator.transactions import TxnState
from minibroker.coordinator.txn_log import TRANSACTION_STATE_TOPIC, partition_for
from tests.minibroker.txn.test_txn_coordinator_cluster import (  # noqa: F401 (the fixture)
    PARTITIONS,
    _markers,
    _port,
    _producer,
    _txn_state,
    _wait,
    cluster,
)
from tests.minibroker.txn.txn_wire import txn_batch
from tests.support.raw_client import RawClient

ck = pytest.importorskip("confluent_kafka")


def _produce(port, tid, records, partition, version=9):
    request = m.ProduceRequest(transactional_id=tid, acks=-1, timeout_ms=10000, topic_data=[
        m.ProduceRequest.TopicProduceData(name="t", partition_data=[
            m.ProduceRequest.PartitionProduceData(index=partition, records=records)])])
    c = RawClient(port)
    try:
        return c.request(ApiKey.PRODUCE, version, request).responses[0].partition_responses[0].error_code
    finally:
        c.close()


def test_a_leader_asks_the_coordinator_on_another_broker(cluster):  # noqa: F811
    """issue 14 step 2, item 1: a transaction over partitions led by every broker commits
    (each leader verified its first batch with the coordinator); afterwards a late batch
    of that transaction on a partition led by a broker that is not the coordinator is
    refused with INVALID_TXN_STATE, and opens no transaction there."""
    cluster.create_topic("t", partitions=3, replication_factor=1)
    p = _producer(cluster)
    p.init_transactions(20)
    p.begin_transaction()
    for i in range(3):
        p.produce("t", b"v%d" % i, partition=i)
    p.commit_transaction(20)
    coordinator = cluster.leader_of(TRANSACTION_STATE_TOPIC, partition_for("tx", PARTITIONS))
    _wait("CompleteCommit", lambda: _txn_state(cluster, coordinator, "tx") is TxnState.CompleteCommit)
    md = cluster._read(lambda: cluster._nodes[coordinator].server.state.transactions.txns["tx"])
    other = next(i for i in range(3) if cluster.leader_of("t", i) != coordinator)
    leader = cluster.leader_of("t", other)
    late = txn_batch(md.producer_id, md.producer_epoch, 1, [b"late"])
    assert _produce(_port(cluster, leader), "tx", late, other) == InvalidTxnStateError.code

    def open_txns():
        state = cluster._nodes[leader].server.state
        partition = state.topics["t"].partitions[other]
        return [x for x in state.active_producers(partition) if x.current_txn_start_offset >= 0]
    assert cluster._read(open_txns) == []


def test_kproto_with_transaction_version_2_across_brokers(cluster):  # noqa: F811
    """issue 14 step 2, items 2 and 3: kproto's producer against a MiniCluster (transaction
    version 2 by default): its Produce v12 to partitions led by every broker makes each
    leader add the partition through the coordinator (AddPartitionsToTxn v4+, not
    verify_only, broker to broker); EndTxn v5 commits with the epoch bumped, which every
    marker carries."""
    from kproto import Producer

    cluster.create_topic("t", partitions=3, replication_factor=1)
    with Producer(bootstrap_servers=cluster.bootstrap_servers, transactional_id="tv2") as producer:
        producer.init_transactions()
        assert producer._core._idempotence.transaction_v2
        epoch = producer._core._idempotence.epoch
        with producer.transaction():
            for i in range(3):
                producer.send("t", b"v%d" % i, partition=i)
        assert producer._core._idempotence.epoch == epoch + 1
    coordinator = cluster.leader_of(TRANSACTION_STATE_TOPIC, partition_for("tv2", PARTITIONS))
    _wait("CompleteCommit", lambda: _txn_state(cluster, coordinator, "tv2") is TxnState.CompleteCommit)
    for i in range(3):
        assert [(kind, e) for kind, _, e in _markers(cluster, "t", i)] == [(ControlType.COMMIT, epoch + 1)]


def test_kproto_aborts_while_the_last_commit_writes_its_markers(cluster):  # noqa: F811
    """issue 16, the flaky ``test_the_context_manager_commits_or_aborts_and_reraises``
    made deterministic: the WriteTxnMarkers of the commit are held back (a Delay on the
    partition's leader), so the next transaction's abort reaches the coordinator in
    PrepareCommit with the epoch the commit answered. It is CONCURRENT_TRANSACTIONS and
    the producer retries until the commit completes, then the abort and the transaction
    after it end (before the fix: PRODUCER_FENCED, and the producer was dead)."""
    from kproto import Producer
    from kproto.errors import TransactionAbortedError
    from minibroker.faults import Delay

    cluster.create_topic("t", partitions=3, replication_factor=1)
    with Producer(bootstrap_servers=cluster.bootstrap_servers, transactional_id="slow", linger_ms=60000) as producer:
        producer.init_transactions()  # __transaction_state exists from here
        epoch = producer._core._idempotence.epoch
        coordinator = cluster.leader_of(TRANSACTION_STATE_TOPIC, partition_for("slow", PARTITIONS))
        other = next(i for i in range(3) if cluster.leader_of("t", i) != coordinator)
        delayed = cluster.requests(cluster.leader_of("t", other)).control(ApiKey.WRITE_TXN_MARKERS, Delay(0.5))
        with producer.transaction():
            producer.send("t", b"committed", partition=other)
        with pytest.raises(ZeroDivisionError):
            with producer.transaction():
                dropped = producer.send("t", b"dropped", partition=other)
                raise ZeroDivisionError
        assert isinstance(dropped.exception(), TransactionAbortedError)
        with producer.transaction():
            producer.send("t", b"last", partition=other)
        assert producer._core._idempotence.epoch == epoch + 3  # one bump per end
    assert delayed.count >= 1
    _wait("CompleteCommit", lambda: _txn_state(cluster, coordinator, "slow") is TxnState.CompleteCommit)
    assert [(kind, e) for kind, _, e in _markers(cluster, "t", other)] == [
        (ControlType.COMMIT, epoch + 1), (ControlType.COMMIT, epoch + 3)]  # the abort had no partition


def _find_coordinator(port, tid):
    c = RawClient(port)
    try:
        r = c.request(ApiKey.FIND_COORDINATOR, 3, m.FindCoordinatorRequest(key=tid, key_type=1))
    finally:
        c.close()
    return r.error_code, r.node_id


@pytest.mark.parametrize("markers_delay, expected", [(0.06, 0), (0.5, 19)])
def test_a_leader_retries_adding_a_partition_while_the_last_transaction_ends(
        cluster, markers_delay, expected):  # noqa: F811
    """issue 14 (KIP-890 part 2, Kafka 4's KAFKA-18654): a Produce v12 that starts the next
    transaction while the coordinator still writes the last one's markers is answered
    once they are written: the leader asks again every add.partitions.to.txn.retry.backoff.ms
    (20) for up to add.partitions.to.txn.retry.backoff.max.ms (100) before it answers
    NOT_ENOUGH_REPLICAS (19), which the producer retries after its retry.backoff.ms."""
    from minibroker.faults import Delay

    cluster.create_topic("t", partitions=3, replication_factor=1)
    port = cluster.brokers[0].port
    _, coordinator = _wait("the coordinator", lambda: (lambda r: r if r[0] == 0 else None)(
        _find_coordinator(port, "rt")))
    other = next(i for i in range(3) if cluster.leader_of("t", i) != coordinator)
    leader = cluster.leader_of("t", other)
    c = RawClient(_port(cluster, coordinator))
    try:
        r = c.request(ApiKey.INIT_PRODUCER_ID, 5, m.InitProducerIdRequest(
            transactional_id="rt", transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1))
        pid, epoch = r.producer_id, r.producer_epoch
        assert _produce(_port(cluster, leader), "rt", txn_batch(pid, epoch, 0, [b"a"]), other, version=12) == 0
        cluster.requests(leader).control(ApiKey.WRITE_TXN_MARKERS, Delay(markers_delay))
        r = c.request(ApiKey.END_TXN, 5, m.EndTxnRequest(transactional_id="rt", producer_id=pid,
                                                         producer_epoch=epoch, committed=True))
        assert r.error_code == 0 and r.producer_epoch == epoch + 1
        assert _produce(_port(cluster, leader), "rt", txn_batch(pid, epoch + 1, 0, [b"b"]), other,
                        version=12) == expected
    finally:
        c.close()
