"""A MiniCluster's metadata plane end to end (issue 13, WP6 tests 1 and 7): start to ready,
Metadata as real clients see it, topic creation errors through the controller, controller
failover, and a killed broker registering again on its old port."""

import asyncio
import logging
import time

import pytest

from kproto.errors import (
    CoordinatorNotAvailableError,
    InvalidReplicationFactorError,
    LeaderNotAvailableError,
    NotCoordinatorError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import FindCoordinatorRequest, HeartbeatRequest, MetadataRequest
from minibroker.cluster import MiniCluster
from minibroker.coordinator.offsets_log import OFFSETS_TOPIC, partition_for
from tests.minibroker.cluster.conftest import ck_metadata
from tests.support.raw_client import RawClient


def test_start_to_ready_lists_every_broker_and_the_controller(cluster3):
    brokers = cluster3.brokers
    assert [b.node_id for b in brokers] == [0, 1, 2]
    assert all(b.alive and b.host == "127.0.0.1" and b.port > 0 for b in brokers)
    assert len({b.port for b in brokers}) == 3
    assert cluster3.bootstrap_servers == ",".join(f"127.0.0.1:{b.port}" for b in brokers)
    assert cluster3.controller_id == 0
    assert all(b.data_dir.is_dir() and b.data_dir.name == f"broker-{b.node_id}" for b in brokers)


def test_start_takes_well_under_a_few_seconds(tmp_path):
    began = time.monotonic()
    with MiniCluster(brokers=3, data_dir=tmp_path) as cluster:
        assert len(cluster.brokers) == 3
    assert time.monotonic() - began < 15  # generous: ~0.3 s alone on a laptop


def test_metadata_through_confluent_kafka_shows_replicas_isr_and_spread_leaders(cluster3):
    cluster3.create_topic("rf3", partitions=3, replication_factor=3)
    _, _, md = ck_metadata(cluster3.bootstrap_servers, "rf3")
    assert sorted(md.brokers) == [0, 1, 2]
    assert {b.id: b.port for b in md.brokers.values()} == {b.node_id: b.port for b in cluster3.brokers}
    assert md.controller_id == cluster3.controller_id
    parts = md.topics["rf3"].partitions
    assert sorted(parts) == [0, 1, 2]
    for p in parts.values():
        assert sorted(p.replicas) == [0, 1, 2]
        assert sorted(p.isrs) == [0, 1, 2]
        assert p.leader == p.replicas[0]
    assert sorted(p.leader for p in parts.values()) == [0, 1, 2]  # one leader per broker
    assert [(r.leader, r.replicas, r.isr) for r in cluster3.describe("rf3")] == [
        (parts[i].leader, tuple(parts[i].replicas), tuple(parts[i].isrs)) for i in range(3)]


def test_metadata_through_kproto_admin(cluster3):
    from kproto import AdminClient
    cluster3.create_topic("rf3", partitions=3, replication_factor=3)
    with AdminClient({"bootstrap.servers": cluster3.brokers[2].bootstrap_servers}) as admin:
        described = admin.describe_topics(["rf3"])["rf3"]
    assert [p.partition for p in described.partitions] == [0, 1, 2]
    for p, reg in zip(described.partitions, cluster3.describe("rf3")):
        assert (p.leader, p.leader_epoch, p.replicas, p.isr) == (reg.leader, reg.leader_epoch, reg.replicas, reg.isr)


def test_racks_are_reported_and_replicas_span_them(cluster3_racks):
    cluster3_racks.create_topic("racked", partitions=4, replication_factor=3)
    _, _, md = ck_metadata(cluster3_racks.bootstrap_servers, "racked")
    assert [b.rack for b in cluster3_racks.brokers] == ["a", "b", "c"]
    for reg in cluster3_racks.describe("racked"):
        assert len({cluster3_racks.brokers[r].rack for r in reg.replicas}) == 3


def test_create_topics_errors_through_the_controller(cluster3):
    ck, admin, _ = ck_metadata(cluster3.bootstrap_servers)
    from confluent_kafka.admin import NewTopic
    futures = admin.create_topics([
        NewTopic("rf4", num_partitions=1, replication_factor=4),
        # librdkafka wants the count with an assignment, and sends -1 for both (Kafka's rule)
        NewTopic("to-9", num_partitions=1, replica_assignment=[[0, 9]]),
        NewTopic("twice", num_partitions=1, replica_assignment=[[1, 1]]),
        NewTopic("fine", num_partitions=2, replica_assignment=[[2, 0], [0, 1]]),
    ])
    codes = {}
    for name, future in futures.items():
        try:
            future.result(10)
            codes[name] = 0
        except ck.KafkaException as exc:
            codes[name] = exc.args[0].code()
    assert codes == {"rf4": ck.KafkaError.INVALID_REPLICATION_FACTOR,
                     "to-9": ck.KafkaError.INVALID_REPLICA_ASSIGNMENT,
                     "twice": ck.KafkaError.INVALID_REPLICA_ASSIGNMENT, "fine": 0}
    assert [r.replicas for r in cluster3.describe("fine")] == [(2, 0), (0, 1)]
    with pytest.raises(InvalidReplicationFactorError):
        cluster3.create_topic("rf4-direct", partitions=1, replication_factor=4)


def test_create_partitions_and_delete_topics_through_the_controller(cluster3):
    from kproto import AdminClient
    cluster3.create_topic("grow", partitions=1, replication_factor=2)
    with AdminClient({"bootstrap.servers": cluster3.bootstrap_servers}) as admin:
        admin.create_partitions({"grow": 4})
        assert len(cluster3.describe("grow")) == 4
        assert all(len(r.replicas) == 2 for r in cluster3.describe("grow"))
        admin.delete_topics(["grow"])
    with pytest.raises(KeyError):
        cluster3.describe("grow")


def test_metadata_auto_creates_through_the_controller(cluster3):
    client = RawClient(cluster3.brokers[1].port)
    try:
        answer = client.request(ApiKey.METADATA, 9, MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name="auto")], allow_auto_topic_creation=True))
    finally:
        client.close()
    [topic] = answer.topics
    [reg] = cluster3.describe("auto")  # num.partitions 1, default.replication.factor 1
    assert (topic.error_code, topic.name, len(reg.replicas)) == (0, "auto", 1)
    assert [(p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes) for p in topic.partitions] == [
        (reg.leader, reg.leader_epoch, list(reg.replicas), list(reg.isr))]
    assert answer.controller_id == cluster3.controller_id
    assert sorted(b.node_id for b in answer.brokers) == [0, 1, 2]


def test_find_coordinator_names_the_leader_of_the_groups_offsets_partition(cluster3):
    """The offsets topic is made through the controller on the first FindCoordinator, with
    offsets.topic.replication.factor (3 on 3 brokers), and every broker names the same
    coordinator: the leader of the group's partition."""
    answers = []
    for b in cluster3.brokers:
        client = RawClient(b.port)
        try:
            answers.append(client.request(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="g1", key_type=0)))
        finally:
            client.close()
    regs = cluster3.describe(OFFSETS_TOPIC)
    assert len(regs) == 50 and all(len(r.replicas) == 3 for r in regs)
    leader = regs[partition_for("g1", 50)].leader
    assert [(a.error_code, a.node_id, a.port) for a in answers] == [(0, leader, cluster3.brokers[leader].port)] * 3


def test_group_apis_on_another_broker_are_not_coordinator(cluster3):
    client = RawClient(cluster3.brokers[0].port)
    try:
        client.request(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="g2", key_type=0))
        leader = cluster3.leader_of(OFFSETS_TOPIC, partition_for("g2", 50))
    finally:
        client.close()
    other = next(b for b in cluster3.brokers if b.node_id != leader)
    client = RawClient(other.port)
    try:
        answer = client.request(ApiKey.HEARTBEAT, 4, HeartbeatRequest(group_id="g2", generation_id=1, member_id="m"))
    finally:
        client.close()
    assert answer.error_code == NotCoordinatorError.code


def test_kill_the_controller_moves_it_and_topics_can_still_be_made(cluster3, caplog):
    """WP6 test 7: a new controller_id with epoch + 1, a topic created afterwards works."""
    epoch = cluster3.quorum.controller_epoch
    with caplog.at_level(logging.INFO, logger="minibroker.cluster"):
        cluster3.kill(0)
    assert cluster3.controller_id == 1
    assert cluster3.quorum.controller_epoch == epoch + 1
    assert any("killed broker 0" in r.message and "moved 0->1" in r.message for r in caplog.records)
    cluster3.create_topic("after", partitions=2, replication_factor=2)
    assert all(set(r.replicas) <= {1, 2} for r in cluster3.describe("after"))
    _, _, md = ck_metadata(cluster3.brokers[2].bootstrap_servers, "after")
    assert md.controller_id == 1
    assert sorted(md.brokers) == [1, 2]


def test_killed_broker_leaves_metadata_and_registers_again_on_its_port(cluster3):
    cluster3.create_topic("t", partitions=3, replication_factor=3)
    port = cluster3.brokers[2].port
    cluster3.kill(2)
    assert not cluster3.brokers[2].alive
    _, _, md = ck_metadata(cluster3.brokers[0].bootstrap_servers, "t")
    assert sorted(md.brokers) == [0, 1]
    for p in md.topics["t"].partitions.values():
        assert p.leader in (0, 1) and 2 not in p.isrs
    cluster3.restart(2)
    assert cluster3.brokers[2].alive and cluster3.brokers[2].port == port
    _, _, md = ck_metadata(cluster3.brokers[2].bootstrap_servers, "t")
    assert sorted(md.brokers) == [0, 1, 2]


def test_a_controlled_shutdown_moves_leaderships_before_it_returns_and_checkpoints(cluster3, caplog):
    """Issue 13 step 2 (rolling restarts): ``shutdown(i)`` is Kafka's controlled shutdown:
    once it returns, the broker is fenced, leads nothing and is out of every ISR (no
    session to wait out, unlike a kill), and its replication checkpoints are on disk."""
    cluster3.create_topic("t", partitions=3, replication_factor=3)
    for p in range(3):
        cluster3.wait_for_isr("t", p, 3)
    led = [p for p in range(3) if cluster3.leader_of("t", p) == 1]
    assert led  # placement spreads leaders: broker 1 leads one of the three
    with caplog.at_level(logging.INFO, logger="minibroker.cluster"):
        cluster3.shutdown(1)
    assert not cluster3.brokers[1].alive
    for p in range(3):
        assert cluster3.leader_of("t", p) in (0, 2) and 1 not in cluster3.isr_of("t", p)
    assert any("shut down broker 1 (controlled)" in r.message and "leaders moved: t-" in r.message
               for r in caplog.records)
    assert (cluster3.brokers[1].data_dir / "replication-offset-checkpoint").exists()
    with pytest.raises(RuntimeError, match="not running"):
        cluster3.shutdown(1)
    cluster3.restart(1)
    for p in range(3):
        assert 1 in cluster3.wait_for_isr("t", p, 3)


def test_config_keys_of_the_cluster_are_refused():
    with pytest.raises(ValueError, match="data_dir"):
        MiniCluster(config={"log.dirs": "/tmp/x"})
    with pytest.raises(ValueError, match="racks"):
        MiniCluster(config={"broker.rack": "a"})
    with pytest.raises(ValueError, match="one per broker"):
        MiniCluster(brokers=3, racks=["a"])
    with pytest.raises(ValueError, match="unknown"):
        MiniCluster(config={"no.such.key": 1})


def test_async_face_in_the_callers_loop(tmp_path):
    async def run():
        async with MiniCluster(brokers=2, data_dir=tmp_path) as cluster:
            await cluster.create_topic_async("a", partitions=1, replication_factor=2)
            assert sorted(await cluster.wait_for_isr_async("a", 0, 2)) == [0, 1]
            leader = cluster.leader_of("a", 0)
            await cluster.kill_async(leader)
            assert await cluster.wait_for_leader_async("a", 0, not_in=(leader,)) == 1 - leader
            await cluster.restart_async(leader)
            assert cluster.brokers[leader].alive
            with pytest.raises(RuntimeError, match="_async"):
                cluster.kill(0)
    asyncio.run(run())


def test_a_partition_without_a_leader_is_leader_not_available_with_its_offline_replica(cluster3):
    cluster3.create_topic("lonely", partitions=1, replication_factor=1)
    [reg] = cluster3.describe("lonely")
    gone = reg.leader
    cluster3.kill(gone)
    assert cluster3.leader_of("lonely", 0) is None
    alive = next(b for b in cluster3.brokers if b.alive)
    client = RawClient(alive.port)
    try:
        answer = client.request(ApiKey.METADATA, 9, MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name="lonely")], allow_auto_topic_creation=False))
    finally:
        client.close()
    [p] = answer.topics[0].partitions
    assert (p.error_code, p.leader_id, p.replica_nodes, p.isr_nodes, p.offline_replicas) == (
        LeaderNotAvailableError.code, -1, [gone], [gone], [gone])
    assert p.leader_epoch == reg.leader_epoch + 1


def test_a_killed_broker_resets_its_connections_and_stops_listening(cluster3):
    """kill is a crash: a connected client sees a reset (not an orderly close) and no
    answer; nothing listens on the port until the restart."""
    client = RawClient(cluster3.brokers[1].port)
    try:
        client.request(ApiKey.METADATA, 9, MetadataRequest(topics=[], allow_auto_topic_creation=False))
        cluster3.kill(1, wait=False)
        with pytest.raises(ConnectionResetError):
            client.send(ApiKey.METADATA, 9, MetadataRequest(topics=[], allow_auto_topic_creation=False))
            client.receive_frame()
    finally:
        client.close()
    with pytest.raises(ConnectionRefusedError):
        RawClient(cluster3.brokers[1].port)
    cluster3.restart(1)
    RawClient(cluster3.brokers[1].port).close()


def _find_coordinator(port, group):
    client = RawClient(port)
    try:
        return client.request(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key=group, key_type=0))
    finally:
        client.close()


def test_offsets_topic_replication_is_capped_at_the_brokers_and_leaderless_means_coordinator_not_available(tmp_path):
    with MiniCluster(brokers=2, data_dir=tmp_path) as two:
        assert _find_coordinator(two.brokers[0].port, "g").error_code == 0
        assert {len(r.replicas) for r in two.describe(OFFSETS_TOPIC)} == {2}  # min(3, brokers)
    with MiniCluster(brokers=2, data_dir=tmp_path / "rf1", config={"offsets.topic.replication.factor": 1}) as two:
        assert _find_coordinator(two.brokers[0].port, "g").error_code == 0
        regs = two.describe(OFFSETS_TOPIC)
        group = next(f"g{i}" for i in range(1000) if regs[partition_for(f"g{i}", len(regs))].leader == 1)
        two.kill(1)
        answer = _find_coordinator(two.brokers[0].port, group)
        assert (answer.error_code, answer.node_id) == (CoordinatorNotAvailableError.code, -1)


def test_describe_cluster_through_kproto_kafka_python_and_aiokafka(cluster3_racks):
    """WP6 test 1 through the other clients' admin APIs: three brokers with their racks
    and the controller (kproto and kafka-python ask DescribeCluster, aiokafka Metadata)."""
    from kproto import AdminClient
    expected = ({(b.node_id, b.port, b.rack) for b in cluster3_racks.brokers}, cluster3_racks.controller_id)
    with AdminClient({"bootstrap.servers": cluster3_racks.bootstrap_servers}) as admin:
        described = admin.describe_cluster()
    assert ({(b.node_id, b.port, b.rack) for b in described.brokers}, described.controller_id) == expected

    kafka_admin = pytest.importorskip("kafka.admin")
    admin = kafka_admin.KafkaAdminClient(bootstrap_servers=cluster3_racks.bootstrap_servers)
    try:
        described = admin.describe_cluster()
    finally:
        admin.close()
    assert ({(b["broker_id"], b["port"], b["rack"]) for b in described["brokers"]},
            described["controller_id"]) == expected

    aiokafka_admin = pytest.importorskip("aiokafka.admin")

    async def aio():
        admin = aiokafka_admin.AIOKafkaAdminClient(bootstrap_servers=cluster3_racks.bootstrap_servers)
        await admin.start()
        try:
            return await admin.describe_cluster()
        finally:
            await admin.close()
    described = asyncio.run(aio())
    assert ({(b["node_id"], b["port"], b["rack"]) for b in described["brokers"]},
            described["controller_id"]) == expected


def test_killing_every_broker_then_restarting_them_brings_the_cluster_back(tmp_path):
    """A session longer than the controller's lease (as Kafka's defaults, 9 s and 2 s): the
    last broker's kill cannot wait for a fencing, the controller dies with it."""
    config = {"broker.session.timeout.ms": 600, "controller.quorum.fetch.timeout.ms": 300}
    with MiniCluster(brokers=2, data_dir=tmp_path, config=config) as cluster:
        cluster.create_topic("t", partitions=2, replication_factor=2)
        cluster.kill(0)
        cluster.kill(1)  # the last one: no controller is left to fence it
        assert not any(b.alive for b in cluster.brokers)
        cluster.restart(1)
        cluster.restart(0)
        assert cluster.controller_id in (0, 1)
        assert {cluster.wait_for_leader("t", p) for p in range(2)} <= {0, 1}
