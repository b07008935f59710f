"""The consumer's fetching as seen on the wire, through the fault proxy (tests/support/proxy.py):
fetches are pipelined (the next response per partition is already buffered while the
application holds what poll returned, and no more than that), ``max.partition.fetch.bytes``
is sent and honoured, and ``isolation.level`` against a broker's transactional log —
crafted here as Kafka would answer, edge cases included (tests/minibroker/txn reads real ones) — returns what
it promises: read_committed skips aborted data and every control batch; read_uncommitted
returns aborted data but no control batch either."""

import threading
import time

import pytest

from kproto.admin import AdminClient, NewTopic
from kproto.consumer import Consumer
from kproto.errors import CorruptRecordError
from kproto.producer import Producer
from kproto.protocol import ApiKey
from kproto.protocol.messages import FetchResponse
from kproto.records import BatchBuilder, ControlType, build_control_batch, read_batches
from kproto.structs import TopicPartition
from tests.support.proxy import FORWARD, Edit, FaultProxy, Later

ck = pytest.importorskip("confluent_kafka")

DEADLINE = 15


def wait_for(condition, timeout=DEADLINE):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


# -- pipelining and max.partition.fetch.bytes --------------------------------------------------------

class FetchLog:
    """A proxy rule forwarding everything and noting each Fetch and its response's partitions."""

    def __init__(self):
        self.requests = []  # [(isolation_level, [(partition, fetch_offset, partition_max_bytes)])]
        self.responses = []  # [{partition: (bytes, [(base offset, next offset)])}] of those with records
        self.lock = threading.Lock()

    def __call__(self, api_key, version, request, n):
        if api_key != ApiKey.FETCH:
            return FORWARD
        with self.lock:
            self.requests.append((request.isolation_level, [(p.partition, p.fetch_offset, p.partition_max_bytes)
                                                            for t in request.topics for p in t.partitions]))
        return Edit(self._note)

    def _note(self, response):
        data = {p.partition_index: (len(p.records), [(b.base_offset, b.next_offset) for b in read_batches(p.records)])
                for t in response.responses for p in t.partitions if p.records}
        if data:
            with self.lock:
                self.responses.append(data)
        return response

    def answered(self, partition):
        """Responses that held records of ``partition``, in order."""
        with self.lock:
            return [r[partition] for r in self.responses if partition in r]


def test_the_next_fetch_is_buffered_while_the_application_holds_records_and_sizes_are_honoured():
    limit = 3000  # max.partition.fetch.bytes: about 3 batches of 10 records of 100 B
    rule = FetchLog()
    with FaultProxy(rule) as proxy:
        bs = proxy.bootstrap_servers
        with AdminClient(bootstrap_servers=bs) as admin:
            admin.create_topics([NewTopic("ahead", 2)])
        producer = ck.Producer({"bootstrap.servers": bs, "linger.ms": 20, "batch.num.messages": 10})
        for i in range(150):
            producer.produce("ahead", b"%099d" % i, partition=0)
            producer.produce("ahead", b"%099d" % i, partition=1)
            if i == 70:  # one batch larger than the limit: it comes whole when first in a response
                assert producer.flush(DEADLINE) == 0
                producer.produce("ahead", b"x" * (2 * limit), partition=1)
                assert producer.flush(DEADLINE) == 0
        assert producer.flush(DEADLINE) == 0
        del producer
        ends = {0: 150, 1: 151}
        with Consumer(bootstrap_servers=bs, max_partition_fetch_bytes=limit, max_poll_records=10,
                      fetch_max_wait_ms=100) as consumer:
            consumer.assign([TopicPartition("ahead", 0), TopicPartition("ahead", 1)])
            for p in (0, 1):
                consumer.seek(TopicPartition("ahead", p), 0)
            held = consumer.poll(DEADLINE)
            assert held and held[0].offset == 0
            # Without another poll: each partition's next response arrives (one read ahead:
            # one being drained, one more buffered), and then nothing more is fetched.
            wait_for(lambda: len(rule.answered(0)) >= 2 and len(rule.answered(1)) >= 2)
            time.sleep(0.3)
            assert len(rule.answered(0)) == len(rule.answered(1)) == 2
            fetches = len(rule.requests)
            for p in (0, 1):
                first, second = rule.answered(p)
                assert second[1][0][0] == first[1][-1][1]  # it starts where the first ended
            got, deadline = list(held), time.monotonic() + DEADLINE
            while len(got) < sum(ends.values()):
                assert time.monotonic() < deadline, "timed out"
                got += consumer.poll(0.5)
            assert len(rule.requests) > fetches
    for p, end in ends.items():
        assert [r.offset for r in got if r.partition == p] == list(range(end))
    assert {max_bytes for _, partitions in rule.requests for _, _, max_bytes in partitions} == {limit}
    sizes = [(size, len(batches)) for r in rule.responses for size, batches in r.values()]
    assert all(size <= limit or batches == 1 for size, batches in sizes), sizes
    assert any(size > limit for size, _ in sizes)  # the large batch came, alone


# -- routing errors --------------------------------------------------------------------------------

@pytest.mark.parametrize("code", [6, 3], ids=["NOT_LEADER_OR_FOLLOWER", "UNKNOWN_TOPIC_OR_PARTITION"])
def test_a_fetch_answered_with_a_routing_error_refreshes_metadata_and_goes_on(code):
    """The partition moved (or its leader does not know it yet): the consumer asks for
    metadata again and keeps reading from where it was, losing and repeating nothing."""
    metadata_at_fault = []

    def fail(response):
        for t in response.responses:
            for p in t.partitions:
                p.error_code, p.records, p.high_watermark = code, None, -1
        return response

    def rule(api_key, version, request, n):
        if api_key == ApiKey.FETCH and n == 1:
            metadata_at_fault.append(proxy.counts.get(ApiKey.METADATA, 0))
            return Edit(fail)
        return FORWARD

    with FaultProxy(rule) as proxy:
        _produce(proxy.bootstrap_servers, "moved", 10)
        with _consumer_from_start(proxy.bootstrap_servers, "moved") as consumer:
            got, deadline = _poll_until(consumer, 10), time.monotonic() + DEADLINE
            # The refresh asked for may come after the retried fetch: both wait a backoff
            # (with jitter, KIP-580), so either may end first.
            while proxy.counts[ApiKey.METADATA] <= metadata_at_fault[0]:
                assert time.monotonic() < deadline, "no metadata refresh"
                got += consumer.poll(0.05)
        assert metadata_at_fault and proxy.counts[ApiKey.METADATA] > metadata_at_fault[0]
    assert [r.offset for r in got] == list(range(10))


def _produce(bootstrap_servers, topic, count):
    """``count`` records ``b"0"``, ``b"1"`` ... to partition 0 of ``topic`` (confluent-kafka)."""
    producer = ck.Producer({"bootstrap.servers": bootstrap_servers, "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, b"%d" % i, partition=0)
    assert producer.flush(DEADLINE) == 0


def _consumer_from_start(bootstrap_servers, topic):
    consumer = Consumer(bootstrap_servers=bootstrap_servers, fetch_max_wait_ms=100)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek(TopicPartition(topic, 0), 0)
    return consumer


def _poll_until(consumer, count):
    """Records polled until there are ``count`` (within DEADLINE)."""
    got, deadline = [], time.monotonic() + DEADLINE
    while len(got) < count:
        assert time.monotonic() < deadline, "timed out"
        got += consumer.poll(0.2)
    return got


def _failing_fetches(code, times):
    """A proxy rule answering the first ``times`` Fetches with ``code`` for every partition."""
    def fail(response):
        for t in response.responses:
            for p in t.partitions:
                p.error_code, p.records, p.high_watermark = code, None, -1
        return response

    def rule(api_key, version, request, n):
        if api_key == ApiKey.FETCH:
            rule.fetches.append(time.monotonic())
            if n <= times:
                return Edit(fail)
        return FORWARD
    rule.fetches = []
    return rule


def test_a_fetch_answered_unknown_leader_epoch_is_fetched_again():
    """Issue 12 (one Fetch owner, Java's AbstractFetch rules): UNKNOWN_LEADER_EPOCH (75)
    means the broker has not caught up with the leader epoch yet: fetch again after a
    backoff. It was raised from poll (the stale-metadata set had 76,
    UNSUPPORTED_COMPRESSION_TYPE, in its place)."""
    rule = _failing_fetches(75, 1)
    with FaultProxy(rule) as proxy:
        _produce(proxy.bootstrap_servers, "epoch", 5)
        with _consumer_from_start(proxy.bootstrap_servers, "epoch") as consumer:
            got = _poll_until(consumer, 5)
    assert [r.offset for r in got] == list(range(5))


def test_fetch_retries_back_off_exponentially():
    """Issue 12 (one backoff policy): a broker that keeps answering NOT_LEADER_OR_FOLLOWER
    is fetched from again after ``retry.backoff.ms`` doubling up to
    ``retry.backoff.max.ms`` (KIP-580), not every ``retry.backoff.ms``: over 1.5 s with
    50 ms doubling up to 1 s that is about 5 fetches (every 50 ms, about 25)."""
    rule = _failing_fetches(6, 1000)
    with FaultProxy(rule) as proxy:
        with Consumer(bootstrap_servers=proxy.bootstrap_servers, fetch_max_wait_ms=10,
                      retry_backoff_ms=50, retry_backoff_max_ms=1000) as consumer:
            consumer.assign([TopicPartition("backoff", 0)])
            consumer.seek(TopicPartition("backoff", 0), 0)
            wait_for(lambda: rule.fetches)
            end = rule.fetches[0] + 1.5
            while time.monotonic() < end:
                assert consumer.poll(0.1) == []
            fetches = [t for t in rule.fetches if t < end]
    assert 2 <= len(fetches) <= 12, [round(t - fetches[0], 3) for t in fetches]


# -- check.crcs ------------------------------------------------------------------------------------

def _changing_a_value(old, new):
    """A proxy rule forwarding everything, but writing ``new`` over the value ``old`` in every
    Fetch response that holds it: a byte changed on the way, the batch's CRC no longer its own."""
    def change(response):
        for t in response.responses:
            for p in t.partitions:
                if p.records and old in bytes(p.records):
                    p.records = bytes(p.records).replace(old, new)
        return response

    def rule(api_key, version, request, n):
        return Edit(change) if api_key == ApiKey.FETCH else FORWARD
    return rule


def _polls(consumer, arrow):
    if arrow:
        batch = consumer.poll_arrow(0.5)
        return [(o, bytes(v)) for o, v in zip(batch.column("offset").to_pylist(), batch.column("value").to_pylist())]
    return [(r.offset, r.value) for r in consumer.poll(0.5)]


@pytest.mark.parametrize("arrow", [False, True], ids=["poll", "poll_arrow"])
@pytest.mark.parametrize("check_crcs", [True, False])
def test_a_batch_changed_on_the_way_is_refused_by_its_crc_at_its_offset(arrow, check_crcs):
    """issue 16, poll_arrow lead 1: the CRCs are checked when poll first drains a response
    (after the next Fetch is written), no longer on arrival, and the application sees what it
    saw: with ``check.crcs`` (the default) the records of the batches before the changed one,
    then CorruptRecordError from every poll, the position left at the changed batch; without
    it, the changed record as it came. Three batches of 3 records (offsets 0-2, 3-5, 6-8), the
    proxy changing a value of the second."""
    with FaultProxy(_changing_a_value(b"value-4", b"value-X")) as proxy:
        bs = proxy.bootstrap_servers
        with Producer(bootstrap_servers=bs, linger_ms=60_000) as producer:
            for batch in range(3):
                for i in range(3 * batch, 3 * batch + 3):
                    producer.send("changed", b"value-%d" % i, partition=0)
                producer.flush()  # one batch each
        tp = TopicPartition("changed", 0)
        with Consumer(bootstrap_servers=bs, fetch_max_wait_ms=100, check_crcs=check_crcs) as consumer:
            consumer.assign([tp])
            consumer.seek(tp, 0)
            got, deadline = [], time.monotonic() + DEADLINE
            if not check_crcs:
                while len(got) < 9:
                    assert time.monotonic() < deadline, "timed out"
                    got += _polls(consumer, arrow)
                assert got == [(i, b"value-X" if i == 4 else b"value-%d" % i) for i in range(9)]
                return
            while len(got) < 3:
                assert time.monotonic() < deadline, "timed out"
                got += _polls(consumer, arrow)
            assert got == [(i, b"value-%d" % i) for i in range(3)], got
            for _ in range(2):  # raised again by each poll, the position staying at the bad batch
                with pytest.raises(CorruptRecordError, match="CRC"):
                    while True:
                        assert time.monotonic() < deadline, "no error raised"
                        assert _polls(consumer, arrow) == []
                assert consumer.position(tp) == 3
            consumer.seek(tp, 6)  # the application steps past it
            got = []
            while len(got) < 3:
                assert time.monotonic() < deadline, "timed out"
                got += _polls(consumer, arrow)
            assert got == [(i, b"value-%d" % i) for i in range(6, 9)]


# -- isolation.level ---------------------------------------------------------------------------------

P1, P2 = 1001, 1002  # producer ids


def records(base, count, producer_id=-1):
    """A data batch at ``base``: transactional when it has a producer id."""
    builder = BatchBuilder(2, 0, base_offset=base, producer_id=producer_id,
                           producer_epoch=0 if producer_id >= 0 else -1,
                           base_sequence=base if producer_id >= 0 else -1, is_transactional=producer_id >= 0)
    for i in range(count):
        builder.append(1000 + base + i, b"k%d" % (base + i), b"v%d" % (base + i), [("o", b"%d" % (base + i))])
    return builder.build()


def marker(offset, producer_id, kind):
    return build_control_batch(kind, producer_id=producer_id, producer_epoch=0, timestamp=2000 + offset,
                               base_offset=offset)


# A partition as a Kafka broker would hold it: (first offset, last offset, batch bytes).
# Transaction A of P1 (0-1, 5-6) is aborted at 8, B of P1 (9-10) committed at 13;
# P2's first (2-3) is committed at 7, its second (11-12) aborted at 14; 4 and 15 are
# not transactional.
LOG = [
    (0, 1, records(0, 2, P1)), (2, 3, records(2, 2, P2)), (4, 4, records(4, 1)),
    (5, 6, records(5, 2, P1)), (7, 7, marker(7, P2, ControlType.COMMIT)), (8, 8, marker(8, P1, ControlType.ABORT)),
    (9, 10, records(9, 2, P1)), (11, 12, records(11, 2, P2)), (13, 13, marker(13, P1, ControlType.COMMIT)),
    (14, 14, marker(14, P2, ControlType.ABORT)), (15, 15, records(15, 1)),
]
END = 16  # high watermark and last stable offset: every transaction is over
# Aborted transactions: (producer id, first offset, offset of the ABORT marker).
ABORTED = [(P1, 0, 8), (P2, 11, 14)]
BATCHES_PER_RESPONSE = 3  # as if max.partition.fetch.bytes let three through


class TransactionalBroker:
    """A proxy rule answering every Fetch of partition 0 from :data:`LOG`, as Kafka does:
    whole batches from the one holding the fetch offset, and under read_committed the
    aborted transactions overlapping them (Kafka's ``collectAbortedTransactions``: those
    whose ABORT marker is at or after the fetch offset and which begin before the end of
    what is returned); under read_uncommitted none (null). A fetch at the end is held
    for fetch.max.wait.ms (there is nothing new) and answered empty."""

    def __init__(self):
        self.isolation_levels = set()
        self.fetch_offsets = []

    def __call__(self, api_key, version, request, n):
        if api_key != ApiKey.FETCH:
            return FORWARD
        self.isolation_levels.add(request.isolation_level)
        read_committed = request.isolation_level == 1
        topics = []
        for t in request.topics:
            partitions = []
            for p in t.partitions:
                self.fetch_offsets.append(p.fetch_offset)
                batches = [b for b in LOG if b[1] >= p.fetch_offset][:BATCHES_PER_RESPONSE]
                upper = batches[-1][1] + 1 if batches else p.fetch_offset
                aborted = [FetchResponse.AbortedTransaction(producer_id=pid, first_offset=first)
                           for pid, first, last in ABORTED if last >= p.fetch_offset and first < upper]
                partitions.append(FetchResponse.PartitionData(
                    partition_index=p.partition, error_code=0, high_watermark=END, last_stable_offset=END,
                    log_start_offset=0, aborted_transactions=aborted if read_committed else None,
                    records=b"".join(b[2] for b in batches)))
            topics.append(FetchResponse.FetchableTopicResponse(topic=t.topic, partitions=partitions))
        response = FetchResponse(error_code=0, session_id=0, responses=topics)
        at_end = all(p.fetch_offset >= END for t in request.topics for p in t.partitions)
        return Later(request.max_wait_ms / 1000, response) if at_end else response


@pytest.mark.parametrize("isolation_level, offsets", [
    ("read_committed", [2, 3, 4, 9, 10, 15]),
    ("read_uncommitted", [0, 1, 2, 3, 4, 5, 6, 9, 10, 11, 12, 15]),
])
def test_isolation_level_over_the_wire_against_a_transactional_log(isolation_level, offsets):
    rule = TransactionalBroker()
    tp = TopicPartition("txn", 0)
    with FaultProxy(rule) as proxy:
        with AdminClient(bootstrap_servers=proxy.bootstrap_servers) as admin:
            admin.create_topics([NewTopic("txn", 1)])
        with Consumer(bootstrap_servers=proxy.bootstrap_servers, isolation_level=isolation_level,
                      fetch_max_wait_ms=100) as consumer:
            consumer.assign([tp])
            consumer.seek(tp, 0)
            got, deadline = [], time.monotonic() + DEADLINE
            while consumer.position(tp) < END:  # past the markers at the end too
                assert time.monotonic() < deadline, f"stuck at {consumer.position(tp)}"
                got += consumer.poll(0.2)
            got += consumer.poll(0.3)  # nothing more comes
    assert [r.offset for r in got] == offsets
    assert [(r.key, r.value, r.headers) for r in got] == [
        (b"k%d" % o, b"v%d" % o, (("o", b"%d" % o),)) for o in offsets]
    assert rule.isolation_levels == {1 if isolation_level == "read_committed" else 0}
    assert {0, 5, 9, 14} <= set(rule.fetch_offsets)  # it went through the log in several fetches
