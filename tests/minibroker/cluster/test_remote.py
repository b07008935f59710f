"""The controller RPCs on the wire (issue 13, step 2, processes=True): each
:mod:`minibroker.cluster.api` request survives its trip through kproto's encoding at the
version the broker sends, and the metadata records through a Fetch's record batch."""

import uuid

from kproto.protocol.messages import REQUESTS
from minibroker.cluster import remote
from minibroker.cluster.api import (
    AlterPartitionRequest,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    NewTopic,
    ReplicaBrokerEpoch,
)
from minibroker.cluster.metadata import PartitionRecord, RegisterBrokerRecord, TopicRecord

_KEYS = {cls: key for key, cls in REQUESTS.items()}


def _trip(message):
    """``message`` encoded at the version the broker sends it in, and decoded again."""
    cls = type(message)
    version = remote.VERSIONS[_KEYS[cls]]
    return cls.decode(message.encode(version), version)


def test_registration_heartbeat_and_alter_partition_survive_the_wire():
    reg = BrokerRegistrationRequest(broker_id=2, incarnation_id=uuid.uuid4(), host="127.0.0.1", port=9092, rack="b")
    assert remote.registration_from_wire(_trip(remote.registration_to_wire(reg, "c"))) == reg
    beat = BrokerHeartbeatRequest(broker_id=2, broker_epoch=7, current_metadata_offset=40, want_shut_down=True)
    assert remote.heartbeat_from_wire(_trip(remote.heartbeat_to_wire(beat))) == beat
    alter = AlterPartitionRequest(broker_id=1, broker_epoch=3, topic_id=uuid.uuid4(), partition=4, leader_epoch=2,
                                  partition_epoch=5, new_isr=(ReplicaBrokerEpoch(broker_id=1, broker_epoch=3),
                                                              ReplicaBrokerEpoch(broker_id=0, broker_epoch=-1)))
    assert remote.alter_partition_from_wire(_trip(remote.alter_partition_to_wire(alter))) == alter


def test_forwarded_create_topics_survive_the_wire():
    topics = [NewTopic(name="a", num_partitions=3, replication_factor=2, configs={"cleanup.policy": "compact"}),
              NewTopic(name="b", num_partitions=-1, replication_factor=-1, assignments={0: (1, 2), 1: (2, 0)},
                       configs={})]
    assert remote.create_topics_from_wire(_trip(remote.create_topics_to_wire(topics, False))) == topics


def test_metadata_records_travel_in_one_batch_at_their_offsets():
    topic_id = uuid.uuid4()
    entries = [(7, RegisterBrokerRecord(broker_id=0, broker_epoch=7, incarnation_id=uuid.uuid4(), host="h",
                                        port=1, rack=None)),
               (8, TopicRecord(name="t", topic_id=topic_id)),
               (9, PartitionRecord(topic_id=topic_id, partition_id=0, replicas=(0, 1), isr=(0, 1), leader=0,
                                   leader_epoch=0, partition_epoch=0))]
    assert remote.read_metadata_records(remote.metadata_records(entries, controller_epoch=3)) == entries
    assert remote.metadata_records([], controller_epoch=3) is None
