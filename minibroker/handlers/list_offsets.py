"""ListOffsets v1-10.

Behaviour (:class:`~kproto.protocol.timestamps.OffsetTimestamp`): EARLIEST (-2) is the
log start offset, LATEST (-1) the last fetchable offset, MAX_TIMESTAMP (-3) the record
with the largest timestamp (KIP-734), and a real timestamp the first record at or after
it, or offset -1 when there is none. KIP-405's EARLIEST_LOCAL (-4) is the log start too
and LATEST_TIERED (-5) offset -1: nothing is tiered (Kafka's answers without remote storage). The last fetchable offset follows the isolation
level (Kafka's ``UnifiedLog.fetchOffsetByTimestamp`` / ``Partition.fetchOffsetForTimestamp``):
the last stable offset for read_committed (v2+ ``isolation_level`` 1, KIP-98), the high
watermark for read_uncommitted, the log end offset for a follower (replica id >= 0); a
timestamp or MAX_TIMESTAMP lookup never answers an offset at or above it (-1 instead). An offline partition (a storage error, see
:mod:`minibroker.log.partition`) is KAFKA_STORAGE_ERROR, as Kafka's ``ReplicaManager``
answers for a partition on an offline log dir.
Replication (Kafka's ``Partition.fetchOffsetForTimestamp``): only the leader answers
(NOT_LEADER_OR_FOLLOWER); v4+ ``current_leader_epoch`` is fenced (FENCED_LEADER_EPOCH /
UNKNOWN_LEADER_EPOCH, KIP-320) and ``leader_epoch`` is the partition's. A single broker's
high watermark is its log end.
Authorization (``KafkaApis.handleListOffsetRequest``): DESCRIBE on the topic, else
TOPIC_AUTHORIZATION_FAILED for each of its partitions.
Not implemented yet: v0 (``old_style_offsets``), a time index (timestamps are found by
scanning batch max timestamps, then one batch's records).
"""

from kproto.errors import KafkaCodeError, TopicAuthorizationFailedError
from kproto.protocol import ApiKey
from kproto.protocol.messages import ListOffsetsResponse
from kproto.protocol.timestamps import OffsetTimestamp
from minibroker.authorizer import AclOperation, ResourceType
from minibroker.handlers import handles

PartitionResponse = ListOffsetsResponse.ListOffsetsPartitionResponse
TopicResponse = ListOffsetsResponse.ListOffsetsTopicResponse


READ_COMMITTED = 1
# KIP-405's specials (v8+, v9+); without tiered storage the local log is the whole log.
EARLIEST_LOCAL = -4  # ListOffsetsRequest.EARLIEST_LOCAL_TIMESTAMP: the local log start
LATEST_TIERED = -5  # ListOffsetsRequest.LATEST_TIERED_TIMESTAMP: nothing tiered, offset -1


def _lookup(partition, timestamp, replica: bool, isolation_level: int):
    log = partition.log
    if replica:
        last_fetchable = log.log_end_offset
    elif isolation_level == READ_COMMITTED:
        last_fetchable = partition.last_stable_offset
    else:
        last_fetchable = log.high_watermark
    if timestamp == OffsetTimestamp.LATEST:
        return last_fetchable, -1
    if timestamp in (OffsetTimestamp.EARLIEST, EARLIEST_LOCAL):
        return log.log_start_offset, -1
    if timestamp == LATEST_TIERED:
        return -1, -1
    found = log.max_timestamp_offset() if timestamp == OffsetTimestamp.MAX_TIMESTAMP else log.offset_for_timestamp(timestamp)
    if found is None or found[0] >= last_fetchable:  # not fetchable at this isolation level yet
        return -1, -1
    return found


@handles(ApiKey.LIST_OFFSETS, 1, 10)
async def handle(state, header, request):
    topics = []
    for asked in request.topics:
        topic = state.topics.get(asked.name)
        described = state.authorizer.allows(header, AclOperation.DESCRIBE, ResourceType.TOPIC, asked.name)
        partitions = []
        for p in asked.partitions:
            if not described:
                partitions.append(PartitionResponse(partition_index=p.partition_index,
                                                    error_code=TopicAuthorizationFailedError.code))
                continue
            try:  # unknown, offline (KAFKA_STORAGE_ERROR), fenced, not the leader
                partition = state.leader_partition(
                    topic, p.partition_index, p.current_leader_epoch if header.api_version >= 4 else -1)
            except KafkaCodeError as exc:
                partitions.append(PartitionResponse(partition_index=p.partition_index, error_code=exc.code))
                continue
            offset, timestamp = _lookup(partition, p.timestamp, request.replica_id >= 0,
                                        request.isolation_level if header.api_version >= 2 else 0)
            partitions.append(PartitionResponse(
                partition_index=p.partition_index, error_code=0, timestamp=timestamp, offset=offset,
                leader_epoch=partition.leader_epoch if header.api_version >= 4 else -1,
            ))
        topics.append(TopicResponse(name=asked.name, partitions=partitions))
    return ListOffsetsResponse(topics=topics)
