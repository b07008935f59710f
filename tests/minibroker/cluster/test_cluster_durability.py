"""What survives on disk in a MiniCluster (issue 13, WP6 test 5): a follower that missed
writes while dead, and an old leader holding records nobody acknowledged, both end with
segment files and a ``leader-epoch-checkpoint`` byte-identical to the leader's."""

import pytest

from tests.minibroker.cluster.conftest import produce_raw, replica_log, wait_same_files

TOPIC = "t"


def test_a_follower_restarted_after_missed_writes_catches_up_byte_for_byte(cluster3):
    cluster3.create_topic(TOPIC, partitions=1, replication_factor=3, configs={"segment.bytes": "2048"})
    leader = cluster3.leader_of(TOPIC, 0)
    follower = next(r for r in cluster3.describe(TOPIC)[0].replicas if r != leader)
    port = cluster3.brokers[leader].port
    for i in range(10):
        assert produce_raw(port, TOPIC, [b"before-%d" % i * 20])[0] == 0
    cluster3.wait_for_isr(TOPIC, 0, 3)
    cluster3.kill(follower)
    for i in range(30):  # several segments' worth while it is away
        assert produce_raw(port, TOPIC, [b"missed-%d" % i * 20])[0] == 0
    cluster3.restart(follower)
    cluster3.wait_for_isr(TOPIC, 0, 3)
    leader_files, follower_files = wait_same_files(cluster3, leader, follower, TOPIC)
    assert len([n for n in leader_files if n.endswith(".log")]) > 1
    assert follower_files == leader_files
    assert replica_log(cluster3, follower, TOPIC).log_end_offset == 40


def test_an_old_leader_with_unacknowledged_records_truncates_and_matches_the_new_leader(cluster3):
    """The leader appends records (acks=1) that no follower has, then dies; a follower is
    elected (unclean: it was alone), writes on; the old leader comes back, truncates what
    it alone had, and its files equal the new leader's."""
    cluster3.create_topic(TOPIC, partitions=1, replication_factor=2,
                          configs={"unclean.leader.election.enable": "true"})
    old, new = cluster3.describe(TOPIC)[0].replicas
    assert produce_raw(cluster3.brokers[old].port, TOPIC, [b"shared"]) == (0, 0)
    cluster3.wait_for_isr(TOPIC, 0, 2)
    cluster3.kill(new)
    assert produce_raw(cluster3.brokers[old].port, TOPIC, [b"old-only-1", b"old-only-2"], acks=1) == (0, 1)
    cluster3.kill(old)
    cluster3.restart(new)
    assert cluster3.wait_for_leader(TOPIC, 0) == new
    assert produce_raw(cluster3.brokers[new].port, TOPIC, [b"new-1"], acks=1) == (0, 1)
    cluster3.restart(old)
    cluster3.wait_for_isr(TOPIC, 0, 2)
    new_files, old_files = wait_same_files(cluster3, new, old, TOPIC)
    assert old_files == new_files
    assert replica_log(cluster3, old, TOPIC).log_end_offset == 2


@pytest.mark.parametrize("kill", [True, False])
def test_a_whole_cluster_restarted_on_its_directory_keeps_its_records(tmp_path, kill):
    """Stopped (clean) or with its brokers killed first, a cluster started again on the
    same data_dir finds its topics and committed records."""
    from minibroker.cluster import MiniCluster
    with MiniCluster(brokers=3, data_dir=tmp_path) as cluster:
        cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
        leader = cluster.leader_of(TOPIC, 0)
        assert produce_raw(cluster.brokers[leader].port, TOPIC, [b"a", b"b", b"c"]) == (0, 0)
        if kill:
            for b in cluster.brokers:
                cluster.kill(b.node_id, wait=False)
    with MiniCluster(brokers=3, data_dir=tmp_path) as cluster:
        leader = cluster.wait_for_leader(TOPIC, 0)
        cluster.wait_for_isr(TOPIC, 0, 3)
        assert replica_log(cluster, leader, TOPIC).log_end_offset == 3
