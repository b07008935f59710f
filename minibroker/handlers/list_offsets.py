"""ListOffsets v1-10.

Behaviour (:class:`~kproto.protocol.timestamps.OffsetTimestamp`): EARLIEST (-2) is the
log start offset, LATEST (-1) the high watermark (which is also the last stable offset
until transactions exist), MAX_TIMESTAMP (-3) the record with the largest timestamp
(KIP-734), and a real timestamp the first record at or after it, or offset -1 when there
is none. An offline partition (a storage error, see
:mod:`minibroker.log.partition`) is KAFKA_STORAGE_ERROR, as Kafka's ``ReplicaManager``
answers for a partition on an offline log dir.
Not implemented yet: v0 (``old_style_offsets``), a time index (timestamps are found by
scanning batch max timestamps, then one batch's records), leader epoch fencing.
"""

from kproto.errors import KafkaStorageError, UnknownTopicOrPartitionError
from kproto.protocol import ApiKey
from kproto.protocol.messages import ListOffsetsResponse
from kproto.protocol.timestamps import OffsetTimestamp
from minibroker.handlers import handles

PartitionResponse = ListOffsetsResponse.ListOffsetsPartitionResponse
TopicResponse = ListOffsetsResponse.ListOffsetsTopicResponse


def _lookup(topic, partition, timestamp):
    log = topic.partitions[partition]
    if timestamp == OffsetTimestamp.LATEST:
        return log.high_watermark, -1
    if timestamp == OffsetTimestamp.EARLIEST:
        return log.log_start_offset, -1
    found = log.max_timestamp_offset() if timestamp == OffsetTimestamp.MAX_TIMESTAMP else log.offset_for_timestamp(timestamp)
    return found if found is not None else (-1, -1)


@handles(ApiKey.LIST_OFFSETS, 1, 10)
async def handle(state, header, request):
    topics = []
    for asked in request.topics:
        topic = state.topics.get(asked.name)
        partitions = []
        for p in asked.partitions:
            if topic is None or not 0 <= p.partition_index < len(topic.partitions):
                partitions.append(PartitionResponse(partition_index=p.partition_index, error_code=UnknownTopicOrPartitionError.code))
                continue
            if topic.partitions[p.partition_index].offline:
                partitions.append(PartitionResponse(partition_index=p.partition_index, error_code=KafkaStorageError.code))
                continue
            offset, timestamp = _lookup(topic, p.partition_index, p.timestamp)
            partitions.append(PartitionResponse(
                partition_index=p.partition_index, error_code=0, timestamp=timestamp, offset=offset,
                leader_epoch=topic.leader_epoch if header.api_version >= 4 else -1,
            ))
        topics.append(TopicResponse(name=asked.name, partitions=partitions))
    return ListOffsetsResponse(topics=topics)
