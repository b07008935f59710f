"""kproto's clients against Tansu, a Kafka-compatible broker by others: the core scenarios of
the producer, consumer and admin tests (which run them against minibroker), on one Tansu.

Peers' clients (confluent-kafka, kafka-python) read what kproto wrote and write what it
reads, so a scenario that passes here is right by someone else's reading of Kafka, not
only by ours. Every test makes its own topics, explicitly (Tansu auto-creates 4 partitions).

Tansu 0.6.0's gaps met here (``shared/reference/tansu-notes.md``, and more found here),
each checked with a peer's client against the same Tansu before being blamed on it; the
test that meets one says so where it does, and skips or xfails only that case:

- it holds a group join for half the session timeout (never less than about 1 s), so group
  members here use short sessions, and tests that only need a group's offsets use assign();
- ListOffsets "latest" is the last batch's base offset + 1, wrong after a batch of several
  records (:func:`test_end_offsets_after_a_batch_of_several_records`); tests that need the
  end exactly make the last batch a single record;
- an aborted transaction leaves neither records nor an ABORT marker in the log, so
  read_committed is left only COMMIT markers to skip;
- strict xfails, one per gap: a commit's metadata is dropped; CreatePartitions,
  AlterConfigs and OffsetDelete are not offered; DescribeGroups leaves out the protocol and
  the members' details; OffsetFetch v2-v7 for all topics gets a malformed answer;
  DeleteRecords closes the connection.
"""

import asyncio
import time
from contextlib import contextmanager

import pytest

from kproto.admin import AdminClient, AIOAdminClient, ConfigResource, NewTopic
from kproto.codec import read_batches
from kproto.compression import codec_id
from kproto.consumer import AIOConsumer, Consumer, NoOffsetForPartitionError
from kproto.errors import (
    KafkaConnectionError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from kproto.producer import AIOProducer, Producer
from kproto.protocol import ApiKey
from kproto.protocol.messages import FetchRequest
from kproto.structs import OffsetAndMetadata, TopicPartition
from tests.support.leaks import nothing_left_behind  # noqa: F401  (autouse)
from tests.support.raw_client import RawClient

ck = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")


DEADLINE = 20  # seconds: a bound on waiting, never a sleep
T0 = 1_700_000_000_000
# Tansu holds a join for half the session timeout: short sessions keep rebalances quick.
GROUP = {"session_timeout_ms": 2000, "heartbeat_interval_ms": 200, "auto_offset_reset": "earliest",
         "fetch_max_wait_ms": 100}


# -- helpers -----------------------------------------------------------------------------------

def create(bootstrap, topic, partitions=1, **configs):
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic(topic, partitions, 1, configs)])


def records(count, stamp=T0):
    """(key, value, timestamp, headers) with null keys, null values, null header values."""
    return [(b"k%d" % i if i % 3 else None, b"v%d" % i if i % 4 else None, stamp + i,
             [("h", b"x%d" % i), ("empty", None)] if i % 2 else []) for i in range(count)]


@contextmanager
def peer_producer(bootstrap, **config):
    """A confluent-kafka producer, flushed and closed when the block ends."""
    producer = ck.Producer({"bootstrap.servers": bootstrap, **config})
    try:
        yield producer
        assert producer.flush(DEADLINE) == 0
    finally:
        producer.close()


def produce(bootstrap, topic, partitions, count, **config):
    """confluent-kafka writes ``count`` records to each partition; returns them by (partition, offset)."""
    written = {}
    with peer_producer(bootstrap, **{"linger.ms": 2, **config}) as producer:
        for p in range(partitions):
            for i in range(count):
                record = (b"k%d" % i, b"v%d-%d" % (p, i), [("h", b"%d" % i)], T0 + i)
                producer.produce(topic, record[1], record[0], partition=p, headers=record[2], timestamp=record[3])
                written[(p, i)] = record
    return written


def produce_one(bootstrap, topic, partition, value):
    """One record in a batch of its own (after it Tansu's "latest" offset is right again)."""
    with peer_producer(bootstrap) as producer:
        producer.produce(topic, value, partition=partition)


def read_confluent(bootstrap, topic, count, partition=0):
    """(key, value, timestamp, headers) of the first ``count`` records, as confluent-kafka reads them."""
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "tansu-check", "enable.auto.commit": False,
                            "fetch.wait.max.ms": 100})
    out = []
    try:
        consumer.assign([ck.TopicPartition(topic, partition, ck.OFFSET_BEGINNING)])
        deadline = time.monotonic() + DEADLINE
        while len(out) < count:
            assert time.monotonic() < deadline, f"confluent-kafka read {len(out)} of {count}"
            for m in consumer.consume(count - len(out), 0.2):
                assert m.error() is None, m.error()
                out.append((m.key(), m.value(), m.timestamp()[1], m.headers() or []))
    finally:
        consumer.close()
    return out


def read_kafka_python(bootstrap, topic, count, partition=0):
    """The same, as kafka-python reads them."""
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=100,
                                   consumer_timeout_ms=DEADLINE * 1000)
    try:
        tp = kafka.TopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        out = []
        for m in consumer:
            out.append((m.key, m.value, m.timestamp, list(m.headers)))
            if len(out) == count:
                break
        return out
    finally:
        consumer.close()


def raw_batches(tansu, topic, partition=0):
    """The record batches Tansu stores, as it serves them to a plain Fetch."""
    client = RawClient(tansu.port)
    try:
        response = client.request(ApiKey.FETCH, 12, FetchRequest(
            max_wait_ms=200, min_bytes=1, max_bytes=1 << 20, topics=[FetchRequest.FetchTopic(
                topic=topic, partitions=[FetchRequest.FetchPartition(
                    partition=partition, fetch_offset=0, partition_max_bytes=1 << 20)])]))
    finally:
        client.sock.close()
    p = response.responses[0].partitions[0]
    assert p.error_code == 0
    return list(read_batches(p.records or b""))


def poll_records(consumer, count):
    """Poll until ``count`` records came (or more, if a poll brought them)."""
    got = []
    deadline = time.monotonic() + DEADLINE
    while len(got) < count:
        assert time.monotonic() < deadline, f"polled {len(got)} of {count} records"
        got.extend(consumer.poll(0.05))
    return got


def poll_until(consumers, done, got=None):
    """Poll every consumer until ``done()``; returns {consumer: [records]}."""
    got = {} if got is None else got
    deadline = time.monotonic() + DEADLINE
    while not done():
        assert time.monotonic() < deadline, "timed out"
        for c in consumers:
            got.setdefault(c, []).extend(c.poll(0.05))
    return got


# -- producer ----------------------------------------------------------------------------------

def test_records_reach_both_peers_byte_equal(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "p-rt")
    sent = records(30)
    with Producer(bootstrap_servers=bootstrap) as producer:
        futures = [producer.send("p-rt", v, k, partition=0, timestamp_ms=ts, headers=h) for k, v, ts, h in sent]
        producer.flush(DEADLINE)
        metadata = [f.result(0) for f in futures]
    assert [(m.topic, m.partition, m.offset, m.timestamp) for m in metadata] == [
        ("p-rt", 0, i, ts) for i, (_, _, ts, _) in enumerate(sent)]
    assert read_kafka_python(bootstrap, "p-rt", 30) == sent
    assert read_confluent(bootstrap, "p-rt", 30) == sent


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_both_ways(tansu_broker, codec):
    """kproto compresses and confluent-kafka reads; confluent-kafka compresses and kproto reads."""
    bootstrap = tansu_broker.bootstrap_servers
    ours, theirs = f"z-{codec}-kproto", f"z-{codec}-confluent"
    create(bootstrap, ours)
    create(bootstrap, theirs)
    sent = [(b"k%d" % i, b"value %d " % i * 20, T0 + i, [("codec", codec.encode())]) for i in range(40)]
    with Producer(bootstrap_servers=bootstrap, compression_type=codec, linger_ms=20) as producer:
        for k, v, ts, h in sent:
            producer.send(ours, v, k, partition=0, timestamp_ms=ts, headers=h)
        producer.flush(DEADLINE)
    assert {b.compression for b in raw_batches(tansu_broker, ours)} == {codec_id(codec)}
    assert read_confluent(bootstrap, ours, 40) == sent

    with peer_producer(bootstrap, **{"compression.type": codec, "linger.ms": 20}) as peer:
        for k, v, ts, h in sent:
            peer.produce(theirs, v, k, partition=0, timestamp=ts, headers=h)
    assert {b.compression for b in raw_batches(tansu_broker, theirs)} == {codec_id(codec)}
    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", fetch_max_wait_ms=100) as c:
        c.assign([TopicPartition(theirs, 0)])
        got = poll_records(c, 40)
    assert [(r.key, r.value, r.timestamp, list(r.headers)) for r in got] == sent


def test_keys_land_where_librdkafkas_murmur2_puts_them(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "p-keyed", 6)
    keys = [b"user-%d" % i for i in range(100)] + [b"", "ünïcode".encode(), bytes(range(256))]
    with Producer(bootstrap_servers=bootstrap) as producer:
        futures = [producer.send("p-keyed", b"x", key) for key in keys]
        producer.flush(DEADLINE)
        ours = [f.result(0).partition for f in futures]
    theirs = {}
    with peer_producer(bootstrap, partitioner="murmur2_random") as peer:
        for key in keys:
            peer.produce("p-keyed", b"x", key, on_delivery=lambda err, msg: theirs.__setitem__(msg.key(), msg.partition()))
    assert ours == [theirs[k] for k in keys] and len(set(ours)) == 6


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_acks(tansu_broker, acks):
    bootstrap = tansu_broker.bootstrap_servers
    topic = f"p-acks-{acks}"
    create(bootstrap, topic)
    with Producer(bootstrap_servers=bootstrap, acks=acks) as producer:
        assert producer._core.idempotent == (acks == "all")  # Java turns implicit idempotence off
        futures = [producer.send(topic, b"v%d" % i, partition=0) for i in range(10)]
        producer.flush(DEADLINE)
        offsets = [f.result(0).offset for f in futures]
    assert offsets == ([-1] * 10 if acks == "0" else list(range(10)))  # acks=0: no answer, no offsets
    assert [v for _, v, _, _ in read_kafka_python(bootstrap, topic, 10)] == [b"v%d" % i for i in range(10)]


def test_idempotent_batches_carry_a_producer_id_and_sequences(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "p-idem", 2)
    with Producer(bootstrap_servers=bootstrap, batch_size=200, linger_ms=0) as producer:
        assert producer._core.idempotent
        futures = [producer.send("p-idem", b"%030d" % i, partition=i % 2) for i in range(60)]
        producer.flush(DEADLINE)
        assert [f.result(0).offset for f in futures] == [i // 2 for i in range(60)]
    for partition in (0, 1):
        batches = raw_batches(tansu_broker, "p-idem", partition)
        assert len(batches) > 3 and len({(b.producer_id, b.producer_epoch) for b in batches}) == 1
        assert batches[0].producer_id >= 0
        expected = 0
        for b in batches:  # sequences run on per partition, batch after batch
            assert b.base_sequence == expected
            expected += b.records_count
        assert expected == 30
    values = [v for _, v, _, _ in read_confluent(bootstrap, "p-idem", 30, partition=1)]
    assert values == [b"%030d" % i for i in range(1, 60, 2)]


def test_async_producer_sends_flushes_and_reports(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "p-aio", 2)
    delivered = []

    async def run():
        async with AIOProducer(bootstrap_servers=bootstrap) as producer:
            first = await producer.send("p-aio", b"first", b"k", partition=0, timestamp_ms=T0, headers=[("h", b"1")])
            assert (first.partition, first.offset, first.timestamp) == (0, 0, T0)
            for i in range(20):
                producer.send("p-aio", b"v%d" % i, partition=1, on_delivery=lambda err, md: delivered.append((err, md)))
            await producer.flush(DEADLINE)
            assert [(err, md.offset) for err, md in delivered] == [(None, i) for i in range(20)]
            assert await producer.partitions_for("p-aio") == [0, 1]
        assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []

    asyncio.run(run())
    assert read_confluent(bootstrap, "p-aio", 1) == [(b"k", b"first", T0, [("h", b"1")])]
    assert [v for _, v, _, _ in read_confluent(bootstrap, "p-aio", 20, partition=1)] == [b"v%d" % i for i in range(20)]


# -- consumer ----------------------------------------------------------------------------------

def test_assigned_partitions_read_byte_equal_seek_pause_resume(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "c-assign", 2)
    written = produce(bootstrap, "c-assign", 2, 30)
    tp0, tp1 = TopicPartition("c-assign", 0), TopicPartition("c-assign", 1)
    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", fetch_max_wait_ms=100) as c:
        c.assign([tp0, tp1])
        assert c.position(tp0) == 0
        got = poll_records(c, 60)
        assert {(r.partition, r.offset): (r.key, r.value, list(r.headers), r.timestamp) for r in got} == written
        assert c.position(tp0) == c.position(tp1) == 30
        produce_one(bootstrap, "c-assign", 0, b"last")  # a batch of one: Tansu's "latest" is right after it
        assert c.beginning_offsets([tp0]) == {tp0: 0}
        assert c.end_offsets([tp0]) == {tp0: 31}

        c.pause([tp0])
        assert c.paused() == {tp0}
        produce_one(bootstrap, "c-assign", 1, b"while paused")
        got = poll_records(c, 1)
        assert [(r.partition, r.value) for r in got] == [(1, b"while paused")]  # nothing of tp0
        c.resume([tp0])
        got = poll_records(c, 1)
        assert [(r.partition, r.offset, r.value) for r in got] == [(0, 30, b"last")]

        c.seek(tp0, 25)
        assert c.position(tp0) == 25
        got = poll_records(c, 6)
        assert [r.offset for r in got] == [25, 26, 27, 28, 29, 30]
        c.seek_to_beginning([tp1])
        got = poll_records(c, 1)
        assert (got[0].partition, got[0].offset) == (1, 0)


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="Tansu 0.6.0: ListOffsets latest answers the last batch's base offset + 1, "
                          "not the high watermark; kafka-python's end_offsets gets the same")
def test_end_offsets_after_a_batch_of_several_records(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "c-end", 1)
    produce(bootstrap, "c-end", 1, 10)  # one batch of 10 (linger.ms=2)
    tp = TopicPartition("c-end", 0)
    with Consumer(bootstrap_servers=bootstrap) as c:
        assert c.end_offsets([tp]) == {tp: 10}


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "cooperative-sticky"])
def test_a_group_of_two_splits_commits_and_hands_over(tansu_broker, strategy):
    bootstrap = tansu_broker.bootstrap_servers
    topic = f"c-group-{strategy}"
    create(bootstrap, topic, 4)
    produce(bootstrap, topic, 4, 20)
    revoked = {"a": [], "b": []}
    config = dict(GROUP, group_id=f"g-{strategy}", max_poll_records=5, partition_assignment_strategy=strategy)
    a, b = Consumer(**config, bootstrap_servers=bootstrap), Consumer(**config, bootstrap_servers=bootstrap)
    got = {}
    try:
        a.subscribe([topic], on_revoke=lambda c, ps: revoked["a"].append(sorted(p.partition for p in ps)))
        poll_until([a], lambda: len(a.assignment()) == 4, got)
        b.subscribe([topic], on_revoke=lambda c, ps: revoked["b"].append(sorted(p.partition for p in ps)))
        poll_until([a, b], lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, got)
        split = {"range": ({0, 1}, {2, 3}), "roundrobin": ({0, 2}, {1, 3})}.get(strategy)
        if split:
            assert {frozenset(p.partition for p in c.assignment()) for c in (a, b)} == set(map(frozenset, split))
        # Eager assignors revoke everything before a rebalance; cooperative-sticky only what moves.
        assert len(revoked["a"][0]) == (2 if strategy == "cooperative-sticky" else 4)
        poll_until([a, b], lambda: sum(map(len, got.values())) >= 40, got)
        a.close()  # commits what it consumed and leaves: b goes on from there
        poll_until([b], lambda: len(b.assignment()) == 4 and sum(map(len, got.values())) >= 80, got)
        b.commit()
        assert {tp.partition: o.offset for tp, o in b.committed(b.assignment()).items()} == {p: 20 for p in range(4)}
    finally:
        a.close()
        b.close()
    seen = sorted((r.partition, r.offset) for rs in got.values() for r in rs)
    assert seen == [(p, i) for p in range(4) for i in range(20)]  # each once: nothing re-read


def test_commit_async_reports_and_a_successor_resumes(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "c-commits", 2)
    produce(bootstrap, "c-commits", 2, 10)
    tp0, tp1 = TopicPartition("c-commits", 0), TopicPartition("c-commits", 1)
    results = []
    with Consumer(bootstrap_servers=bootstrap, group_id="g-commits", enable_auto_commit=False, **GROUP) as c:
        c.subscribe(["c-commits"])
        poll_until([c], lambda: len(c.assignment()) == 2 and c.position(tp0) == c.position(tp1) == 10)
        c.commit({tp0: 4})
        assert c.committed([tp0]) == {tp0: OffsetAndMetadata(4)}
        c.commit_async({tp1: 7}, callback=lambda offsets, error: results.append((offsets, error)))
        poll_until([c], lambda: results)
        assert results == [({tp1: OffsetAndMetadata(7)}, None)]
        assert c.committed([tp0, tp1]) == {tp0: OffsetAndMetadata(4), tp1: OffsetAndMetadata(7)}
    with Consumer(bootstrap_servers=bootstrap, group_id="g-commits", **GROUP) as again:
        again.assign([tp0, tp1])  # positions from the group's commits
        got = poll_records(again, 9)
        assert sorted((r.partition, r.offset) for r in got) == [(0, o) for o in range(4, 10)] + [(1, 7), (1, 8), (1, 9)]


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="Tansu 0.6.0 drops a commit's metadata (OffsetFetch answers it empty); "
                          "kafka-python's committed(metadata=True) gets None the same way")
def test_commit_metadata_is_kept(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "c-metadata", 1)
    tp = TopicPartition("c-metadata", 0)
    with Consumer(bootstrap_servers=bootstrap, group_id="g-metadata", **GROUP) as c:
        c.commit({tp: OffsetAndMetadata(4, "four")})
        assert c.committed([tp]) == {tp: OffsetAndMetadata(4, "four")}


@pytest.mark.parametrize("reset", ["earliest", "latest", "none"])
def test_auto_offset_reset(tansu_broker, reset):
    bootstrap = tansu_broker.bootstrap_servers
    topic = f"c-reset-{reset}"
    create(bootstrap, topic)
    produce(bootstrap, topic, 1, 5)
    produce_one(bootstrap, topic, 0, b"fifth")  # Tansu's "latest" is right after a batch of one
    tp = TopicPartition(topic, 0)
    with Consumer(bootstrap_servers=bootstrap, group_id=f"g-reset-{reset}", auto_offset_reset=reset,
                  fetch_max_wait_ms=100, session_timeout_ms=2000) as c:
        c.assign([tp])  # the group has no committed offset: the reset policy decides
        if reset == "none":
            with pytest.raises(NoOffsetForPartitionError):
                c.poll(DEADLINE)
            return
        assert c.position(tp) == {"earliest": 0, "latest": 6}[reset]
        produce_one(bootstrap, topic, 0, b"sixth")
        got = poll_records(c, 7 if reset == "earliest" else 1)
        assert [r.offset for r in got] == (list(range(7)) if reset == "earliest" else [6])


def test_async_consumer_iterates_in_a_group_and_commits(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "c-aio", 2)
    written = produce(bootstrap, "c-aio", 2, 15)

    async def run():
        async with AIOConsumer(bootstrap_servers=bootstrap, group_id="g-aio", enable_auto_commit=False,
                               **GROUP) as consumer:
            consumer.subscribe(["c-aio"])
            seen = {}
            async with asyncio.timeout(DEADLINE):
                async for r in consumer:
                    seen[(r.partition, r.offset)] = (r.key, r.value, list(r.headers), r.timestamp)
                    if len(seen) == 30:
                        break
            assert seen == written
            await consumer.commit()
            committed = await consumer.committed([TopicPartition("c-aio", 0), TopicPartition("c-aio", 1)])
            assert {tp.partition: o.offset for tp, o in committed.items()} == {0: 15, 1: 15}
        assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []

    asyncio.run(run())


def test_read_committed_skips_transaction_markers(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "c-txn", 1)
    with peer_producer(bootstrap, **{"transactional.id": "c-txn-producer"}) as producer:
        producer.init_transactions(DEADLINE)
        for outcome in ("abort", "commit"):
            producer.begin_transaction()
            for i in range(3):
                producer.produce("c-txn", b"%s-%d" % (outcome.encode(), i), partition=0)
            getattr(producer, f"{outcome}_transaction")(DEADLINE)
    tp = TopicPartition("c-txn", 0)
    for level in ("read_committed", "read_uncommitted"):
        with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", isolation_level=level,
                      fetch_max_wait_ms=100) as c:
            c.assign([tp])
            got = poll_records(c, 3)
            assert [r.value for r in got] == [b"commit-0", b"commit-1", b"commit-2"]  # Tansu kept no aborted records
            last = got[-1].offset
            poll_until([c], lambda c=c, last=last: c.position(tp) > last + 1)  # past the COMMIT marker


# -- admin -------------------------------------------------------------------------------------

def test_admin_topics(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        ids = admin.create_topics([NewTopic("a-topic", 2, 1, {"retention.ms": "3600000"}), NewTopic("a-other", 1, 1)])
        assert set(ids) == {"a-topic", "a-other"} and all(ids.values())
        with pytest.raises(TopicAlreadyExistsError) as raised:
            admin.create_topics([NewTopic("a-topic", 2, 1)])
        assert isinstance(raised.value.results["a-topic"], TopicAlreadyExistsError)
        assert {"a-topic", "a-other"} <= set(admin.list_topics())
        described = admin.describe_topics(["a-topic"])["a-topic"]
        assert described.topic_id == ids["a-topic"] and not described.is_internal
        assert [(p.partition, p.leader) for p in described.partitions] == [(0, 111), (1, 111)]  # Tansu is node 111
        assert admin.delete_topics(["a-other"]) == {"a-other": None}
        topics = admin.list_topics()
        assert "a-other" not in topics and "a-topic" in topics
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.describe_topics(["a-other"])
    peer = kafka.KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        assert "a-topic" in peer.list_topics() and "a-other" not in peer.list_topics()
    finally:
        peer.close()


@pytest.mark.xfail(strict=True, raises=UnsupportedVersionError,
                   reason="Tansu 0.6.0 has no CreatePartitions (not in its ApiVersions); confluent-kafka gets "
                          "_UNSUPPORTED_FEATURE and kafka-python IncompatibleBrokerVersion the same way")
def test_admin_create_partitions(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "a-grow", 2)
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        assert admin.create_partitions({"a-grow": 4}) == {"a-grow": None}
        assert len(admin.describe_topics(["a-grow"])["a-grow"].partitions) == 4


def test_admin_describe_and_incremental_alter_configs(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "a-configs", 1, **{"retention.ms": "3600000"})
    topic = ConfigResource.topic("a-configs")
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        entries = admin.describe_configs([topic])[topic]
        assert entries["retention.ms"].value == "3600000"
        changes = [("retention.ms", "set", "60000"), ("cleanup.policy", "set", "compact")]
        assert admin.incremental_alter_configs({topic: changes}) == {topic: None}
        entries = admin.describe_configs([topic])[topic]
        assert (entries["retention.ms"].value, entries["cleanup.policy"].value) == ("60000", "compact")


@pytest.mark.xfail(strict=True, raises=UnsupportedVersionError,
                   reason="Tansu 0.6.0 has no AlterConfigs (not in its ApiVersions; IncrementalAlterConfigs "
                          "works); confluent-kafka's alter_configs gets _UNSUPPORTED_FEATURE the same way")
def test_admin_alter_configs(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "a-alter", 1)
    topic = ConfigResource.topic("a-alter")
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        assert admin.alter_configs({topic: {"retention.ms": "7200000"}}) == {topic: None}
        assert admin.describe_configs([topic])[topic]["retention.ms"].value == "7200000"


def test_admin_groups_and_their_offsets(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "a-groups", 2)
    produce(bootstrap, "a-groups", 2, 5)
    tp0, tp1 = TopicPartition("a-groups", 0), TopicPartition("a-groups", 1)
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        with Consumer(bootstrap_servers=bootstrap, group_id="a-live", **GROUP) as member:
            member.subscribe(["a-groups"])
            poll_until([member], lambda: len(member.assignment()) == 2 and member.position(tp1) == 5)
            member.commit()
            assert ("a-live", "consumer") in {(g.group_id, g.protocol_type) for g in admin.list_groups()}
            described = admin.describe_groups(["a-live"])["a-live"]
            assert (described.state, described.protocol_type) == ("Stable", "consumer")
            assert [m.member_id for m in described.members] == [member._core._membership.member_id]
        assert admin.list_group_offsets("a-live", [tp0, tp1]) == {tp0: OffsetAndMetadata(5), tp1: OffsetAndMetadata(5)}
        assert admin.alter_group_offsets("a-live", {tp0: 2}) == {tp0: None}
        assert admin.list_group_offsets("a-live", [tp0, tp1]) == {tp0: OffsetAndMetadata(2), tp1: OffsetAndMetadata(5)}
        assert admin.delete_groups(["a-live"]) == {"a-live": None}
        assert "a-live" not in {g.group_id for g in admin.list_groups()}
    with Consumer(bootstrap_servers=bootstrap, group_id="a-live", **GROUP) as successor:
        successor.assign([tp0, tp1])  # the group and its offsets are gone: auto.offset.reset (earliest)
        assert sorted((r.partition, r.offset) for r in poll_records(successor, 10)) == [
            (p, o) for p in (0, 1) for o in range(5)]


def test_admin_list_all_group_offsets(tansu_broker):
    """Through OffsetFetch v8+ (by groups): Tansu 0.6.0 truncates its v2-v7 answer for all topics."""
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "a-all", 2)
    tp0, tp1 = TopicPartition("a-all", 0), TopicPartition("a-all", 1)
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.alter_group_offsets("a-all", {tp0: 0, tp1: 0})
        assert admin.list_group_offsets("a-all") == {tp0: OffsetAndMetadata(0), tp1: OffsetAndMetadata(0)}


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="Tansu 0.6.0 answers DescribeGroups with an empty protocol and members "
                          "without client id, host, metadata or assignment (v0 and v5 alike); "
                          "confluent-kafka's describe_consumer_groups sees no members at all")
def test_admin_describe_groups_names_protocol_and_assignment(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "a-describe", 1)
    with AdminClient(bootstrap_servers=bootstrap) as admin, \
            Consumer(bootstrap_servers=bootstrap, group_id="a-describe", client_id="describer",
                     partition_assignment_strategy="range", **GROUP) as member:
        member.subscribe(["a-describe"])
        poll_until([member], lambda: bool(member.assignment()))
        described = admin.describe_groups(["a-describe"])["a-describe"]
        assert described.protocol == "range"
        assert [(m.client_id, bool(m.metadata), bool(m.assignment)) for m in described.members] == [
            ("describer", True, True)]


@pytest.mark.xfail(strict=True, raises=UnsupportedVersionError,
                   reason="Tansu 0.6.0 has no OffsetDelete (API 47, not in its ApiVersions)")
def test_admin_delete_group_offsets(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "a-offdel", 2)
    tp0, tp1 = TopicPartition("a-offdel", 0), TopicPartition("a-offdel", 1)
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.alter_group_offsets("a-offdel", {tp0: 0, tp1: 0})
        assert admin.delete_group_offsets("a-offdel", [tp1]) == {tp1: None}
        assert admin.list_group_offsets("a-offdel", [tp1])[tp1].offset == -1


def test_admin_list_offsets_and_describe_cluster(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "a-offsets", 1)
    for i in range(6):
        produce_one(bootstrap, "a-offsets", 0, b"v%d" % i)  # batches of one: Tansu's "latest" is right
    tp = TopicPartition("a-offsets", 0)

    async def run():  # the asyncio face, as the other admin tests use the sync one
        async with AIOAdminClient(bootstrap_servers=bootstrap) as admin:
            assert (await admin.list_offsets({tp: "earliest"}))[tp].offset == 0
            assert (await admin.list_offsets({tp: "latest"}))[tp].offset == 6
            cluster = await admin.describe_cluster()
            assert [(b.node_id, b.host, b.port) for b in cluster.brokers] == [(111, "127.0.0.1", tansu_broker.port)]
            assert cluster.controller_id == 111 and cluster.cluster_id
        assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []

    asyncio.run(run())


@pytest.mark.xfail(strict=True, raises=KafkaConnectionError,
                   reason="Tansu 0.6.0 offers DeleteRecords v0-2 but closes the connection on one; "
                          "confluent-kafka (transport failure) and kafka-python (socket disconnected) alike")
def test_admin_delete_records(tansu_broker):
    bootstrap = tansu_broker.bootstrap_servers
    create(bootstrap, "a-delete", 1)
    for i in range(6):
        produce_one(bootstrap, "a-delete", 0, b"v%d" % i)
    tp = TopicPartition("a-delete", 0)
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        assert admin.delete_records({tp: 4}) == {tp: 4}
        assert admin.list_offsets({tp: "earliest"})[tp].offset == 4
    assert [v for _, v, _, _ in read_confluent(bootstrap, "a-delete", 2)] == [b"v4", b"v5"]
