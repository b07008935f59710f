"""``client.rack`` against a rack-aware MiniCluster (issue 13 step 2, item 4.3; KIP-392):
a consumer on rack "b" reads every record of an RF=3 topic whose leader is elsewhere.

With the broker's RackAwareReplicaSelector the leader names the follower on rack "b" as
``preferred_read_replica`` and the consumer fetches from it (the routing is tested
without a network in test_validation_state.py); a broker that does not select answers
-1 and the consumer reads from the leader. Either way every record is read, once."""

import time

from kproto import Consumer, Producer
from kproto.structs import TopicPartition
from tests.minibroker.cluster.conftest import _nothing_left

TOPIC = "racked"
N = 100
SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


def test_a_consumer_with_client_rack_reads_every_record(tmp_path):
    with _nothing_left(brokers=3, racks=["a", "b", "c"], data_dir=tmp_path / "cluster",
                       config={"replica.selector.class": SELECTOR}) as cluster:
        cluster.create_topic(TOPIC, partitions=2, replication_factor=3)
        for p in range(2):
            cluster.wait_for_isr(TOPIC, p, 3)
        with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=1) as producer:
            for i in range(N):
                producer.send(TOPIC, b"%d" % i, partition=i % 2)
            producer.flush(30)
        got = []
        with Consumer(bootstrap_servers=cluster.bootstrap_servers, client_rack="b", enable_auto_commit=False,
                      metadata_max_age_ms=2000) as consumer:
            consumer.assign([TopicPartition(TOPIC, p) for p in range(2)])
            consumer.seek_to_beginning()
            deadline = time.monotonic() + 30
            while len(got) < N and time.monotonic() < deadline:
                got += [int(r.value) for r in consumer.poll(0.5)]
        assert sorted(got) == list(range(N))
