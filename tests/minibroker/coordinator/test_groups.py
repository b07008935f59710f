"""Consumer groups against minibroker: real clients by others, their admin calls, and exact
requests where a client cannot be made to send them (session expiry, static members,
KIP-394's two-step join)."""

import asyncio
import collections
import threading
import time

import pytest

from kproto.errors import (
    FencedInstanceIdError,
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    IllegalGenerationError,
    MemberIdRequiredError,
    NonEmptyGroupError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    UnknownTopicOrPartitionError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from minibroker import MiniBroker
from tests.support.raw_client import RawClient

PARTITIONS = 6
PER_BATCH = 60
DEADLINE = 15.0


@pytest.fixture
def broker6():
    with MiniBroker(config={"num.partitions": PARTITIONS}) as b:
        yield b


def wait_until(condition, timeout=DEADLINE, what="condition", detail=lambda: ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what} {detail()}")


def produce(broker, topic, tag, n=PER_BATCH):
    """Produce ``n`` records spread over every partition; returns their values."""
    kafka = pytest.importorskip("kafka")
    producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    try:
        values = [b"%s-%d" % (tag.encode(), i) for i in range(n)]
        for i, value in enumerate(values):
            producer.send(topic, value=value, partition=i % PARTITIONS)
        producer.flush(10)
    finally:
        producer.close(5)
    return values


# -- a group member of each client, polling in its own thread ------------------------------


class Member:
    """One consumer in its own thread. A record counts as consumed only once the commit
    that covers it succeeded: a failed commit means the partition's next owner gets it."""

    def __init__(self, client, broker, topic, group, name):
        self.name = name
        self.stop = threading.Event()
        self.assigned: frozenset = frozenset()
        self.consumed: list = []
        self.failure: BaseException | None = None
        self._args = (broker.bootstrap_servers, topic, group)
        self._thread = threading.Thread(target=self._main, args=(RUNNERS[client],), name=name, daemon=True)
        self._thread.start()

    def _main(self, runner):
        try:
            runner(self, *self._args)
        except BaseException as exc:  # reported by close()
            self.failure = exc

    def close(self):
        self.stop.set()
        self._thread.join(20)
        assert not self._thread.is_alive(), f"{self.name} did not close"
        if self.failure is not None:
            raise self.failure


def run_kafka_python(member, bootstrap, topic, group):
    import kafka
    from kafka.errors import CommitFailedError, RebalanceInProgressError

    consumer = kafka.KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, client_id=member.name,
        auto_offset_reset="earliest", enable_auto_commit=False, session_timeout_ms=6000,
        heartbeat_interval_ms=500, max_poll_interval_ms=10000, fetch_max_wait_ms=100)
    try:
        consumer.subscribe([topic])
        # Refresh metadata after subscribing and before the first join. Otherwise a leader
        # may record an empty metadata snapshot with its assignment, rejoin when the next
        # metadata update differs, and kafka-python 3.0.12 can then drop its own SyncGroup
        # answer: need_rejoin() turns false once the leader has assigned, so a poll that
        # times out before the answer arrives never collects it, and the member waits in
        # REBALANCING for good (about one run in ten, whatever the broker).
        consumer.topics()
        while not member.stop.is_set():
            batch = consumer.poll(timeout_ms=100)
            records = [(tp.partition, r.offset, r.value) for tp, rs in batch.items() for r in rs]
            if records:
                try:
                    consumer.commit()
                except (CommitFailedError, RebalanceInProgressError):
                    continue
                member.consumed.extend(records)
            member.assigned = frozenset(tp.partition for tp in consumer.assignment())
    finally:
        consumer.close()


def run_confluent_kafka(member, bootstrap, topic, group):
    import confluent_kafka as ck

    consumer = ck.Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "client.id": member.name,
        "auto.offset.reset": "earliest", "enable.auto.commit": False, "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500, "max.poll.interval.ms": 10000, "fetch.wait.max.ms": 100})
    try:
        consumer.subscribe([topic])
        while not member.stop.is_set():
            messages = consumer.consume(500, timeout=0.1)
            for m in messages:
                assert m.error() is None, m.error()
            records = [(m.partition(), m.offset(), m.value()) for m in messages]
            if records:
                try:
                    consumer.commit(asynchronous=False)
                except ck.KafkaException:
                    continue
                member.consumed.extend(records)
            member.assigned = frozenset(tp.partition for tp in consumer.assignment())
    finally:
        consumer.close()


def run_aiokafka(member, bootstrap, topic, group):
    import aiokafka
    from aiokafka.errors import CommitFailedError, IllegalStateError, RebalanceInProgressError

    async def main():
        consumer = aiokafka.AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group, client_id=member.name,
            auto_offset_reset="earliest", enable_auto_commit=False, session_timeout_ms=6000,
            rebalance_timeout_ms=6000, heartbeat_interval_ms=500, max_poll_interval_ms=10000,
            fetch_max_wait_ms=100)
        await consumer.start()
        try:
            while not member.stop.is_set():
                batch = await consumer.getmany(timeout_ms=100)
                records = [(tp.partition, r.offset, r.value) for tp, rs in batch.items() for r in rs]
                if records:
                    try:
                        await consumer.commit()
                    except (CommitFailedError, IllegalStateError, RebalanceInProgressError):
                        continue
                    member.consumed.extend(records)
                member.assigned = frozenset(tp.partition for tp in consumer.assignment())
        finally:
            await consumer.stop()

    asyncio.run(main())


RUNNERS = {"kafka-python": run_kafka_python, "confluent-kafka": run_confluent_kafka, "aiokafka": run_aiokafka}
MODULES = {"kafka-python": "kafka", "confluent-kafka": "confluent_kafka", "aiokafka": "aiokafka"}


def balanced(members, each):
    """Every partition owned by exactly one of ``members``, ``each`` apiece."""
    owned = [m.assigned for m in members]
    return all(len(a) == each for a in owned) and sorted(p for a in owned for p in a) == list(range(PARTITIONS))


@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka", "aiokafka"])
def test_group_shares_partitions_and_hands_them_over_without_loss_or_duplicates(broker6, client):
    pytest.importorskip(MODULES[client])
    kafka = pytest.importorskip("kafka")
    topic, group = f"orders-{client}", f"billing-{client}"
    admin = kafka.KafkaAdminClient(bootstrap_servers=broker6.bootstrap_servers)
    members = []

    def consumed():
        return collections.Counter(value for m in members for _, _, value in m.consumed)

    def detail():
        return "; ".join(f"{m.name}: {sorted(m.assigned)} {len(m.consumed)} consumed" for m in members)

    try:
        produced = produce(broker6, topic, "a")
        members.extend(Member(client, broker6, topic, group, f"{client}-{i}") for i in range(3))
        wait_until(lambda: set(consumed()) == set(produced) and balanced(members, 2), what="3 members, first batch", detail=detail)

        members[0].close()  # LeaveGroup: the other two take over its partitions
        produced += produce(broker6, topic, "b")
        wait_until(lambda: set(consumed()) == set(produced) and balanced(members[1:], 3), what="2 members after a leave", detail=detail)

        members.append(Member(client, broker6, topic, group, f"{client}-3"))  # a newcomer: rebalance again
        produced += produce(broker6, topic, "c")
        wait_until(lambda: set(consumed()) == set(produced) and balanced(members[1:], 2), what="3 members after a join", detail=detail)
    finally:
        for m in members:
            m.close()
    try:
        assert consumed() == collections.Counter(produced)  # each record exactly once
        committed = admin.list_group_offsets({group: None})[group]
        ends = {p: 3 * PER_BATCH // PARTITIONS for p in range(PARTITIONS)}  # three batches, spread evenly
        assert {tp.partition: om.offset for tp, om in committed.items()} == ends
        assert [g["group_id"] for g in admin.list_groups() if g["group_id"] == group]
    finally:
        admin.close()


def group_snapshot(broker, group_id):
    """(generation, state, member ids) of a group, read on the broker's own loop."""
    async def read():
        group = broker._server.state.groups.get(group_id)
        return group.generation_id, group.state.value, list(group.members)
    return asyncio.run_coroutine_threadsafe(read(), broker._loop).result(5)


def test_confluent_kafka_static_member_restarts_without_a_rebalance_kip_345(broker6):
    ck = pytest.importorskip("confluent_kafka")
    produce(broker6, "static", "s", 12)

    def start():
        consumer = ck.Consumer({"bootstrap.servers": broker6.bootstrap_servers, "group.id": "static-group",
                                "group.instance.id": "instance-1", "auto.offset.reset": "earliest",
                                "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
        consumer.subscribe(["static"])
        return consumer

    consumer = start()
    try:
        got = []
        deadline = time.monotonic() + DEADLINE
        while len(got) < 12 and time.monotonic() < deadline:
            got.extend(consumer.consume(100, timeout=0.2))
        assert len(got) == 12
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()  # a static member does not leave: it is expected back
    generation, state, (old_id,) = group_snapshot(broker6, "static-group")
    assert state == "Stable" and old_id.startswith("instance-1-")
    consumer = start()
    try:
        deadline = time.monotonic() + DEADLINE
        while len(consumer.assignment()) < PARTITIONS and time.monotonic() < deadline:
            assert consumer.consume(100, timeout=0.2) == []  # everything was committed
        assert len(consumer.assignment()) == PARTITIONS
    finally:
        consumer.close()
    again, state, (new_id,) = group_snapshot(broker6, "static-group")
    assert (again, state) == (generation, "Stable") and new_id != old_id


# -- committed offsets ---------------------------------------------------------------------


def test_commit_with_metadata_round_trips_and_unknown_groups_fetch_minus_one(broker6):
    kafka = pytest.importorskip("kafka")
    from kafka.structs import OffsetAndMetadata

    produce(broker6, "meta", "m", 12)
    tp = kafka.TopicPartition("meta", 1)
    consumer = kafka.KafkaConsumer(bootstrap_servers=broker6.bootstrap_servers, group_id="meta-group",
                                   enable_auto_commit=False)
    admin = kafka.KafkaAdminClient(bootstrap_servers=broker6.bootstrap_servers)
    try:
        consumer.assign([tp])  # no subscription: a simple consumer's commit (generation -1)
        consumer.commit({tp: OffsetAndMetadata(2, "checkpoint é", 0)})
        assert consumer.committed(tp) == 2
        assert consumer.committed(tp, metadata=True) == OffsetAndMetadata(2, "checkpoint é", 0)
        assert consumer.committed(kafka.TopicPartition("meta", 0)) is None
        nobody = admin.list_group_offsets({"nobody": [tp]})["nobody"]
        assert nobody[tp].offset == -1
    finally:
        consumer.close()
        admin.close()


def test_confluent_kafka_commits_and_reads_metadata(broker6):
    ck = pytest.importorskip("confluent_kafka")
    produce(broker6, "ck-meta", "m", 12)
    consumer = ck.Consumer({"bootstrap.servers": broker6.bootstrap_servers, "group.id": "ck-meta-group",
                            "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[ck.TopicPartition("ck-meta", 3, 2, metadata="ck says hi")], asynchronous=False)
        got = consumer.committed([ck.TopicPartition("ck-meta", 3), ck.TopicPartition("ck-meta", 4)], timeout=10)
        assert [(tp.partition, tp.offset, tp.metadata) for tp in got][0] == (3, 2, "ck says hi")
        assert got[1].offset == ck.OFFSET_INVALID
    finally:
        consumer.close()


# -- admin ---------------------------------------------------------------------------------


def test_admin_lists_describes_and_deletes_groups(broker6):
    kafka = pytest.importorskip("kafka")
    produce(broker6, "adm", "x", 12)
    admin = kafka.KafkaAdminClient(bootstrap_servers=broker6.bootstrap_servers)
    member = Member("kafka-python", broker6, "adm", "adm-group", "adm-0")
    try:
        wait_until(lambda: len(member.consumed) == 12 and len(member.assigned) == PARTITIONS, what="one member")
        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert listed["adm-group"]["protocol_type"] == "consumer"
        assert listed["adm-group"]["group_state"] == "Stable"
        assert [g["group_id"] for g in admin.list_groups(states_filter=["Empty"])] == []
        described = admin.describe_groups(["adm-group", "no-such-group"])
        group = described["adm-group"]
        assert group["error"] is None and group["group_state"] == "Stable" and group["protocol_data"] == "range"
        (m,) = group["members"]
        assert m["client_id"] == "adm-0"
        assert m["member_metadata"]["topics"] == ["adm"]
        assert described["no-such-group"]["group_state"] == "Dead"
        assert admin.delete_groups(["adm-group"]) == {"adm-group": "NonEmptyGroupError"}
        offsets = admin.list_group_offsets(["adm-group"])["adm-group"]
        assert sum(om.offset for om in offsets.values()) == 12
    finally:
        member.close()
    try:
        wait_until(lambda: {g["group_id"]: g["group_state"] for g in admin.list_groups()}.get("adm-group") == "Empty",
                   what="the group to empty")
        assert admin.delete_groups(["adm-group", "never-was"]) == {"adm-group": "OK", "never-was": "GroupIdNotFoundError"}
        assert "adm-group" not in [g["group_id"] for g in admin.list_groups()]
        assert admin.list_group_offsets(["adm-group"])["adm-group"] == {}
    finally:
        admin.close()


# -- exact requests ------------------------------------------------------------------------

# metadata: a consumer Subscription v1 of topic "t" (null user_data, no owned partitions)
PROTOCOLS = [JoinGroupRequest.JoinGroupRequestProtocol(
    name="range", metadata=b"\x00\x01\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff\x00\x00\x00\x00")]


def join_request(member_id="", group="g", instance=None, session=6000, rebalance=6000, protocols=PROTOCOLS):
    return JoinGroupRequest(group_id=group, session_timeout_ms=session, rebalance_timeout_ms=rebalance,
                            member_id=member_id, group_instance_id=instance, protocol_type="consumer",
                            protocols=protocols)


def sync_request(member_id, generation, assignments=(), group="g", instance=None):
    return SyncGroupRequest(group_id=group, generation_id=generation, member_id=member_id, group_instance_id=instance,
                            assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                                         for m, a in assignments])


def heartbeat(client, member_id, generation, group="g", instance=None, version=4):
    return client.request(ApiKey.HEARTBEAT, version, HeartbeatRequest(
        group_id=group, generation_id=generation, member_id=member_id, group_instance_id=instance)).error_code


def test_find_coordinator_every_version(broker, raw):
    c = raw()
    for version in range(0, 4):
        r = c.request(ApiKey.FIND_COORDINATOR, version, FindCoordinatorRequest(key="g", key_type=0))
        assert (r.error_code, r.node_id, r.host, r.port) == (0, 0, "127.0.0.1", broker.port)
    r = c.request(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="txn", key_type=1))
    assert (r.error_code, r.node_id, r.port) == (0, 0, broker.port)  # the transaction coordinator (issue 14)
    for version in range(4, 7):
        r = c.request(ApiKey.FIND_COORDINATOR, version, FindCoordinatorRequest(key_type=0, coordinator_keys=["a", "b"]))
        assert [(x.key, x.error_code, x.port) for x in r.coordinators] == [("a", 0, broker.port), ("b", 0, broker.port)]
    r = c.request(ApiKey.FIND_COORDINATOR, 6, FindCoordinatorRequest(key_type=1, coordinator_keys=["t"]))
    assert (r.coordinators[0].error_code, r.coordinators[0].port) == (0, broker.port)


@pytest.mark.parametrize("version", [4, 5, 9])
def test_member_id_required_two_step_join_kip_394(raw, version):
    c = raw()
    first = c.request(ApiKey.JOIN_GROUP, version, join_request())
    assert first.error_code == MemberIdRequiredError.code and first.member_id.startswith("raw-test-")
    second = c.request(ApiKey.JOIN_GROUP, version, join_request(first.member_id))
    assert second.error_code == 0 and second.generation_id == 1 and second.member_id == first.member_id
    assert second.leader == first.member_id and [m.member_id for m in second.members] == [first.member_id]
    assert second.protocol_name == "range"
    synced = c.request(ApiKey.SYNC_GROUP, 5 if version >= 5 else 3,
                       sync_request(first.member_id, 1, [(first.member_id, b"assigned")]))
    assert synced.error_code == 0 and synced.assignment == b"assigned"


def test_join_before_v4_needs_no_member_id(raw):
    c = raw()
    r = c.request(ApiKey.JOIN_GROUP, 3, join_request())
    assert r.error_code == 0 and r.generation_id == 1 and r.member_id


def test_silent_member_is_removed_after_its_session_timeout_and_the_group_rebalances():
    with MiniBroker(config={"group.min.session.timeout.ms": 100}) as b:
        a, bb = RawClient(b.port), RawClient(b.port)
        try:
            ra = a.request(ApiKey.JOIN_GROUP, 3, join_request(session=500, rebalance=2000))
            a.request(ApiKey.SYNC_GROUP, 3, sync_request(ra.member_id, 1))
            bb.send(ApiKey.JOIN_GROUP, 3, join_request(session=500, rebalance=2000))  # held: a must rejoin
            assert heartbeat(a, ra.member_id, 1, version=3) == RebalanceInProgressError.code
            ra = a.request(ApiKey.JOIN_GROUP, 3, join_request(ra.member_id, session=500, rebalance=2000))
            _, rb = bb.receive(ApiKey.JOIN_GROUP, 3)
            assert ra.generation_id == rb.generation_id == 2 and len(ra.members) == 2
            bb.send(ApiKey.SYNC_GROUP, 3, sync_request(rb.member_id, 2))
            a.request(ApiKey.SYNC_GROUP, 3, sync_request(ra.member_id, 2))
            assert bb.receive(ApiKey.SYNC_GROUP, 3)[1].error_code == 0
            # b keeps heartbeating, a goes silent: after 500 ms a is gone and b must rejoin
            started = time.monotonic()
            while heartbeat(bb, rb.member_id, 2, version=3) == 0:
                assert time.monotonic() - started < 5
                time.sleep(0.1)
            assert heartbeat(bb, rb.member_id, 2, version=3) == RebalanceInProgressError.code
            assert 0.4 < time.monotonic() - started
            rb = bb.request(ApiKey.JOIN_GROUP, 3, join_request(rb.member_id, session=500, rebalance=2000))
            assert rb.generation_id == 3 and [m.member_id for m in rb.members] == [rb.member_id]
            assert heartbeat(a, ra.member_id, 2, version=3) == UnknownMemberIdError.code
            described = a.request(ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=["g"])).groups[0]
            assert described.group_state == "CompletingRebalance"
            assert [m.member_id for m in described.members] == [rb.member_id]
        finally:
            a.close()
            bb.close()


def test_static_member_rejoin_keeps_the_generation_and_fences_the_old_id_kip_345(raw):
    first, second = raw(), raw()
    old = first.request(ApiKey.JOIN_GROUP, 5, join_request(instance="inst-1"))
    assert old.error_code == 0 and old.generation_id == 1  # static members skip MEMBER_ID_REQUIRED
    first.request(ApiKey.SYNC_GROUP, 3, sync_request(old.member_id, 1, [(old.member_id, b"mine")], instance="inst-1"))
    # a restart: the same instance id, no member id
    new = second.request(ApiKey.JOIN_GROUP, 5, join_request(instance="inst-1"))
    assert new.error_code == 0 and new.member_id != old.member_id
    assert new.generation_id == 1  # no rebalance
    synced = second.request(ApiKey.SYNC_GROUP, 3, sync_request(new.member_id, 1, instance="inst-1"))
    assert synced.error_code == 0 and synced.assignment == b"mine"
    assert heartbeat(second, new.member_id, 1, instance="inst-1") == 0
    assert heartbeat(first, old.member_id, 1, instance="inst-1") == FencedInstanceIdError.code
    stale = first.request(ApiKey.JOIN_GROUP, 5, join_request(old.member_id, instance="inst-1"))
    assert stale.error_code == FencedInstanceIdError.code
    left = first.request(ApiKey.LEAVE_GROUP, 3, LeaveGroupRequest(group_id="g", members=[
        LeaveGroupRequest.MemberIdentity(member_id=old.member_id, group_instance_id="inst-1"),
        LeaveGroupRequest.MemberIdentity(member_id="", group_instance_id="unknown")]))
    assert [m.error_code for m in left.members] == [FencedInstanceIdError.code, UnknownMemberIdError.code]
    left = first.request(ApiKey.LEAVE_GROUP, 5, LeaveGroupRequest(group_id="g", members=[
        LeaveGroupRequest.MemberIdentity(member_id="", group_instance_id="inst-1")]))
    assert left.error_code == 0 and [m.error_code for m in left.members] == [0]
    listed = first.request(ApiKey.LIST_GROUPS, 4, ListGroupsRequest(states_filter=["empty"])).groups
    assert [(g.group_id, g.group_state) for g in listed] == [("g", "Empty")]


def test_offset_commit_checks_the_member_generation_and_partitions(raw):
    c = raw()
    c.request(ApiKey.METADATA, 9, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")]))

    def commit(member_id="", generation=-1, version=8, partition=0, topic="t", metadata="md"):
        r = c.request(ApiKey.OFFSET_COMMIT, version, OffsetCommitRequest(
            group_id="g", generation_id_or_member_epoch=generation, member_id=member_id, topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
                    OffsetCommitRequest.OffsetCommitRequestPartition(
                        partition_index=partition, committed_offset=7, committed_leader_epoch=3,
                        committed_metadata=metadata)])]))
        return r.topics[0].partitions[0].error_code

    assert commit(version=0) == 0  # a simple consumer, no group yet: the group is created Empty
    assert commit(partition=5) == UnknownTopicOrPartitionError.code
    assert commit(topic="nope") == UnknownTopicOrPartitionError.code
    joined = c.request(ApiKey.JOIN_GROUP, 3, join_request())
    member = joined.member_id
    assert commit(member, 1) == RebalanceInProgressError.code  # waiting for the leader's SyncGroup
    c.request(ApiKey.SYNC_GROUP, 3, sync_request(member, 1))
    assert commit() == UnknownMemberIdError.code  # members only, now
    assert commit(member, 0) == IllegalGenerationError.code
    assert commit("someone-else", 1) == UnknownMemberIdError.code
    assert commit(member, 1, metadata=None) == 0
    fetched = c.request(ApiKey.OFFSET_FETCH, 7, OffsetFetchRequest(group_id="g", topics=None))
    assert [(t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch, p.metadata)
            for t in fetched.topics for p in t.partitions] == [("t", 0, 7, 3, "")]  # null metadata is kept as "", as Kafka
    deleted = c.request(ApiKey.OFFSET_DELETE, 0, OffsetDeleteRequest(group_id="g", topics=[
        OffsetDeleteRequest.OffsetDeleteRequestTopic(name="t", partitions=[
            OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=0)])]))
    assert deleted.topics[0].partitions[0].error_code == GroupSubscribedToTopicError.code  # member subscribes to t
    c.request(ApiKey.LEAVE_GROUP, 1, LeaveGroupRequest(group_id="g", member_id=member))
    deleted = c.request(ApiKey.OFFSET_DELETE, 0, OffsetDeleteRequest(group_id="g", topics=[
        OffsetDeleteRequest.OffsetDeleteRequestTopic(name="t", partitions=[
            OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=0)])]))
    assert deleted.error_code == 0 and deleted.topics[0].partitions[0].error_code == 0
    unknown = c.request(ApiKey.OFFSET_DELETE, 0, OffsetDeleteRequest(group_id="none", topics=[]))
    assert unknown.error_code == GroupIdNotFoundError.code


def test_offset_fetch_v8_batches_groups(raw):
    c = raw()
    c.request(ApiKey.METADATA, 9, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")]))
    c.request(ApiKey.OFFSET_COMMIT, 9, OffsetCommitRequest(group_id="a", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=4,
                                                            committed_metadata="x")])]))
    G = OffsetFetchRequest.OffsetFetchRequestGroup
    r = c.request(ApiKey.OFFSET_FETCH, 9, OffsetFetchRequest(groups=[
        G(group_id="a", topics=None),
        G(group_id="b", topics=[OffsetFetchRequest.OffsetFetchRequestTopics(name="t", partition_indexes=[0])])]))
    got = {g.group_id: [(t.name, p.partition_index, p.committed_offset, p.metadata) for t in g.topics for p in t.partitions]
           for g in r.groups}
    assert got == {"a": [("t", 0, 4, "x")], "b": [("t", 0, -1, "")]}


def test_heartbeat_and_sync_errors(raw):
    c = raw()
    assert heartbeat(c, "nobody", 1) == UnknownMemberIdError.code
    joined = c.request(ApiKey.JOIN_GROUP, 3, join_request())
    assert heartbeat(c, joined.member_id, 1) == 0  # CompletingRebalance: heartbeats are fine
    assert heartbeat(c, joined.member_id, 7) == IllegalGenerationError.code
    r = c.request(ApiKey.SYNC_GROUP, 5, sync_request(joined.member_id, 1))
    assert (r.error_code, r.assignment, r.protocol_type, r.protocol_name) == (0, b"", "consumer", "range")
    assert c.request(ApiKey.SYNC_GROUP, 0, sync_request("nobody", 1)).error_code == UnknownMemberIdError.code
    described = c.request(ApiKey.DESCRIBE_GROUPS, 0, DescribeGroupsRequest(groups=["g"])).groups[0]
    assert (described.group_state, described.protocol_data) == ("Stable", "range")
    deleted = c.request(ApiKey.DELETE_GROUPS, 2, DeleteGroupsRequest(groups_names=["g"]))
    assert deleted.results[0].error_code == NonEmptyGroupError.code
