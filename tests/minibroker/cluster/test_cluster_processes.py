"""MiniCluster(processes=True): every broker a real process, ``kill`` a real SIGKILL
(issue 13, step 2: "an option to run each broker as its own process for kill -9 tests").

The controller quorum stays in the test's process behind its endpoint; the brokers
register, heartbeat, propose ISRs and fetch the metadata over the wire. Each test waits
for the states it needs; after each, no broker process is left (reaped, not a zombie).
"""

import os
import signal
import time

import pytest

from kproto.protocol import ApiKey
from kproto.protocol.messages import ApiVersionsRequest
from tests.minibroker.cluster.conftest import (
    _nothing_left,
    ck_metadata,
    produce_raw,
    wait_same_files,
)
from tests.minibroker.cluster.test_cluster_configs import _described
from tests.minibroker.cluster.test_cluster_elections import _moved_leadership
from tests.support.raw_client import RawClient

TOPIC = "t"
N = 200
CONTROLLER_APIS = {ApiKey.ALTER_PARTITION, ApiKey.BROKER_REGISTRATION, ApiKey.BROKER_HEARTBEAT,
                   ApiKey.ALLOCATE_PRODUCER_IDS}


def _children():
    """Pids of this process's children running a broker (zombies included: not reaped)."""
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        return {p.pid for p in psutil.Process().children(recursive=True)
                if "minibroker.cluster.process" in " ".join(p.cmdline() if p.status() != "zombie" else ["zombie"])
                or p.status() == "zombie"}
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        state, ppid = stat.rpartition(")")[2].split()[:2]
        if int(ppid) == os.getpid() and (state == "Z" or b"minibroker.cluster.process" in cmdline):
            found.add(int(entry))
    return found


def _assert_no_broker_process(pids):
    assert not _children(), f"broker processes left: {_children()}"
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}"), f"pid {pid} still exists"


@pytest.fixture
def pcluster(tmp_path):
    """Three broker processes; afterwards none is left, nor a thread or socket of the
    cluster in this process (the controller endpoint's)."""
    before = _children()
    pids = set()
    with _nothing_left(brokers=3, processes=True, data_dir=tmp_path / "cluster") as cluster:
        pids = {b.pid for b in cluster.brokers}
        yield cluster
        pids |= {b.pid for b in cluster.brokers if b.pid is not None}
    assert _children() <= before
    _assert_no_broker_process(pids)


def _check(acked, got):
    """Every acknowledged record read back, in the order sent, none twice (idempotence)."""
    assert len(acked) == N, f"only {len(acked)} of {N} acknowledged"
    assert set(acked) <= set(got), f"lost: {sorted(set(acked) - set(got))[:10]}"
    assert got == sorted(got) and len(got) == len(set(got))


def test_every_broker_is_a_process_of_its_own_and_kill_is_a_sigkill(pcluster):
    pids = [b.pid for b in pcluster.brokers]
    assert len(set(pids)) == 3 and os.getpid() not in pids
    assert all(b.alive for b in pcluster.brokers)
    assert pcluster.controller_id == 0
    epoch = pcluster.quorum.controller_epoch
    pcluster.kill(0)  # returns once the controller fenced it
    assert not pcluster.brokers[0].alive and pcluster.brokers[0].pid is None
    assert not os.path.exists(f"/proc/{pids[0]}")  # killed and reaped
    # The lowest live node hosts the controller now, with a new epoch, and the brokers say so.
    assert pcluster.controller_id == 1 and pcluster.quorum.controller_epoch > epoch
    deadline = time.monotonic() + 10
    while ck_metadata(pcluster.brokers[2].bootstrap_servers)[2].controller_id != 1:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    pcluster.restart(0)
    assert pcluster.brokers[0].alive and pcluster.brokers[0].pid not in pids


def test_faults_that_reach_into_a_broker_say_they_need_it_in_process(pcluster):
    """isolate, slow_disk and request controls work on in-process brokers only; with
    processes=True they refuse clearly (kill and restart work), and heal has nothing to do."""
    for call in (lambda: pcluster.isolate(1), lambda: pcluster.slow_disk(1, 10), lambda: pcluster.requests(1)):
        with pytest.raises(RuntimeError, match=r"processes=True, broker 1 runs in process \d+"):
            call()
    pcluster.heal()


def test_a_controlled_shutdown_of_a_broker_process_moves_its_leaderships(pcluster):
    """shutdown(i) on a broker process: SIGTERM, its controlled shutdown (the controller
    fences it and moves its leaderships at once), the process reaped; restart rejoins."""
    pcluster.create_topic("t", partitions=3, replication_factor=3)
    for p in range(3):
        pcluster.wait_for_isr("t", p, 3)
    pid = pcluster.brokers[2].pid
    pcluster.shutdown(2)
    assert not pcluster.brokers[2].alive and not os.path.exists(f"/proc/{pid}")
    for p in range(3):
        assert pcluster.leader_of("t", p) in (0, 1) and 2 not in pcluster.isr_of("t", p)
    pcluster.restart(2)
    for p in range(3):
        assert 2 in pcluster.wait_for_isr("t", p, 3)


def test_confluent_kafka_acks_all_survives_a_kill_9_of_the_leader_and_the_files_match(pcluster):
    ck = pytest.importorskip("confluent_kafka")
    pcluster.create_topic(TOPIC, partitions=1, replication_factor=3,
                          configs={"min.insync.replicas": "2", "segment.bytes": "4096"})
    pcluster.wait_for_isr(TOPIC, 0, 3)
    leader = pcluster.leader_of(TOPIC, 0)
    producer = ck.Producer({"bootstrap.servers": pcluster.bootstrap_servers, "acks": "all",
                            "enable.idempotence": True, "linger.ms": 1, "message.timeout.ms": 30000,
                            "batch.num.messages": 20})  # several batches, so several segments
    acked = []

    def delivered(err, msg):
        if err is None:
            acked.append(int(msg.value()[:6]))
    for i in range(N):
        if i == N // 2:
            pcluster.kill(leader, wait=False)  # kill -9 mid-stream: records in flight to it
        producer.produce(TOPIC, value=b"%06d" % i + b"." * 64, partition=0, on_delivery=delivered)  # segments roll
        producer.poll(0)
    assert producer.flush(30) == 0
    new_leader = pcluster.wait_for_leader(TOPIC, 0, not_in=(leader,))
    consumer = ck.Consumer({"bootstrap.servers": pcluster.bootstrap_servers, "group.id": "g",
                            "enable.auto.commit": False})
    got = []
    try:
        consumer.assign([ck.TopicPartition(TOPIC, 0, ck.OFFSET_BEGINNING)])
        deadline = time.monotonic() + 30
        while len(got) < N and time.monotonic() < deadline:
            got += [int(m.value()[:6]) for m in consumer.consume(N, timeout=1) if m.error() is None]
    finally:
        consumer.close()
    _check(acked, got)
    # The killed broker comes back on its port and directory, rejoins the ISR, and holds
    # exactly the new leader's bytes.
    pcluster.restart(leader)
    pcluster.wait_for_isr(TOPIC, 0, 3)
    leader_files, restarted_files = wait_same_files(pcluster, new_leader, leader, TOPIC)
    assert len([n for n in leader_files if n.endswith(".log")]) > 1
    assert restarted_files == leader_files


def test_kproto_acks_all_survives_a_kill_9_of_the_leader(pcluster):
    from kproto import Consumer, Producer
    from kproto.structs import TopicPartition
    pcluster.create_topic(TOPIC, partitions=1, replication_factor=3, configs={"min.insync.replicas": "2"})
    pcluster.wait_for_isr(TOPIC, 0, 3)
    leader = pcluster.leader_of(TOPIC, 0)
    acked = []
    with Producer(bootstrap_servers=pcluster.bootstrap_servers, acks="all", enable_idempotence=True,
                  linger_ms=1, retry_backoff_ms=50) as producer:
        futures = []
        for i in range(N):
            if i == N // 2:
                pcluster.kill(leader, wait=False)
            futures.append((i, producer.send(TOPIC, b"%d" % i, partition=0)))
        producer.flush(30)
        for i, f in futures:
            f.result(30)
            acked.append(i)
    assert pcluster.wait_for_leader(TOPIC, 0, not_in=(leader,)) != leader
    got = []
    with Consumer(bootstrap_servers=pcluster.bootstrap_servers, enable_auto_commit=False) as consumer:
        consumer.assign([TopicPartition(TOPIC, 0)])
        consumer.seek_to_beginning()
        deadline = time.monotonic() + 30
        while len(got) < N and time.monotonic() < deadline:
            got += [int(r.value) for r in consumer.poll(1)]
    _check(acked, got)


def test_client_listeners_do_not_advertise_the_controller_apis_and_the_endpoint_does(pcluster):
    """Kafka serves BrokerRegistration, BrokerHeartbeat, AlterPartition and
    AllocateProducerIds on the controller listener only."""
    request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    client = RawClient(pcluster.brokers[0].port)
    try:
        offered = {k.api_key for k in client.request(ApiKey.API_VERSIONS, 3, request).api_keys}
    finally:
        client.close()
    assert not offered & CONTROLLER_APIS and ApiKey.PRODUCE in offered
    endpoint = RawClient(pcluster._endpoint.port)
    try:
        offered = {k.api_key for k in endpoint.request(ApiKey.API_VERSIONS, 3, request).api_keys}
    finally:
        endpoint.close()
    assert CONTROLLER_APIS <= offered and ApiKey.PRODUCE not in offered


def test_producer_ids_and_topic_admin_go_through_the_endpoint(pcluster):
    """AllocateProducerIds (an idempotent producer's InitProducerId) and a forwarded
    CreateTopics, then a Produce at once: the creating broker's image already has it."""
    from kproto.admin import AdminClient, NewTopic
    with AdminClient(bootstrap_servers=pcluster.brokers[1].bootstrap_servers) as admin:
        admin.create_topics([NewTopic("made", num_partitions=2, replication_factor=3)])
    assert [len(r.replicas) for r in pcluster.describe("made")] == [3, 3]
    leader = pcluster.leader_of("made", 0)
    assert produce_raw(pcluster.brokers[leader].port, "made", [b"x"]) == (0, 0)
    from kproto import Producer
    with Producer(bootstrap_servers=pcluster.bootstrap_servers, acks="all", enable_idempotence=True) as producer:
        producer.send("made", b"y", partition=0).result(10)


def _wait_described(cluster, topic, expected, timeout=10.0):
    """Wait until DescribeConfigs on every broker answers ``expected`` (``{name: value}``);
    the other brokers apply the change as their metadata fetch brings it."""
    names = tuple(expected)
    deadline = time.monotonic() + timeout
    for broker in cluster.brokers:
        while {k: v for k, (v, _) in _described(broker.port, topic, *names).items()} != expected:
            assert time.monotonic() < deadline, f"broker {broker.node_id}: {_described(broker.port, topic, *names)}"
            time.sleep(0.02)


def test_config_changes_go_through_the_endpoint_and_every_broker_shows_them(pcluster):
    """Issue 13 step 2 (processes=True): IncrementalAlterConfigs and AlterConfigs forwarded
    over the wire (KIP-590), the change on every broker; an error keeps its code and message."""
    from kproto.admin import AdminClient, ConfigResource
    from kproto.errors import InvalidConfigError, UnknownTopicOrPartitionError
    pcluster.create_topic(TOPIC, partitions=1, replication_factor=3)
    topic = ConfigResource.topic(TOPIC)
    with AdminClient(bootstrap_servers=pcluster.brokers[1].bootstrap_servers) as admin:
        admin.incremental_alter_configs({topic: [("retention.ms", "set", "123456"),
                                                 ("cleanup.policy", "append", "compact")]})
        _wait_described(pcluster, TOPIC, {"retention.ms": "123456", "cleanup.policy": "delete,compact"})
        admin.alter_configs({topic: {"segment.ms": "600000"}})  # the whole set: the others return to defaults
        _wait_described(pcluster, TOPIC, {"retention.ms": "604800000", "cleanup.policy": "delete",
                                          "segment.ms": "600000"})
        with pytest.raises(InvalidConfigError, match="retention.ms"):
            admin.incremental_alter_configs({topic: [("retention.ms", "set", "soon")]})
        with pytest.raises(UnknownTopicOrPartitionError, match="'nope' does not exist"):
            admin.alter_configs({ConfigResource.topic("nope"): {"segment.ms": "1"}})


def test_elect_leaders_goes_through_the_endpoint_and_moves_leadership_back(pcluster):
    """Issue 13 step 2 (processes=True): ElectLeaders forwarded over the wire. The automatic
    rebalance does not interfere: MiniCluster keeps Kafka's 300 s
    ``leader.imbalance.check.interval.seconds``, the first check one interval after the
    controller's activation."""
    from kproto.admin import AdminClient
    from kproto.errors import ElectionNotNeededError
    from kproto.structs import TopicPartition
    preferred, other = _moved_leadership(pcluster)
    assert pcluster.leader_of(TOPIC, 0) == other
    with AdminClient(bootstrap_servers=pcluster.brokers[other].bootstrap_servers) as admin:
        assert admin.elect_leaders("preferred", [TopicPartition(TOPIC, 0)]) == {TopicPartition(TOPIC, 0): None}
        assert pcluster.leader_of(TOPIC, 0) == preferred
        with pytest.raises(ElectionNotNeededError):
            admin.elect_leaders("preferred", [TopicPartition(TOPIC, 0)])
    # The preferred broker leads once its metadata fetch brings the change: a produce to it
    # is acknowledged then.
    deadline = time.monotonic() + 10
    while (code := produce_raw(pcluster.brokers[preferred].port, TOPIC, [b"b"])[0]) != 0:
        assert time.monotonic() < deadline, f"produce to the elected leader: error {code}"
        time.sleep(0.05)


def test_a_start_that_fails_half_way_leaves_no_process(tmp_path):
    """Broker 2 cannot start (its log directory is held by another broker): the start
    raises, and brokers 0 and 1, already running as processes, are stopped and reaped."""
    from minibroker import MiniBroker
    from minibroker.cluster import MiniCluster
    before = _children()
    data = tmp_path / "cluster"
    with MiniBroker(config={"log.dirs": str(data / "broker-2")}):
        cluster = MiniCluster(3, processes=True, data_dir=data)
        with pytest.raises(RuntimeError, match="broker 2"):
            cluster.start()
        pids = {b.pid for b in cluster.brokers if b.pid is not None}
    assert _children() <= before
    _assert_no_broker_process(pids)
    assert "LogDirInUseError" in (data / "broker-2.out").read_text() or "in use" in (data / "broker-2.out").read_text()


def test_a_broker_process_dies_with_its_parent(tmp_path):
    """No broker outlives the process that started it (PR_SET_PDEATHSIG): a parent killed
    with SIGKILL takes its brokers with it."""
    import subprocess
    import sys
    script = ("import sys, time\n"
              "from minibroker.cluster import MiniCluster\n"
              f"c = MiniCluster(1, processes=True, data_dir={str(tmp_path / 'c')!r}).start()\n"
              "print(c.brokers[0].pid, flush=True)\n"
              "time.sleep(60)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p)}
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=env)
    try:
        pid = int(parent.stdout.readline())
        assert os.path.exists(f"/proc/{pid}")
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        parent.stdout.close()
    deadline = time.monotonic() + 10
    while _alive(pid):
        assert time.monotonic() < deadline, f"broker pid {pid} outlived its parent"
        time.sleep(0.02)


def _alive(pid):
    """Whether ``pid`` runs (an orphan is reaped by init; a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False
