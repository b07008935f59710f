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

Replication (Kafka's ``ReplicaManager.deleteRecords`` and ``DelayedDeleteRecords``): only
the leader deletes (NOT_LEADER_OR_FOLLOWER), up to its high watermark. Followers learn
the leader's log start from their Fetch answers and move theirs
(``maybeIncrementLogStartOffset``, see :mod:`minibroker.cluster.fetcher`), and tell the
leader in their next Fetch. The answer waits until the partition's low watermark, the
smallest log start offset of the leader and of the replicas on live (registered,
unfenced) brokers (``Partition.lowWatermarkIfLeader``), reaches the requested offset (the
high watermark for -1), and gives that low watermark; it waits ``timeout_ms`` at most, then
answers REQUEST_TIMED_OUT with the low watermark as it was after the leader's delete
(the leader's records are gone either way). Partitions of one request wait together. A
single broker's partition has no followers: it answers at once.
Authorization: DELETE on the topic (Kafka's ``handleDeleteRecordsRequest``), else
TOPIC_AUTHORIZATION_FAILED for each of its partitions.
"""

import asyncio

from kproto.errors import (
    InvalidTopicError,
    KafkaCodeError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    RequestTimedOutError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import DeleteRecordsResponse
from minibroker.authorizer import AclOperation, ResourceType
from minibroker.handlers import handles
from minibroker.log.maintenance import offline_on_failure
from minibroker.state import INTERNAL_TOPICS

Result = DeleteRecordsResponse.DeleteRecordsPartitionResult


def _alive(state):
    """Whether a broker counts for the low watermark: registered and unfenced in this
    broker's metadata image (Kafka's ``metadataCache.hasAliveBroker``)."""
    brokers = state.cluster.image.brokers

    def alive(broker_id: int) -> bool:
        broker = brokers.get(broker_id)
        return broker is not None and not broker.fenced
    return alive


async def _wait_for_replicas(state, pending, timeout_ms):
    """Wait for the low watermarks of ``pending`` (``(result, partition, required offset)``),
    all bounded by one ``timeout_ms``; a partition not done by then is REQUEST_TIMED_OUT
    (``DelayedDeleteRecords`` starts every waiting status as REQUEST_TIMED_OUT)."""
    alive = _alive(state)
    waits = {}
    for result, partition, required in pending:
        result.low_watermark = partition.low_watermark(alive)
        if result.low_watermark < required:  # tryCompleteElseWatch: checked once before waiting
            waits[asyncio.ensure_future(partition.wait_for_low_watermark(required, alive))] = result
    if not waits:
        return
    try:
        done, late = await asyncio.wait(waits, timeout=max(timeout_ms, 0) / 1000)
    finally:  # also when this request is cancelled (the broker stops): no waiter outlives it
        for task in waits:
            task.cancel()
    for task in late:
        waits[task].error_code = RequestTimedOutError.code
    for task in done:
        waits[task].error_code, low = task.result()
        waits[task].low_watermark = low


@handles(ApiKey.DELETE_RECORDS, 0, 2)
async def handle(state, header, request):
    topics = []
    pending = []  # (result, partition, required offset): replicated partitions that wait
    for asked in request.topics:
        topic = state.topics.get(asked.name)
        deletable = state.authorizer.allows(header, AclOperation.DELETE, ResourceType.TOPIC, asked.name)
        partitions = []
        for p in asked.partitions:
            code, low, partition = 0, -1, None
            if not deletable:  # KafkaApis.handleDeleteRecordsRequest: DELETE on the topic
                code = TopicAuthorizationFailedError.code
            elif topic is None or not 0 <= p.partition_index < len(topic.partitions):
                code = UnknownTopicOrPartitionError.code
            elif topic.name in INTERNAL_TOPICS:
                code = InvalidTopicError.code
            else:
                try:
                    partition = state.leader_partition(topic, p.partition_index)
                except KafkaCodeError as exc:  # offline (KAFKA_STORAGE_ERROR), not the leader
                    code = exc.code
            required = -1
            if partition is not None:
                log = partition.log
                # Partition.deleteRecordsOnLeader: -1 is the high watermark, and what the
                # replicas must reach is that offset.
                required = log.high_watermark if p.offset == -1 else p.offset
                try:
                    with offline_on_failure(log, "DeleteRecords"):
                        low = log.delete_records(p.offset)
                except OffsetOutOfRangeError:
                    code = OffsetOutOfRangeError.code
                except KafkaStorageError:
                    code = KafkaStorageError.code
            result = Result(partition_index=p.partition_index, low_watermark=low, error_code=code)
            if code == 0 and partition is not None and not partition.is_solo:
                pending.append((result, partition, required))
            partitions.append(result)
        topics.append(DeleteRecordsResponse.DeleteRecordsTopicResult(name=asked.name, partitions=partitions))
    if pending:
        await _wait_for_replicas(state, pending, request.timeout_ms)
    return DeleteRecordsResponse(topics=topics)
