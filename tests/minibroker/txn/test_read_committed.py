"""read_committed against minibroker's transactional logs, proven by real consumers
(issue 14 step 1, items 4-5): confluent-kafka, kafka-python and kproto read a partition
holding a committed transaction, an aborted one, plain records and an open transaction;
ListOffsets answers by isolation level. The transactions are written by hand (Produce of
transactional batches, WriteTxnMarkers): no transaction coordinator is involved, so each
step is the test's own."""

import threading
import time

import pytest

from kproto import AdminClient, Consumer, TopicPartition
from kproto.admin import NewTopic
from kproto.protocol.timestamps import OffsetTimestamp
from tests.minibroker.txn.txn_wire import fetch, list_offset, produce, txn_batch, write_markers

READ_COMMITTED = 1
DEADLINE = 10
COMMITTED = [b"c1", b"c2", b"p1"]  # what read_committed sees while producer 3's transaction is open
EVERYTHING = [b"c1", b"c2", b"a1", b"a2", b"p1", b"o1", b"p2"]


@pytest.fixture(scope="module")
def broker(kafka_broker_module):
    return kafka_broker_module


def _plain(values):
    return txn_batch(-1, -1, -1, values, transactional=False)


def _fill(port, topic):
    """0-1 committed (producer 1), 2 COMMIT, 3-4 aborted (producer 2), 5 ABORT, 6 plain,
    7 open (producer 3), 8 plain: LSO 7, high watermark 9."""
    with AdminClient(bootstrap_servers=f"127.0.0.1:{port}") as admin:
        admin.create_topics([NewTopic(topic, 1)])
    assert produce(port, topic, txn_batch(1, 0, 0, [b"c1", b"c2"])) == (0, 0)
    assert write_markers(port, 1, 0, True, [(topic, 0)]) == {(topic, 0): 0}
    assert produce(port, topic, txn_batch(2, 0, 0, [b"a1", b"a2"])) == (0, 3)
    assert write_markers(port, 2, 0, False, [(topic, 0)]) == {(topic, 0): 0}
    assert produce(port, topic, _plain([b"p1"])) == (0, 6)
    assert produce(port, topic, txn_batch(3, 0, 0, [b"o1"])) == (0, 7)
    assert produce(port, topic, _plain([b"p2"])) == (0, 8)


def _commit_open(port, topic):
    assert write_markers(port, 3, 0, True, [(topic, 0)]) == {(topic, 0): 0}


def _ck_values(broker, topic, isolation, count, settle=0.5):
    ck = pytest.importorskip("confluent_kafka")
    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "unused",
                            "enable.auto.commit": False, "isolation.level": isolation, "fetch.wait.max.ms": 100})
    try:
        consumer.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
        got, deadline, quiet = [], time.monotonic() + DEADLINE, None
        while time.monotonic() < deadline:
            messages = consumer.consume(10, timeout=0.2)
            for m in messages:
                assert m.error() is None, m.error()
                got.append(m.value())
            if len(got) >= count:
                quiet = quiet or time.monotonic()
                if time.monotonic() - quiet > settle:  # nothing more is coming
                    break
        return got
    finally:
        consumer.close()


@pytest.mark.parametrize("isolation, expected", [("read_committed", COMMITTED), ("read_uncommitted", EVERYTHING)])
def test_confluent_kafka_consumer(broker, isolation, expected):
    """librdkafka, the strictest: aborted records invisible to read_committed, which also
    stops at the open transaction; read_uncommitted sees every record."""
    topic = f"ck-{isolation}"
    _fill(broker.port, topic)
    assert _ck_values(broker, topic, isolation, len(expected)) == expected


def test_confluent_kafka_read_committed_after_the_open_transaction_commits(broker):
    _fill(broker.port, "ck-later")
    _commit_open(broker.port, "ck-later")
    assert _ck_values(broker, "ck-later", "read_committed", 5) == [b"c1", b"c2", b"p1", b"o1", b"p2"]


@pytest.mark.parametrize("isolation, expected", [("read_committed", COMMITTED), ("read_uncommitted", EVERYTHING)])
def test_kafka_python_consumer(broker, isolation, expected):
    kafka = pytest.importorskip("kafka")
    topic = f"kp-{isolation}"
    _fill(broker.port, topic)
    consumer = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False,
                                   isolation_level=isolation, consumer_timeout_ms=1500, fetch_max_wait_ms=100)
    try:
        tp = kafka.TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        assert [m.value for m in consumer] == expected
        consumer.seek_to_end(tp)
        assert consumer.position(tp) == (7 if isolation == "read_committed" else 9)
    finally:
        consumer.close()


def _kproto_poll(consumer, count):
    got, deadline = [], time.monotonic() + DEADLINE
    while len(got) < count:
        assert time.monotonic() < deadline, f"timed out with {got}"
        got += [r.value for r in consumer.poll(0.2)]
    return got


@pytest.mark.parametrize("isolation, expected", [("read_committed", COMMITTED), ("read_uncommitted", EVERYTHING)])
def test_kproto_consumer(broker, isolation, expected):
    topic = f"kproto-{isolation}"
    _fill(broker.port, topic)
    with Consumer(bootstrap_servers=broker.bootstrap_servers, isolation_level=isolation, fetch_max_wait_ms=100) as c:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek(tp, 0)
        assert _kproto_poll(c, len(expected)) == expected
        assert c.poll(0.5) == []


def test_a_read_committed_consumer_waits_at_the_open_transaction_until_its_marker(broker):
    """Issue 14, item 4: a long-polling read_committed consumer parked at the LSO is woken
    by the COMMIT marker and gets the transaction's records and what followed them."""
    _fill(broker.port, "wait")
    with Consumer(bootstrap_servers=broker.bootstrap_servers, isolation_level="read_committed",
                  fetch_max_wait_ms=5000) as c:
        tp = TopicPartition("wait", 0)
        c.assign([tp])
        c.seek(tp, 0)
        assert _kproto_poll(c, 3) == COMMITTED
        assert c.poll(0.5) == []
        timer = threading.Timer(0.3, _commit_open, (broker.port, "wait"))
        timer.start()
        try:
            started = time.monotonic()
            assert _kproto_poll(c, 2) == [b"o1", b"p2"]
            assert time.monotonic() - started < 4  # woken by the marker, not by the 5 s wait
        finally:
            timer.join()


def test_a_parked_fetch_returns_when_the_marker_moves_the_lso(broker):
    """Issue 14, item 4, on the wire: a read_committed Fetch at the LSO with a long
    max_wait_ms answers as soon as the marker is written."""
    _fill(broker.port, "park")
    timer = threading.Timer(0.3, _commit_open, (broker.port, "park"))
    timer.start()
    try:
        started = time.monotonic()
        answer = fetch(broker.port, "park", 7, isolation_level=READ_COMMITTED, max_wait_ms=8000)
        assert time.monotonic() - started < 5
    finally:
        timer.join()
    assert answer.last_stable_offset == answer.high_watermark == 10
    assert len(answer.records) > 0 and answer.aborted_transactions == []


def test_fetch_answers_the_lso_and_reads_below_it_when_read_committed(broker):
    _fill(broker.port, "wire")
    committed = fetch(broker.port, "wire", 0, isolation_level=READ_COMMITTED)
    uncommitted = fetch(broker.port, "wire", 0, isolation_level=0)
    for answer in (committed, uncommitted):
        assert (answer.high_watermark, answer.last_stable_offset) == (9, 7)
    assert [(a.producer_id, a.first_offset) for a in committed.aborted_transactions] == [(2, 3)]
    assert uncommitted.aborted_transactions is None
    assert len(committed.records) < len(uncommitted.records)
    at_lso = fetch(broker.port, "wire", 7, isolation_level=READ_COMMITTED)
    assert len(at_lso.records) == 0 and at_lso.aborted_transactions == []


@pytest.mark.parametrize("version", [2, 5, 7, 10])
def test_list_offsets_latest_is_the_lso_for_read_committed(broker, version):
    """Issue 14, item 5 (Kafka's fetchOffsetForTimestamp): LATEST is the LSO for
    read_committed and the high watermark for read_uncommitted; EARLIEST is the log start
    for both; MAX_TIMESTAMP never names an offset at or past the last fetchable one."""
    topic = f"lo-{version}"
    _fill(broker.port, topic)
    latest = OffsetTimestamp.LATEST
    assert list_offset(broker.port, topic, latest, isolation_level=READ_COMMITTED, version=version) == (0, 7)
    assert list_offset(broker.port, topic, latest, isolation_level=0, version=version) == (0, 9)
    for level in (0, READ_COMMITTED):
        assert list_offset(broker.port, topic, OffsetTimestamp.EARLIEST, isolation_level=level,
                           version=version) == (0, 0)
    if version >= 9:  # KIP-405's specials: no tiered storage
        assert list_offset(broker.port, topic, -4, isolation_level=READ_COMMITTED, version=version) == (0, 0)
        assert list_offset(broker.port, topic, -5, isolation_level=READ_COMMITTED, version=version) == (0, -1)
    _commit_open(broker.port, topic)
    assert list_offset(broker.port, topic, latest, isolation_level=READ_COMMITTED, version=version) == (0, 10)
