"""Faults of a MiniCluster besides a crash (issue 13 step 2, "Faults"): a broker isolated
from the other brokers and/or from clients (silence, not resets), healed; a slow disk;
request controls on one broker. Each test waits for states, with generous bounds."""

import logging
import socket
import time

import pytest

from kproto.errors import NotLeaderOrFollowerError, RequestTimedOutError
from kproto.protocol import ApiKey
from kproto.protocol.messages import MetadataRequest
from minibroker.faults import Fail
from tests.minibroker.cluster.conftest import produce_raw, replica, replica_log
from tests.support.raw_client import RawClient

TOPIC = "t"


def _read_back(bootstrap, n, timeout=15):
    """Partition 0's values, read with kproto's consumer until ``n`` are there."""
    from kproto import Consumer
    from kproto.structs import TopicPartition
    got = []
    with Consumer(bootstrap_servers=bootstrap, enable_auto_commit=False) as consumer:
        consumer.assign([TopicPartition(TOPIC, 0)])
        consumer.seek_to_beginning()
        deadline = time.monotonic() + timeout
        while len(got) < n and time.monotonic() < deadline:
            got += [r.value for r in consumer.poll(0.5)]
    return got


def _others(cluster, node_id):
    return ",".join(b.bootstrap_servers for b in cluster.brokers if b.node_id != node_id)


def test_a_leader_isolated_from_the_brokers_loses_leadership_and_truncates_after_heal(cluster3, caplog):
    """The controller stops hearing the isolated leader, fences it and elects another ISR
    member; acks=all to the old leader is never acknowledged (its followers cannot fetch,
    its AlterPartition does not reach the controller); after heal it learns the new
    leader, truncates what it alone had, and follows: no acknowledged record is lost."""
    from kproto import Producer
    caplog.set_level(logging.INFO, logger="minibroker.cluster")
    cluster3.create_topic(TOPIC, partitions=1, replication_factor=3, configs={"min.insync.replicas": "2"})
    cluster3.wait_for_isr(TOPIC, 0, 3)
    old = cluster3.leader_of(TOPIC, 0)
    for i in range(3):
        assert produce_raw(cluster3.brokers[old].port, TOPIC, [b"a%d" % i]) == (0, i)
    cluster3.isolate(old, from_clients=False, wait=False)
    code, _ = produce_raw(cluster3.brokers[old].port, TOPIC, [b"unacked"], timeout_ms=1500)
    assert code == RequestTimedOutError.code  # appended on the old leader only, never acknowledged
    assert replica_log(cluster3, old, TOPIC).log_end_offset == 4
    new = cluster3.wait_for_leader(TOPIC, 0, not_in=(old,))
    assert old not in cluster3.isr_of(TOPIC, 0)
    with Producer(bootstrap_servers=_others(cluster3, old), acks="all", enable_idempotence=True) as producer:
        for i in range(3, 6):
            assert producer.send(TOPIC, b"a%d" % i, partition=0).result(15).offset == i
    assert replica(cluster3, old, TOPIC).leader_epoch < replica(cluster3, new, TOPIC).leader_epoch  # it knows nothing
    cluster3.heal()
    cluster3.wait_for_isr(TOPIC, 0, 3)
    assert replica(cluster3, old, TOPIC).truncated_records >= 1
    assert _read_back(cluster3.bootstrap_servers, 6) == [b"a%d" % i for i in range(6)]
    lines = [r.getMessage() for r in caplog.records if r.name == "minibroker.cluster"]
    assert any(m.startswith(f"isolated broker {old} from brokers") for m in lines)
    assert any(m.startswith("healed: ") and f"broker {old}: reachable again by brokers" in m for m in lines)


def test_isolating_the_controller_host_moves_the_controller(cluster3):
    """Its lease is not renewed: the controller moves to another node, which fences it."""
    host = cluster3.controller_id
    cluster3.isolate(host)  # returns once fenced by the new controller
    assert cluster3.controller_id not in (host, -1)
    cluster3.heal()  # returns once it is unfenced again
    assert cluster3.controller_id != host  # the lease stays where it went


def test_a_broker_isolated_from_clients_is_silent_and_clients_use_the_others(cluster3):
    """Clients' requests to it get no answer (the connection stays open: silence, not a
    reset) while the brokers still replicate from it; a producer bootstrapped with every
    broker writes to partitions led elsewhere. After heal the held request is answered."""
    from kproto import Producer
    cluster3.create_topic(TOPIC, partitions=3, replication_factor=3)
    for p in range(3):
        cluster3.wait_for_isr(TOPIC, p, 3)
    leaders = {p: cluster3.leader_of(TOPIC, p) for p in range(3)}
    silent = leaders[0]
    elsewhere = next(p for p, leader in leaders.items() if leader != silent)
    cluster3.isolate(silent, from_brokers=False)
    raw = RawClient(cluster3.brokers[silent].port, timeout=1.0)  # a new connection: accepted, silent
    try:
        raw.send(ApiKey.METADATA, 9, MetadataRequest(topics=[]))
        with pytest.raises(socket.timeout):
            raw.receive_frame()
        with Producer(bootstrap_servers=cluster3.bootstrap_servers, acks="all", request_timeout_ms=1000,
                      enable_idempotence=True) as producer:
            assert producer.send(TOPIC, b"x", partition=elsewhere).result(20).offset == 0
        assert sorted(cluster3.isr_of(TOPIC, 0)) == sorted(cluster3.describe(TOPIC)[0].replicas)  # replicating
        cluster3.heal()
        raw.sock.settimeout(5)
        assert raw.receive(ApiKey.METADATA, 9)[0] == 1  # the held request, answered late
    finally:
        raw.close()


def test_a_slow_follower_makes_acks_all_wait_for_its_disk(cluster3):
    cluster3.create_topic(TOPIC, partitions=1, replication_factor=3)
    cluster3.wait_for_isr(TOPIC, 0, 3)
    leader = cluster3.leader_of(TOPIC, 0)
    follower = next(r for r in cluster3.describe(TOPIC)[0].replicas if r != leader)
    assert produce_raw(cluster3.brokers[leader].port, TOPIC, [b"warm"]) == (0, 0)
    cluster3.slow_disk(follower, 300)
    started = time.monotonic()
    assert produce_raw(cluster3.brokers[leader].port, TOPIC, [b"slow"]) == (0, 1)
    assert time.monotonic() - started >= 0.3  # the follower's append took the disk's time
    cluster3.slow_disk(follower, 0)


def test_a_follower_slower_than_the_lag_time_leaves_the_isr_and_rejoins_once_cleared(cluster3):
    """A disk slower than replica.lag.time.max.ms (1000 ms here) keeps the follower behind
    a steady producer: the leader shrinks the ISR; cleared, the follower catches up and
    the ISR expands again."""
    cluster3.create_topic(TOPIC, partitions=1, replication_factor=3)
    cluster3.wait_for_isr(TOPIC, 0, 3)
    leader = cluster3.leader_of(TOPIC, 0)
    follower = next(r for r in cluster3.describe(TOPIC)[0].replicas if r != leader)
    cluster3.slow_disk(follower, 1500)
    deadline = time.monotonic() + 15
    while follower in cluster3.isr_of(TOPIC, 0):
        assert time.monotonic() < deadline, "the slow follower stayed in the ISR"
        assert produce_raw(cluster3.brokers[leader].port, TOPIC, [b"v"], acks=1)[0] == 0
        time.sleep(0.05)
    cluster3.slow_disk(follower, 0)
    assert follower in cluster3.wait_for_isr(TOPIC, 0, 3, timeout=15)


def test_request_controls_on_one_broker_of_the_cluster(cluster3):
    """Produce fails twice on the leader with NOT_LEADER_OR_FOLLOWER: kproto's producer
    refreshes its metadata, retries and writes once; heal removes what is left."""
    from kproto import Producer
    cluster3.create_topic(TOPIC, partitions=1, replication_factor=3)
    cluster3.wait_for_isr(TOPIC, 0, 3)
    leader = cluster3.leader_of(TOPIC, 0)
    failing = cluster3.requests(leader).control(ApiKey.PRODUCE, Fail(NotLeaderOrFollowerError), times=2)
    counting = cluster3.requests(leader).control(ApiKey.PRODUCE)
    with Producer(bootstrap_servers=cluster3.bootstrap_servers, acks="all", enable_idempotence=True,
                  retry_backoff_ms=20) as producer:
        assert producer.send(TOPIC, b"once", partition=0).result(15).offset == 0
    assert failing.count == 2 and counting.count == 3
    cluster3.heal()
    assert not counting.active and cluster3.requests(leader).controls == []
    assert _read_back(cluster3.bootstrap_servers, 1) == [b"once"]


def test_a_follower_isolated_from_the_brokers_stops_fetching_and_catches_up_after_heal(cluster3):
    """Its own fetchers send nothing while it is cut off (the leader, not isolated, would
    answer them): its log stays behind the leader's; healed, it catches up and rejoins."""
    cluster3.create_topic(TOPIC, partitions=1, replication_factor=3)
    cluster3.wait_for_isr(TOPIC, 0, 3)
    leader = cluster3.leader_of(TOPIC, 0)
    follower = next(r for r in cluster3.describe(TOPIC)[0].replicas if r != leader)
    cluster3.isolate(follower)  # fenced: out of the ISR
    assert follower not in cluster3.isr_of(TOPIC, 0)
    assert produce_raw(cluster3.brokers[leader].port, TOPIC, [b"a", b"b"]) == (0, 0)
    time.sleep(0.3)  # several fetch rounds (replica.fetch.wait.max.ms is 100 ms): none may reach the leader
    assert replica_log(cluster3, follower, TOPIC).log_end_offset == 0
    cluster3.heal()
    assert follower in cluster3.wait_for_isr(TOPIC, 0, 3)
    assert replica_log(cluster3, follower, TOPIC).log_end_offset == 2


def test_the_quorum_cuts_an_isolated_node_off_and_heal_delivers_what_it_missed():
    """Quorum.isolate: no lease renewal, NOT_CONTROLLER on its channel (it sees no active
    controller), no delivery; heal delivers the missed records in one call."""
    import asyncio

    from kproto.errors import NotControllerError
    from minibroker.cluster.api import BrokerHeartbeatRequest, NewTopic
    from tests.minibroker.cluster.test_quorum import Nodes

    nodes = Nodes(3)
    quorum = nodes.quorum
    quorum.isolate(2)
    assert nodes.channels[2].active_controller_id == -1
    assert nodes.beat(2).error_code == NotControllerError.code
    before = nodes.images[2].offset
    [created] = asyncio.run(nodes.channels[0].create_topics(
        [NewTopic(name="t", num_partitions=1, replication_factor=1)], validate_only=False))
    assert created.error_code == 0 and nodes.images[2].offset == before  # nothing delivered
    [refused] = asyncio.run(nodes.channels[2].create_topics(
        [NewTopic(name="u", num_partitions=1, replication_factor=1)], validate_only=False))
    assert refused.error_code == NotControllerError.code
    renewed = quorum._leases[2]
    quorum.renew_lease(2)
    nodes.clock.now += 1
    quorum.renew_lease(2)
    assert quorum._leases[2] == renewed  # its lease ages
    quorum.heal(2)
    assert nodes.images[2] == quorum.controller.image  # caught up at once
    assert nodes.run(nodes.channels[2].heartbeat(BrokerHeartbeatRequest(
        broker_id=2, broker_epoch=nodes.epochs[2], current_metadata_offset=nodes.images[2].offset))).error_code == 0


def test_a_cluster_stops_cleanly_with_a_broker_isolated_and_requests_held(cluster3):
    """Held requests and waiting fetchers end with the cluster (the fixture checks that no
    thread or socket is left)."""
    from minibroker.faults import Hold
    cluster3.create_topic(TOPIC, partitions=1, replication_factor=3)
    cluster3.wait_for_isr(TOPIC, 0, 3)
    leader = cluster3.leader_of(TOPIC, 0)
    cluster3.requests(leader).control(ApiKey.METADATA, Hold())
    cluster3.isolate(leader, wait=False)
    raw = RawClient(cluster3.brokers[leader].port, timeout=5)
    raw.send(ApiKey.METADATA, 9, MetadataRequest(topics=[]))
    raw.close()
