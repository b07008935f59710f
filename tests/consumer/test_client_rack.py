"""``client.rack`` against a rack-aware MiniCluster (issue 13 step 2, item 4.3; KIP-392):
a kproto consumer on rack "b" reads every record of an RF=3 partition whose leader is on
another rack, and fetches them from the rack-b follower.

With the broker's RackAwareReplicaSelector the leader names the follower on rack "b" as
``preferred_read_replica`` and the consumer fetches from it (the routing is also tested
without a network in test_validation_state.py). The fetches are counted per broker with
a request control that matches the consumer's client id only (followers fetch too)."""

import time

from kproto import Consumer, Producer
from kproto.protocol import ApiKey
from kproto.structs import TopicPartition
from minibroker.config import RACK_AWARE_SELECTOR
from tests.minibroker.cluster.conftest import _nothing_left

TOPIC = "racked"
N = 100


def test_a_consumer_with_client_rack_reads_every_record_from_its_racks_replica(tmp_path):
    with _nothing_left(brokers=3, racks=["a", "b", "c"], data_dir=tmp_path / "cluster",
                       config={"replica.selector.class": RACK_AWARE_SELECTOR}) as cluster:
        cluster.create_topic(TOPIC, partitions=3, replication_factor=3)
        near = next(b.node_id for b in cluster.brokers if b.rack == "b")
        partition = next(p for p in range(3) if cluster.leader_of(TOPIC, p) != near)
        leader = cluster.leader_of(TOPIC, partition)
        cluster.wait_for_isr(TOPIC, partition, 3)
        with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=1) as producer:
            for i in range(N):
                producer.send(TOPIC, b"%d" % i, partition=partition)
            producer.flush(30)
        fetches = {b.node_id: cluster.requests(b.node_id).control(ApiKey.FETCH, client_id="rack-b")
                   for b in cluster.brokers}
        got = []
        with Consumer(bootstrap_servers=cluster.bootstrap_servers, client_id="rack-b", client_rack="b",
                      enable_auto_commit=False) as consumer:
            consumer.assign([TopicPartition(TOPIC, partition)])
            consumer.seek_to_beginning()
            deadline = time.monotonic() + 30
            while len(got) < N and time.monotonic() < deadline:
                got += [int(r.value) for r in consumer.poll(0.5)]
        assert got == list(range(N))
        # The leader was asked first and named the rack-b follower, which served the rest.
        assert fetches[near].count >= 1, {n: c.count for n, c in fetches.items()}
        assert fetches[leader].count >= 1
