"""TxnOffsetCommit and OffsetFetch require_stable (issue 14 step 1, item 7): a transactional
producer's offsets count only when its transaction commits; until its marker reaches the
group's ``__consumer_offsets`` partition they are pending (UNSTABLE_OFFSET_COMMIT for
require_stable, KIP-447), and they survive a restart as pending or decided."""

import asyncio
import time

import pytest

from kproto import AdminClient
from kproto.admin import NewTopic
from kproto.errors import (
    UnknownMemberIdError,
    UnknownTopicOrPartitionError,
    UnstableOffsetCommitError,
)
from kproto.protocol import ApiKey
from kproto.protocol import messages as m
from minibroker import MiniBroker
from minibroker.coordinator.offsets_log import OFFSETS_TOPIC, partition_for
from minibroker.coordinator.transactions import TxnState
from tests.minibroker.txn.test_txn_coordinator import _end, _init, _txn, wait_until
from tests.minibroker.txn.txn_wire import describe_producers
from tests.support.raw_client import RawClient

ck = pytest.importorskip("confluent_kafka")

CONFIG = {"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3}


@pytest.fixture
def minibroker_config():
    return CONFIG


def _fetch(port, group, version=7, require_stable=True, partition=0):
    c = RawClient(port)
    try:
        r = c.request(ApiKey.OFFSET_FETCH, version, m.OffsetFetchRequest(
            group_id=group, topics=[m.OffsetFetchRequest.OffsetFetchRequestTopic(name="in", partition_indexes=[partition])],
            require_stable=require_stable))
    finally:
        c.close()
    p = r.topics[0].partitions[0]
    return p.error_code, p.committed_offset


def _txn_commit(port, tid, pid, epoch, group, offset, version=3, generation=-1, member=""):
    c = RawClient(port)
    try:
        r = c.request(ApiKey.TXN_OFFSET_COMMIT, version, m.TxnOffsetCommitRequest(
            transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=epoch, generation_id=generation,
            member_id=member, topics=[m.TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name="in", partitions=[
                m.TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=offset,
                                                                         committed_metadata="meta")])]))
    finally:
        c.close()
    return r.topics[0].partitions[0].error_code


def _eos_producer(bootstrap, tid="eos"):
    p = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": tid})
    p.init_transactions(10)
    return p


def _group_metadata(bootstrap, group="g"):
    """A consumer's group metadata (KIP-447: group id, generation, member id) and the
    consumer, which the caller closes."""
    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    return c, c.consumer_group_metadata()


def _wait(what, check, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
    return value


def _topic(bootstrap):
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic("in", 1)])


def test_offsets_count_when_the_transaction_commits(broker):
    """issue 14, item 7: send_offsets_to_transaction's offsets are pending until the
    commit: OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT, without it the
    last decided offset; the commit makes them the group's, an abort drops them."""
    bootstrap = broker.bootstrap_servers
    _topic(bootstrap)
    consumer, metadata = _group_metadata(bootstrap)
    try:
        p = _eos_producer(bootstrap)
        p.begin_transaction()
        p.produce("in", b"out", partition=0)
        p.send_offsets_to_transaction([ck.TopicPartition("in", 0, 3)], metadata, 10)
        assert _fetch(broker.port, "g") == (UnstableOffsetCommitError.code, -1)
        assert _fetch(broker.port, "g", require_stable=False) == (0, -1)
        assert _fetch(broker.port, "g", version=6, require_stable=False) == (0, -1)  # before KIP-447
        p.commit_transaction(10)
        _wait("the commit", lambda: _fetch(broker.port, "g") == (0, 3))
        p.begin_transaction()
        p.send_offsets_to_transaction([ck.TopicPartition("in", 0, 9)], metadata, 10)
        assert _fetch(broker.port, "g") == (UnstableOffsetCommitError.code, -1)
        p.abort_transaction(10)
        _wait("the abort", lambda: _fetch(broker.port, "g") == (0, 3))
        [committed] = consumer.committed([ck.TopicPartition("in", 0)], 10)
        assert committed.offset == 3
    finally:
        consumer.close()


def test_txn_offset_commit_errors(broker):
    """issue 14, item 7: unknown partitions, and a KIP-447 member id or generation that is
    not the group's, are refused as Kafka's handleTxnCommitOffsets does; a
    commit without them (TxnOffsetCommit v0-v2) is accepted."""
    _topic(broker.bootstrap_servers)
    c = RawClient(broker.port)
    try:
        r = c.request(ApiKey.INIT_PRODUCER_ID, 4, m.InitProducerIdRequest(
            transactional_id="tx", transaction_timeout_ms=10000, producer_id=-1, producer_epoch=-1))
        pid, epoch = r.producer_id, r.producer_epoch
        r = c.request(ApiKey.TXN_OFFSET_COMMIT, 2, m.TxnOffsetCommitRequest(
            transactional_id="tx", group_id="g", producer_id=pid, producer_epoch=epoch,
            topics=[m.TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name="nope", partitions=[
                m.TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]))
        assert r.topics[0].partitions[0].error_code == UnknownTopicOrPartitionError.code
    finally:
        c.close()
    # Kafka's validateOffsetCommit: the member is checked before the generation.
    assert _txn_commit(broker.port, "tx", pid, epoch, "g", 5, version=3, generation=4) == UnknownMemberIdError.code
    assert _txn_commit(broker.port, "tx", pid, epoch, "g", 5, version=3, member="m-1", generation=0) == \
        UnknownMemberIdError.code
    assert _txn_commit(broker.port, "tx", pid, epoch, "g", 5, version=0) == 0
    assert _fetch(broker.port, "g") == (UnstableOffsetCommitError.code, -1)


@pytest.mark.parametrize("end", ["pending", "commit", "abort"])
def test_transactional_offsets_survive_a_restart(tmp_path, end):
    """issue 14, item 7: replayed from __consumer_offsets, a transactional commit is
    pending while its transaction is open (and the producer can still commit it after the
    restart), committed after a COMMIT marker and gone after an ABORT marker."""
    config = {**CONFIG, "log.dirs": str(tmp_path)}
    with MiniBroker(config=config) as broker:
        port, bootstrap = broker.port, broker.bootstrap_servers
        _topic(bootstrap)
        consumer, metadata = _group_metadata(bootstrap)
        consumer.close()
        p = _eos_producer(bootstrap)
        p.begin_transaction()
        p.send_offsets_to_transaction([ck.TopicPartition("in", 0, 4)], metadata, 10)
        if end == "commit":
            p.commit_transaction(10)
        elif end == "abort":
            p.abort_transaction(10)

        async def settled():
            return broker._server.state.transactions.txns["eos"].pending_state is None
        _wait("the end", lambda: asyncio.run_coroutine_threadsafe(settled(), broker._loop).result(5))
    with MiniBroker(port=port, config=config) as broker:
        expected = {"pending": (UnstableOffsetCommitError.code, -1), "commit": (0, 4), "abort": (0, -1)}[end]
        assert _fetch(port, "g") == expected
        if end == "pending":
            p.commit_transaction(20)
            _wait("the commit", lambda: _fetch(port, "g") == (0, 4))


def test_kafka_python_and_aiokafka_send_offsets_to_transaction(broker):
    """issue 14, item 7: kafka-python's and aiokafka's send_offsets_to_transaction
    (AddOffsetsToTxn, then TxnOffsetCommit to the group coordinator) commit with the
    transaction."""
    kafka = pytest.importorskip("kafka")
    aiokafka = pytest.importorskip("aiokafka")
    bootstrap = broker.bootstrap_servers
    _topic(bootstrap)
    p = kafka.KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kp", enable_idempotence=True)
    try:
        p.init_transactions()
        p.begin_transaction()
        p.send("in", b"x", partition=0)
        p.send_offsets_to_transaction({kafka.TopicPartition("in", 0): kafka.OffsetAndMetadata(2, "", -1)}, "kp-g")
        p.commit_transaction()
    finally:
        p.close(5)
    _wait("kafka-python's commit", lambda: _fetch(broker.port, "kp-g") == (0, 2))

    async def aio():
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="aio")
        await producer.start()
        try:
            async with producer.transaction():
                await producer.send_and_wait("in", b"y", partition=0)
                await producer.send_offsets_to_transaction({aiokafka.TopicPartition("in", 0): 5}, "aio-g")
        finally:
            await producer.stop()

    asyncio.run(aio())
    _wait("aiokafka's commit", lambda: _fetch(broker.port, "aio-g") == (0, 5))


def test_an_open_transactional_commit_holds_the_lso_of_its_offsets_partition(broker):
    """issue 14, item 7 with the partition side: the transactional batch a TxnOffsetCommit
    appends to ``__consumer_offsets`` opens the producer's transaction there as a Produce
    would (Kafka appends it with origin COORDINATOR through ProducerStateManager), so the
    partition's last stable offset stops at it until the marker, and an abort is indexed."""
    bootstrap = broker.bootstrap_servers
    _topic(bootstrap)
    consumer, metadata = _group_metadata(bootstrap)
    consumer.close()
    state = broker._server.state

    def offsets_partition():
        async def read():
            topic = state.topics["__consumer_offsets"]
            for partition in topic.partitions:
                if partition.log.log_end_offset:
                    return partition, partition.last_stable_offset, partition.high_watermark
            return None
        return asyncio.run_coroutine_threadsafe(read(), broker._loop).result(5)

    p = _eos_producer(bootstrap)
    p.begin_transaction()
    p.send_offsets_to_transaction([ck.TopicPartition("in", 0, 4)], metadata, 10)
    partition, lso, hw = _wait("the transactional commit", offsets_partition)
    assert lso < hw  # the open transactional batch holds it
    p.abort_transaction(10)
    _wait("the abort's marker", lambda: (lambda r: r[1] == r[2])(offsets_partition()))
    aborted = partition.log.collect_aborted_transactions(0, partition.log.log_end_offset)
    assert [a.first_offset for a in aborted] == [lso]


def _add_offsets(client, tid, pid, epoch, group):
    return client.request(ApiKey.ADD_OFFSETS_TO_TXN, 3, m.AddOffsetsToTxnRequest(
        transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=group)).error_code


def test_a_fenced_producers_late_txn_offset_commit_is_refused(broker):
    """issue 14 (review of step 1): a zombie whose transaction a new instance aborted sends
    its TxnOffsetCommit late, at the old epoch. Kafka checks the epoch of the batch the
    coordinator appends (origin COORDINATOR): INVALID_PRODUCER_EPOCH, nothing written. It was
    accepted: its batch held the partition's LSO for good, moved the producer's epoch back
    and its offsets were committed by the new instance's next commit."""
    _topic(broker.bootstrap_servers)
    c = RawClient(broker.port)
    try:
        _, pid, old = _init(c, "tx")
        assert _add_offsets(c, "tx", pid, old, "g") == 0
        assert _init(c, "tx")[0] == 51  # CONCURRENT_TRANSACTIONS: the old one is being aborted
        wait_until(lambda: _txn(broker, "tx").state is TxnState.CompleteAbort, what="the fencing abort")
        code, _, new = _init(c, "tx")
        assert code == 0 and new > old
        assert _txn_commit(broker.port, "tx", pid, old, "g", 100, version=0) == 47  # INVALID_PRODUCER_EPOCH
        assert _add_offsets(c, "tx", pid, new, "g") == 0
        assert _txn_commit(broker.port, "tx", pid, new, "g", 7, version=0) == 0
        assert _end(c, "tx", pid, new, True) == 0
        wait_until(lambda: _fetch(broker.port, "g") == (0, 7), what="the new instance's commit")
    finally:
        c.close()


def test_describe_producers_of_an_offsets_partition_agrees_before_and_after_a_restart(tmp_path):
    """issue 14 (review of step 1): the sequence of a TxnOffsetCommit's batch (0, as Kafka's
    storeOffsets writes it) is what the producer state keeps, live as after a restart."""
    config = {**CONFIG, "log.dirs": str(tmp_path)}
    index = partition_for("g", 3)
    with MiniBroker(config=config) as broker:
        port = broker.port
        _topic(broker.bootstrap_servers)
        c = RawClient(port)
        try:
            _, pid, epoch = _init(c, "tx")
            assert _add_offsets(c, "tx", pid, epoch, "g") == 0
        finally:
            c.close()
        assert _txn_commit(port, "tx", pid, epoch, "g", 5, version=0) == 0
        live = describe_producers(port, OFFSETS_TOPIC, [index])[index].active_producers
    with MiniBroker(port=port, config=config):
        replayed = describe_producers(port, OFFSETS_TOPIC, [index])[index].active_producers
    assert [p.last_sequence for p in live] == [p.last_sequence for p in replayed] == [0]
