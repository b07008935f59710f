"""KIP-890 part 2 on the broker (issue 14 step 2, item 2): the ``transaction.version``
feature in ApiVersions (0, 1, 2 as Kafka's ``TransactionVersion``), and with 2: Produce
v12 adds the partition to the transaction (no AddPartitionsToTxn), EndTxn v5 bumps the
epoch at every commit and abort, writes the markers with it and answers it (a new
producer id once the epoch is exhausted)."""

import asyncio

import pytest

from kproto.errors import (
    ConcurrentTransactionsError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    NotEnoughReplicasError,
    TransactionAbortableError,
)
from kproto.protocol import ApiKey
from kproto.protocol import messages as m
from kproto.protocol.schema import read_version
from kproto.records import ControlType
from minibroker import MiniBroker
from minibroker.coordinator.transactions import TxnState
from minibroker.coordinator.txn_log import TRANSACTION_STATE_TOPIC, partition_for
from tests.minibroker.txn.test_txn_coordinator import (
    _init,
    _markers,
    _on_loop,
    _state,
    _topic,
    _txn,
    wait_until,
)
from tests.minibroker.txn.txn_wire import txn_batch
from tests.support.raw_client import RawClient

CONFIG = {"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3, "num.partitions": 2}


@pytest.fixture
def minibroker_config():
    return CONFIG


def _produce(client, tid, records, *, partition=0, version=12):
    request = m.ProduceRequest(transactional_id=tid, acks=-1, timeout_ms=10000, topic_data=[
        m.ProduceRequest.TopicProduceData(name="t", partition_data=[
            m.ProduceRequest.PartitionProduceData(index=partition, records=records)])])
    answer = client.request(ApiKey.PRODUCE, version, request).responses[0].partition_responses[0]
    return answer.error_code, answer.base_offset


def _end(client, tid, pid, epoch, commit, version=5):
    r = client.request(ApiKey.END_TXN, version, m.EndTxnRequest(
        transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit))
    return r.error_code, r.producer_id, r.producer_epoch


def _api_versions(port, version=4):
    c = RawClient(port)
    try:
        return c.request(ApiKey.API_VERSIONS, version, m.ApiVersionsRequest(
            client_software_name="t", client_software_version="1"))
    finally:
        c.close()


@pytest.mark.parametrize("level", [0, 1, 2])
def test_api_versions_advertises_the_transaction_version_as_far_as_implemented(tmp_path, level):
    """issue 14 step 2, item 2: supported 0-2 (min sent as 1 below ApiVersions v4,
    KAFKA-17011), finalized at the configured level (not listed at 0); EndTxn v5 and
    Produce v12 only with level 2 (LAST_STABLE_VERSION_BEFORE_TRANSACTION_V2: 4 and 11)."""
    with MiniBroker(data_dir=tmp_path, config={"transaction.version": level}) as broker:
        r = _api_versions(broker.port)
        assert [(f.name, f.min_version, f.max_version) for f in r.supported_features] == [
            ("transaction.version", 0, 2)]
        finalized = [(f.name, f.min_version_level, f.max_version_level) for f in r.finalized_features]
        assert finalized == ([("transaction.version", level, level)] if level else [])
        keys = {k.api_key: k.max_version for k in r.api_keys}
        assert (keys[ApiKey.END_TXN], keys[ApiKey.PRODUCE]) == ((5, 12) if level == 2 else (4, 11))
        assert [(f.name, f.min_version) for f in _api_versions(broker.port, 3).supported_features] == [
            ("transaction.version", 1)]


def test_tv2_produce_adds_the_partition_and_end_txn_bumps_the_epoch(broker, raw):
    """issue 14 step 2, item 2: no AddPartitionsToTxn: Produce v12 adds t-0 to the
    transaction; EndTxn v5 commits under epoch + 1 (the marker's too) and answers it; the
    next transaction runs at that epoch from sequence 0; a retried EndTxn (the epoch
    before the bump) of the complete transaction gets the same answer; a late batch of
    the old epoch is INVALID_PRODUCER_EPOCH: it cannot open a hanging transaction."""
    _topic(broker)
    c = raw()
    _, pid, epoch = _init(c, "tx")
    assert _produce(c, "tx", txn_batch(pid, epoch, 0, [b"a"])) == (0, 0)
    assert _txn(broker, "tx").partitions == {("t", 0)}
    assert _end(c, "tx", pid, epoch, True) == (0, pid, epoch + 1)
    wait_until(lambda: _txn(broker, "tx").state is TxnState.CompleteCommit, what="CompleteCommit")
    assert _markers(broker, "t") == [(ControlType.COMMIT, pid, epoch + 1)]
    assert _end(c, "tx", pid, epoch, True) == (0, pid, epoch + 1)  # a retry
    assert _produce(c, "tx", txn_batch(pid, epoch, 1, [b"late"])) == (InvalidProducerEpochError.code, -1)
    # The next transaction, aborted.
    assert _produce(c, "tx", txn_batch(pid, epoch + 1, 0, [b"b"])) == (0, 2)
    assert _end(c, "tx", pid, epoch + 1, False) == (0, pid, epoch + 2)
    wait_until(lambda: _txn(broker, "tx").state is TxnState.CompleteAbort, what="CompleteAbort")
    assert _markers(broker, "t")[-1] == (ControlType.ABORT, pid, epoch + 2)
    # TV2 allows an abort with no transaction (the client is unsure); a commit of none is refused.
    assert _end(c, "tx", pid, epoch + 2, False) == (0, pid, epoch + 3)
    wait_until(lambda: _txn(broker, "tx").state is TxnState.CompleteAbort and _txn(broker, "tx").producer_epoch
               == epoch + 3, what="the empty abort")
    assert _end(c, "tx", pid, epoch + 3, True)[0] == InvalidTxnStateError.code
    # The records of __transaction_state are TransactionLogValue v1 (TV >= 1: flexible).
    state = _state(broker)
    log = state.topics[TRANSACTION_STATE_TOPIC].partitions[partition_for("tx", 3)].log
    from kproto.records import read_batches
    values = [r.value for b in read_batches(log.read(log.log_start_offset, 1 << 20)) for r in b.records()]
    assert values and {read_version(v) for v in values} == {1}


def test_tv2_end_txn_while_the_last_end_writes_its_markers_is_concurrent_transactions(broker, raw):
    """issue 16, the flaky context-manager test: with transaction version 2 the commit's
    answer carries the bumped epoch at once, while the coordinator still writes the
    markers (PrepareCommit, CompleteCommit pending). The next EndTxn, with that epoch,
    is CONCURRENT_TRANSACTIONS, which the producer retries, and so is a retry of the
    commit itself: Kafka checks the pending transition before the epoch (KAFKA-18464,
    KAFKA-18660). Before the fix the abort was PRODUCER_FENCED, a fatal error for a
    producer that did nothing wrong. Once the markers are written the abort ends under
    epoch + 2."""
    _topic(broker)
    state = _state(broker)
    gate = asyncio.Event()
    backend = state.transactions.backend
    real = backend.write_markers

    async def held(*args):
        await gate.wait()
        return await real(*args)

    object.__setattr__(backend, "write_markers", held)  # the marker channel waits for the test
    try:
        c = raw()
        _, pid, epoch = _init(c, "tx")
        assert _produce(c, "tx", txn_batch(pid, epoch, 0, [b"a"])) == (0, 0)
        assert _end(c, "tx", pid, epoch, True) == (0, pid, epoch + 1)
        assert _txn(broker, "tx").state is TxnState.PrepareCommit
        concurrent = (ConcurrentTransactionsError.code, -1, -1)
        assert _end(c, "tx", pid, epoch + 1, False) == concurrent  # the next (empty) transaction's abort
        assert _end(c, "tx", pid, epoch + 1, True) == concurrent
        assert _end(c, "tx", pid, epoch, True) == concurrent  # a retry of the commit
        assert _markers(broker, "t") == []
    finally:
        object.__setattr__(backend, "write_markers", real)
        broker._loop.call_soon_threadsafe(gate.set)
    wait_until(lambda: _txn(broker, "tx").state is TxnState.CompleteCommit, what="CompleteCommit")
    assert _markers(broker, "t") == [(ControlType.COMMIT, pid, epoch + 1)]
    assert _end(c, "tx", pid, epoch + 1, False) == (0, pid, epoch + 2)
    wait_until(lambda: _txn(broker, "tx").state is TxnState.CompleteAbort, what="CompleteAbort")


def test_tv2_end_txn_moves_to_a_new_producer_id_when_the_epoch_is_exhausted(broker, raw):
    """issue 14 step 2, item 2: at epoch Short.MaxValue - 1 the end's bump reaches the
    maximum (the markers carry it) and the answer is a new producer id at epoch 0
    (Kafka's nextProducerId, prepareComplete)."""
    _topic(broker)
    c = raw()
    _, pid, _ = _init(c, "tx")
    last = 0x7FFF - 1

    def exhaust():
        _state(broker).transactions.txns["tx"].producer_epoch = last
    _on_loop(broker, exhaust)
    assert _produce(c, "tx", txn_batch(pid, last, 0, [b"a"])) == (0, 0)
    code, new_pid, new_epoch = _end(c, "tx", pid, last, True)
    assert (code, new_epoch) == (0, 0) and new_pid != pid
    wait_until(lambda: _txn(broker, "tx").state is TxnState.CompleteCommit, what="CompleteCommit")
    assert _markers(broker, "t") == [(ControlType.COMMIT, pid, 0x7FFF)]
    md = _txn(broker, "tx")
    assert (md.producer_id, md.producer_epoch, md.last_producer_id) == (new_pid, 0, pid)
    assert _end(c, "tx", pid, last, True) == (0, new_pid, 0)  # a retry after the overflow
    assert _produce(c, "tx", txn_batch(new_pid, 0, 0, [b"b"])) == (0, 2)


def test_tv2_next_transaction_under_the_new_producer_id_waits_for_the_markers(broker, raw):
    """issue 16: after an end that moved to a new producer id (the epoch was exhausted),
    the next transaction's first Produce v12 and its EndTxn name that id while the
    coordinator still writes the markers (the id is only in the pending CompleteCommit).
    Both meet CONCURRENT_TRANSACTIONS, checked before the producer id (Kafka's
    KAFKA-18660), not INVALID_PRODUCER_ID_MAPPING; once the markers are written the
    transaction goes on under the new id."""
    _topic(broker)
    c = raw()
    _, pid, _ = _init(c, "tx")
    last = 0x7FFF - 1

    def exhaust():
        _state(broker).transactions.txns["tx"].producer_epoch = last
    _on_loop(broker, exhaust)
    state = _state(broker)
    gate = asyncio.Event()
    backend = state.transactions.backend
    real = backend.write_markers

    async def held(*args):
        await gate.wait()
        return await real(*args)

    object.__setattr__(backend, "write_markers", held)  # the marker channel waits for the test
    try:
        assert _produce(c, "tx", txn_batch(pid, last, 0, [b"a"])) == (0, 0)
        code, new_pid, new_epoch = _end(c, "tx", pid, last, True)
        assert (code, new_epoch) == (0, 0) and new_pid != pid
        # The leader asks again while CONCURRENT_TRANSACTIONS, then answers NOT_ENOUGH_REPLICAS
        # (retriable: the producer sends the batch again; KAFKA-18654).
        assert _produce(c, "tx", txn_batch(new_pid, 0, 0, [b"b"])) == (NotEnoughReplicasError.code, -1)
        assert _end(c, "tx", new_pid, 0, False) == (ConcurrentTransactionsError.code, -1, -1)
    finally:
        object.__setattr__(backend, "write_markers", real)
        broker._loop.call_soon_threadsafe(gate.set)
    wait_until(lambda: _txn(broker, "tx").state is TxnState.CompleteCommit, what="CompleteCommit")
    assert _produce(c, "tx", txn_batch(new_pid, 0, 0, [b"b"])) == (0, 2)
    assert _end(c, "tx", new_pid, 0, True) == (0, new_pid, 1)
    # The end answered CONCURRENT_TRANSACTIONS took no producer id (Kafka takes one only
    # for an end it makes): the next id handed out follows new_pid.
    assert _init(c, "other")[1] == new_pid + 1


def test_below_tv2_end_txn_v5_is_ended_as_v4(tmp_path):
    """issue 14 step 2, item 2: with transaction.version 1 an EndTxn v5 does not bump the
    epoch (producer id and epoch -1 in the answer), and Produce v12 only verifies."""
    with MiniBroker(data_dir=tmp_path, config={**CONFIG, "transaction.version": 1}) as broker:
        _topic(broker)
        c = RawClient(broker.port)
        try:
            _, pid, epoch = _init(c, "tx")
            assert _produce(c, "tx", txn_batch(pid, epoch, 0, [b"a"]))[0] == TransactionAbortableError.code
            assert _end(c, "tx", pid, epoch, False) == (InvalidTxnStateError.code, -1, -1)
        finally:
            c.close()
