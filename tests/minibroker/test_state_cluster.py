"""BrokerState in cluster mode (issue 13, step 1; design WP5): topics from the metadata
image, replica logs with their checkpointed high watermark, deletion, group coordination,
the crash path; and a single broker's solo partitions answering as before."""

from __future__ import annotations

import uuid

import pytest

from kproto.errors import KafkaStorageError, NotLeaderOrFollowerError, UnknownTopicOrPartitionError
from minibroker.cluster.metadata import PartitionRegistration, TopicImage
from minibroker.cluster.partition import ReplicaRole
from minibroker.config import BrokerConfig
from minibroker.coordinator.offsets_log import OFFSETS_TOPIC, partition_for
from minibroker.state import BrokerState
from tests.minibroker.handlers.test_replication_errors import TOPIC_ID, node
from tests.minibroker.test_server import batch


def registration(replicas, leader, epoch=1):
    return PartitionRegistration(replicas=replicas, isr=replicas, leader=leader, leader_epoch=epoch, partition_epoch=1)


def test_ensure_topic_opens_logs_only_for_hosted_partitions(tmp_path):
    state = node(tmp_path)
    try:
        image = TopicImage(name="u", topic_id=uuid.uuid4(), partitions={
            0: registration((0, 1), 0), 1: registration((1, 2), 1), 2: registration((2, 0), 2)})
        topic = state.ensure_topic(image)
        assert [p.log is not None for p in topic.partitions] == [True, False, True]
        assert all(p.role is ReplicaRole.NONE for p in topic.partitions)  # until the registration is applied
        assert state.ensure_topic(image) is topic  # idempotent
        with pytest.raises(NotLeaderOrFollowerError):
            state.leader_partition(topic, 1)
        with pytest.raises(UnknownTopicOrPartitionError):
            state.leader_partition(topic, 3)
    finally:
        state.close()


def test_a_replica_log_starts_at_its_checkpointed_high_watermark(tmp_path):
    """Kafka's replica startup: HW = min(replication-offset-checkpoint, LEO), never the LEO
    by default, so that a new leader does not show records the ISR never had."""
    state = node(tmp_path)
    p = state.topics["t"].partitions[0]
    for _ in range(3):
        p.append_as_leader(batch(b"x"), last_offset_delta=0, max_timestamp=1_000)
    state.storage.save_offset_checkpoints({("t", 0): 2}, {("t", 0): 3})
    state.close()
    config = BrokerConfig({"log.dirs": str(tmp_path / "broker-0"), "broker.id": 0})
    again = BrokerState(config, "127.0.0.1", 9000, cluster=state.cluster)
    try:
        topic = again.ensure_topic(again.cluster.image.topics[TOPIC_ID])
        log = topic.partitions[0].log
        assert (log.log_end_offset, log.high_watermark) == (3, 2)
    finally:
        again.close()


def test_drop_topic_removes_its_logs(tmp_path):
    state = node(tmp_path)
    try:
        directory = state.topics["t"].partitions[0].log.directory
        assert directory.exists()
        state.drop_topic(TOPIC_ID)
        assert "t" not in state.topics and not directory.exists()
        state.drop_topic(TOPIC_ID)  # twice: nothing
    finally:
        state.close()


def test_coordinates_follows_the_leader_of_the_groups_offsets_partition(tmp_path):
    state = node(tmp_path)
    try:
        assert not state.coordinates("g")  # no __consumer_offsets yet
        index = partition_for("g", 3)
        state.cluster.image.topics[uuid.UUID(int=9)] = TopicImage(name=OFFSETS_TOPIC, topic_id=uuid.UUID(int=9), partitions={
            i: registration((0, 1), 0 if i == index else 1) for i in range(3)})
        assert state.coordinates("g")
        assert not state.coordinates(next(g for g in ("a", "b", "c", "d", "e", "f") if partition_for(g, 3) != index))
    finally:
        state.close()


def test_abandon_writes_nothing_and_releases_the_directories(tmp_path):
    state = node(tmp_path)
    state.topics["t"].partitions[0].append_as_leader(batch(b"x"), last_offset_delta=0, max_timestamp=1_000)
    state.abandon()
    config = BrokerConfig({"log.dirs": str(tmp_path / "broker-0"), "broker.id": 0})
    again = BrokerState(config, "127.0.0.1", 9000, cluster=state.cluster)  # the lock is free
    try:
        assert again.ensure_topic(again.cluster.image.topics[TOPIC_ID]).partitions[0].log.log_end_offset == 1
    finally:
        again.close()


def test_single_broker_partitions_are_solo_leaders_with_epoch_zero(tmp_path):
    """A single broker: leader = itself, ISR = itself, HW = LEO, an empty log's epoch cache
    (0, 0) so OffsetForLeaderEpoch answers epoch 0 up to the log end as before."""
    state = BrokerState(BrokerConfig({"log.dirs": str(tmp_path)}), "127.0.0.1", 9092)
    try:
        topic = state.create_topic("s", 2)
        p = state.leader_partition(topic, 1)
        assert (p.is_solo, p.isr, p.leader_epoch, p.end_offset_for_epoch(0)) == (True, (0,), 0, (0, 0))
        p.append_as_leader(batch(b"x"), last_offset_delta=0, max_timestamp=1_000)
        assert p.high_watermark == 1 == p.log.log_end_offset
        p.log.go_offline("test")
        with pytest.raises(KafkaStorageError):
            state.leader_partition(topic, 1)
    finally:
        state.close()
