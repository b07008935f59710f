"""ListOffsets v1-10.

Behaviour (:class:`~kproto.protocol.timestamps.OffsetTimestamp`): EARLIEST (-2) is the
log start offset, LATEST (-1) the high watermark (which is also the last stable offset
until transactions exist), MAX_TIMESTAMP (-3) the record with the largest timestamp
(KIP-734), and a real timestamp the first record at or after it, or offset -1 when there
is none. An offline partition (a storage error, see
:mod:`minibroker.log.partition`) is KAFKA_STORAGE_ERROR, as Kafka's ``ReplicaManager``
answers for a partition on an offline log dir.
Replication (Kafka's ``Partition.fetchOffsetForTimestamp``): only the leader answers
(NOT_LEADER_OR_FOLLOWER); v4+ ``current_leader_epoch`` is fenced (FENCED_LEADER_EPOCH /
UNKNOWN_LEADER_EPOCH, KIP-320) and ``leader_epoch`` is the partition's. LATEST is the high
watermark for a consumer (replica id -1) and the log end offset for a follower (replica
id >= 0); a timestamp lookup never answers an offset at or above the high watermark
(-1 instead). A single broker's high watermark is its log end.
Not implemented yet: v0 (``old_style_offsets``), a time index (timestamps are found by
scanning batch max timestamps, then one batch's records).
"""

from kproto.errors import KafkaCodeError
from kproto.protocol import ApiKey
from kproto.protocol.messages import ListOffsetsResponse
from kproto.protocol.timestamps import OffsetTimestamp
from minibroker.handlers import handles

PartitionResponse = ListOffsetsResponse.ListOffsetsPartitionResponse
TopicResponse = ListOffsetsResponse.ListOffsetsTopicResponse


def _lookup(log, timestamp, replica: bool):
    if timestamp == OffsetTimestamp.LATEST:
        return (log.log_end_offset if replica else log.high_watermark), -1
    if timestamp == OffsetTimestamp.EARLIEST:
        return log.log_start_offset, -1
    found = log.max_timestamp_offset() if timestamp == OffsetTimestamp.MAX_TIMESTAMP else log.offset_for_timestamp(timestamp)
    if found is None or found[0] >= log.high_watermark:  # not committed: not visible yet
        return -1, -1
    return found


@handles(ApiKey.LIST_OFFSETS, 1, 10)
async def handle(state, header, request):
    topics = []
    for asked in request.topics:
        topic = state.topics.get(asked.name)
        partitions = []
        for p in asked.partitions:
            try:  # unknown, offline (KAFKA_STORAGE_ERROR), fenced, not the leader
                partition = state.leader_partition(
                    topic, p.partition_index, p.current_leader_epoch if header.api_version >= 4 else -1)
            except KafkaCodeError as exc:
                partitions.append(PartitionResponse(partition_index=p.partition_index, error_code=exc.code))
                continue
            offset, timestamp = _lookup(partition.log, p.timestamp, request.replica_id >= 0)
            partitions.append(PartitionResponse(
                partition_index=p.partition_index, error_code=0, timestamp=timestamp, offset=offset,
                leader_epoch=partition.leader_epoch if header.api_version >= 4 else -1,
            ))
        topics.append(TopicResponse(name=asked.name, partitions=partitions))
    return ListOffsetsResponse(topics=topics)
