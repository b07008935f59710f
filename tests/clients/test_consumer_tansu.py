"""The consumer's core scenarios against Tansu, a Kafka-compatible broker by others.

Tansu's gaps met here (see ``shared/reference/tansu-notes.md``): it holds a group join
for half the session timeout (so sessions are short here); ListOffsets "latest" is the
last batch's base offset + 1, and a lookup by timestamp answers offset 0 with the current
time whatever the timestamp (so end_offsets is checked loosely and offsets_for_times is
left to the minibroker tests); an aborted transaction leaves neither records nor an ABORT
marker in the log (so read_committed is left only COMMIT markers to skip: the filtering of
aborted batches is tested in ``test_consumer_fetcher.py``, without a broker).
"""

import time

import pytest

from kproto.admin import AdminClient, NewTopic
from kproto.consumer import Consumer
from kproto.structs import TopicPartition
from tests.minibroker.tansu import tansu_fixture

ck = pytest.importorskip("confluent_kafka")

tansu_broker = tansu_fixture(scope="module")

DEADLINE = 20
GROUP = {"session_timeout_ms": 2000, "heartbeat_interval_ms": 200, "auto_offset_reset": "earliest",
         "fetch_max_wait_ms": 100}


def create(bootstrap, topic, partitions):
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic(topic, partitions, 1)])  # explicitly: Tansu auto-creates 4


def produce(bootstrap, topic, partitions, count, **config):
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, **config})
    written = {}
    for p in range(partitions):
        for i in range(count):
            record = (b"k%d" % i, b"v%d-%d" % (p, i), [("h", b"%d" % i)], 1_700_000_000_000 + i)
            producer.produce(topic, record[1], record[0], partition=p, headers=record[2], timestamp=record[3])
            written[(p, i)] = record
    assert producer.flush(DEADLINE) == 0
    return written


def poll_until(consumers, done, got):
    deadline = time.monotonic() + DEADLINE
    while not done():
        assert time.monotonic() < deadline, "timed out"
        for c in consumers:
            got.setdefault(c, []).extend(c.poll(0.05))
    return got


def test_assigned_partitions_read_byte_equal_and_seek(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "t-assign", 2)
    written = produce(bootstrap, "t-assign", 2, 30)
    tp0 = TopicPartition("t-assign", 0)
    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", fetch_max_wait_ms=100) as c:
        c.assign([tp0, TopicPartition("t-assign", 1)])
        seen: dict = {}
        got = poll_until([c], lambda: len(seen.get(c, [])) >= 60, seen)[c]
        assert {(r.partition, r.offset): (r.key, r.value, list(r.headers), r.timestamp) for r in got} == written
        assert c.beginning_offsets([tp0]) == {tp0: 0}
        assert c.end_offsets([tp0])[tp0] >= 1  # Tansu: the last batch's base offset + 1
        c.seek(tp0, 25)
        seen = {}
        again = poll_until([c], lambda: len(seen.get(c, [])) >= 5, seen)[c]
        assert [r.offset for r in again] == [25, 26, 27, 28, 29]


def test_a_group_shares_partitions_commits_and_hands_over(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "t-group", 4)
    produce(bootstrap, "t-group", 4, 20)
    a = Consumer(bootstrap_servers=bootstrap, group_id="t-g", max_poll_records=5, **GROUP)
    b = Consumer(bootstrap_servers=bootstrap, group_id="t-g", max_poll_records=5, **GROUP)
    got = {}
    try:
        a.subscribe(["t-group"])
        poll_until([a], lambda: len(a.assignment()) == 4, got)
        b.subscribe(["t-group"])
        poll_until([a, b], lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, got)
        poll_until([a, b], lambda: sum(map(len, got.values())) >= 40, got)
        a.close()  # commits and leaves: b takes its partitions from where a was
        poll_until([b], lambda: len(b.assignment()) == 4 and sum(map(len, got.values())) >= 80, got)
        b.commit()
        assert all(o.offset == 20 for o in b.committed(b.assignment()).values())
    finally:
        a.close()
        b.close()
    records = sorted((r.partition, r.offset) for rs in got.values() for r in rs)
    assert records == [(p, i) for p in range(4) for i in range(20)]


def test_read_committed_skips_transaction_markers(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "t-txn", 1)
    producer = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": "t-txn-producer"})
    producer.init_transactions(DEADLINE)
    for outcome in ("abort", "commit"):
        producer.begin_transaction()
        for i in range(3):
            producer.produce("t-txn", b"%s-%d" % (outcome.encode(), i), partition=0)
        getattr(producer, f"{outcome}_transaction")(DEADLINE)
    tp = TopicPartition("t-txn", 0)
    for level in ("read_committed", "read_uncommitted"):
        with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", isolation_level=level) as c:
            c.assign([tp])
            seen: dict = {}
            got = poll_until([c], lambda c=c, seen=seen: len(seen.get(c, [])) >= 3, seen)[c]
            assert [r.value for r in got] == [b"commit-0", b"commit-1", b"commit-2"]  # Tansu kept no aborted records
            last = got[-1].offset
            poll_until([c], lambda c=c, last=last: c.position(tp) > last + 1, {})  # past the COMMIT marker
