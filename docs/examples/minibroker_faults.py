"""Faults for tests of a client: request controls on a broker, a partitioned cluster.

Run it: ``python docs/examples/minibroker_faults.py``.
"""

from kproto import Producer
from kproto.errors import NotLeaderOrFollowerError
from kproto.protocol import ApiKey
from minibroker import Fail, MiniBroker, MiniCluster

# Two Produce requests fail with NOT_LEADER_OR_FOLLOWER: the producer retries.
with MiniBroker() as broker:
    failing = broker.requests.control(ApiKey.PRODUCE, Fail(NotLeaderOrFollowerError), times=2)
    with Producer(bootstrap_servers=broker.bootstrap_servers, enable_idempotence=True) as producer:
        offset = producer.send("orders", b"paid", partition=0).result(10).offset
    print(f"written at offset {offset} after {failing.count} failed attempts")

# A leader cut off from the other brokers loses its leadership; heal() reconnects it.
with MiniCluster(brokers=3) as cluster:
    cluster.create_topic("orders", partitions=1, replication_factor=3)
    cluster.wait_for_isr("orders", 0, 3)
    old = cluster.wait_for_leader("orders", 0)
    cluster.isolate(old, from_clients=False)  # returns once the controller has fenced it
    new = cluster.wait_for_leader("orders", 0, not_in=(old,))
    cluster.heal()
    cluster.wait_for_isr("orders", 0, 3)  # the old leader follows the new one
    print(f"leader moved from broker {old} to broker {new}; ISR after heal: {cluster.isr_of('orders', 0)}")
