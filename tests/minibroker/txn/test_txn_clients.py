"""Peer clients' transactional producers against a MiniBroker's transaction coordinator
(issue 14 step 1, items 2-5): confluent-kafka (librdkafka, the strictest), kafka-python and
aiokafka, every step answered; fencing, the timeout abort, and restarts (a stopped
MiniBroker, a SIGKILLed ``python -m minibroker``) in the middle of a transaction.

Records are read back with read_uncommitted consumers: every record is there, with a
gap at each marker's offset (read_committed is the partition side's, tested there)."""

import asyncio
import signal
import socket
import time

import pytest

from minibroker import MiniBroker
from minibroker.coordinator.transactions import TxnState
from tests.support.process import start_minibroker, wait_ready

ck = pytest.importorskip("confluent_kafka")

CONFIG = {"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3, "num.partitions": 2}


@pytest.fixture
def minibroker_config():
    return CONFIG


def _producer(bootstrap, tid="tx", **extra):
    return ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5,
                        "transaction.timeout.ms": 10000, **extra})


def _read_all(bootstrap, topic, partitions=(0,), expect=None, timeout=10.0):
    """(partition, offset, value) of every record, read_uncommitted, until ``expect`` are
    read (or, without it, until a second passes without more)."""
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False,
                            "isolation.level": "read_uncommitted", "auto.offset.reset": "earliest"})
    consumer.assign([ck.TopicPartition(topic, p, 0) for p in partitions])
    out = []
    deadline = time.monotonic() + timeout
    idle_since = time.monotonic()
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.1)
            if msg is None:
                if expect is None and time.monotonic() - idle_since > 1.0:
                    break
                continue
            if msg.error():
                continue
            idle_since = time.monotonic()
            out.append((msg.partition(), msg.offset(), msg.value()))
            if expect is not None and len(out) >= expect:
                break
    finally:
        consumer.close()
    return sorted(out)


def _txn_state(broker, tid):
    async def read():
        md = broker._server.state.transactions.txns.get(tid)
        return None if md is None else md.state
    return asyncio.run_coroutine_threadsafe(read(), broker._loop).result(10)


def test_confluent_commit_and_abort_every_step(broker):
    """issue 14, items 2-3: librdkafka's whole flow (InitProducerId, AddPartitionsToTxn,
    Produce, EndTxn commit and abort) is answered; the records are all in the log with a
    marker after each transaction."""
    p = _producer(broker.bootstrap_servers)
    p.init_transactions(10)
    p.begin_transaction()
    for i in range(3):
        p.produce("t", b"c%d" % i, partition=0)
    p.produce("t", b"c-p1", partition=1)
    p.commit_transaction(10)
    p.begin_transaction()
    p.produce("t", b"a0", partition=0)
    p.produce("t", b"a1", partition=0)
    p.flush(10)  # sent before the abort: they are in the log, then the ABORT marker
    p.abort_transaction(10)
    p.begin_transaction()
    p.produce("t", b"c3", partition=0)
    p.commit_transaction(10)
    assert _read_all(broker.bootstrap_servers, "t", (0, 1), expect=7) == [
        (0, 0, b"c0"), (0, 1, b"c1"), (0, 2, b"c2"),  # marker at 3
        (0, 4, b"a0"), (0, 5, b"a1"),  # marker at 6
        (0, 7, b"c3"),  # marker at 8
        (1, 0, b"c-p1")]
    assert _txn_state(broker, "tx") is TxnState.CompleteCommit


def test_confluent_second_producer_of_an_id_fences_the_first(broker):
    """issue 14, item 2: a second producer's init_transactions aborts the first's ongoing
    transaction (answered CONCURRENT_TRANSACTIONS meanwhile, which librdkafka retries) and
    the first producer's commit is a fatal _FENCED error."""
    first = _producer(broker.bootstrap_servers)
    first.init_transactions(10)
    first.begin_transaction()
    first.produce("t", b"zombie", partition=0)
    first.flush(10)
    second = _producer(broker.bootstrap_servers)
    second.init_transactions(10)
    with pytest.raises(ck.KafkaException) as caught:
        first.commit_transaction(10)
    error = caught.value.args[0]
    assert error.fatal() and error.code() == ck.KafkaError._FENCED
    second.begin_transaction()
    second.produce("t", b"alive", partition=0)
    second.commit_transaction(10)
    assert _read_all(broker.bootstrap_servers, "t", expect=2) == [(0, 0, b"zombie"), (0, 2, b"alive")]


@pytest.mark.parametrize("minibroker_config", [{**CONFIG, "transaction.abort.timed.out.transaction.cleanup.interval.ms": 50}])
def test_confluent_transaction_that_times_out_is_aborted(broker):
    """issue 14, item 4: a transaction left open past transaction.timeout.ms is aborted by
    the coordinator under a bumped epoch; the producer's commit then fails as fenced
    (fatal in librdkafka, as against Kafka 3.x)."""
    p = _producer(broker.bootstrap_servers, **{"transaction.timeout.ms": 1000})
    p.init_transactions(10)
    p.begin_transaction()
    p.produce("t", b"late", partition=0)
    p.flush(10)
    deadline = time.monotonic() + 10
    while _txn_state(broker, "tx") is not TxnState.CompleteAbort:
        assert time.monotonic() < deadline, "the coordinator did not abort the transaction"
        time.sleep(0.05)
    with pytest.raises(ck.KafkaException) as caught:
        p.commit_transaction(10)
    assert caught.value.args[0].fatal()
    again = _producer(broker.bootstrap_servers)  # the id is usable by a new producer
    again.init_transactions(10)


def test_confluent_transaction_survives_a_broker_restart(tmp_path):
    """issue 14, item 5: a MiniBroker(data_dir=...) stopped in the middle of a transaction
    comes back with it Ongoing (replayed from __transaction_state); the producer commits it."""
    with MiniBroker(config=CONFIG, data_dir=tmp_path) as broker:
        port, bootstrap = broker.port, broker.bootstrap_servers
        p = _producer(bootstrap)
        p.init_transactions(10)
        p.begin_transaction()
        p.produce("t", b"before", partition=0)
        p.flush(10)
    with MiniBroker(port=port, config=CONFIG, data_dir=tmp_path) as broker:
        assert _txn_state(broker, "tx") is TxnState.Ongoing
        p.produce("t", b"after", partition=0)
        p.commit_transaction(20)
        assert _txn_state(broker, "tx") in (TxnState.PrepareCommit, TxnState.CompleteCommit)
        assert _read_all(bootstrap, "t", expect=2) == [(0, 0, b"before"), (0, 1, b"after")]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_confluent_transaction_survives_sigkill_of_the_broker_process(tmp_path):
    """issue 14, item 5: ``python -m minibroker`` SIGKILLed in the middle of a transaction
    and started again on its data: the coordinator's state was on disk; the producer's
    commit completes on the new process and the marker follows the records."""
    port = _free_port()
    args = ("--port", str(port), "--data-dir", str(tmp_path),
            *(a for k, v in CONFIG.items() for a in ("--override", f"{k}={v}")))
    proc = start_minibroker(*args)
    try:
        bootstrap = wait_ready(proc)
        p = _producer(bootstrap)
        p.init_transactions(10)
        p.begin_transaction()
        p.produce("t", b"one", partition=0)
        p.produce("t", b"two", partition=0)
        p.flush(10)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        proc.stdout.close()
        proc = start_minibroker(*args)
        wait_ready(proc)
        p.commit_transaction(20)
        p.begin_transaction()
        p.produce("t", b"three", partition=0)
        p.commit_transaction(20)
        assert _read_all(bootstrap, "t", expect=3) == [(0, 0, b"one"), (0, 1, b"two"), (0, 3, b"three")]
    finally:
        proc.kill()
        proc.wait(10)
        if proc.stdout:
            proc.stdout.close()


def test_kafka_python_transactional_producer(broker):
    """issue 14, items 2-3: kafka-python's transactional producer commits and aborts."""
    kafka = pytest.importorskip("kafka")
    p = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, transactional_id="kp-tx",
                            enable_idempotence=True)
    try:
        p.init_transactions()
        p.begin_transaction()
        p.send("t", b"kp0", partition=0)
        p.send("t", b"kp1", partition=0)
        p.commit_transaction()
        p.begin_transaction()
        p.send("t", b"kp-aborted", partition=0)
        p.flush()
        p.abort_transaction()
    finally:
        p.close(5)
    assert _read_all(broker.bootstrap_servers, "t", expect=3) == [
        (0, 0, b"kp0"), (0, 1, b"kp1"), (0, 3, b"kp-aborted")]
    assert _txn_state(broker, "kp-tx") is TxnState.CompleteAbort


def test_aiokafka_transactional_producer(broker):
    """issue 14, items 2-3: aiokafka's transactional producer commits and aborts."""
    aiokafka = pytest.importorskip("aiokafka")

    async def run():
        p = aiokafka.AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, transactional_id="aio-tx")
        await p.start()
        try:
            async with p.transaction():
                await p.send_and_wait("t", b"aio0", partition=0)
            await p.begin_transaction()
            await p.send_and_wait("t", b"aio-aborted", partition=0)
            await p.abort_transaction()
        finally:
            await p.stop()

    asyncio.run(run())
    assert _read_all(broker.bootstrap_servers, "t", expect=2) == [(0, 0, b"aio0"), (0, 2, b"aio-aborted")]
    assert _txn_state(broker, "aio-tx") is TxnState.CompleteAbort
