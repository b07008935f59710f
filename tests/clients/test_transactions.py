"""kproto's transactional producer against a real broker (issue 14, step 1, items 2-3):
commit, abort, the context manager, consume-transform-produce offsets, zombie fencing,
the asyncio twin. confluent-kafka's read_committed consumer is the oracle of what the
broker made visible. The broker is ``txn_broker`` (tests/clients/conftest.py): Tansu now; every test but the
gaps' must pass on any Kafka-compatible broker with a transaction coordinator.

Tansu 0.6.0's transaction gaps, each seen with confluent-kafka's transactional producer
too before being blamed on Tansu; each test that meets one states Kafka's behaviour and
is a strict xfail on Tansu only:

- an abort writes no ABORT marker: records sent before the abort stay visible to
  read_committed consumers (confluent-kafka's too);
- a new producer's InitProducerId does not abort the transaction an older instance left
  open, and the older one's EndTxn gets its connection closed instead of PRODUCER_FENCED;
- TxnOffsetCommit does not check the group's generation (KIP-447);
- ``transaction.timeout.ms`` is not enforced: an open transaction is never aborted;
- it offers InitProducerId v0-5 but answers one carrying the producer id and epoch (the
  KIP-360 epoch bump that ends the abort after a sent batch failed) with
  UNKNOWN_SERVER_ERROR, so there such an abort leaves the producer fatal. No test here can
  make Tansu fail a batch; tests/clients/test_transactions_faults.py drives that flow
  against a coordinator faked on the wire.
"""

import asyncio
import runpy
import time
import uuid
from pathlib import Path

import pytest

from kproto import Consumer, Producer, TopicPartition
from kproto.admin import AdminClient, NewTopic
from kproto.aio import AIOConsumer, AIOProducer
from kproto.errors import (
    IllegalGenerationError,
    InvalidGroupIdError,
    InvalidProducerEpochError,
    KafkaError,
    ProducerFencedError,
    TransactionAbortedError,
    TransactionStateError,
)
from kproto.structs import ConsumerGroupMetadata, OffsetAndMetadata
from tests.clients.conftest import broker_gap

ck = pytest.importorskip("confluent_kafka")

DEADLINE = 20  # seconds: a bound on waiting, never a sleep
GROUP = {"auto_offset_reset": "earliest", "fetch_max_wait_ms": 100, "enable_auto_commit": False}


def fresh(name):
    return f"{name}-{uuid.uuid4().hex[:8]}"


def create(bootstrap, *topics, partitions=1):
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic(t, partitions, 1) for t in topics])


def read(bootstrap, topic, partitions=1, *, until, isolation="read_committed"):
    """Values confluent-kafka reads from ``topic`` with ``isolation``, up to and including
    the value ``until`` (a record written last, so that what is missing is missing for
    good; a set: one such record per partition, all of them)."""
    wanted = until if isinstance(until, (set, frozenset)) else {until}
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": fresh("oracle"), "isolation.level": isolation,
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.assign([ck.TopicPartition(topic, p, 0) for p in range(partitions)])
        got, deadline = [], time.monotonic() + DEADLINE
        while not wanted <= set(got):
            assert time.monotonic() < deadline, f"read {got} from {topic}, never {until!r} ({isolation})"
            message = consumer.poll(0.1)
            if message is not None and not message.error():
                got.append(message.value())
        return got
    finally:
        consumer.close()


def transactional(broker, **config):
    return Producer(bootstrap_servers=broker.bootstrap_servers, transactional_id=fresh("txn"), **config)


# -- commit and abort ----------------------------------------------------------------------------

def test_commit_makes_the_records_visible_to_read_committed(txn_broker):
    topic = fresh("commit")
    create(txn_broker.bootstrap_servers, topic, partitions=2)
    with transactional(txn_broker) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        futures = [producer.send(topic, b"v%d" % i, partition=i % 2) for i in range(6)]
        producer.commit_transaction()  # flushes first: every record is settled when it returns
        assert all(f.done() and f.exception() is None for f in futures)
        assert sorted(f.result().offset for f in futures[::2]) == [0, 1, 2]
    got = read(txn_broker.bootstrap_servers, topic, 2, until=b"v5")
    assert sorted(got) == [b"v%d" % i for i in range(6)]


def test_abort_fails_unsent_records_and_the_next_transaction_commits(txn_broker):
    topic = fresh("abort")
    create(txn_broker.bootstrap_servers, topic)
    with transactional(txn_broker, linger_ms=60000, batch_size=1 << 20) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        sent = producer.send(topic, b"sent-then-aborted", partition=0)
        producer.flush()
        unsent = producer.send(topic, b"never-sent", partition=0)  # lingers: the abort drops it
        producer.abort_transaction()
        assert sent.result().offset == 0
        assert isinstance(unsent.exception(), TransactionAbortedError)
        producer.begin_transaction()
        producer.send(topic, b"committed", partition=0)
        producer.commit_transaction()
    got = read(txn_broker.bootstrap_servers, topic, until=b"committed", isolation="read_uncommitted")
    assert got == [b"sent-then-aborted", b"committed"]  # an aborted record stays in the log


def test_aborted_records_are_invisible_to_read_committed(txn_broker, request):
    broker_gap(request, txn_broker, "tansu", "an abort writes no ABORT marker (confluent-kafka's aborted "
               "records stay visible to read_committed too)")
    topic = fresh("hidden")
    create(txn_broker.bootstrap_servers, topic)
    with transactional(txn_broker) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, b"aborted", partition=0)
        producer.flush()
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send(topic, b"committed", partition=0)
        producer.commit_transaction()
    assert read(txn_broker.bootstrap_servers, topic, until=b"committed") == [b"committed"]


def test_the_context_manager_commits_or_aborts_and_reraises(txn_broker):
    topic = fresh("with")
    create(txn_broker.bootstrap_servers, topic)
    with transactional(txn_broker, linger_ms=60000) as producer:
        producer.init_transactions()
        with producer.transaction() as p:
            committed = p.send(topic, b"in-block", partition=0)
        assert committed.result().offset == 0  # committed: flushed and settled
        with pytest.raises(ZeroDivisionError):
            with producer.transaction():
                dropped = producer.send(topic, b"dropped", partition=0)
                raise ZeroDivisionError("the transform failed")
        assert isinstance(dropped.exception(), TransactionAbortedError)
        with producer.transaction():  # the producer goes on after an abort
            producer.send(topic, b"last", partition=0)
    assert read(txn_broker.bootstrap_servers, topic, until=b"last") == [b"in-block", b"last"]


def test_sends_and_calls_outside_a_transaction_raise_at_once(txn_broker):
    topic = fresh("outside")
    create(txn_broker.bootstrap_servers, topic)
    with transactional(txn_broker) as producer:
        with pytest.raises(TransactionStateError, match="init_transactions"):
            producer.send(topic, b"x")
        with pytest.raises(TransactionStateError, match="init_transactions"):
            producer.begin_transaction()
        producer.init_transactions()
        with pytest.raises(TransactionStateError, match="begin_transaction"):
            producer.send(topic, b"x")
        with pytest.raises(TransactionStateError, match="begin_transaction"):
            producer.send(fresh("no-metadata-yet"), b"x")  # the slow path too
        with pytest.raises(TransactionStateError, match="begin_transaction"):
            producer.commit_transaction()
        producer.begin_transaction()
        with pytest.raises(TransactionStateError, match="open already"):
            producer.begin_transaction()
        producer.commit_transaction()  # an empty transaction: nothing to end at the coordinator
    with Producer(bootstrap_servers=txn_broker.bootstrap_servers) as plain:
        with pytest.raises(TransactionStateError, match="transactional.id"):
            plain.begin_transaction()


# -- consume, transform, produce (KIP-447) --------------------------------------------------------

def test_group_metadata_says_where_the_consumer_stands(txn_broker):
    """Item 3: Java's groupMetadata() before a join, with a static instance id, and without a group."""
    bootstrap = txn_broker.bootstrap_servers
    with Consumer(bootstrap_servers=bootstrap, group_id="g", group_instance_id="worker-1") as consumer:
        assert consumer.group_metadata() == ConsumerGroupMetadata(group_id="g", generation_id=-1, member_id="",
                                                                  group_instance_id="worker-1")
    with Consumer(bootstrap_servers=bootstrap) as consumer:
        with pytest.raises(InvalidGroupIdError, match="group.id"):
            consumer.group_metadata()


def _consume(broker, topic, group, count):
    consumer = Consumer(bootstrap_servers=broker.bootstrap_servers, group_id=group, **GROUP, **broker.session)
    consumer.subscribe([topic])
    got, deadline = [], time.monotonic() + DEADLINE
    while len(got) < count:
        assert time.monotonic() < deadline, f"consumed {len(got)} of {count}"
        got.extend(consumer.poll(0.1))
    return consumer, got


def test_offsets_sent_to_a_transaction_count_only_when_it_commits(txn_broker):
    bootstrap = txn_broker.bootstrap_servers
    source, sink, group = fresh("in"), fresh("out"), fresh("group")
    create(bootstrap, source, sink)
    with Producer(bootstrap_servers=bootstrap) as plain:
        for i in range(5):
            plain.send(source, b"r%d" % i, partition=0)
    consumer, records = _consume(txn_broker, source, group, 5)
    tp = TopicPartition(source, 0)
    try:
        metadata = consumer.group_metadata()
        assert metadata.group_id == group and metadata.generation_id >= 0 and metadata.member_id
        with transactional(txn_broker) as producer:
            producer.init_transactions()
            with producer.transaction():
                for r in records:
                    producer.send(sink, r.value.upper(), partition=0)
                producer.send_offsets_to_transaction({tp: records[-1].offset + 1}, metadata)
            assert consumer.committed([tp])[tp].offset == 5
            producer.begin_transaction()
            producer.send_offsets_to_transaction({tp: OffsetAndMetadata(2)}, consumer.group_metadata())
            producer.abort_transaction()
            assert consumer.committed([tp])[tp].offset == 5  # the aborted offsets do not count
    finally:
        consumer.close()
    assert read(bootstrap, sink, until=b"R4") == [b"R%d" % i for i in range(5)]


def test_offsets_of_a_fenced_member_are_refused_and_the_transaction_aborts(txn_broker, request):
    """KIP-447: the group coordinator refuses the offsets of a generation that is not the
    group's (ILLEGAL_GENERATION): abortable; the application aborts and polls again."""
    broker_gap(request, txn_broker, "tansu", "TxnOffsetCommit does not check the generation (KIP-447)")
    bootstrap = txn_broker.bootstrap_servers
    source, group = fresh("in"), fresh("group")
    create(bootstrap, source)
    with Producer(bootstrap_servers=bootstrap) as plain:
        plain.send(source, b"r", partition=0)
    consumer, _ = _consume(txn_broker, source, group, 1)
    try:
        current = consumer.group_metadata()
        stale = ConsumerGroupMetadata(group_id=group, generation_id=current.generation_id + 7,
                                      member_id=current.member_id)
        with transactional(txn_broker) as producer:
            producer.init_transactions()
            producer.begin_transaction()
            with pytest.raises(IllegalGenerationError) as raised:
                producer.send_offsets_to_transaction({TopicPartition(source, 0): 1}, stale, timeout=5)
            assert raised.value.txn_requires_abort and not raised.value.fatal
            producer.abort_transaction()
    finally:
        consumer.close()


def _guide_recipe():
    """The consume-transform-produce function the producer guide shows (literalinclude of
    docs/examples/exactly_once.py, its one owner; tests/eos/ runs the same function)."""
    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "exactly_once.py"
    return runpy.run_path(str(example))["upper_case_exactly_once"]


def test_the_guide_s_consume_transform_produce_recipe_copies_each_record_once(txn_broker):
    """Item 4: the recipe runs as the guide prints it; a second run takes only what came since."""
    recipe = _guide_recipe()
    bootstrap = txn_broker.bootstrap_servers
    source, sink, group, txn_id = fresh("eos-in"), fresh("eos-out"), fresh("eos"), fresh("txn")
    create(bootstrap, source, sink, partitions=2)
    settings = {"fetch_max_wait_ms": 100, **txn_broker.session}
    for first, last in ((0, 20), (20, 25)):
        with Producer(bootstrap_servers=bootstrap) as plain:
            for i in range(first, last):
                plain.send(source, b"r%d" % i, key=b"k%d" % i)
        recipe(bootstrap, source, sink, group, txn_id, idle_timeout=1.5, **settings)
    with Producer(bootstrap_servers=bootstrap) as plain:  # written last: each partition read to its end
        for partition in (0, 1):
            plain.send(sink, b"end-%d" % partition, partition=partition)
    got = read(bootstrap, sink, 2, until={b"end-0", b"end-1"})
    assert sorted(v for v in got if not v.startswith(b"end")) == sorted(b"R%d" % i for i in range(25))
    with Consumer(bootstrap_servers=bootstrap, group_id=group) as consumer:
        committed = consumer.committed([TopicPartition(source, 0), TopicPartition(source, 1)])
    assert sum(o.offset for o in committed.values()) == 25


# -- fencing ---------------------------------------------------------------------------------------

def test_a_second_producer_with_the_same_transactional_id_fences_the_first(txn_broker):
    topic, txn_id = fresh("zombie"), fresh("txn")
    create(txn_broker.bootstrap_servers, topic)
    config = {"bootstrap_servers": txn_broker.bootstrap_servers, "transactional_id": txn_id}
    with Producer(**config) as zombie, Producer(**config) as successor:
        zombie.init_transactions()
        successor.init_transactions()
        zombie.begin_transaction()
        record = zombie.send(topic, b"zombie", partition=0)
        with pytest.raises((ProducerFencedError, InvalidProducerEpochError)) as raised:
            zombie.commit_transaction()
        if isinstance(raised.value, InvalidProducerEpochError):
            # Transaction version 2 (KIP-890 part 2): no AddPartitionsToTxn; the leader's add
            # of the Produce v12 is fenced, which a Produce answers INVALID_PRODUCER_EPOCH,
            # abortable (KIP-588); the abort's EndTxn is then PRODUCER_FENCED, fatal.
            assert raised.value.txn_requires_abort and isinstance(record.exception(), InvalidProducerEpochError)
            with pytest.raises(ProducerFencedError) as raised:
                zombie.abort_transaction()
        else:
            assert isinstance(record.exception(), ProducerFencedError)
        assert raised.value.fatal and not raised.value.txn_requires_abort
        for call in (zombie.begin_transaction, zombie.abort_transaction, lambda: zombie.send(topic, b"x")):
            with pytest.raises(ProducerFencedError):  # fatal: every later call fails too
                call()
        with successor.transaction():
            successor.send(topic, b"successor", partition=0)
    assert read(txn_broker.bootstrap_servers, topic, until=b"successor") == [b"successor"]


def test_a_new_instance_aborts_the_transaction_its_predecessor_left_open(txn_broker, request):
    """KIP-98: InitProducerId of a transactional id with an open transaction aborts it and
    bumps the epoch; the old instance's commit is fenced."""
    broker_gap(request, txn_broker, "tansu", "InitProducerId leaves the open transaction alone, and the old "
               "instance's EndTxn gets its connection closed instead of PRODUCER_FENCED")
    topic, txn_id = fresh("left-open"), fresh("txn")
    create(txn_broker.bootstrap_servers, topic)
    config = {"bootstrap_servers": txn_broker.bootstrap_servers, "transactional_id": txn_id}
    with Producer(**config) as old, Producer(**config) as new:
        old.init_transactions()
        old.begin_transaction()
        old.send(topic, b"left-open", partition=0)
        old.flush()
        new.init_transactions()
        with pytest.raises(ProducerFencedError):
            old.commit_transaction(timeout=3)
        with new.transaction():
            new.send(topic, b"new", partition=0)
    assert read(txn_broker.bootstrap_servers, topic, until=b"new") == [b"new"]


def test_a_transaction_open_past_its_timeout_is_aborted_by_the_coordinator(txn_broker, request):
    broker_gap(request, txn_broker, "tansu", "transaction.timeout.ms is not enforced")
    topic = fresh("timeout")
    create(txn_broker.bootstrap_servers, topic)
    with transactional(txn_broker, transaction_timeout_ms=1000) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, b"late", partition=0)
        producer.flush()
        tid = producer.config["transactional.id"]
        with AdminClient(bootstrap_servers=txn_broker.bootstrap_servers) as admin:
            deadline = time.monotonic() + 10  # the coordinator aborts after 1 s, checking every so often
            while admin.describe_transactions([tid])[tid].state != "CompleteAbort":
                assert time.monotonic() < deadline, "the coordinator did not abort the timed-out transaction"
                time.sleep(0.05)
        with pytest.raises(KafkaError):
            producer.commit_transaction(timeout=5)


# -- asyncio ---------------------------------------------------------------------------------------

def test_the_asyncio_twin(txn_broker):
    bootstrap = txn_broker.bootstrap_servers
    topic, source, group = fresh("aio"), fresh("aio-in"), fresh("aio-group")
    create(bootstrap, topic, source)

    async def main():
        async with AIOProducer(bootstrap_servers=bootstrap) as plain:
            await plain.send(source, b"in", partition=0)
        async with AIOProducer(bootstrap_servers=bootstrap, transactional_id=fresh("txn")) as producer:
            with pytest.raises(TransactionStateError):
                producer.send(topic, b"x")  # raised at send, not when awaited
            await producer.init_transactions()
            async with producer.transaction():
                first = producer.send(topic, b"a0", partition=0)
            assert (await first).offset == 0
            with pytest.raises(KeyError):
                async with producer.transaction():
                    dropped = producer.send(topic, b"dropped", partition=0)
                    raise KeyError("boom")
            with pytest.raises(TransactionAbortedError):
                await dropped
            async with AIOConsumer(bootstrap_servers=bootstrap, group_id=group, **GROUP,
                                   **txn_broker.session) as consumer:
                consumer.subscribe([source])
                records = []
                while not records:
                    records = await asyncio.wait_for(consumer.poll(1), DEADLINE)
                async with producer.transaction():
                    producer.send(topic, b"a1", partition=0)
                    await producer.send_offsets_to_transaction({TopicPartition(source, 0): 1},
                                                               consumer.group_metadata())
                tp = TopicPartition(source, 0)
                assert (await consumer.committed([tp]))[tp].offset == 1

    asyncio.run(main())
    assert read(bootstrap, topic, until=b"a1") == [b"a0", b"a1"]  # "dropped" never left the client
