"""A group survives its coordinator's death in a MiniCluster (issue 13, step 2, item 1).

A group's coordinator is the leader of its ``__consumer_offsets`` partition. The broker
that becomes that leader loads the partition's commits from its own replica of the log
(Kafka's ``GroupCoordinator.onElection``), and a commit is answered only once every ISR
member has it (acks=all, Kafka's ``GroupMetadataManager.storeOffsets``). So killing the
coordinator loses no committed position: the group resumes where it committed.
Requests whose exact answer matters are sent raw (:class:`RawClient`).
"""

import threading
import time

import pytest

from kproto.consumer.errors import CommitFailedError
from kproto.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    RebalanceInProgressError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from minibroker.coordinator.offsets_log import OFFSETS_TOPIC, partition_for
from tests.minibroker.cluster.conftest import _nothing_left, replica, replica_log
from tests.support.raw_client import RawClient

TOPIC = "t"
N = 300
OFFSETS_PARTITIONS = 5  # few partitions of __consumer_offsets: quick to create on 3 brokers


def _cluster(tmp_path, **config):
    return _nothing_left(brokers=3, data_dir=tmp_path / "cluster", config={
        "offsets.topic.replication.factor": 3, "offsets.topic.num.partitions": OFFSETS_PARTITIONS, **config})


@pytest.fixture
def cluster(tmp_path):
    """Three brokers, ``__consumer_offsets`` with replication factor 3."""
    with _cluster(tmp_path) as c:
        yield c


def _request(cluster, node_id, api_key, version, body):
    client = RawClient(cluster.brokers[node_id].port, timeout=30)
    try:
        return client.request(api_key, version, body)
    finally:
        client.close()


def _live(cluster):
    return [b.node_id for b in cluster.brokers if cluster._nodes[b.node_id].alive]


def find_coordinator(cluster, group, via=None):
    """FindCoordinator v3 for ``group`` (it creates ``__consumer_offsets``): (error, node id)."""
    r = _request(cluster, _live(cluster)[0] if via is None else via, ApiKey.FIND_COORDINATOR, 3,
                 FindCoordinatorRequest(key=group, key_type=0))
    return r.error_code, r.node_id


def offsets_partition(group):
    return partition_for(group, OFFSETS_PARTITIONS)


def coordinator_of(cluster, group):
    """The group's coordinator as the cluster sees it: its offsets partition's leader."""
    return cluster.leader_of(OFFSETS_TOPIC, offsets_partition(group))


def commit_raw(cluster, node_id, group, offset, partition=0):
    """A simple consumer's OffsetCommit v8 to broker ``node_id``: its error code."""
    r = _request(cluster, node_id, ApiKey.OFFSET_COMMIT, 8, OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name=TOPIC, partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=partition, committed_offset=offset)])]))
    return r.topics[0].partitions[0].error_code


def fetch_raw(cluster, node_id, group, partition=0):
    """OffsetFetch v7 of one partition from broker ``node_id``: (error, committed offset)."""
    r = _request(cluster, node_id, ApiKey.OFFSET_FETCH, 7, OffsetFetchRequest(group_id=group, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(name=TOPIC, partition_indexes=[partition])]))
    p = r.topics[0].partitions[0]
    return r.error_code or p.error_code, p.committed_offset


def _produce(cluster, count, start=0):
    from kproto import Producer
    with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all", enable_idempotence=True,
                  linger_ms=1) as producer:
        futures = [producer.send(TOPIC, b"%d" % i, partition=0) for i in range(start, start + count)]
        producer.flush(30)
        for f in futures:
            f.result(30)


def _wait(what, check, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
    return value


def _kill_coordinator(cluster, group):
    """Kill the group's coordinator (once its offsets partition has a full ISR, so that
    the commits are on every replica); returns it and the new coordinator, which
    FindCoordinator names."""
    p = offsets_partition(group)
    cluster.wait_for_isr(OFFSETS_TOPIC, p, 3)
    old = coordinator_of(cluster, group)
    cluster.kill(old)
    new = cluster.wait_for_leader(OFFSETS_TOPIC, p, not_in=(old,))
    assert new != old
    for via in _live(cluster):
        assert find_coordinator(cluster, group, via=via) == (0, new)
    return old, new


def test_kproto_group_resumes_from_its_commit_after_the_coordinator_is_killed(cluster):
    """Issue 13 step 2, item 1: a kproto group consumer reads and commits part of an RF=3
    topic; its coordinator is killed; the group's next consumer starts exactly at the
    committed offset (before the fix, the new coordinator knew no commit: the consumer
    started over from the earliest offset). Only the one batch polled after the commit
    is read twice; every record is read."""
    from kproto import Consumer
    from kproto.structs import TopicPartition
    cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
    _produce(cluster, N)
    tp = TopicPartition(TOPIC, 0)
    first = []
    with Consumer(bootstrap_servers=cluster.bootstrap_servers, group_id="g", enable_auto_commit=False,
                  auto_offset_reset="earliest", max_poll_records=40) as consumer:
        consumer.subscribe([TOPIC])
        _wait("half the records", lambda: first.extend(r.offset for r in consumer.poll(1)) or len(first) >= N // 2)
        consumer.commit()
        committed = first[-1] + 1
        assert consumer.committed([tp])[tp].offset == committed
        uncommitted = []  # one more batch, never committed
        _wait("one more batch", lambda: uncommitted.extend(r.offset for r in consumer.poll(1)) or uncommitted)
        first += uncommitted
        _kill_coordinator(cluster, "g")
    assert first == list(range(len(first)))
    second = []
    with Consumer(bootstrap_servers=cluster.bootstrap_servers, group_id="g", enable_auto_commit=False,
                  auto_offset_reset="earliest") as consumer:
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 30
        while (not second or second[-1] < N - 1) and time.monotonic() < deadline:
            second += [r.offset for r in consumer.poll(1)]
        consumer.commit()
        assert consumer.committed([tp])[tp].offset == N
    assert second == list(range(committed, N))  # from the commit on, each record once
    assert sorted(set(first) & set(second)) == uncommitted  # read twice: the uncommitted batch only
    assert set(first) | set(second) == set(range(N))


def test_confluent_kafka_group_resumes_from_its_commit_after_the_coordinator_is_killed(cluster):
    """Issue 13 step 2, item 1, with librdkafka: a synchronous commit, the coordinator
    killed, the next consumer of the group starts at the committed offset."""
    ck = pytest.importorskip("confluent_kafka")
    cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
    _produce(cluster, N)
    config = {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "ck", "enable.auto.commit": False,
              "auto.offset.reset": "earliest"}

    def consume(consumer, until):
        got = []
        deadline = time.monotonic() + 30
        while not until(got) and time.monotonic() < deadline:
            for m in consumer.consume(40, timeout=1):
                assert m.error() is None, m.error()
                got.append(m.offset())
        return got

    consumer = ck.Consumer(config)
    try:
        consumer.subscribe([TOPIC])
        first = consume(consumer, lambda got: len(got) >= N // 2)
        committed = first[-1] + 1
        consumer.commit(offsets=[ck.TopicPartition(TOPIC, 0, committed)], asynchronous=False)
        assert consumer.committed([ck.TopicPartition(TOPIC, 0)], timeout=10)[0].offset == committed
        _kill_coordinator(cluster, "ck")
    finally:
        consumer.close()
    assert first == list(range(len(first)))
    consumer = ck.Consumer(config)
    try:
        consumer.subscribe([TOPIC])
        second = consume(consumer, lambda got: bool(got) and got[-1] >= N - 1)
        consumer.commit(offsets=[ck.TopicPartition(TOPIC, 0, N)], asynchronous=False)
        assert consumer.committed([ck.TopicPartition(TOPIC, 0)], timeout=10)[0].offset == N
    finally:
        consumer.close()
    assert second == list(range(committed, N))  # from the commit on, each record once
    assert set(first) | set(second) == set(range(N))


def test_group_requests_while_the_coordinator_loads_get_kafkas_answers(cluster):
    """Issue 13 step 2, item 1: while a coordinator loads its partition of
    ``__consumer_offsets``, JoinGroup, OffsetCommit, OffsetFetch and DescribeGroups are
    COORDINATOR_LOAD_IN_PROGRESS, SyncGroup REBALANCE_IN_PROGRESS, Heartbeat no error,
    ListGroups COORDINATOR_LOAD_IN_PROGRESS (Kafka's GroupCoordinator); then the broker's
    own loader reads the commit back from the log. The coordinator is put back to
    "elected, not loaded" on its loop, as a new election would leave it: a real
    election's load is over as soon as the followers have fetched, too soon to observe."""
    cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
    _, node = find_coordinator(cluster, "g")
    assert commit_raw(cluster, node, "g", 5) == 0
    p = offsets_partition("g")
    state = cluster._nodes[node].server.state
    partition = cluster._read(lambda: state.topics[OFFSETS_TOPIC].partitions[p])

    def reelected():
        state.groups.unload(p)
        return state.groups.begin_load(p, OFFSETS_PARTITIONS)

    load = cluster._read(reelected)
    loading = CoordinatorLoadInProgressError.code
    join = _request(cluster, node, ApiKey.JOIN_GROUP, 5, JoinGroupRequest(
        group_id="g", session_timeout_ms=6000, rebalance_timeout_ms=6000, member_id="", group_instance_id=None,
        protocol_type="consumer", protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")]))
    assert join.error_code == loading
    assert _request(cluster, node, ApiKey.SYNC_GROUP, 3, SyncGroupRequest(
        group_id="g", generation_id=1, member_id="m", assignments=[])).error_code == RebalanceInProgressError.code
    assert _request(cluster, node, ApiKey.HEARTBEAT, 3, HeartbeatRequest(
        group_id="g", generation_id=1, member_id="m")).error_code == 0
    assert commit_raw(cluster, node, "g", 6) == loading
    assert fetch_raw(cluster, node, "g") == (loading, -1)
    assert _request(cluster, node, ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest(
        groups=["g"])).groups[0].error_code == loading
    assert _request(cluster, node, ApiKey.LIST_GROUPS, 4, ListGroupsRequest()).error_code == loading
    cluster._read(lambda: state._spawn(state._load_groups(partition, load)))
    assert _wait("the load", lambda: fetch_raw(cluster, node, "g") == (0, 5))
    assert _request(cluster, node, ApiKey.LIST_GROUPS, 4, ListGroupsRequest()).error_code == 0


def test_a_commit_is_answered_once_every_isr_member_has_it(tmp_path):
    """Issue 13 step 2, item 1 (acks=all for commits): an acknowledged commit is below the
    high watermark and on every replica's log; with two brokers down (ISR below
    ``min.insync.replicas``=2) a commit is COORDINATOR_NOT_AVAILABLE, nothing is appended
    and OffsetFetch still shows the previous commit; after a restart it works again."""
    with _cluster(tmp_path, **{"min.insync.replicas": 2}) as cluster:
        cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
        assert find_coordinator(cluster, "g")[0] == 0
        p = offsets_partition("g")
        cluster.wait_for_isr(OFFSETS_TOPIC, p, 3)
        coordinator = coordinator_of(cluster, "g")
        followers = [n for n in range(3) if n != coordinator]
        assert commit_raw(cluster, coordinator, "g", 5) == 0
        end = replica_log(cluster, coordinator, OFFSETS_TOPIC, p).log_end_offset
        assert replica(cluster, coordinator, OFFSETS_TOPIC, p).high_watermark == end  # answered after the ISR had it
        for f in followers:
            assert replica_log(cluster, f, OFFSETS_TOPIC, p).log_end_offset == end
        assert fetch_raw(cluster, coordinator, "g") == (0, 5)

        for f in followers:
            cluster.kill(f)
        assert cluster.isr_of(OFFSETS_TOPIC, p) == (coordinator,)
        assert commit_raw(cluster, coordinator, "g", 9) == CoordinatorNotAvailableError.code  # NOT_ENOUGH_REPLICAS
        assert replica_log(cluster, coordinator, OFFSETS_TOPIC, p).log_end_offset == end  # nothing appended
        assert fetch_raw(cluster, coordinator, "g") == (0, 5)

        cluster.restart(followers[0])
        cluster.wait_for_isr(OFFSETS_TOPIC, p, 2)
        assert commit_raw(cluster, coordinator, "g", 9) == 0
        assert fetch_raw(cluster, coordinator, "g") == (0, 9)


def test_a_commit_whose_isr_shrinks_below_the_minimum_meanwhile_is_not_visible(tmp_path):
    """Issue 13 step 2, item 1: both followers die while a commit waits for them
    (``min.insync.replicas``=2): however the wait ends (the ISR shrinks to the leader
    alone, NOT_ENOUGH_REPLICAS_AFTER_APPEND; or ``offsets.commit.timeout.ms``), the answer
    is COORDINATOR_NOT_AVAILABLE and OffsetFetch keeps the previous commit."""
    with _cluster(tmp_path, **{"min.insync.replicas": 2, "offsets.commit.timeout.ms": 3000}) as cluster:
        cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
        assert find_coordinator(cluster, "g")[0] == 0
        p = offsets_partition("g")
        cluster.wait_for_isr(OFFSETS_TOPIC, p, 3)
        coordinator = coordinator_of(cluster, "g")
        assert commit_raw(cluster, coordinator, "g", 5) == 0
        for f in (n for n in range(3) if n != coordinator):
            cluster.kill(f, wait=False)
        assert commit_raw(cluster, coordinator, "g", 9) == CoordinatorNotAvailableError.code
        assert fetch_raw(cluster, coordinator, "g") == (0, 5)


@pytest.mark.parametrize("stop", ["shutdown", "kill"])
def test_rolling_restart_loses_no_record_and_no_commit(tmp_path, stop):
    """Issue 13 step 2, item 1: every broker is stopped (a controlled shutdown, as a
    rolling restart does, or a crash) and restarted in turn (the next once every ISR is
    full again) while an idempotent kproto producer (acks=all) writes
    and a group consumer reads and commits: no acknowledged record is lost or written
    twice, the consumer reads every record, and the group's commit is the log end."""
    from kproto import Consumer, Producer
    from kproto.structs import TopicPartition
    total = 2000
    with _cluster(tmp_path, **{"min.insync.replicas": 2}) as cluster:
        cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
        assert find_coordinator(cluster, "g")[0] == 0
        p = offsets_partition("g")
        acked, errors = [], []
        restarted = threading.Event()

        def produce():
            try:
                with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all", enable_idempotence=True,
                              linger_ms=5, retry_backoff_ms=50, delivery_timeout_ms=60000) as producer:
                    sent = []
                    for i in range(total):
                        sent.append((i, producer.send(TOPIC, b"%d" % i, partition=0)))
                        if i % 100 == 99 and not restarted.is_set():
                            producer.flush(60)  # paced: the restarts happen while records flow
                    producer.flush(60)
                    for i, f in sent:
                        f.result(60)
                        acked.append(i)
            except Exception as exc:  # reported in the test's thread
                errors.append(exc)

        producing = threading.Thread(target=produce, name="rolling-producer")
        producing.start()
        got = []
        tp = TopicPartition(TOPIC, 0)
        try:
            with Consumer(bootstrap_servers=cluster.bootstrap_servers, group_id="g", enable_auto_commit=False,
                          auto_offset_reset="earliest") as consumer:
                consumer.subscribe([TOPIC])

                def consume_a_while():
                    got.extend(int(r.value) for r in consumer.poll(0.2))
                    try:
                        consumer.commit()
                        return True
                    except CommitFailedError:
                        # The group moved: its new coordinator loaded the commits but not
                        # the membership (minibroker does not write it), so the member
                        # joins again at its next poll, from the group's last commit.
                        return False

                for node in range(3):
                    consume_a_while()
                    getattr(cluster, stop)(node)
                    consume_a_while()
                    cluster.restart(node)
                    for topic, partition in ((TOPIC, 0), (OFFSETS_TOPIC, p)):
                        _wait(f"a full ISR of {topic}-{partition} after broker {node}'s restart",
                              lambda t=topic, i=partition: consume_a_while() and len(cluster.isr_of(t, i)) == 3)
                restarted.set()
                producing.join(120)
                assert not producing.is_alive() and not errors, errors
                deadline = time.monotonic() + 30
                while len(set(got)) < total and time.monotonic() < deadline:
                    consume_a_while()
                _wait("a commit in a stable generation", consume_a_while)
                assert consumer.committed([tp])[tp].offset == replica_log(
                    cluster, cluster.leader_of(TOPIC, 0), TOPIC).log_end_offset
        finally:
            restarted.set()
            producing.join(120)
        assert acked == list(range(total))
        assert set(got) == set(range(total))  # the consumer read every record
        with Consumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False) as reader:
            reader.assign([tp])
            reader.seek_to_beginning()
            log = []
            deadline = time.monotonic() + 30
            while len(log) < total and time.monotonic() < deadline:
                log += [int(r.value) for r in reader.poll(1)]
        assert sorted(log) == list(range(total))  # none lost, none written twice (idempotence)
