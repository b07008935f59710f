"""What aborts leave behind, end to end with kproto alone (issue 14, tests: "zombie fencing
(two producers with one transactional.id), transaction timeout abort, aborted data
invisible to read_committed and visible to read_uncommitted").

tests/clients/test_transactions.py proves the fencing and the timeout from the producer's
side and reads with confluent-kafka; tests/minibroker/txn/test_read_committed.py proves
kproto's read_committed consumer over transactions written by hand. Here kproto's
transactional producer writes, minibroker's coordinator aborts (a successor's
InitProducerId, the transaction timeout, the application), and kproto's consumer reads
the log with each isolation level: the aborted records are in it, and hidden."""

import time

import pytest

from kproto import Producer, TopicPartition
from kproto.admin import AdminClient, NewTopic
from kproto.errors import KafkaError, ProducerFencedError
from minibroker import MiniBroker
from tests.eos.crash import read_to_end, seal

PARTITIONS = 2


@pytest.fixture(scope="module")
def bootstrap():
    # The coordinator looks for timed-out transactions every 100 ms (Kafka: 10 s).
    with MiniBroker(config={"transaction.abort.timed.out.transaction.cleanup.interval.ms": 100}) as broker:
        yield broker.bootstrap_servers


def _topic(bootstrap, name):
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic(name, PARTITIONS, 1)])
    return name


def _send(producer, topic, tag, count=4):
    values = [b"%s-%d" % (tag, i) for i in range(count)]
    for i, value in enumerate(values):
        producer.send(topic, value, partition=i % PARTITIONS)
    producer.flush()  # in the log: what the abort hides
    return values


def _both(bootstrap, topic):
    """(read_committed, read_uncommitted) values of ``topic``, read by kproto's consumer."""
    seal(bootstrap, topic, PARTITIONS)
    return (sorted(read_to_end(bootstrap, topic, PARTITIONS, "kproto", "read_committed")),
            sorted(read_to_end(bootstrap, topic, PARTITIONS, "kproto", "read_uncommitted")))


def test_a_zombie_s_records_are_aborted_by_its_successor(bootstrap):
    """Issue 14: the successor's init_transactions aborts the zombie's open transaction and
    fences it; its records stay in the log, hidden from read_committed."""
    topic = _topic(bootstrap, "zombie")
    config = {"bootstrap_servers": bootstrap, "transactional_id": "zombie-id"}
    with Producer(**config) as zombie, Producer(**config) as successor:
        zombie.init_transactions()
        zombie.begin_transaction()
        zombies = _send(zombie, topic, b"zombie")
        successor.init_transactions()
        with pytest.raises(ProducerFencedError):
            zombie.commit_transaction(timeout=10)
        with successor.transaction():
            successors = _send(successor, topic, b"successor")
    committed, uncommitted = _both(bootstrap, topic)
    assert committed == sorted(successors)
    assert uncommitted == sorted(zombies + successors)


def test_a_transaction_past_its_timeout_is_aborted_and_hidden(bootstrap):
    """Issue 14: the coordinator aborts a transaction open past ``transaction.timeout.ms``
    (markers written, the last stable offset moves on); the producer's commit then fails."""
    topic = _topic(bootstrap, "timeout")
    with Producer(bootstrap_servers=bootstrap, transactional_id="timeout-id", transaction_timeout_ms=500) as late:
        late.init_transactions()
        late.begin_transaction()
        lates = _send(late, topic, b"late")
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        with AdminClient(bootstrap_servers=bootstrap) as admin:
            deadline = time.monotonic() + 20
            while True:  # the abort's markers: the last stable offset reaches the high watermark
                lso = admin.list_offsets({tp: "latest" for tp in tps}, isolation_level="read_committed")
                hw = admin.list_offsets({tp: "latest" for tp in tps})
                if all(lso[tp].offset == hw[tp].offset for tp in tps):
                    break
                assert time.monotonic() < deadline, "the timed-out transaction was never aborted"
                time.sleep(0.05)
        with pytest.raises(KafkaError):
            late.commit_transaction(timeout=10)
    committed, uncommitted = _both(bootstrap, topic)
    assert committed == []
    assert uncommitted == sorted(lates)


def test_aborted_and_committed_transactions_interleaved_on_two_partitions(bootstrap):
    """Issue 14: an application's aborts among commits and plain records; read_committed
    keeps the committed and plain ones, read_uncommitted every record."""
    topic = _topic(bootstrap, "mixed")
    with Producer(bootstrap_servers=bootstrap, transactional_id="mixed-id") as producer, \
            Producer(bootstrap_servers=bootstrap) as plain:
        producer.init_transactions()
        kept, dropped = [], []
        for round_ in range(3):
            with producer.transaction():
                kept += _send(producer, topic, b"commit-%d" % round_)
            kept += _send(plain, topic, b"plain-%d" % round_, count=2)
            producer.begin_transaction()
            dropped += _send(producer, topic, b"abort-%d" % round_)
            producer.abort_transaction()
    committed, uncommitted = _both(bootstrap, topic)
    assert committed == sorted(kept)
    assert uncommitted == sorted(kept + dropped)
