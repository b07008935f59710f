"""The admin client's transaction calls (issue 14, step 2, items 1-2): list and describe
transactions, describe producers, abort a hanging transaction, against minibroker (one
broker and a MiniCluster) with real transactional producers, kproto's and confluent-kafka's,
making open, committed and aborted transactions; the asyncio twins.

The hanging transaction is made as Kafka makes one before KIP-890: a transactional batch
written with a raw Produce that no transaction coordinator knows of (the brokers here run
with KIP-890's verification off, as a broker before it), so nothing will ever end it but an
admin's ABORT marker.
"""

import asyncio
import itertools
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from kproto import Consumer, Producer, TopicPartition
from kproto.admin import (
    AdminClient,
    AIOAdminClient,
    NewTopic,
    ProducerState,
    TransactionDescription,
    TransactionListing,
)
from kproto.errors import (
    BrokerNotAvailableError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    InvalidProducerEpochError,
    NotCoordinatorError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    ReplicaNotAvailableError,
    TransactionalIdNotFoundError,
    TransactionCoordinatorFencedError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from kproto.protocol import ApiKey
from minibroker.faults import Fail
from tests.minibroker.cluster.conftest import _nothing_left
from tests.minibroker.txn.conftest import NO_VERIFICATION
from tests.minibroker.txn.txn_wire import produce, txn_batch

ck = pytest.importorskip("confluent_kafka")

DEADLINE = 20  # seconds: a bound on waiting, never a sleep
HANGING_PID = 424242  # a producer id no coordinator gave: the raw Produce's
OPEN_TIMEOUT_MS = 600_000


def fresh(name):
    return f"{name}-{uuid.uuid4().hex[:8]}"


def create(admin, topic, partitions=1, replication_factor=1):
    admin.create_topics([NewTopic(topic, partitions, replication_factor)])


def committed(bootstrap, tid, topic):
    """kproto's producer: one committed transaction on partition 0."""
    with Producer(bootstrap_servers=bootstrap, transactional_id=tid) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send(topic, b"committed", partition=0)
        p.commit_transaction()


def aborted(bootstrap, tid, topic):
    """kproto's producer: one aborted transaction on partition 0, its record sent first."""
    with Producer(bootstrap_servers=bootstrap, transactional_id=tid) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send(topic, b"aborted", partition=0)
        p.flush()
        p.abort_transaction()


def open_transaction(bootstrap, tid, topic, partition=1):
    """confluent-kafka's producer, left in an open transaction on ``partition`` (close it)."""
    # transaction.timeout.ms: longer than a slow module's run, so the coordinator does not abort it first
    p = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "transaction.timeout.ms": OPEN_TIMEOUT_MS})
    p.init_transactions(DEADLINE)
    p.begin_transaction()
    p.produce(topic, b"open", partition=partition)
    assert p.flush(DEADLINE) == 0
    return p


def settled(admin, tids):
    """Wait until no id of ``tids`` is between a commit or abort and its markers (EndTxn
    answers once PrepareCommit/PrepareAbort is written; the markers follow); the listing."""
    deadline = time.monotonic() + DEADLINE
    while True:
        listed = {t.transactional_id: t for t in admin.list_transactions() if t.transactional_id in tids}
        if len(listed) == len(tids) and not any(t.state.startswith("Prepare") for t in listed.values()):
            return listed
        assert time.monotonic() < deadline, listed


@pytest.fixture(scope="module")
def minibroker_config():
    """A hanging transaction arises only where KIP-890's verification does not stop it (a
    broker or client before it): these brokers run with it off, so that a raw transactional
    Produce can leave one for the admin calls to find and end."""
    return NO_VERIFICATION


@pytest.fixture
def cluster3(tmp_path):
    """Three brokers, KIP-890's verification off (see ``minibroker_config``)."""
    with _nothing_left(brokers=3, data_dir=tmp_path / "cluster", config=NO_VERIFICATION) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def txns(broker):
    """One topic of two partitions with a committed, an aborted (kproto's) and an open
    (confluent-kafka's) transaction, kept open for the module."""
    topic, ids = fresh("txns"), {kind: fresh(kind) for kind in ("committed", "aborted", "open")}
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        create(admin, topic, 2)
    committed(broker.bootstrap_servers, ids["committed"], topic)
    aborted(broker.bootstrap_servers, ids["aborted"], topic)
    producer = open_transaction(broker.bootstrap_servers, ids["open"], topic)
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        settled(admin, set(ids.values()))
    yield topic, ids
    producer.abort_transaction(DEADLINE)
    del producer


@pytest.fixture
def admin(broker):
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as client:
        yield client


# -- item 1: list, describe, describe producers ---------------------------------------------------

def test_list_transactions_lists_every_id_with_its_state_and_coordinator(admin, txns):
    """Issue 14 item 1: ListTransactions of every broker, merged."""
    topic, ids = txns
    listed = {t.transactional_id: t for t in admin.list_transactions()}
    states = {kind: listed[tid].state for kind, tid in ids.items()}
    assert states == {"committed": "CompleteCommit", "aborted": "CompleteAbort", "open": "Ongoing"}
    assert all(isinstance(t, TransactionListing) and t.coordinator_id == 0 and t.producer_id >= 0
               for t in listed.values())


def test_list_transactions_filters_by_state_producer_id_and_duration(admin, txns):
    """Issue 14 item 1: the filters of Java's ListTransactionsOptions (KIP-664, KIP-994)."""
    topic, ids = txns
    mine = set(ids.values())
    assert [t.transactional_id for t in admin.list_transactions(states=["Ongoing"]) if t.transactional_id in mine] \
        == [ids["open"]]
    both = {t.transactional_id for t in admin.list_transactions(states=["CompleteCommit", "CompleteAbort"])} & mine
    assert both == {ids["committed"], ids["aborted"]}
    pid = {t.transactional_id: t.producer_id for t in admin.list_transactions()}[ids["committed"]]
    assert [t.transactional_id for t in admin.list_transactions(producer_ids=[pid])] == [ids["committed"]]
    assert ids["open"] in {t.transactional_id for t in admin.list_transactions(duration_filter_ms=0)}
    assert not {t.transactional_id for t in admin.list_transactions(duration_filter_ms=3_600_000)} & mine
    with pytest.raises(ValueError, match="Ongoin"):
        admin.list_transactions(states=["Ongoin"])


def test_describe_transactions_asks_each_ids_coordinator(admin, txns):
    """Issue 14 item 1: FindCoordinator (key type 1), then DescribeTransactions there."""
    topic, ids = txns
    found = admin.describe_transactions([ids["open"], ids["committed"]])
    d = found[ids["open"]]
    assert isinstance(d, TransactionDescription)
    assert (d.coordinator_id, d.state, d.topic_partitions) == (0, "Ongoing", frozenset({TopicPartition(topic, 1)}))
    assert d.transaction_timeout_ms == OPEN_TIMEOUT_MS  # what confluent-kafka's producer asked for
    assert 0 < d.transaction_start_time_ms <= time.time() * 1000
    done = found[ids["committed"]]
    assert (done.state, done.topic_partitions) == ("CompleteCommit", frozenset())


def test_an_unknown_transactional_id_is_its_own_error(admin, txns):
    """Issue 14 item 1: TRANSACTIONAL_ID_NOT_FOUND is raised per id, the others kept."""
    topic, ids = txns
    with pytest.raises(TransactionalIdNotFoundError) as caught:
        admin.describe_transactions([ids["aborted"], "no-such-id"])
    assert caught.value.results[ids["aborted"]].state == "CompleteAbort"
    assert isinstance(caught.value.results["no-such-id"], TransactionalIdNotFoundError)


def test_describe_producers_shows_the_open_transaction_and_the_last_marker(admin, txns):
    """Issue 14 item 1: DescribeProducers to each partition's leader."""
    topic, ids = txns
    pids = {t.transactional_id: t.producer_id for t in admin.list_transactions()}
    found = admin.describe_producers([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    on0 = {s.producer_id: s for s in found[TopicPartition(topic, 0)]}
    on1 = {s.producer_id: s for s in found[TopicPartition(topic, 1)]}
    assert set(on0) == {pids[ids["committed"]], pids[ids["aborted"]]}
    # kproto ended them with transaction version 2: the marker's bumped epoch starts the
    # producer's sequences over (Kafka's ProducerStateEntry.maybeUpdateProducerEpoch): none yet.
    assert all(isinstance(s, ProducerState) and s.current_transaction_start_offset is None
               and s.coordinator_epoch is not None and s.last_sequence == -1 for s in on0.values())
    opened = on1[pids[ids["open"]]]
    assert (opened.current_transaction_start_offset, opened.coordinator_epoch, opened.last_sequence) == (0, None, 0)
    assert opened.last_timestamp > 0


def test_describe_producers_of_an_unknown_partition_fails_at_once(admin, txns):
    """Issue 14 item 1: an unknown topic's partition is its own error, without waiting."""
    topic, ids = txns
    started = time.monotonic()
    with pytest.raises(UnknownTopicOrPartitionError) as caught:
        admin.describe_producers([TopicPartition(topic, 0), TopicPartition("no-such-topic", 0),
                                  TopicPartition(topic, 9)])
    assert time.monotonic() - started < 5
    results = caught.value.results
    assert isinstance(results[TopicPartition(topic, 9)], UnknownTopicOrPartitionError)
    assert isinstance(results[TopicPartition(topic, 0)], list)


# -- item 2: abort a hanging transaction ---------------------------------------------------------

def hang(broker, topic, *, epoch=0):
    """A transactional batch at the end of partition 0 that no coordinator knows of."""
    code, offset = produce(broker.port, topic, txn_batch(HANGING_PID, epoch, 0, [b"hanging"]),
                           transactional_id=fresh("unknown"))
    assert code == 0
    return offset


def read_committed(bootstrap, topic, until):
    """kproto's read_committed consumer: the values of partition 0 up to ``until``."""
    with Consumer(bootstrap_servers=bootstrap, group_id=fresh("g"), isolation_level="read_committed",
                  auto_offset_reset="earliest", fetch_max_wait_ms=100) as c:
        c.assign([TopicPartition(topic, 0)])
        got, deadline = [], time.monotonic() + DEADLINE
        while until not in got:
            assert time.monotonic() < deadline, f"read {got}, never {until!r}"
            got += [r.value for r in c.poll(0.2)]
        return got


def test_a_hanging_transaction_is_found_and_aborted_and_read_committed_goes_on(admin, broker):
    """Issue 14 item 2: a transaction no coordinator knows holds the LSO; describe_producers
    finds it, no transactional id claims its producer id, abort_transaction ends it."""
    topic = fresh("hanging")
    create(admin, topic)
    tp = TopicPartition(topic, 0)
    start = hang(broker, topic)
    after = fresh("after")
    committed(broker.bootstrap_servers, after, topic)  # committed, behind the hanging one
    settled(admin, {after})
    assert admin.list_offsets({tp: "latest"}, isolation_level="read_committed")[tp].offset == start  # the LSO

    [state] = [s for s in admin.describe_producers([tp])[tp] if s.producer_id == HANGING_PID]
    assert (state.current_transaction_start_offset, state.producer_epoch, state.coordinator_epoch) == (start, 0, None)
    assert admin.list_transactions(producer_ids=[HANGING_PID]) == []  # no coordinator knows it

    admin.abort_transaction(topic, 0, state.producer_id, state.producer_epoch, state.coordinator_epoch or 0)
    [after] = [s for s in admin.describe_producers([tp])[tp] if s.producer_id == HANGING_PID]
    assert (after.current_transaction_start_offset, after.coordinator_epoch) == (None, 0)
    end = admin.list_offsets({tp: "latest"})[tp].offset
    assert admin.list_offsets({tp: "latest"}, isolation_level="read_committed")[tp].offset == end
    assert read_committed(broker.bootstrap_servers, topic, b"committed") == [b"committed"]  # the aborted one is hidden


def test_abort_with_a_stale_epoch_is_refused_as_kafka_does(admin, broker):
    """Issue 14 item 2: INVALID_PRODUCER_EPOCH for an epoch older than the partition's,
    TRANSACTION_COORDINATOR_FENCED for a coordinator epoch older than a marker's."""
    topic = fresh("stale")
    create(admin, topic)
    tp = TopicPartition(topic, 0)
    hang(broker, topic, epoch=3)
    with pytest.raises(InvalidProducerEpochError):
        admin.abort_transaction(topic, 0, HANGING_PID, 2, 0)
    admin.abort_transaction(topic, 0, HANGING_PID, 3, 7)
    with pytest.raises(TransactionCoordinatorFencedError):
        admin.abort_transaction(topic, 0, HANGING_PID, 3, 6)
    [state] = admin.describe_producers([tp])[tp]
    assert (state.coordinator_epoch, state.current_transaction_start_offset) == (7, None)


def test_abort_on_an_unknown_partition_fails_at_once(admin):
    """Issue 14 item 2: UNKNOWN_TOPIC_OR_PARTITION, without waiting for the topic."""
    started = time.monotonic()
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.abort_transaction("no-such-topic", 0, HANGING_PID, 0, 0)
    assert time.monotonic() - started < 5


# -- the asyncio twins ---------------------------------------------------------------------------

def test_the_asyncio_client_lists_describes_and_aborts(broker, txns):
    """Issue 14 items 1-2: the same calls on AIOAdminClient."""
    topic, ids = txns

    async def run():
        async with AIOAdminClient(bootstrap_servers=broker.bootstrap_servers) as aio:
            listed = {t.transactional_id: t.state for t in await aio.list_transactions(states=["Ongoing"])}
            assert listed.get(ids["open"]) == "Ongoing"
            described = await aio.describe_transactions([ids["open"]])
            assert described[ids["open"]].topic_partitions == {TopicPartition(topic, 1)}
            hanging_topic = fresh("aio-hanging")
            await aio.create_topics([NewTopic(hanging_topic, 1, 1)])
            start = hang(broker, hanging_topic)
            tp = TopicPartition(hanging_topic, 0)
            [state] = (await aio.describe_producers([tp]))[tp]
            assert state.current_transaction_start_offset == start
            await aio.abort_transaction(hanging_topic, 0, state.producer_id, state.producer_epoch, 0)
            [state] = (await aio.describe_producers([tp]))[tp]
            assert state.current_transaction_start_offset is None

    asyncio.run(run())


# -- a cluster -----------------------------------------------------------------------------------

def test_a_cluster_lists_from_every_broker_and_routes_to_coordinators_and_leaders(cluster3):
    """Issue 14 items 1-2 in a MiniCluster: ListTransactions merged from every broker,
    DescribeTransactions at each id's coordinator, DescribeProducers and the abort at
    each partition's leader."""
    bootstrap = cluster3.bootstrap_servers
    topic = fresh("spread")
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        create(admin, topic, 3, 3)
        tids = [fresh(f"c{i}") for i in range(4)]
        for tid in tids:
            committed(bootstrap, tid, topic)
        listed = settled(admin, set(tids))
        described = admin.describe_transactions(tids)
        assert {tid: (listed[tid].state, listed[tid].coordinator_id) for tid in tids} == \
            {tid: ("CompleteCommit", described[tid].coordinator_id) for tid in tids}
        leader = admin.describe_topics([topic])[topic].partitions[0].leader
        tp = TopicPartition(topic, 0)
        assert {s.producer_id for s in admin.describe_producers([tp])[tp]} == {listed[t].producer_id for t in tids}
        code, start = produce(cluster3.brokers[leader].port, topic, txn_batch(HANGING_PID, 0, 0, [b"hanging"]))
        assert code == 0
        [state] = [s for s in admin.describe_producers([tp])[tp] if s.producer_id == HANGING_PID]
        assert state.current_transaction_start_offset == start
        admin.abort_transaction(topic, 0, HANGING_PID, 0, 0)
        assert admin.list_offsets({tp: "latest"}, isolation_level="read_committed")[tp].offset == start + 2


# -- Java's error mapping, with errors injected at the broker ------------------------------------

@pytest.fixture
def controls(broker):
    """``controls(api, action, times)``: a request control on ``broker``, removed after the test."""
    made = []

    def control(api, action=None, times=None):
        made.append(broker.requests.control(api, action, times=times))
        return made[-1]

    yield control
    for c in made:
        c.remove()


def test_list_transactions_retries_a_loading_coordinator_and_fails_on_an_unavailable_one(admin, txns, controls):
    """Issue 14 item 1: ListTransactionsHandler: COORDINATOR_LOAD_IN_PROGRESS is asked again,
    COORDINATOR_NOT_AVAILABLE (the coordinator shuts down) fails the call at once."""
    topic, ids = txns
    loading = controls(ApiKey.LIST_TRANSACTIONS, Fail(CoordinatorLoadInProgressError), times=2)
    assert ids["open"] in {t.transactional_id for t in admin.list_transactions()}
    assert loading.count == 2
    counted = controls(ApiKey.LIST_TRANSACTIONS)
    controls(ApiKey.LIST_TRANSACTIONS, Fail(CoordinatorNotAvailableError))
    with pytest.raises(CoordinatorNotAvailableError):
        admin.list_transactions()
    assert counted.count == 1


def test_describe_transactions_finds_a_moved_coordinator_again(admin, txns, controls):
    """Issue 14 item 1: DescribeTransactionsHandler: NOT_COORDINATOR and
    COORDINATOR_NOT_AVAILABLE look the coordinator up again, LOAD_IN_PROGRESS asks again."""
    topic, ids = txns
    lookups = controls(ApiKey.FIND_COORDINATOR)
    controls(ApiKey.DESCRIBE_TRANSACTIONS, Fail(NotCoordinatorError), times=1)
    controls(ApiKey.DESCRIBE_TRANSACTIONS, Fail(CoordinatorNotAvailableError), times=1)
    controls(ApiKey.DESCRIBE_TRANSACTIONS, Fail(CoordinatorLoadInProgressError), times=1)
    assert admin.describe_transactions([ids["open"]])[ids["open"]].state == "Ongoing"
    assert lookups.count == 4


def test_describe_producers_retries_a_moved_leader_unless_a_broker_was_named(admin, txns, controls):
    """Issue 14 item 1: DescribeProducersHandler: NOT_LEADER_OR_FOLLOWER finds the leader
    again; with a broker id given (a replica's view) it is that partition's error."""
    topic, ids = txns
    tp = TopicPartition(topic, 1)
    moved = controls(ApiKey.DESCRIBE_PRODUCERS, Fail(NotLeaderOrFollowerError), times=1)
    assert len(admin.describe_producers([tp])[tp]) == 1
    assert moved.count == 1
    counted = controls(ApiKey.DESCRIBE_PRODUCERS)
    controls(ApiKey.DESCRIBE_PRODUCERS, Fail(NotLeaderOrFollowerError), times=1)
    with pytest.raises(NotLeaderOrFollowerError):
        admin.describe_producers([tp], broker_id=0)
    assert counted.count == 1


def test_abort_retries_a_moved_leader(admin, broker, controls):
    """Issue 14 item 2: AbortTransactionHandler: NOT_LEADER_OR_FOLLOWER, REPLICA_NOT_AVAILABLE,
    BROKER_NOT_AVAILABLE and UNKNOWN_TOPIC_OR_PARTITION look the leader up again."""
    topic = fresh("retry-abort")
    create(admin, topic)
    tp = TopicPartition(topic, 0)
    hang(broker, topic)
    counted = controls(ApiKey.WRITE_TXN_MARKERS)
    for error in (NotLeaderOrFollowerError, ReplicaNotAvailableError, BrokerNotAvailableError,
                  UnknownTopicOrPartitionError):
        controls(ApiKey.WRITE_TXN_MARKERS, Fail(error), times=1)
    admin.abort_transaction(topic, 0, HANGING_PID, 0, 0)
    assert counted.count == 5
    assert admin.describe_producers([tp])[tp][0].current_transaction_start_offset is None


def test_abort_fails_at_once_on_not_enough_replicas(cluster3):
    """Issue 14 item 2: AbortTransactionHandler fails on any error but a moved leader's:
    NOT_ENOUGH_REPLICAS (retriable for a producer) is the abort's error at once."""
    topic = fresh("isr")
    with AdminClient(bootstrap_servers=cluster3.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, 1, 3, {"min.insync.replicas": "3"})])
        leader = cluster3.wait_for_leader(topic, 0)
        cluster3.wait_for_isr(topic, 0, 3)
        code, start = produce(cluster3.brokers[leader].port, topic, txn_batch(HANGING_PID, 0, 0, [b"hanging"]),
                              acks=1)
        assert code == 0
        cluster3.kill(next(b for b in range(3) if b != leader and b != cluster3.controller_id))
        cluster3.wait_for_isr(topic, 0, 2)
        markers = cluster3.requests(leader).control(ApiKey.WRITE_TXN_MARKERS)
        with pytest.raises(NotEnoughReplicasError):
            admin.abort_transaction(topic, 0, HANGING_PID, 0, 0)
        assert markers.count == 1


def test_describe_producers_of_a_named_follower_gives_its_view(cluster3):
    """Issue 14 item 1: DescribeProducersOptions.brokerId asks one replica, a follower too
    (kafka-transactions.sh describe-producers --broker-id, find-hanging --broker-id)."""
    topic = fresh("replica")
    with AdminClient(bootstrap_servers=cluster3.bootstrap_servers) as admin:
        create(admin, topic, 1, 3)
        leader = cluster3.wait_for_leader(topic, 0)
        cluster3.wait_for_isr(topic, 0, 3)
        code, start = produce(cluster3.brokers[leader].port, topic, txn_batch(HANGING_PID, 0, 0, [b"hanging"]))
        assert code == 0
        follower = next(b for b in range(3) if b != leader)
        tp = TopicPartition(topic, 0)
        [state] = admin.describe_producers([tp], broker_id=follower)[tp]
        assert (state.producer_id, state.current_transaction_start_offset) == (HANGING_PID, start)


def test_the_producer_guide_s_snippet_finds_an_open_transaction(admin, broker, capsys):
    """Issue 14 item 4: the snippet of docs/guides/producer.rst runs as printed."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "guides" / "producer.rst").read_text()
    block = text.split("Inspecting transactions, ending a hanging one\n")[1].split("::\n\n", 1)[1]
    code = textwrap.dedent("\n".join(itertools.takewhile(lambda line: not line or line.startswith("    "),
                                                         block.splitlines())))
    topic = fresh("guide")
    create(admin, topic)
    start = hang(broker, topic)
    exec(code.replace('"127.0.0.1:9092"', repr(broker.bootstrap_servers)).replace('"orders"', repr(topic)), {})
    assert capsys.readouterr().out == f"{HANGING_PID} has a transaction open since offset {start}\n"
    admin.abort_transaction(topic, 0, HANGING_PID, 0, 0)


def test_a_broker_without_the_apis_says_so_at_once(tansu_broker):
    """Issue 14 items 1-2: Tansu (a Kafka-compatible broker by others) has none of the four
    APIs: each call is UNSUPPORTED_VERSION naming the API, not a retry until the timeout."""
    with AdminClient(bootstrap_servers=tansu_broker.bootstrap_servers) as admin:
        tp = TopicPartition(fresh("t"), 0)
        calls = {"ListTransactions": lambda: admin.list_transactions(),
                 "DescribeTransactions": lambda: admin.describe_transactions(["x"]),
                 "DescribeProducers": lambda: admin.describe_producers([tp]),
                 "WriteTxnMarkers": lambda: admin.abort_transaction(tp.topic, 0, 1, 0, 0)}
        admin.create_topics([NewTopic(tp.topic, 1, 1)])
        for api, call in calls.items():
            started = time.monotonic()
            with pytest.raises(UnsupportedVersionError, match=api):
                call()
            assert time.monotonic() - started < 5
