"""The transaction coordinator of a single MiniBroker, request by request (issue 14 step 1,
items 2-6): exact requests over a socket for Kafka's error codes, the markers and the
``__transaction_state`` records they leave."""

import asyncio
import time

import pytest

from kproto import AdminClient
from kproto.admin import NewTopic
from kproto.errors import (
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    InvalidProducerEpochError,
    InvalidProducerIdMappingError,
    InvalidRequestError,
    InvalidTransactionTimeoutError,
    InvalidTxnStateError,
    NotCoordinatorError,
    OperationNotAttemptedError,
    ProducerFencedError,
    TransactionalIdNotFoundError,
    UnknownTopicOrPartitionError,
)
from kproto.protocol import ApiKey
from kproto.protocol import messages as m
from kproto.records import ControlType, parse_control_record, read_batches
from minibroker.coordinator.offsets_log import OFFSETS_TOPIC, partition_for
from minibroker.coordinator.transactions import TxnState, TxnTransit
from minibroker.coordinator.txn_coordinator import TransactionCoordinator, TxnBackend
from minibroker.coordinator.txn_log import TRANSACTION_STATE_TOPIC, read_txn_records

CONFIG = {"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3,
          "transaction.max.timeout.ms": 60000}


@pytest.fixture
def minibroker_config():
    return CONFIG


def _topic(broker, name="t", partitions=2):
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(name, partitions)])


def _init(client, tid, *, version=4, timeout_ms=10000, producer_id=-1, producer_epoch=-1):
    r = client.request(ApiKey.INIT_PRODUCER_ID, version, m.InitProducerIdRequest(
        transactional_id=tid, transaction_timeout_ms=timeout_ms, producer_id=producer_id,
        producer_epoch=producer_epoch))
    return r.error_code, r.producer_id, r.producer_epoch


def _add(client, tid, pid, epoch, partitions, version=3):
    topics = {}
    for t, p in partitions:
        topics.setdefault(t, []).append(p)
    r = client.request(ApiKey.ADD_PARTITIONS_TO_TXN, version, m.AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[m.AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=t, partitions=ps)
                             for t, ps in topics.items()]))
    return {(t.name, p.partition_index): p.partition_error_code
            for t in r.results_by_topic_v3_and_below for p in t.results_by_partition}


def _end(client, tid, pid, epoch, commit, version=3):
    return client.request(ApiKey.END_TXN, version, m.EndTxnRequest(
        transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit)).error_code


def _state(broker):
    return broker._server.state


def _on_loop(broker, fn):
    async def call():
        return fn()
    return asyncio.run_coroutine_threadsafe(call(), broker._loop).result(10)


def _batches(broker, topic, index=0):
    log = _state(broker).topics[topic].partitions[index].log
    return list(read_batches(log.read(log.log_start_offset, 1 << 20)))


def _markers(broker, topic, index=0):
    """(control type, producer id, epoch) of each marker of a partition, in order."""
    out = []
    for batch in _batches(broker, topic, index):
        if batch.is_control:
            [record] = list(batch.records())
            out.append((parse_control_record(record)[1], batch.producer_id, batch.producer_epoch))
    return out


def _txn(broker, tid):
    return _on_loop(broker, lambda: _state(broker).transactions.txns.get(tid))


def wait_until(condition, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def _records(broker, tid):
    """Every __transaction_state record of ``tid``, in order."""
    state = _state(broker)
    index = partition_for(tid, CONFIG["transaction.state.log.num.partitions"])
    log = state.topics[TRANSACTION_STATE_TOPIC].partitions[index].log
    return [t for k, t in read_txn_records(log.read, log.log_start_offset, log.log_end_offset) if k == tid]


# -- InitProducerId (item 2) ----------------------------------------------------------------


def test_init_producer_id_gives_an_id_then_bumps_its_epoch(broker, raw):
    """issue 14, item 2: a new transactional id gets a new producer id at epoch 0; each
    InitProducerId after bumps the epoch (fencing the previous producer), written to
    __transaction_state as Empty."""
    c = raw()
    code, pid, epoch = _init(c, "tx")
    assert (code, epoch) == (0, 0) and pid >= 0
    assert _init(c, "tx") == (0, pid, 1)
    assert _init(c, "other")[1] != pid
    assert [(r.state, r.producer_id, r.producer_epoch) for r in _records(broker, "tx")] == [
        (TxnState.Empty, pid, 0), (TxnState.Empty, pid, 1)]
    assert _state(broker).topics[TRANSACTION_STATE_TOPIC].configs["cleanup.policy"] == "compact"


def test_init_producer_id_errors(broker, raw):
    """issue 14, item 2: Kafka's checks before the coordinator is asked."""
    c = raw()
    assert _init(c, "tx", timeout_ms=60001)[0] == InvalidTransactionTimeoutError.code
    assert _init(c, "tx", timeout_ms=0)[0] == InvalidTransactionTimeoutError.code
    assert _init(c, "")[0] == InvalidRequestError.code
    assert _init(c, "tx", producer_id=5)[0] == InvalidRequestError.code  # an id without an epoch


def test_kip_360_bump_and_fencing(broker, raw):
    """issue 14, item 2: InitProducerId v3+ with the producer's id and epoch bumps it; a
    stale epoch is PRODUCER_FENCED (v4+) or INVALID_PRODUCER_EPOCH (v3), as Kafka's
    prepareIncrementProducerEpoch; another producer id is fenced."""
    c = raw()
    _, pid, _ = _init(c, "tx")
    assert _init(c, "tx", producer_id=pid, producer_epoch=0) == (0, pid, 1)
    assert _init(c, "tx", producer_id=pid, producer_epoch=0) == (0, pid, 1)  # a retry: same answer
    assert _init(c, "tx") == (0, pid, 2)  # another producer took over
    assert _init(c, "tx", producer_id=pid, producer_epoch=1)[0] == ProducerFencedError.code
    assert _init(c, "tx", version=3, producer_id=pid, producer_epoch=1)[0] == InvalidProducerEpochError.code
    assert _init(c, "tx", producer_id=pid + 1000, producer_epoch=2)[0] == ProducerFencedError.code


def test_an_idempotent_producer_giving_its_id_gets_a_new_one(broker, raw):
    """issue 14, item 2: without a transactional id Kafka's coordinator hands out a new
    producer id at epoch 0 even when the request names one (handleInitProducerId)."""
    c = raw()
    code, pid, epoch = _init(c, None)
    assert (code, epoch) == (0, 0)
    code, pid2, epoch2 = _init(c, None, producer_id=pid, producer_epoch=0)
    assert (code, epoch2) == (0, 0) and pid2 != pid


def test_init_producer_id_aborts_the_ongoing_transaction_first(broker, raw):
    """issue 14, item 2: a new producer of an id whose transaction is ongoing gets
    CONCURRENT_TRANSACTIONS while the coordinator aborts it under epoch + 1 (the ABORT
    marker fences the old producer); its retry gets epoch + 2."""
    _topic(broker)
    c = raw()
    _, pid, _ = _init(c, "tx")
    assert _add(c, "tx", pid, 0, [("t", 0)]) == {("t", 0): 0}
    assert _init(c, "tx") == (ConcurrentTransactionsError.code, -1, -1)
    wait_until(lambda: _txn(broker, "tx").state is TxnState.CompleteAbort, what="the abort")
    assert _markers(broker, "t") == [(ControlType.ABORT, pid, 1)]
    assert _init(c, "tx") == (0, pid, 2)
    assert _end(c, "tx", pid, 0, True) == ProducerFencedError.code  # the zombie
    assert _end(c, "tx", pid, 0, True, version=1) == InvalidProducerEpochError.code
    states = [r.state for r in _records(broker, "tx")]
    assert states == [TxnState.Empty, TxnState.Ongoing, TxnState.PrepareAbort, TxnState.CompleteAbort, TxnState.Empty]


# -- AddPartitionsToTxn, AddOffsetsToTxn, EndTxn (item 3) ------------------------------------


def test_commit_writes_markers_to_every_partition_then_completes(broker, raw):
    """issue 14, item 3: PrepareCommit, the answer, a COMMIT marker on each partition,
    then CompleteCommit; a retried EndTxn is answered without a second marker."""
    _topic(broker)
    c = raw()
    _, pid, epoch = _init(c, "tx")
    assert _add(c, "tx", pid, epoch, [("t", 0), ("t", 1)]) == {("t", 0): 0, ("t", 1): 0}
    assert _add(c, "tx", pid, epoch, [("t", 1)]) == {("t", 1): 0}
    assert _end(c, "tx", pid, epoch, True) == 0
    wait_until(lambda: _txn(broker, "tx").state is TxnState.CompleteCommit, what="CompleteCommit")
    for index in (0, 1):
        assert _markers(broker, "t", index) == [(ControlType.COMMIT, pid, epoch)]
    assert _end(c, "tx", pid, epoch, True) == 0
    assert _end(c, "tx", pid, epoch, False) == InvalidTxnStateError.code
    assert _markers(broker, "t", 0) == [(ControlType.COMMIT, pid, epoch)]
    records = _records(broker, "tx")
    assert [r.state for r in records] == [TxnState.Empty, TxnState.Ongoing,  # the second add: nothing new
                                          TxnState.PrepareCommit, TxnState.CompleteCommit]
    assert records[2].partitions == frozenset({("t", 0), ("t", 1)}) and not records[3].partitions
    # The next transaction: abort.
    assert _add(c, "tx", pid, epoch, [("t", 1)]) == {("t", 1): 0}
    assert _end(c, "tx", pid, epoch, False) == 0
    wait_until(lambda: _txn(broker, "tx").state is TxnState.CompleteAbort, what="CompleteAbort")
    assert _markers(broker, "t", 1) == [(ControlType.COMMIT, pid, epoch), (ControlType.ABORT, pid, epoch)]
    assert _markers(broker, "t", 0) == [(ControlType.COMMIT, pid, epoch)]


def test_add_partitions_and_end_txn_errors(broker, raw):
    """issue 14, item 3: Kafka's answers to requests that do not fit the id's state."""
    _topic(broker)
    c = raw()
    assert _add(c, "nope", 1, 0, [("t", 0)]) == {("t", 0): InvalidProducerIdMappingError.code}
    assert _end(c, "nope", 1, 0, True) == InvalidProducerIdMappingError.code
    _, pid, epoch = _init(c, "tx")
    assert _end(c, "tx", pid, epoch, True) == InvalidTxnStateError.code  # Empty: nothing to end
    assert _add(c, "tx", pid, epoch, [("t", 0), ("t", 7), ("missing", 0)]) == {
        ("t", 0): OperationNotAttemptedError.code, ("t", 7): UnknownTopicOrPartitionError.code,
        ("missing", 0): UnknownTopicOrPartitionError.code}
    assert _txn(broker, "tx").state is TxnState.Empty  # nothing added
    assert _add(c, "tx", pid + 1, epoch, [("t", 0)]) == {("t", 0): InvalidProducerIdMappingError.code}
    _init(c, "tx")  # epoch + 1: the first producer is fenced
    assert _add(c, "tx", pid, epoch, [("t", 0)]) == {("t", 0): ProducerFencedError.code}
    assert _add(c, "tx", pid, epoch, [("t", 0)], version=1) == {("t", 0): InvalidProducerEpochError.code}


def test_requests_during_the_markers_get_concurrent_transactions(broker, raw):
    """issue 14, item 3: while the markers of an end are being written, EndTxn,
    AddPartitionsToTxn and InitProducerId are CONCURRENT_TRANSACTIONS (Kafka's pending
    transition), then the transaction completes."""
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
        _add(c, "tx", pid, epoch, [("t", 0)])
        assert _end(c, "tx", pid, epoch, True) == 0
        assert _end(c, "tx", pid, epoch, True) == ConcurrentTransactionsError.code
        assert _end(c, "tx", pid, epoch, False) == ConcurrentTransactionsError.code
        assert _add(c, "tx", pid, epoch, [("t", 1)]) == {("t", 1): ConcurrentTransactionsError.code}
        assert _init(c, "tx")[0] == ConcurrentTransactionsError.code
        assert _markers(broker, "t") == []
    finally:
        object.__setattr__(backend, "write_markers", real)
        broker._loop.call_soon_threadsafe(gate.set)
    wait_until(lambda: _txn(broker, "tx").state is TxnState.CompleteCommit, what="CompleteCommit")
    assert _markers(broker, "t") == [(ControlType.COMMIT, pid, epoch)]


def test_add_offsets_to_txn_adds_the_groups_offsets_partition(broker, raw):
    """issue 14, item 3: AddOffsetsToTxn puts the group's __consumer_offsets partition in
    the transaction (made on first use), and the commit writes a marker there."""
    _topic(broker)
    c = raw()
    _, pid, epoch = _init(c, "tx")
    r = c.request(ApiKey.ADD_OFFSETS_TO_TXN, 3, m.AddOffsetsToTxnRequest(
        transactional_id="tx", producer_id=pid, producer_epoch=epoch, group_id="g"))
    assert r.error_code == 0
    index = partition_for("g", CONFIG["offsets.topic.num.partitions"])
    assert _txn(broker, "tx").partitions == {(OFFSETS_TOPIC, index)}
    assert _end(c, "tx", pid, epoch, True) == 0
    wait_until(lambda: _txn(broker, "tx").state is TxnState.CompleteCommit, what="CompleteCommit")
    assert _markers(broker, OFFSETS_TOPIC, index) == [(ControlType.COMMIT, pid, epoch)]
    r = c.request(ApiKey.ADD_OFFSETS_TO_TXN, 1, m.AddOffsetsToTxnRequest(
        transactional_id="tx", producer_id=pid, producer_epoch=epoch - 1, group_id="g"))
    assert r.error_code == InvalidProducerEpochError.code


def test_markers_are_retried_until_they_are_written(broker, raw):
    """issue 14, item 3: a marker that fails retriably (here: the partition's append
    fails, NOT_LEADER_OR_FOLLOWER) is written again until it succeeds, then the
    transaction completes (Kafka's marker channel retries)."""
    _topic(broker)
    state = _state(broker)
    backend = state.transactions.backend
    real = backend.write_markers
    calls = []

    async def flaky(pid, epoch, coordinator_epoch, commit, partitions):
        calls.append(list(partitions))
        if len(calls) < 3:
            return dict.fromkeys(partitions, 6)  # NOT_LEADER_OR_FOLLOWER
        return await real(pid, epoch, coordinator_epoch, commit, partitions)

    object.__setattr__(backend, "write_markers", flaky)
    try:
        c = raw()
        _, pid, epoch = _init(c, "tx")
        _add(c, "tx", pid, epoch, [("t", 0), ("t", 1)])
        assert _end(c, "tx", pid, epoch, False) == 0
        wait_until(lambda: _txn(broker, "tx").state is TxnState.CompleteAbort, what="CompleteAbort")
    finally:
        object.__setattr__(backend, "write_markers", real)
    assert calls == [[("t", 0), ("t", 1)]] * 3
    assert _markers(broker, "t", 1) == [(ControlType.ABORT, pid, epoch)]


# -- timeouts and expiry (item 4) -----------------------------------------------------------


@pytest.mark.parametrize("minibroker_config", [{
    **CONFIG, "transaction.abort.timed.out.transaction.cleanup.interval.ms": 50,
    "transactional.id.expiration.ms": 300, "transaction.remove.expired.transaction.cleanup.interval.ms": 50}])
def test_a_timed_out_transaction_is_aborted_and_an_idle_id_expires(broker, raw):
    """issue 14, item 4: an Ongoing transaction older than its transaction.timeout.ms is
    aborted with an epoch bump (the producer is fenced); an id idle for
    transactional.id.expiration.ms is removed with a tombstone."""
    _topic(broker)
    c = raw()
    _, pid, epoch = _init(c, "tx", timeout_ms=200)
    _add(c, "tx", pid, epoch, [("t", 0)])
    wait_until(lambda: _txn(broker, "tx") is not None and _txn(broker, "tx").state is TxnState.CompleteAbort,
               what="the timeout abort")
    assert _markers(broker, "t") == [(ControlType.ABORT, pid, epoch + 1)]
    assert _end(c, "tx", pid, epoch, True) == ProducerFencedError.code
    wait_until(lambda: _txn(broker, "tx") is None, what="the id's expiry")
    assert _records(broker, "tx")[-1] is None  # the tombstone
    assert _add(c, "tx", pid, epoch + 1, [("t", 0)]) == {("t", 0): InvalidProducerIdMappingError.code}
    code, pid2, epoch2 = _init(c, "tx")
    assert code == 0 and (pid2, epoch2) != (pid, epoch + 2) and epoch2 == 0


# -- restart (item 5) -----------------------------------------------------------------------


def test_a_restarted_broker_completes_a_prepared_commit(tmp_path):
    """issue 14, item 5: the coordinator's state survives a restart; a transaction found in
    PrepareCommit (its markers not written before the stop) has its markers written and
    completes."""
    from minibroker import MiniBroker
    from tests.support.raw_client import RawClient

    config = {**CONFIG, "log.dirs": str(tmp_path)}
    with MiniBroker(config=config) as broker:
        _topic(broker)
        backend = _state(broker).transactions.backend

        async def never(*args):
            await asyncio.Event().wait()

        object.__setattr__(backend, "write_markers", never)  # the broker stops before any marker
        c = RawClient(broker.port)
        _, pid, epoch = _init(c, "tx")
        _add(c, "tx", pid, epoch, [("t", 0), ("t", 1)])
        _, pid_b, epoch_b = _init(c, "ongoing")
        _add(c, "ongoing", pid_b, epoch_b, [("t", 1)])
        assert _end(c, "tx", pid, epoch, True) == 0
        c.close()
    with MiniBroker(config=config) as broker:
        wait_until(lambda: _txn(broker, "tx").state is TxnState.CompleteCommit, what="CompleteCommit")
        for index in (0, 1):
            assert _markers(broker, "t", index) == [(ControlType.COMMIT, pid, epoch)]
        ongoing = _txn(broker, "ongoing")
        assert (ongoing.state, ongoing.partitions) == (TxnState.Ongoing, {("t", 1)})
        c = RawClient(broker.port)
        assert _end(c, "ongoing", pid_b, epoch_b, False) == 0  # the producer carries on
        assert _init(c, "tx") == (0, pid, epoch + 1)
        c.close()


# -- ListTransactions, DescribeTransactions (item 6) ---------------------------------------


def test_list_and_describe_transactions(broker, raw):
    """issue 14, item 6: ListTransactions filters by state, producer id and (v1, KIP-994)
    duration; DescribeTransactions shows an id's state and partitions."""
    _topic(broker)
    c = raw()
    _, pid_a, _ = _init(c, "a")
    _, pid_b, _ = _init(c, "b")
    _add(c, "b", pid_b, 0, [("t", 1), ("t", 0)])

    def listed(version=1, **filters):
        r = c.request(ApiKey.LIST_TRANSACTIONS, version, m.ListTransactionsRequest(**filters))
        return r.error_code, sorted(r.unknown_state_filters), sorted(
            (t.transactional_id, t.producer_id, t.transaction_state) for t in r.transaction_states)

    assert listed() == (0, [], [("a", pid_a, "Empty"), ("b", pid_b, "Ongoing")])
    assert listed(state_filters=["Ongoing", "Bogus"]) == (0, ["Bogus"], [("b", pid_b, "Ongoing")])
    assert listed(producer_id_filters=[pid_a]) == (0, [], [("a", pid_a, "Empty")])
    assert listed(state_filters=["Ongoing"], duration_filter=3_600_000) == (0, [], [])
    time.sleep(0.05)
    assert listed(version=0, state_filters=["Ongoing"]) == (0, [], [("b", pid_b, "Ongoing")])
    assert listed(state_filters=["Ongoing"], duration_filter=10) == (0, [], [("b", pid_b, "Ongoing")])

    r = c.request(ApiKey.DESCRIBE_TRANSACTIONS, 0, m.DescribeTransactionsRequest(transactional_ids=["b", "a", "zz"]))
    b, a, zz = r.transaction_states
    assert (b.error_code, b.transaction_state, b.producer_id, b.producer_epoch, b.transaction_timeout_ms) == (
        0, "Ongoing", pid_b, 0, 10000)
    assert [(t.topic, t.partitions) for t in b.topics] == [("t", [0, 1])]
    assert b.transaction_start_time_ms > 0
    assert (a.transaction_state, a.topics, a.transaction_start_time_ms) == ("Empty", [], -1)
    assert zz.error_code == TransactionalIdNotFoundError.code


def test_find_coordinator_for_a_transactional_id(broker, raw):
    """issue 14, item 5: FindCoordinator key_type 1 names this broker, single key (v1-v3)
    and batched (v4+); __transaction_state is made on that first use."""
    c = raw()
    r = c.request(ApiKey.FIND_COORDINATOR, 3, m.FindCoordinatorRequest(key="tx", key_type=1))
    assert (r.error_code, r.node_id, r.port) == (0, 0, broker.port)
    r = c.request(ApiKey.FIND_COORDINATOR, 4, m.FindCoordinatorRequest(coordinator_keys=["a", "b"], key_type=1))
    assert [(x.key, x.error_code, x.port) for x in r.coordinators] == [("a", 0, broker.port), ("b", 0, broker.port)]
    assert len(_state(broker).topics[TRANSACTION_STATE_TOPIC].partitions) == 3


# -- the driver alone, over an in-memory broker (items 4, 5) -------------------------------


def _coordinator(written, markers, *, solo, wall_clock=None):
    """A TransactionCoordinator whose broker is lists: ``written`` gets the partition of
    each __transaction_state append, ``markers`` each marker call (all succeed)."""
    async def append(index, builder):
        written.append(index)
        return 0

    async def write_markers(pid, epoch, coordinator_epoch, commit, partitions):
        markers.append((pid, epoch, coordinator_epoch, commit, sorted(partitions)))
        return dict.fromkeys(partitions, 0)

    async def new_id():
        return 77

    config = {**CONFIG, "transaction.abort.timed.out.transaction.cleanup.interval.ms": 60000,
              "transaction.remove.expired.transaction.cleanup.interval.ms": 60000,
              "transactional.id.expiration.ms": 604800000}
    backend = TxnBackend(partition_count=lambda: 3, append=append, write_markers=write_markers,
                         partition_exists=lambda tp: True, new_producer_id=new_id)
    if wall_clock is None:
        return TransactionCoordinator(config, backend, solo=solo)
    return TransactionCoordinator(config, backend, solo=solo, wall_clock=wall_clock)


def test_an_end_txn_racing_the_timeout_abort_is_fenced():
    """issue 14, item 4: an EndTxn that arrives after the coordinator decided to abort a
    timed-out transaction, before the abort is written, is PRODUCER_FENCED: the fence and
    the pending PrepareAbort are one step, as under Kafka's metadata lock (before the fix,
    the commit met the pending fence and raised IllegalTransitionError)."""
    now = [1_000_000]

    async def run():
        coordinator = _coordinator([], markers := [], solo=True, wall_clock=lambda: now[0])
        code, pid, epoch = await coordinator.init_producer_id("tx", 1000, None)
        assert await coordinator.add_partitions("tx", pid, epoch, [("t", 0)]) == 0
        now[0] += 5000
        assert coordinator.abort_timed_out() == 1
        assert await coordinator.end_txn("tx", pid, epoch, True) == ProducerFencedError.code
        for _ in range(100):
            if coordinator.txns["tx"].state is TxnState.CompleteAbort:
                break
            await asyncio.sleep(0.01)
        assert markers == [(pid, epoch + 1, 0, False, [("t", 0)])]
        coordinator.close()

    asyncio.run(run())



def test_a_tv2_commit_after_the_timeout_abort_completed_is_fenced():
    """issue 16 (Kafka's KAFKA-20785): with transaction version 2 a commit that reaches
    the coordinator after its timeout abort (under the fence's epoch + 1) has its epoch
    before the bump, as a retry would: it is PRODUCER_FENCED, which the application can
    recover from, not INVALID_TXN_STATE (fatal); while the abort's markers are being
    written it is CONCURRENT_TRANSACTIONS (retried until then)."""
    now = [1_000_000]

    async def run():
        coordinator = _coordinator([], markers := [], solo=True, wall_clock=lambda: now[0])
        code, pid, epoch = await coordinator.init_producer_id("tx", 1000, None)
        assert await coordinator.add_partitions("tx", pid, epoch, [("t", 0)], 2) == 0
        now[0] += 5000
        assert coordinator.abort_timed_out() == 1
        assert await coordinator.end_txn_v2("tx", pid, epoch, True) == (ConcurrentTransactionsError.code, -1, -1)
        for _ in range(100):
            if coordinator.txns["tx"].state is TxnState.CompleteAbort:
                break
            await asyncio.sleep(0.01)
        assert markers == [(pid, epoch + 1, 0, False, [("t", 0)])]
        assert await coordinator.end_txn_v2("tx", pid, epoch, True) == (ProducerFencedError.code, -1, -1)
        assert await coordinator.end_txn_v2("tx", pid, epoch, False) == (0, pid, epoch + 1)  # an abort's retry
        coordinator.close()

    asyncio.run(run())


def test_a_cluster_coordinator_loads_before_it_answers_and_forgets_on_resignation():
    """issue 14, item 5: a cluster broker answers NOT_COORDINATOR for the ids of partitions
    it does not lead, COORDINATOR_LOAD_IN_PROGRESS while it loads one (ListTransactions
    too), then from the replayed state; a transaction found prepared has its markers
    written at the new coordinator epoch; resigning forgets the ids (Kafka's onElection /
    onResignation)."""

    written, markers = [], []
    async def run():
        coordinator = _coordinator(written, markers, solo=False)
        index = partition_for("tx", 3)
        assert coordinator.status("tx") == NotCoordinatorError.code
        assert (await coordinator.init_producer_id("tx", 1000, None))[0] == NotCoordinatorError.code
        assert coordinator.begin_load(index, 3, epoch=4)
        assert coordinator.status("tx") == CoordinatorLoadInProgressError.code
        assert coordinator.list([], [])[0] == CoordinatorLoadInProgressError.code
        prepared = TxnTransit(producer_id=5, last_producer_id=-1, producer_epoch=2, last_producer_epoch=-1,
                              txn_timeout_ms=1000, state=TxnState.PrepareCommit, partitions=frozenset({("t", 0)}),
                              txn_start_timestamp=1, txn_last_update_timestamp=2)
        assert coordinator.finish_load(index, 4, [("tx", prepared)])
        assert coordinator.status("tx") == 0
        for _ in range(100):
            if coordinator.txns["tx"].state is TxnState.CompleteCommit:
                break
            await asyncio.sleep(0.01)
        assert coordinator.txns["tx"].state is TxnState.CompleteCommit
        assert markers == [(5, 2, 4, True, [("t", 0)])]
        assert written == [index]  # CompleteCommit
        coordinator.unload(index)
        assert coordinator.status("tx") == NotCoordinatorError.code and "tx" not in coordinator.txns
        coordinator.close()

    asyncio.run(run())


def test_a_full_disk_leaves_the_transactional_id_as_it_was(small_disk):
    """issue 14, item 3: a write to __transaction_state that fails for lack of space is
    answered NOT_COORDINATOR (Kafka's appendTransactionToLog mapping of
    KAFKA_STORAGE_ERROR, retriable), the connection stays up, the id keeps its last
    written epoch; once space is back the retry succeeds, and a restart reads back what
    was acknowledged."""
    from minibroker import MiniBroker
    from tests.support.raw_client import RawClient

    with MiniBroker(data_dir=small_disk.path, config=CONFIG) as broker:
        port = broker.port
        c = RawClient(port)
        try:
            _, pid, epoch = _init(c, "tx")
            small_disk.fill()
            for _ in range(400):  # a page holds some dozens of records
                code, _, new_epoch = _init(c, "tx")
                if code:
                    break
                epoch = new_epoch
            assert code == NotCoordinatorError.code
            assert _init(c, "tx")[0] == NotCoordinatorError.code
            assert _txn(broker, "tx").producer_epoch == epoch and not _txn(broker, "tx").pending
            small_disk.free()
            assert _init(c, "tx") == (0, pid, epoch + 1)
        finally:
            c.close()
    with MiniBroker(port=port, data_dir=small_disk.path, config=CONFIG) as broker:
        assert _txn(broker, "tx").producer_epoch == epoch + 1


def test_metadata_auto_creation_makes_the_transaction_state_topic_as_the_coordinator_would(raw, broker):
    """issue 14: a Metadata request that auto-creates ``__transaction_state`` makes it the
    internal topic FindCoordinator would (compacted, transaction.state.log.num.partitions),
    as Kafka's KafkaApis creates internal topics, not an ordinary one-partition topic."""
    c = raw()
    r = c.request(ApiKey.METADATA, 9, m.MetadataRequest(
        topics=[m.MetadataRequest.MetadataRequestTopic(name="__transaction_state")], allow_auto_topic_creation=True))
    [topic] = r.topics
    assert (topic.error_code, topic.is_internal, len(topic.partitions)) == (
        0, True, broker._server.state.config["transaction.state.log.num.partitions"])
    assert _state(broker).topics["__transaction_state"].configs["cleanup.policy"] == "compact"
