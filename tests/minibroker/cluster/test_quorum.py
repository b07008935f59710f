"""The Quorum: the controller's host by leases, failover with an epoch, delivery to nodes,
and the ControllerChannel (issue 13, WP2)."""

import asyncio
import random
import uuid

import pytest

from kproto.errors import NotControllerError
from minibroker.cluster.api import (
    AlterPartitionRequest,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    ControllerChannel,
    NewTopic,
)
from minibroker.cluster.metadata import MetadataImage, MetadataLog, RemoveTopicRecord
from minibroker.cluster.quorum import Quorum
from minibroker.config import BrokerConfig

FETCH_TIMEOUT, SESSION, INTERVAL = 300, 250, 50


class Clock:
    def __init__(self):
        self.now = 10_000

    def __call__(self):
        return self.now


class Nodes:
    """``n`` nodes on one Quorum, each with its own image fed by delivery."""

    def __init__(self, n=3, path=None):
        self.clock = Clock()
        self.config = BrokerConfig({"controller.quorum.fetch.timeout.ms": FETCH_TIMEOUT,
                                    "broker.session.timeout.ms": SESSION, "broker.heartbeat.interval.ms": INTERVAL})
        self.log = MetadataLog(path)
        self.quorum = Quorum(log=self.log, config=self.config, clock_ms=self.clock, rng=random.Random(0))
        self.images = {}
        self.channels = {}
        self.epochs = {}
        self.alive = set()
        for i in range(n):
            self.start(i)

    def run(self, coro):
        return asyncio.run(coro)

    def start(self, i):
        self.alive.add(i)
        self.images[i] = MetadataImage()
        self.quorum.renew_lease(i)
        self.channels[i] = self.quorum.channel_for(i)
        self.quorum.subscribe(i, self.images[i].apply)
        reply = self.run(self.channels[i].register_broker(BrokerRegistrationRequest(
            broker_id=i, incarnation_id=uuid.uuid4(), host="127.0.0.1", port=9000 + i, rack=None)))
        assert reply.error_code == 0, reply
        self.epochs[i] = reply.broker_epoch
        self.beat(i)

    def beat(self, i):
        return self.run(self.channels[i].heartbeat(BrokerHeartbeatRequest(
            broker_id=i, broker_epoch=self.epochs[i], current_metadata_offset=self.images[i].offset)))

    def kill(self, i):
        self.alive.discard(i)
        self.quorum.unsubscribe(i)

    def advance(self, ms):
        """Time passes in heartbeat intervals; live nodes renew leases and heartbeat."""
        for _ in range(ms // INTERVAL):
            self.clock.now += INTERVAL
            for i in sorted(self.alive):
                self.quorum.renew_lease(i)
                self.beat(i)
            self.quorum.check()


def test_the_channel_is_a_controller_channel():
    nodes = Nodes(1)
    channel: ControllerChannel = nodes.channels[0]  # mypy checks the protocol; here its members
    for name in ("register_broker", "heartbeat", "alter_partition", "create_topics", "create_partitions",
                 "delete_topics", "allocate_producer_ids"):
        assert asyncio.iscoroutinefunction(getattr(channel, name))
    assert channel.active_controller_id == 0


def test_the_lowest_live_node_hosts_the_first_controller_and_nodes_get_every_commit():
    nodes = Nodes(3)
    assert nodes.quorum.controller_id == 0 and nodes.quorum.controller_epoch == 1
    assert all(ch.active_controller_id == 0 for ch in nodes.channels.values())
    [result] = nodes.run(nodes.channels[2].create_topics(
        [NewTopic(name="t", num_partitions=3, replication_factor=3)], validate_only=False))
    assert result.error_code == 0
    controller_image = nodes.quorum.controller.image
    assert all(image == controller_image for image in nodes.images.values())
    assert all(not b.fenced for b in controller_image.brokers.values())


def test_a_late_subscriber_gets_the_log_from_its_offset():
    nodes = Nodes(2)
    late = MetadataImage()
    nodes.quorum.subscribe(9, late.apply, from_offset=0)
    assert late == nodes.quorum.controller.image
    seen = []
    nodes.quorum.subscribe(8, lambda offset, records: seen.append((offset, list(records))),
                           from_offset=nodes.log.end_offset)
    assert seen == []
    nodes.run(nodes.channels[0].create_topics([NewTopic(name="t", num_partitions=1, replication_factor=1)],
                                              validate_only=False))
    assert seen and seen[0][0] == nodes.log.end_offset - 1


def test_controller_failover_keeps_everything_and_bumps_the_epoch():
    nodes = Nodes(3)
    nodes.run(nodes.channels[1].create_topics([NewTopic(name="t", num_partitions=3, replication_factor=3)],
                                              validate_only=False))
    old = nodes.quorum.controller
    before = MetadataImage()
    entries = nodes.log.read(0)
    before.apply(entries[-1][0], [r for _, r in entries])
    nodes.kill(0)
    nodes.advance(FETCH_TIMEOUT + 2 * INTERVAL)
    assert nodes.quorum.controller_id == 1 and nodes.quorum.controller_epoch == old.epoch + 1
    assert all(ch.active_controller_id == 1 for ch in nodes.channels.values())
    image = nodes.quorum.controller.image
    # every registration and partition is kept; broker 0 got fenced by its expired session
    assert image.brokers.keys() == before.brokers.keys()
    assert image.topics.keys() == before.topics.keys()
    assert image.brokers[0].fenced and not image.brokers[1].fenced
    for index, part in image.topic_by_name("t").partitions.items():
        assert part.replicas == before.topic_by_name("t").partitions[index].replicas
        assert part.leader in (1, 2) and 0 not in part.isr
    # the deposed controller is fenced even if one of its coroutines still runs
    with pytest.raises(NotControllerError):
        old.delete_topics(list(image.topics))
    assert "t" in {t.name for t in image.topics.values()}
    # and the new one works: a topic made after the failover
    [result] = nodes.run(nodes.channels[2].create_topics(
        [NewTopic(name="after", num_partitions=1, replication_factor=2)], validate_only=False))
    assert result.error_code == 0 and nodes.images[2] == image


def test_live_brokers_are_not_fenced_by_a_failover():
    nodes = Nodes(3)
    nodes.kill(0)
    nodes.advance(FETCH_TIMEOUT + 2 * INTERVAL)
    assert nodes.quorum.controller_id == 1
    assert [b.broker_id for b in nodes.quorum.controller.image.live_brokers()] == [1, 2]


def test_a_renewed_lease_keeps_the_controller_and_its_epoch():
    nodes = Nodes(3)
    nodes.advance(10 * FETCH_TIMEOUT)
    assert (nodes.quorum.controller_id, nodes.quorum.controller_epoch) == (0, 1)


def test_without_a_live_node_the_channel_answers_not_controller():
    nodes = Nodes(1)
    nodes.kill(0)
    nodes.clock.now += FETCH_TIMEOUT + 1
    nodes.quorum.check()
    assert nodes.quorum.controller_id == -1
    channel = nodes.channels[0]
    assert nodes.beat(0).error_code == 41
    [r] = nodes.run(channel.create_topics([NewTopic(name="t", num_partitions=1, replication_factor=1)],
                                          validate_only=False))
    assert r.error_code == 41
    assert nodes.run(channel.alter_partition(AlterPartitionRequest(
        broker_id=0, broker_epoch=0, topic_id=uuid.UUID(int=1), partition=0, leader_epoch=0, partition_epoch=0,
        new_isr=()))).error_code == 41
    with pytest.raises(NotControllerError):
        nodes.run(channel.allocate_producer_ids(0, nodes.epochs[0]))
    nodes.quorum.renew_lease(0)  # the node comes back: a new controller, next epoch...
    assert (nodes.quorum.controller_id, nodes.quorum.controller_epoch) == (0, 2)
    # ...which gives every registered broker a fresh session (Kafka's BrokerHeartbeatManager), so
    # the new incarnation is DUPLICATE_BROKER_REGISTRATION until the old one's session expires
    reply = nodes.run(channel.register_broker(BrokerRegistrationRequest(
        broker_id=0, incarnation_id=uuid.uuid4(), host="127.0.0.1", port=9000, rack=None)))
    assert reply.error_code == 101
    nodes.clock.now += SESSION + 1
    nodes.quorum.check()
    nodes.start(0)
    assert not nodes.quorum.controller.image.brokers[0].fenced


def test_a_failing_subscriber_does_not_stop_delivery_to_the_others(caplog):
    nodes = Nodes(2)

    def broken(offset, records):
        raise RuntimeError("boom")

    nodes.quorum.subscribe(7, broken, from_offset=nodes.log.end_offset)
    nodes.run(nodes.channels[0].create_topics([NewTopic(name="t", num_partitions=1, replication_factor=1)],
                                              validate_only=False))
    assert nodes.images[1] == nodes.quorum.controller.image
    assert "node 7 failed to apply" in caplog.text


def test_the_quorum_restarts_from_its_file(tmp_path):
    path = tmp_path / "metadata" / "metadata.jsonl"
    nodes = Nodes(3, path=path)
    nodes.run(nodes.channels[0].create_topics([NewTopic(name="t", num_partitions=2, replication_factor=2)],
                                              validate_only=False))
    image = nodes.quorum.controller.image
    nodes.log.close()
    log = MetadataLog(path)
    quorum = Quorum(log=log, config=nodes.config, clock_ms=nodes.clock)
    quorum.renew_lease(2)
    assert quorum.controller_epoch == 2 and quorum.controller.image == image
    with pytest.raises(NotControllerError):
        log.append(1, [RemoveTopicRecord(topic_id=uuid.UUID(int=1))])
    log.close()


def test_run_ticks_the_controller_and_fails_over():
    async def main():
        config = BrokerConfig({"controller.quorum.fetch.timeout.ms": 30, "broker.heartbeat.interval.ms": 5,
                               "broker.session.timeout.ms": 25})
        loop = asyncio.get_running_loop()
        quorum = Quorum(log=MetadataLog(None), config=config, clock_ms=lambda: int(loop.time() * 1000))
        quorum.renew_lease(0)
        quorum.renew_lease(1)
        task = asyncio.create_task(quorum.run())
        try:
            for _ in range(400):  # node 1 keeps renewing; node 0 died
                quorum.renew_lease(1)
                await asyncio.sleep(0.005)
                if quorum.controller_id == 1:
                    break
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        assert (quorum.controller_id, quorum.controller_epoch) == (1, 2)

    asyncio.run(main())
