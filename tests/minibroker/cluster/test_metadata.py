"""The metadata image (KRaft's merge rules) and the JSON-lines metadata log (issue 13, WP2)."""

import uuid

import pytest

from kproto.errors import NotControllerError
from minibroker.cluster.metadata import (
    TOPIC_RESOURCE,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    MetadataImage,
    MetadataLog,
    PartitionChangeRecord,
    PartitionRecord,
    PartitionRegistration,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
)

T = uuid.UUID(int=7)
INC = uuid.UUID(int=9)


def _topic_records():
    return [
        RegisterBrokerRecord(broker_id=0, broker_epoch=0, incarnation_id=INC, host="h", port=1, rack="r0"),
        BrokerRegistrationChangeRecord(broker_id=0, broker_epoch=0, fenced=False),
        TopicRecord(name="t", topic_id=T),
        ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name="t", name="cleanup.policy", value="compact"),
        PartitionRecord(topic_id=T, partition_id=0, replicas=(0, 1, 2), isr=(0, 1, 2), leader=0,
                        leader_epoch=0, partition_epoch=0),
    ]


def test_registration_starts_fenced_and_change_unfences_it():
    image = MetadataImage()
    delta = image.apply(0, _topic_records()[:1])
    assert image.brokers[0].fenced and image.brokers[0].broker_epoch == 0
    assert delta.brokers == {0}
    image.apply(1, _topic_records()[1:2])
    assert not image.brokers[0].fenced
    assert image.live_brokers() == [image.brokers[0]]


def test_a_change_of_an_older_broker_epoch_is_ignored():
    image = MetadataImage()
    image.apply(0, _topic_records()[:1])
    image.apply(1, [BrokerRegistrationChangeRecord(broker_id=0, broker_epoch=-5, fenced=False)])
    assert image.brokers[0].fenced


@pytest.mark.parametrize("change, isr, leader, leader_epoch, partition_epoch", [
    (dict(isr=(0, 1)), (0, 1, 2)[:2], 0, 0, 1),                  # ISR only: leader epoch kept
    (dict(leader=1), (0, 1, 2), 1, 1, 1),                         # new leader: both bump
    (dict(leader=-1, isr=(2,)), (2,), -1, 1, 1),                  # no leader is a leader change
    (dict(isr=(0, 1), leader=1), (0, 1), 1, 1, 1),
])
def test_partition_change_bumps_epochs_as_kraft_merges(change, isr, leader, leader_epoch, partition_epoch):
    image = MetadataImage()
    image.apply(4, _topic_records())
    delta = image.apply(5, [PartitionChangeRecord(topic_id=T, partition_id=0, **change)])
    assert image.topics[T].partitions[0] == PartitionRegistration(
        replicas=(0, 1, 2), isr=isr, leader=leader, leader_epoch=leader_epoch, partition_epoch=partition_epoch)
    assert delta.changed == {(T, 0)} and image.offset == 5


def test_topic_configs_producer_ids_and_removal():
    image = MetadataImage()
    delta = image.apply(4, _topic_records())
    assert delta.created_topics == {T} and delta.changed == {(T, 0)}
    assert image.topic_by_name("t").configs == {"cleanup.policy": "compact"}
    image.apply(5, [ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name="t", name="cleanup.policy", value=None),
                    ProducerIdsRecord(broker_id=0, broker_epoch=0, next_producer_id=1000)])
    assert image.topic_by_name("t").configs == {} and image.next_producer_id == 1000
    delta = image.apply(6, [RemoveTopicRecord(topic_id=T)])
    assert delta.deleted_topics == {T: "t"} and image.topics == {}


def test_two_images_replaying_one_log_are_equal(tmp_path):
    log = MetadataLog(tmp_path / "metadata.jsonl")
    log.begin_epoch(1)
    log.append(1, _topic_records()[:2])
    log.append(1, _topic_records()[2:])
    log.append(1, [PartitionChangeRecord(topic_id=T, partition_id=0, isr=(0, 1), leader=1)])
    a, b = MetadataImage(), MetadataImage()
    for offset, record in log.read(0):  # one record at a time...
        a.apply(offset, [record])
    entries = log.read(0)  # ...and all at once
    b.apply(entries[-1][0], [r for _, r in entries])
    assert a == b and a.offset == 5


def test_a_deposed_controllers_append_raises_not_controller():
    log = MetadataLog(None)
    log.begin_epoch(1)
    log.append(1, _topic_records()[:1])
    log.begin_epoch(2)
    with pytest.raises(NotControllerError):
        log.append(1, _topic_records()[1:2])
    assert log.end_offset == 1
    with pytest.raises(NotControllerError):
        log.begin_epoch(2)  # an epoch is claimed once


def test_the_log_survives_a_reopen(tmp_path):
    path = tmp_path / "metadata" / "metadata.jsonl"
    log = MetadataLog(path)
    log.begin_epoch(3)
    log.append(3, _topic_records())
    log.close()
    again = MetadataLog(path)
    assert again.epoch == 3 and again.end_offset == 5
    assert again.read(0) == list(enumerate(_topic_records()))
    assert again.read(3) == [(3, _topic_records()[3]), (4, _topic_records()[4])]
    again.append(3, [RemoveTopicRecord(topic_id=T)])  # appends continue after the reopen
    again.close()
    assert MetadataLog(path).end_offset == 6


def test_a_torn_last_line_is_dropped_not_fatal(tmp_path):
    path = tmp_path / "metadata.jsonl"
    log = MetadataLog(path)
    log.begin_epoch(1)
    log.append(1, _topic_records()[:2])
    log.append(1, _topic_records()[2:])
    log.close()
    whole = path.read_bytes()
    path.write_bytes(whole[:-10])  # the last append was cut mid-write: it never returned
    again = MetadataLog(path)
    assert again.end_offset == 2
    again.append(1, [RemoveTopicRecord(topic_id=T)])
    again.close()
    assert [type(r).__name__ for _, r in MetadataLog(path).read(0)] == [
        "RegisterBrokerRecord", "BrokerRegistrationChangeRecord", "RemoveTopicRecord"]


def test_a_damaged_whole_line_refuses_to_open(tmp_path):
    path = tmp_path / "metadata.jsonl"
    log = MetadataLog(path)
    log.begin_epoch(1)
    log.append(1, _topic_records()[:1])
    log.append(1, _topic_records()[1:2])
    log.close()
    lines = path.read_bytes().split(b"\n")
    lines[1] = b"{not json"
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(ValueError, match="line 2"):
        MetadataLog(path)
