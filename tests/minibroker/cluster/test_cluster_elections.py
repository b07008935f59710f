"""Preferred-leader elections in a MiniCluster (issue 13 step 2, item 3): a restarted
preferred leader stays a follower with ``auto.leader.rebalance.enable`` off, gets its
leadership back through ElectLeaders (kproto's admin client and confluent-kafka's), and
by itself with the automatic rebalance on; ElectLeaders' per-partition errors are Kafka's.
"""

import pytest

from kproto.admin import AdminClient
from kproto.errors import (
    ElectionNotNeededError,
    EligibleLeadersNotAvailableError,
    PreferredLeaderNotAvailableError,
    UnknownTopicOrPartitionError,
)
from kproto.structs import TopicPartition
from tests.minibroker.cluster.conftest import _nothing_left, produce_raw
from tests.minibroker.cluster.test_controller import World
from tests.support.raw_client import elect_leaders_raw, election_codes

TOPIC = "t"
NO_REBALANCE = {"auto.leader.rebalance.enable": False}


@pytest.fixture
def cluster3_manual(tmp_path):
    """Three brokers with the automatic leader rebalance off."""
    with _nothing_left(brokers=3, data_dir=tmp_path / "cluster", config=NO_REBALANCE) as cluster:
        yield cluster


@pytest.fixture
def cluster4_manual(tmp_path):
    """Four brokers with the automatic leader rebalance off (one outside an RF=3 topic
    keeps a controller while the topic's replicas are all killed)."""
    with _nothing_left(brokers=4, data_dir=tmp_path / "cluster", config=NO_REBALANCE) as cluster:
        yield cluster


def _moved_leadership(cluster, topic=TOPIC):
    """Kill the partition's preferred leader, wait for a new one, restart the preferred one
    and wait for it to be back in the ISR: (preferred, the leader now)."""
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    cluster.wait_for_isr(topic, 0, 3)
    preferred = cluster.describe(topic)[0].replicas[0]
    assert cluster.leader_of(topic, 0) == preferred
    assert produce_raw(cluster.brokers[preferred].port, topic, [b"a"]) == (0, 0)
    cluster.kill(preferred)
    other = cluster.wait_for_leader(topic, 0, not_in=(preferred,))
    cluster.restart(preferred)
    cluster.wait_for_isr(topic, 0, 3)
    return preferred, other


def test_leadership_stays_moved_with_auto_rebalance_off_and_elect_leaders_moves_it_back(cluster3_manual):
    """Issue 13 step 2 item 3: kproto's AdminClient.elect_leaders (PREFERRED)."""
    cluster = cluster3_manual
    preferred, other = _moved_leadership(cluster)
    assert cluster.leader_of(TOPIC, 0) == other  # nothing moved it back
    epoch = cluster.describe(TOPIC)[0].leader_epoch
    with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
        assert admin.elect_leaders("preferred", [TopicPartition(TOPIC, 0)]) == {TopicPartition(TOPIC, 0): None}
        assert cluster.leader_of(TOPIC, 0) == preferred
        assert cluster.describe(TOPIC)[0].leader_epoch == epoch + 1
        # A second time there is nothing to do: ELECTION_NOT_NEEDED, as an error with .results.
        with pytest.raises(ElectionNotNeededError) as caught:
            admin.elect_leaders("preferred", [TopicPartition(TOPIC, 0)])
        assert list(caught.value.results) == [TopicPartition(TOPIC, 0)]
        # Every partition (None): only those where an election was needed are answered.
        assert admin.elect_leaders("preferred") == {}
    # The new leader serves: a produce to it is acknowledged by the whole ISR.
    assert produce_raw(cluster.brokers[preferred].port, TOPIC, [b"b"]) == (0, 1)


def test_confluent_kafka_elect_leaders_moves_leadership_back(cluster3_manual):
    """Issue 13 step 2 item 3: confluent-kafka's AdminClient.elect_leaders (librdkafka)."""
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient as CkAdmin
    cluster = cluster3_manual
    preferred, other = _moved_leadership(cluster)
    admin = CkAdmin({"bootstrap.servers": cluster.bootstrap_servers})
    result = admin.elect_leaders(ck.ElectionType.PREFERRED, [ck.TopicPartition(TOPIC, 0)]).result(timeout=20)
    assert [(tp.topic, tp.partition, error) for tp, error in result.items()] == [(TOPIC, 0, None)]
    assert cluster.leader_of(TOPIC, 0) == preferred
    again = admin.elect_leaders(ck.ElectionType.PREFERRED, [ck.TopicPartition(TOPIC, 0)]).result(timeout=20)
    [error] = again.values()
    assert error.code() == ck.KafkaError.ELECTION_NOT_NEEDED


def test_auto_rebalance_moves_leadership_back_by_itself(tmp_path):
    """Issue 13 step 2 item 3: with ``auto.leader.rebalance.enable`` (Kafka's default) and
    a check every second, the restarted preferred leader leads again once it is in the ISR."""
    with _nothing_left(brokers=3, data_dir=tmp_path / "cluster",
                       config={"leader.imbalance.check.interval.seconds": 1}) as cluster:
        preferred, other = _moved_leadership(cluster)
        assert cluster.wait_for_leader(TOPIC, 0, not_in=(other,)) == preferred


def _imbalanced_world(percentage):
    """A controller (fake clock) where broker 0 is the preferred replica of x, y, z (RF 1)
    and t (RF 3); 0 was fenced (t moved to 1) and is back, unfenced and in t's ISR:
    one of its four preferred partitions (25 %) is led by another broker."""
    w = World(n=3, config={"leader.imbalance.check.interval.seconds": 1,
                           "leader.imbalance.per.broker.percentage": percentage})
    for name in ("x", "y", "z"):
        assert w.create(name, partitions=-1, rf=-1, assignments={0: (0,)}).error_code == 0
    assert w.create("t", partitions=-1, rf=-1, assignments={0: (0, 1, 2)}).error_code == 0
    for _ in range(3):
        w.alive(1, 2)  # 0 is silent: fenced
    assert w.part("t").leader == 1 and w.c.image.brokers[0].fenced
    w.heartbeat(0)  # caught up: unfenced, leads its leaderless x, y, z again
    assert w.part("x").leader == 0
    assert w.alter((1, 2, 0)).error_code == 0
    return w


@pytest.mark.parametrize("percentage, leader", [(50, 1), (24, 0)])
def test_the_rebalance_waits_until_a_brokers_imbalance_is_above_the_percentage(percentage, leader):
    """``leader.imbalance.per.broker.percentage`` (ZooKeeper-mode Kafka's
    ``checkAndTriggerAutoLeaderRebalance``): 25 % is not above 50 %, and is above 24 %."""
    w = _imbalanced_world(percentage)
    w.alive(0, 1, 2, ms=1000)  # the check interval passed
    assert w.part("t").leader == leader


def test_the_rebalance_leaves_a_preferred_replica_out_of_the_isr_alone():
    """canPreferredReplicaBeLeader: only a preferred replica in the ISR takes over."""
    w = _imbalanced_world(0)
    assert w.alter((1, 2)).error_code == 0
    w.alive(0, 1, 2, ms=1000)
    assert w.part("t").leader == 1
    assert w.alter((1, 2, 0)).error_code == 0
    w.alive(0, 1, 2, ms=1000)
    assert w.part("t").leader == 0


def test_preferred_election_of_a_dead_or_out_of_sync_preferred_replica_is_not_available(cluster3_manual):
    """PREFERRED_LEADER_NOT_AVAILABLE while the preferred replica is dead; unknown
    partitions and topics are UNKNOWN_TOPIC_OR_PARTITION, each in its own result."""
    cluster = cluster3_manual
    cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
    cluster.wait_for_isr(TOPIC, 0, 3)
    preferred = cluster.describe(TOPIC)[0].replicas[0]
    cluster.kill(preferred)
    other = cluster.wait_for_leader(TOPIC, 0, not_in=(preferred,))
    response = elect_leaders_raw(cluster.brokers[other].port, 2, 0, {TOPIC: [0, 7], "nope": [0]})
    assert response.error_code == 0
    assert election_codes(response) == {(TOPIC, 0): PreferredLeaderNotAvailableError.code,
                                (TOPIC, 7): UnknownTopicOrPartitionError.code,
                                ("nope", 0): UnknownTopicOrPartitionError.code}
    assert cluster.leader_of(TOPIC, 0) == other
    # v0 has no election type (PREFERRED) and no top-level error code.
    assert election_codes(elect_leaders_raw(cluster.brokers[other].port, 0, 0, {TOPIC: [0]})) == {
        (TOPIC, 0): PreferredLeaderNotAvailableError.code}


def test_unclean_election_through_elect_leaders(cluster4_manual):
    """UNCLEAN: ELECTION_NOT_NEEDED for a partition with a leader; a leaderless partition
    whose ISR members are dead gets its live out-of-sync replica (whatever the topic's
    ``unclean.leader.election.enable``), which then leads alone; with no live replica,
    ELIGIBLE_LEADERS_NOT_AVAILABLE."""
    cluster = cluster4_manual
    cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
    cluster.wait_for_isr(TOPIC, 0, 3)
    leader = cluster.leader_of(TOPIC, 0)
    lagging, other = [r for r in cluster.describe(TOPIC)[0].replicas if r != leader]
    [spare] = {0, 1, 2, 3} - {leader, lagging, other}
    with AdminClient(bootstrap_servers=cluster.brokers[spare].bootstrap_servers) as admin:
        with pytest.raises(ElectionNotNeededError):
            admin.elect_leaders("unclean", [TopicPartition(TOPIC, 0)])
    cluster.kill(lagging)
    assert produce_raw(cluster.brokers[leader].port, TOPIC, [b"only", b"isr"]) == (0, 0)
    cluster.kill(other)
    cluster.kill(leader)
    cluster.restart(lagging)
    assert cluster.leader_of(TOPIC, 0) is None  # the topic does not allow unclean elections
    response = elect_leaders_raw(cluster.brokers[spare].port, 1, 1, {TOPIC: [0]})
    assert election_codes(response) == {(TOPIC, 0): 0}
    assert cluster.leader_of(TOPIC, 0) == lagging
    assert cluster.isr_of(TOPIC, 0) == (lagging,)
    # Every partition (null): the ones with a leader are not listed.
    assert (TOPIC, 0) not in election_codes(elect_leaders_raw(cluster.brokers[spare].port, 2, 1, None))
    # A partition whose every replica is dead.
    cluster.kill(lagging)
    assert election_codes(elect_leaders_raw(cluster.brokers[spare].port, 2, 1, {TOPIC: [0]})) == {
        (TOPIC, 0): EligibleLeadersNotAvailableError.code}


def test_an_unknown_election_type_is_invalid_request(cluster3_manual):
    from kproto.errors import InvalidRequestError
    cluster3_manual.create_topic(TOPIC, partitions=1, replication_factor=3)
    response = elect_leaders_raw(cluster3_manual.brokers[0].port, 2, 5, {TOPIC: [0]})
    assert response.error_code == InvalidRequestError.code
    assert election_codes(response) == {(TOPIC, 0): InvalidRequestError.code}
