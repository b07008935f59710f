"""The replica manager: metadata records in, roles, fetch targets, ISR proposals and
checkpoints out (issue 13, WP4). A fake broker state (real logs and Storage on disk) and a
fake controller channel; records are made by hand."""

from __future__ import annotations

import asyncio
import socket
import time
import uuid

from kproto.records import BatchBuilder
from minibroker.cluster.api import AlterPartitionRequest, ClusterContext, ReplicaBrokerEpoch
from minibroker.cluster.metadata import (
    BrokerRegistrationChangeRecord,
    MetadataImage,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicImage,
    TopicRecord,
)
from minibroker.cluster.partition import Partition, ReplicaRole
from minibroker.cluster.replica_manager import ReplicaManager
from minibroker.config import BrokerConfig
from minibroker.storage import Storage

NODE = 0
TOPIC_ID = uuid.UUID(int=7)
LAG_MS = 200


class Clock:
    def __init__(self):
        self.now = 10_000

    def __call__(self):
        return self.now


class FakeTopic:
    def __init__(self, name, topic_id):
        self.name, self.topic_id, self.partitions = name, topic_id, []


class FakeState:
    """The BrokerState methods the replica manager uses, over a real Storage."""

    def __init__(self, directory, config, clock, channel):
        self.config, self.clock, self.channel = config, clock, channel
        self.storage = Storage(config, [directory])
        self.topics: dict[uuid.UUID, FakeTopic] = {}
        self.dropped: list[uuid.UUID] = []

    def ensure_topic(self, t: TopicImage):
        topic = self.topics.setdefault(t.topic_id, FakeTopic(t.name, t.topic_id))
        for index in range(len(topic.partitions), max(t.partitions) + 1):
            topic.partitions.append(Partition(topic=t.name, topic_id=t.topic_id, index=index, node_id=NODE))
        return topic

    def partition(self, topic, index):
        return topic.partitions[index] if topic is not None and 0 <= index < len(topic.partitions) else None

    def open_replica_log(self, topic, index):
        # As WP5's BrokerState: opened once, HW = min(checkpoint, LEO), attached.
        partition = topic.partitions[index]
        if partition.log is None:
            log = self.storage.open_partition(topic.name, topic.topic_id, index, {}, replicated=True)
            checkpoint = self.storage.load_hw_checkpoint().get((topic.name, index), log.log_start_offset)
            log.set_high_watermark(min(checkpoint, log.log_end_offset))
            partition.attach_log(log)
        return partition.log

    def propose_isr(self, partition):
        # As WP5's BrokerState.propose_isr, minus the one-at-a-time bookkeeping.
        new_isr = partition.isr_change(self.clock(), self.config["replica.lag.time.max.ms"], lambda r, e: True)
        if new_isr is not None:
            self.channel.alter_partition_now(AlterPartitionRequest(
                broker_id=NODE, broker_epoch=1, topic_id=partition.topic_id, partition=partition.index,
                leader_epoch=partition.leader_epoch, partition_epoch=partition.partition_epoch,
                new_isr=tuple(ReplicaBrokerEpoch(broker_id=r, broker_epoch=-1) for r in new_isr)))

    def drop_topic(self, topic_id):
        topic = self.topics.pop(topic_id)
        for p in topic.partitions:
            if p.log is not None:
                p.log.close()
        self.dropped.append(topic_id)

    def close(self):
        for topic in self.topics.values():
            for p in topic.partitions:
                if p.log is not None:
                    p.log.close()
        self.storage.close()


class FakeChannel:
    active_controller_id = 0

    def __init__(self):
        self.alter_requests = []

    def alter_partition_now(self, request):
        self.alter_requests.append(request)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def brokers(port):
    records = []
    for b in range(3):
        records.append(RegisterBrokerRecord(broker_id=b, broker_epoch=b + 1, incarnation_id=uuid.UUID(int=b + 1),
                                            host="127.0.0.1", port=port, rack=None))
        records.append(BrokerRegistrationChangeRecord(broker_id=b, broker_epoch=b + 1, fenced=False))
    return records


def partition_record(index, replicas):
    return PartitionRecord(topic_id=TOPIC_ID, partition_id=index, replicas=replicas, isr=replicas,
                           leader=replicas[0], leader_epoch=0, partition_epoch=0)


def records_batch(count):
    builder = BatchBuilder(2, 0)
    for i in range(count):
        builder.append(1_000 + i, b"k", b"v%d" % i)
    return builder.build(), count - 1


class Node:
    def __init__(self, tmp_path, **config):
        self.clock = Clock()
        self.config = BrokerConfig({"replica.lag.time.max.ms": LAG_MS, "replica.fetch.backoff.ms": 50, **config})
        self.channel = FakeChannel()
        self.state = FakeState(tmp_path / "broker-0", self.config, self.clock, self.channel)
        self.context = ClusterContext(node_id=NODE, channel=self.channel, image=MetadataImage(), broker_epoch=1)
        self.manager = ReplicaManager(self.state, self.context, self.clock)
        self.offset = -1

    def deliver(self, *records):
        self.offset += len(records)
        self.manager.apply(self.offset, records)

    def partition(self, index):
        return self.state.topics[TOPIC_ID].partitions[index]

    async def close(self, crash=False):
        await self.manager.close(crash=crash)
        assert not self.manager.fetchers.fetchers
        self.state.close()


def run(coro):
    """Run a test's coroutine, then check that it left no task behind (fetchers, run())."""
    async def checked():
        await coro
        await asyncio.sleep(0)
        left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        assert not left, left
    asyncio.run(checked())


def test_becomes_leader_and_follower_and_sets_fetch_targets(tmp_path):
    """Partition 0 led here, partition 1 followed (a target for broker 1), partition 2
    not hosted; a leader change to this broker takes partition 1 out of the fetchers."""
    async def main():
        node = Node(tmp_path)
        try:
            node.deliver(*brokers(closed_port()), TopicRecord(name="t", topic_id=TOPIC_ID),
                         partition_record(0, (0, 1, 2)), partition_record(1, (1, 0, 2)),
                         partition_record(2, (1, 2)))
            assert node.partition(0).role is ReplicaRole.LEADER
            assert node.partition(1).role is ReplicaRole.FOLLOWER
            assert node.partition(2).role is ReplicaRole.NONE and node.partition(2).log is None
            assert set(node.manager.hosted) == {(TOPIC_ID, 0), (TOPIC_ID, 1)}
            targets = node.manager.fetchers.targets()
            assert list(targets) == [(TOPIC_ID, 1)]
            assert (targets[(TOPIC_ID, 1)].leader, targets[(TOPIC_ID, 1)].leader_epoch) == (1, 0)
            assert (tmp_path / "broker-0" / "t-0").is_dir() and not (tmp_path / "broker-0" / "t-2").exists()
            # Broker 1 is gone: this broker leads partition 1 at epoch 1.
            node.deliver(PartitionChangeRecord(topic_id=TOPIC_ID, partition_id=1, leader=0, isr=(0, 2)))
            assert node.partition(1).role is ReplicaRole.LEADER and node.partition(1).leader_epoch == 1
            assert node.manager.fetchers.targets() == {}
            assert node.manager.fetchers.fetchers == {}  # the idle fetcher stopped
            # The topic is deleted.
            node.deliver(RemoveTopicRecord(topic_id=TOPIC_ID))
            assert node.state.dropped == [TOPIC_ID] and node.manager.hosted == {}
        finally:
            await node.close()
    run(main())


def test_lagging_follower_is_proposed_out_of_the_isr(tmp_path):
    """Follower 1 keeps up, follower 2 never fetches: after replica.lag.time.max.ms the
    leader proposes ISR (0, 1) (run() asks every lag/2 through state.propose_isr); the
    committed change then shrinks the partition's ISR."""
    async def main():
        node = Node(tmp_path)
        task = None
        try:
            node.deliver(*brokers(closed_port()), TopicRecord(name="t", topic_id=TOPIC_ID),
                         partition_record(0, (0, 1, 2)))
            p = node.partition(0)
            data, delta = records_batch(3)
            p.append_as_leader(data, last_offset_delta=delta, max_timestamp=1_002)
            p.on_follower_fetch(1, 2, 3, node.clock())  # broker 1 (epoch 2) is at the leader's LEO
            node.manager.maybe_alter_isr()
            assert node.channel.alter_requests == []  # nobody has lagged long enough yet
            task = asyncio.get_running_loop().create_task(node.manager.run())
            node.clock.now += LAG_MS + 1
            deadline = time.monotonic() + 10
            while not node.channel.alter_requests:
                assert time.monotonic() < deadline, "no AlterPartition was sent"
                await asyncio.sleep(0.01)
            request = node.channel.alter_requests[0]
            assert (request.topic_id, request.partition, request.leader_epoch, request.partition_epoch) == (
                TOPIC_ID, 0, 0, 0)
            assert [r.broker_id for r in request.new_isr] == [0, 1]
            node.deliver(PartitionChangeRecord(topic_id=TOPIC_ID, partition_id=0, isr=(0, 1)))
            assert p.isr == (0, 1) and p.partition_epoch == 1 and p.role is ReplicaRole.LEADER
        finally:
            await node.close()
            if task is not None:
                await asyncio.wait_for(task, 5)
    run(main())


def test_checkpoints_are_written_periodically_and_at_a_clean_close_not_at_a_crash(tmp_path):
    """run() writes replication-offset-checkpoint every interval; a crash writes nothing,
    so a restarted replica's high watermark is the older checkpoint's (the log is opened
    before its registration is applied)."""
    async def main():
        node = Node(tmp_path, **{"replica.high.watermark.checkpoint.interval.ms": 20})
        task = asyncio.get_running_loop().create_task(node.manager.run())
        try:
            node.deliver(*brokers(closed_port()), TopicRecord(name="t", topic_id=TOPIC_ID),
                         partition_record(0, (0,)))
            data, delta = records_batch(4)
            node.partition(0).append_as_leader(data, last_offset_delta=delta, max_timestamp=1_003)
            deadline = time.monotonic() + 10
            while node.state.storage.load_hw_checkpoint() != {("t", 0): 4}:
                assert time.monotonic() < deadline, node.state.storage.load_hw_checkpoint()
                await asyncio.sleep(0.01)
            assert (tmp_path / "broker-0" / "recovery-point-offset-checkpoint").exists()
        finally:
            await node.close()
            await asyncio.wait_for(task, 5)

        # A crash after more appends leaves the old checkpoint; the restart's HW is 4, not 6.
        node = Node(tmp_path)
        node.deliver(*brokers(closed_port()), TopicRecord(name="t", topic_id=TOPIC_ID),
                     partition_record(0, (0, 1)))
        p = node.partition(0)
        assert (p.log.log_end_offset, p.high_watermark) == (4, 4)
        node.deliver(PartitionChangeRecord(topic_id=TOPIC_ID, partition_id=0, leader=1))
        assert p.role is ReplicaRole.FOLLOWER
        p.append_as_follower(bytes(_stamped(4, 1, 2)))
        p.update_follower_high_watermark(6, 0)
        await node.close(crash=True)
        storage = Storage(node.config, [tmp_path / "broker-0"])
        assert storage.load_hw_checkpoint() == {("t", 0): 4}
        storage.close()

        node = Node(tmp_path)
        try:
            node.deliver(*brokers(closed_port()), TopicRecord(name="t", topic_id=TOPIC_ID),
                         partition_record(0, (1, 0)))
            p = node.partition(0)
            assert (p.role, p.log.log_end_offset, p.high_watermark) == (ReplicaRole.FOLLOWER, 6, 4)
        finally:
            await node.close(crash=True)
    run(main())


def _stamped(base, epoch, count):
    data, _ = records_batch(count)
    out = bytearray(data)
    out[0:8] = base.to_bytes(8, "big")
    out[12:16] = epoch.to_bytes(4, "big", signed=True)
    return out


def test_a_replica_that_cannot_open_does_not_stop_the_others(tmp_path, caplog):
    """A storage error opening one replica's log is logged; the other partitions of the
    same delivery still take their roles."""
    async def main():
        node = Node(tmp_path)
        opener = node.state.open_replica_log

        def failing(topic, index):
            if index == 0:
                raise OSError("disk gone")
            return opener(topic, index)

        node.state.open_replica_log = failing
        try:
            node.deliver(*brokers(closed_port()), TopicRecord(name="t", topic_id=TOPIC_ID),
                         partition_record(0, (0, 1)), partition_record(1, (0, 1)))
            assert node.partition(0).role is ReplicaRole.NONE and node.partition(0).log is None
            assert node.partition(1).role is ReplicaRole.LEADER
            assert set(node.manager.hosted) == {(TOPIC_ID, 1)}
            assert any("cannot apply" in r.getMessage() for r in caplog.records)
        finally:
            await node.close()
    run(main())
