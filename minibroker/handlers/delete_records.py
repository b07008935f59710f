"""DeleteRecords v0-2.

Behaviour: moves a partition's log start offset forward to the given offset (-1: the
high watermark), deleting whole segments that fall below it; the answer is the new low
watermark. An offset above the high watermark is OFFSET_OUT_OF_RANGE. Internal topics
(``__consumer_offsets``) are refused with INVALID_TOPIC_EXCEPTION and low watermark -1,
as Kafka's ``ReplicaManager.deleteRecordsOnLocalLog`` does: their records are the
committed offsets, which would be gone at the next restart. An offline partition (a
storage error, see :mod:`minibroker.log.partition`) is KAFKA_STORAGE_ERROR, as Kafka's
``ReplicaManager`` answers for a partition on an offline log dir; a file error while
records are deleted takes the partition offline and is answered the same way.
Replication: only the leader deletes (NOT_LEADER_OR_FOLLOWER), up to its high watermark;
the answer leaves once the leader moved its log start, and followers move theirs on
their next fetch (Kafka's ``DelayedDeleteRecords`` waits for every replica: not yet).
"""

from kproto.errors import (
    InvalidTopicError,
    KafkaCodeError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import DeleteRecordsResponse
from minibroker.handlers import handles
from minibroker.log.maintenance import offline_on_failure
from minibroker.state import INTERNAL_TOPICS


@handles(ApiKey.DELETE_RECORDS, 0, 2)
async def handle(state, header, request):
    topics = []
    for asked in request.topics:
        topic = state.topics.get(asked.name)
        partitions = []
        for p in asked.partitions:
            code, low, log = 0, -1, None
            if topic is None or not 0 <= p.partition_index < len(topic.partitions):
                code = UnknownTopicOrPartitionError.code
            elif topic.name in INTERNAL_TOPICS:
                code = InvalidTopicError.code
            else:
                try:
                    log = state.leader_partition(topic, p.partition_index).log
                except KafkaCodeError as exc:  # offline (KAFKA_STORAGE_ERROR), not the leader
                    code = exc.code
                    log = None
            if log is not None:
                try:
                    with offline_on_failure(log, "DeleteRecords"):
                        low = log.delete_records(p.offset)
                except OffsetOutOfRangeError:
                    code = OffsetOutOfRangeError.code
                except KafkaStorageError:
                    code = KafkaStorageError.code
            partitions.append(DeleteRecordsResponse.DeleteRecordsPartitionResult(
                partition_index=p.partition_index, low_watermark=low, error_code=code))
        topics.append(DeleteRecordsResponse.DeleteRecordsTopicResult(name=asked.name, partitions=partitions))
    return DeleteRecordsResponse(topics=topics)
