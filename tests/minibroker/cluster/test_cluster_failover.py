"""Failures a producer sees in a MiniCluster (issue 13, WP6 tests 3, 4 and 6):
``min.insync.replicas`` with brokers down, acks=all across a follower's death, and
leader elections with unclean election off and on. Produce requests are sent raw
(:func:`produce_raw`) so that each answer's exact error code is what is checked."""

from kproto.errors import (
    NotEnoughReplicasError,
    RequestTimedOutError,
)
from tests.minibroker.cluster.conftest import ck_metadata, produce_raw, replica, replica_log

TOPIC = "t"


def _followers(cluster, topic=TOPIC):
    leader = cluster.leader_of(topic, 0)
    return leader, [r for r in cluster.describe(topic)[0].replicas if r != leader]


def test_min_insync_replicas_refuses_acks_all_with_two_brokers_down_then_accepts_after_a_restart(cluster3):
    """WP6 test 3: NOT_ENOUGH_REPLICAS with nothing appended; a follower back in the ISR
    lets acks=all through again."""
    cluster3.create_topic(TOPIC, partitions=1, replication_factor=3, configs={"min.insync.replicas": "2"})
    leader, followers = _followers(cluster3)
    assert produce_raw(cluster3.brokers[leader].port, TOPIC, [b"a", b"b"]) == (0, 0)
    cluster3.wait_for_isr(TOPIC, 0, 3)
    for f in followers:
        cluster3.kill(f)
    assert cluster3.isr_of(TOPIC, 0) == (leader,)
    end = replica_log(cluster3, leader, TOPIC).log_end_offset
    code, _ = produce_raw(cluster3.brokers[leader].port, TOPIC, [b"c"])
    assert code == NotEnoughReplicasError.code
    assert replica_log(cluster3, leader, TOPIC).log_end_offset == end  # nothing appended
    assert produce_raw(cluster3.brokers[leader].port, TOPIC, [b"c"], acks=1) == (0, end)  # acks=1 is not bound
    cluster3.restart(followers[0])
    cluster3.wait_for_isr(TOPIC, 0, 2)
    assert produce_raw(cluster3.brokers[leader].port, TOPIC, [b"d"]) == (0, end + 1)


def test_acks_all_waits_for_a_killed_follower_to_leave_the_isr_then_succeeds(cluster3):
    """WP6 test 4: the request is held until the controller fences the dead follower (its
    session expires, the ISR shrinks); then the high watermark passes the record."""
    cluster3.create_topic(TOPIC, partitions=1, replication_factor=3)
    leader, followers = _followers(cluster3)
    cluster3.wait_for_isr(TOPIC, 0, 3)
    cluster3.kill(followers[0], wait=False)
    assert produce_raw(cluster3.brokers[leader].port, TOPIC, [b"x"], timeout_ms=20000) == (0, 0)
    assert followers[0] not in cluster3.isr_of(TOPIC, 0)
    assert replica(cluster3, leader, TOPIC).high_watermark == 1


def test_acks_all_times_out_below_the_session_timeout(cluster3):
    """WP6 test 4, second half: a timeout shorter than the time the controller takes to
    fence the dead follower answers REQUEST_TIMED_OUT (the record stays appended)."""
    cluster3.create_topic(TOPIC, partitions=1, replication_factor=3)
    leader, followers = _followers(cluster3)
    cluster3.wait_for_isr(TOPIC, 0, 3)
    cluster3.kill(followers[0], wait=False)
    code, _ = produce_raw(cluster3.brokers[leader].port, TOPIC, [b"x"], timeout_ms=20)
    assert code == RequestTimedOutError.code


def _out_of_sync_replica(cluster, configs):
    """A topic whose follower ``lagging`` missed records, then every ISR member killed:
    (lagging, old leader, the other ISR member). On four brokers, so that one broker
    outside the replicas keeps a controller running."""
    cluster.create_topic(TOPIC, partitions=1, replication_factor=3, configs=configs)
    leader, (lagging, other) = _followers(cluster)
    cluster.wait_for_isr(TOPIC, 0, 3)
    assert produce_raw(cluster.brokers[leader].port, TOPIC, [b"both"]) == (0, 0)
    cluster.kill(lagging)
    assert produce_raw(cluster.brokers[leader].port, TOPIC, [b"only", b"isr"]) == (0, 1)
    cluster.kill(other)
    cluster.kill(leader)
    return lagging, leader, other


def test_unclean_election_off_leaves_the_partition_leaderless(cluster4):
    """WP6 test 6: with every ISR member dead, an out-of-sync replica coming back does not
    lead; Metadata says LEADER_NOT_AVAILABLE."""
    lagging, leader, _ = _out_of_sync_replica(cluster4, {})
    cluster4.restart(lagging)
    assert cluster4.leader_of(TOPIC, 0) is None
    assert cluster4.isr_of(TOPIC, 0) == (leader,)  # the last ISR member stays in it
    ck, _, md = ck_metadata(cluster4.brokers[lagging].bootstrap_servers, TOPIC)
    assert md.topics[TOPIC].partitions[0].leader == -1
    assert md.topics[TOPIC].partitions[0].error.code() == ck.KafkaError.LEADER_NOT_AVAILABLE


def test_unclean_election_on_elects_the_out_of_sync_replica_and_the_old_leader_truncates(cluster4):
    """WP6 test 6: the returning replica leads (losing what only the ISR had); the old
    leader, back, truncates its divergent records and follows."""
    lagging, leader, _ = _out_of_sync_replica(cluster4, {"unclean.leader.election.enable": "true"})
    cluster4.restart(lagging)
    assert cluster4.wait_for_leader(TOPIC, 0) == lagging
    assert produce_raw(cluster4.brokers[lagging].port, TOPIC, [b"new"], acks=1) == (0, 1)
    cluster4.restart(leader)
    cluster4.wait_for_isr(TOPIC, 0, 2)
    assert replica(cluster4, leader, TOPIC).truncated_records >= 1
    assert replica_log(cluster4, leader, TOPIC).log_end_offset == 2
