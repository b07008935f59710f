"""AdminClient.describe_topics on a replicated MiniCluster (issue 13 step 2, item 4.5):
leader, replicas, ISR, offline replicas and leader epoch per partition (Java's
TopicPartitionInfo), before and after the leader is killed."""

from kproto.admin import AdminClient


def test_describe_topics_shows_replica_state_and_follows_a_leader_kill(cluster3):
    cluster3.create_topic("rs", partitions=2, replication_factor=3)
    for p in range(2):
        cluster3.wait_for_isr("rs", p, 3)
    registration = cluster3.describe("rs")[0]
    with AdminClient(bootstrap_servers=cluster3.bootstrap_servers) as admin:
        first = admin.describe_topics(["rs"])["rs"].partitions[0]
        assert first.leader == registration.leader and first.leader_epoch == registration.leader_epoch
        assert first.replicas == tuple(registration.replicas) and sorted(first.isr) == sorted(registration.replicas)
        assert first.offline_replicas == ()
        cluster3.kill(first.leader)
        new = cluster3.wait_for_leader("rs", 0, not_in=(first.leader,))
        isr = cluster3.wait_for_isr("rs", 0, 2)
        after = admin.describe_topics(["rs"])["rs"].partitions[0]
        assert after.leader == new and after.leader_epoch > first.leader_epoch
        assert after.replicas == first.replicas and sorted(after.isr) == sorted(isr)
        assert first.leader not in after.isr
