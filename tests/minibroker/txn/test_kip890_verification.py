"""KIP-890 part 1 (issue 14 step 2, item 1): a leader appends a transactional batch that
would open a transaction only once the transaction coordinator confirms the partition is
in the producer's ongoing transaction (AddPartitionsToTxn v4+ ``verify_only``; local on a
single broker, broker to broker in a MiniCluster); ``transaction.partition.verification.enable``
turns it off. Peer clients add their partitions first and keep working."""

import pytest

from kproto.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    NotEnoughReplicasError,
    TransactionAbortableError,
)
from kproto.protocol import ApiKey
from kproto.protocol import messages as m
from minibroker import MiniBroker
from minibroker.coordinator.transactions import TxnState
from tests.minibroker.txn.test_txn_coordinator import (
    _add,
    _end,
    _init,
    _on_loop,
    _state,
    _topic,
    _txn,
    wait_until,
)
from tests.minibroker.txn.txn_wire import txn_batch

CONFIG = {"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3, "num.partitions": 2}


@pytest.fixture
def minibroker_config():
    return CONFIG


def _produce(client, tid, records, *, topic="t", partition=0, version=9):
    request = m.ProduceRequest(transactional_id=tid, acks=-1, timeout_ms=10000, topic_data=[
        m.ProduceRequest.TopicProduceData(name=topic, partition_data=[
            m.ProduceRequest.PartitionProduceData(index=partition, records=records)])])
    answer = client.request(ApiKey.PRODUCE, version, request).responses[0].partition_responses[0]
    return answer.error_code, answer.base_offset, answer.error_message


def _open_txns(broker, topic="t", index=0):
    state = _state(broker)
    partition = state.topics[topic].partitions[index]
    return _on_loop(broker, lambda: [p for p in state.active_producers(partition) if p.current_txn_start_offset >= 0])


def test_a_produce_to_a_partition_never_added_is_refused(broker, raw):
    """issue 14 step 2, item 1: a producer with a transaction on t-1 writes to t-0, never
    added: INVALID_TXN_STATE ("Partition was not added to the transaction") up to Produce
    v10, TRANSACTION_ABORTABLE from v11; nothing is written, no transaction opens there."""
    _topic(broker)
    c = raw()
    _, pid, epoch = _init(c, "tx")
    assert _add(c, "tx", pid, epoch, [("t", 1)]) == {("t", 1): 0}
    code, _, message = _produce(c, "tx", txn_batch(pid, epoch, 0, [b"x"]))
    assert (code, message) == (InvalidTxnStateError.code, "Partition was not added to the transaction")
    assert _produce(c, "tx", txn_batch(pid, epoch, 0, [b"x"]), version=11)[0] == TransactionAbortableError.code
    assert _open_txns(broker) == []
    assert _state(broker).topics["t"].partitions[0].log.log_end_offset == 0
    # The partition added: accepted (sequence 0: nothing was written before).
    assert _produce(c, "tx", txn_batch(pid, epoch, 0, [b"y"]), partition=1)[:2] == (0, 0)
    # A stale epoch is fenced: INVALID_PRODUCER_EPOCH, what producers expect (not PRODUCER_FENCED).
    _, pid2, epoch2 = _init(c, "tx2")
    _add(c, "tx2", pid2, epoch2, [("t", 0)])
    _init(c, "tx2")  # bumps the epoch: the old one is fenced
    code = _produce(c, "tx2", txn_batch(pid2, epoch2, 0, [b"z"]))[0]
    assert code == InvalidProducerEpochError.code


def test_before_any_transaction_the_coordinator_is_not_available(broker, raw):
    """issue 14 step 2, item 1: with no ``__transaction_state`` no transaction can have
    started; the leader answers NOT_ENOUGH_REPLICAS (Kafka's mapping of
    COORDINATOR_NOT_AVAILABLE) and does not create the topic."""
    _topic(broker)
    c = raw()
    assert _produce(c, "nobody", txn_batch(99, 0, 0, [b"x"]))[0] == NotEnoughReplicasError.code
    assert "__transaction_state" not in _state(broker).topics


def test_a_late_produce_after_an_abort_does_not_open_a_hanging_transaction(broker, raw):
    """issue 14 step 2, item 1: the hanging transaction KIP-890 is about. A producer's
    transaction on t-0 is aborted (its markers written, CompleteAbort); a batch of it that
    was late arrives afterwards, same producer id and epoch. Without verification it
    opens a transaction no marker will ever close (the LSO stuck); with it, refused."""
    _topic(broker)
    c = raw()
    _, pid, epoch = _init(c, "tx")
    assert _add(c, "tx", pid, epoch, [("t", 0)]) == {("t", 0): 0}
    assert _produce(c, "tx", txn_batch(pid, epoch, 0, [b"a"]))[:2] == (0, 0)
    assert _end(c, "tx", pid, epoch, False) == 0
    wait_until(lambda: _txn(broker, "tx").state is TxnState.CompleteAbort, what="CompleteAbort")
    late = txn_batch(pid, epoch, 1, [b"late"])
    assert _produce(c, "tx", late)[0] == InvalidTxnStateError.code
    assert _open_txns(broker) == []


def test_with_verification_off_the_late_produce_hangs(tmp_path):
    """issue 14 step 2, item 1: ``transaction.partition.verification.enable=false`` is
    the behaviour before KIP-890: the same late batch opens a transaction that stays open."""
    from tests.support.raw_client import RawClient

    config = {**CONFIG, "transaction.partition.verification.enable": False}
    with MiniBroker(data_dir=tmp_path, config=config) as broker:
        _topic(broker)
        c = RawClient(broker.port)
        try:
            _, pid, epoch = _init(c, "tx")
            _add(c, "tx", pid, epoch, [("t", 0)])
            assert _produce(c, "tx", txn_batch(pid, epoch, 0, [b"a"]))[0] == 0
            assert _end(c, "tx", pid, epoch, False) == 0
            wait_until(lambda: _txn(broker, "tx").state is TxnState.CompleteAbort, what="CompleteAbort")
            assert _produce(c, "tx", txn_batch(pid, epoch, 1, [b"late"]))[0] == 0
            assert [p.producer_id for p in _open_txns(broker)] == [pid]
        finally:
            c.close()


def test_peer_clients_still_work(broker):
    """issue 14 step 2, item 1: confluent-kafka, kafka-python, aiokafka and kproto add
    their partitions before they produce, so verification passes; commits are readable."""
    ck = pytest.importorskip("confluent_kafka")
    _topic(broker, "peers", 2)
    bootstrap = broker.bootstrap_servers
    p = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": "ck", "transaction.timeout.ms": 10000})
    p.init_transactions(10)
    p.begin_transaction()
    for i in range(4):
        p.produce("peers", value=b"ck%d" % i, partition=i % 2)
    p.commit_transaction(10)

    import kafka
    kp = kafka.KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kp")
    kp.init_transactions()
    kp.begin_transaction()
    for i in range(4):
        kp.send("peers", value=b"kp%d" % i, partition=i % 2)
    kp.commit_transaction()
    kp.close()

    import asyncio

    import aiokafka

    async def aio():
        ap = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="aio")
        await ap.start()
        try:
            async with ap.transaction():
                for i in range(4):
                    await ap.send_and_wait("peers", value=b"aio%d" % i, partition=i % 2)
        finally:
            await ap.stop()
    asyncio.run(aio())

    from kproto import Producer
    with Producer(bootstrap_servers=bootstrap, transactional_id="kproto") as kpr:
        kpr.init_transactions()
        kpr.begin_transaction()
        for i in range(4):
            kpr.send("peers", b"kproto%d" % i, partition=i % 2)
        kpr.commit_transaction()

    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "r", "isolation.level": "read_committed",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([ck.TopicPartition("peers", 0, 0), ck.TopicPartition("peers", 1, 0)])
    values = set()
    try:
        for _ in range(200):
            msg = c.poll(0.1)
            if msg is not None and not msg.error():
                values.add(msg.value())
            if len(values) == 16:
                break
    finally:
        c.close()
    assert values == {b"%s%d" % (name, i) for name in (b"ck", b"kp", b"aio", b"kproto") for i in range(4)}


def test_the_verification_channel_batches_per_coordinator(broker, raw):
    """issue 14 step 2, item 1: AddPartitionsToTxnSender (Kafka's AddPartitionsToTxnManager)
    over a real connection to a coordinator: transactions asked for together go in one
    AddPartitionsToTxn v4+, each answered on its own; a second ask for the same id and
    epoch replaces the first, which gets NETWORK_EXCEPTION (the producer retries), and an
    older epoch than one waiting gets INVALID_PRODUCER_EPOCH."""
    import asyncio

    from kproto.errors import NetworkError
    from minibroker.cluster.txn_markers import AddPartitionsToTxnSender

    _topic(broker)
    c = raw()
    _, pid, epoch = _init(c, "a")
    _add(c, "a", pid, epoch, [("t", 0)])
    _, pid_b, epoch_b = _init(c, "b")

    sender = AddPartitionsToTxnSender(node_id=99)

    def ask(tid, p, e, partitions=(("t", 0),)):
        return sender("127.0.0.1", broker.port, transactional_id=tid, producer_id=p, producer_epoch=e,
                      partitions=list(partitions), verify_only=True, timeout_ms=5000)

    async def main():
        together = await asyncio.gather(ask("a", pid, epoch), ask("b", pid_b, epoch_b))
        replaced = await asyncio.gather(ask("a", pid, epoch), ask("a", pid, epoch))
        older = await asyncio.gather(ask("a", pid, epoch + 1), ask("a", pid, epoch))
        return together, replaced, older

    together, replaced, older = asyncio.run(main())
    assert together == [{("t", 0): 0}, {("t", 0): TransactionAbortableError.code}]
    assert replaced == [{("t", 0): NetworkError.code}, {("t", 0): 0}]
    assert older[1] == {("t", 0): InvalidProducerEpochError.code}
