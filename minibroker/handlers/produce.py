"""Produce v3-11.

Behaviour: each partition's records must be exactly one v2 record batch (v3+ allows no
other), CRC-checked, not a control batch, with lastOffsetDelta + 1 == record count > 0
and at most ``message.max.bytes``, and every record must parse (checked by
:meth:`~kproto.records.Batch.validate`, which builds no records). Accepted batches are
stored as sent, with the base offset and leader epoch written in (both outside the CRC). acks=0 gets no response;
acks 1 and -1 (all) are the same with one replica. A write that fails (disk full, an I/O
error) answers KAFKA_STORAGE_ERROR for its partition, with the log left as it was or
taken offline (see :mod:`minibroker.log.partition`); the connection stays up.
Idempotent producers: sequences are checked per producer id, epoch and partition, with
the last 5 batches remembered (see :mod:`minibroker.producer_state`).
Topic configs, each the topic's own setting or else its broker synonym's value
(``log.cleanup.policy``, ``message.max.bytes``): ``cleanup.policy=compact`` refuses
records without a key (INVALID_RECORD), ``max.message.bytes``,
``message.timestamp.type=LogAppendTime`` (the broker stamps the batch, CRC recomputed,
and says the time in ``log_append_time_ms``), ``min.insync.replicas`` > 1 with acks=all
-> NOT_ENOUGH_REPLICAS (one replica). Internal topics (``__consumer_offsets``) take no
records from clients: INVALID_TOPIC_EXCEPTION, as in Kafka.
Not implemented yet: transactions, timestamp bounds, broker-side recompression.
"""

import struct
import time

from kproto.codec import crc32c
from kproto.errors import (
    CorruptMessageError,
    CorruptRecordError,
    InvalidRecordError,
    InvalidRequiredAcksError,
    InvalidTopicError,
    KafkaCodeError,
    KafkaStorageError,
    MessageTooLargeError,
    NotEnoughReplicasError,
    UnknownTopicOrPartitionError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import ProduceResponse
from kproto.records import read_batches
from minibroker.handlers import handles
from minibroker.state import INTERNAL_TOPICS
from minibroker.topic_configs import effective

# v2 batch header positions (see kproto/_codec_py.py) and the timestamp-type bit.
_CRC, _ATTRIBUTES, _MAX_TIMESTAMP = 17, 21, 35
_LOG_APPEND_TIME = 0x08

PartitionResponse = ProduceResponse.PartitionProduceResponse
TopicResponse = ProduceResponse.TopicProduceResponse


def set_log_append_time(batch: bytes | bytearray | memoryview, now_ms: int) -> bytearray:
    """A copy of the batch with the LogAppendTime bit set and ``now_ms`` as its max timestamp.

    Both lie inside the CRC-32C, so it is computed again (Kafka does the same).
    """
    out = bytearray(batch)
    (attributes,) = struct.unpack_from(">h", out, _ATTRIBUTES)
    struct.pack_into(">h", out, _ATTRIBUTES, attributes | _LOG_APPEND_TIME)
    struct.pack_into(">q", out, _MAX_TIMESTAMP, now_ms)
    struct.pack_into(">I", out, _CRC, crc32c(memoryview(out)[_ATTRIBUTES:]))
    return out


def _append(state, topic, index, records):
    """Validate and append one partition's batch.

    Returns:
        ``(error_code, base_offset, message, log_append_time)``; the time is -1 unless the
        topic stamps LogAppendTime.
    """
    if topic is None or not 0 <= index < len(topic.partitions):
        return UnknownTopicOrPartitionError.code, -1, None, -1
    if topic.name in INTERNAL_TOPICS:
        return InvalidTopicError.code, -1, f"cannot append to internal topic {topic.name}", -1
    if records is None or len(records) == 0:
        return InvalidRecordError.code, -1, "no record batch", -1
    limit = int(effective(topic.configs, "max.message.bytes", state.config))
    if len(records) > limit:
        return MessageTooLargeError.code, -1, f"batch of {len(records)} bytes is above the limit of {limit}", -1
    # The request decoder hands records over as a memoryview into the request frame, which
    # is immutable bytes: it is read and appended as it is, with no copy of our own.
    try:
        batches = list(read_batches(records))
    except CorruptRecordError as exc:
        return CorruptMessageError.code, -1, str(exc), -1
    except KafkaCodeError as exc:
        return exc.code, -1, str(exc), -1
    if len(batches) != 1 or batches[0].size != len(records):
        return CorruptMessageError.code, -1, "expected exactly one whole record batch", -1
    batch = batches[0]
    if batch.magic != 2:
        return InvalidRecordError.code, -1, "Produce v3+ carries record batches of magic 2 only", -1
    if batch.is_control:
        return InvalidRecordError.code, -1, "clients may not produce control batches", -1
    if batch.records_count <= 0 or batch.records_count != batch.last_offset_delta + 1:
        return InvalidRecordError.code, -1, "record count does not match lastOffsetDelta", -1
    try:
        # Every record must parse before the batch is acknowledged; none needs building.
        batch.validate(require_keys="compact" in effective(topic.configs, "cleanup.policy", state.config))
    except InvalidRecordError:  # only raised for a null key, and only once every record parsed
        return InvalidRecordError.code, -1, "a compacted topic only takes records with a key", -1
    except KafkaCodeError as exc:
        return (CorruptMessageError.code if isinstance(exc, CorruptRecordError) else exc.code), -1, str(exc), -1
    idempotent = batch.producer_id >= 0
    partition_key = (topic.topic_id, index)
    if idempotent:
        if batch.base_sequence < 0:
            return InvalidRecordError.code, -1, "an idempotent batch needs a base sequence", -1
        code, duplicate_of = state.producers.check(
            partition_key, batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.records_count)
        if code or duplicate_of >= 0:
            return code, duplicate_of, None, -1  # a retry already written: its first offset again
    max_timestamp = append_time = batch.max_timestamp
    if effective(topic.configs, "message.timestamp.type") == "LogAppendTime":
        max_timestamp = append_time = int(time.time() * 1000)
        records = set_log_append_time(records, max_timestamp)
    else:
        append_time = -1
    try:
        base = topic.partitions[index].append(
            records, last_offset_delta=batch.last_offset_delta, max_timestamp=max_timestamp, leader_epoch=topic.leader_epoch
        )
    except KafkaStorageError as exc:
        # The write failed and was undone, or the log is offline: this partition's answer,
        # the connection and the other partitions go on (Kafka: ReplicaManager.appendToLocalLog).
        return KafkaStorageError.code, -1, str(exc), -1
    if idempotent:
        state.producers.record(partition_key, batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.records_count, base)
    return 0, base, None, append_time


@handles(ApiKey.PRODUCE, 3, 11)
async def handle(state, header, request):
    if request.acks not in (-1, 0, 1):
        error = InvalidRequiredAcksError.code
    else:
        error = None
    responses = []
    appended = False
    for topic_data in request.topic_data:
        topic = state.topics.get(topic_data.name)
        partitions = []
        for p in topic_data.partition_data:
            append_time = -1
            if error is not None:
                code, base, message = error, -1, None
            elif request.acks == -1 and topic is not None and int(effective(topic.configs, "min.insync.replicas")) > 1:
                # One replica can never satisfy acks=all with a larger minimum: Kafka's answer.
                code, base, message = NotEnoughReplicasError.code, -1, "min.insync.replicas exceeds the one in-sync replica"
            else:
                code, base, message, append_time = _append(state, topic, p.index, p.records)
                appended |= code == 0
            log = topic.partitions[p.index] if code == 0 else None
            partitions.append(PartitionResponse(
                index=p.index, error_code=code, base_offset=base, log_append_time_ms=append_time,
                log_start_offset=log.log_start_offset if log else -1, error_message=message,
            ))
        responses.append(TopicResponse(name=topic_data.name, partition_responses=partitions))
    if appended:
        state.data_arrived()
    if request.acks == 0:
        return None
    return ProduceResponse(responses=responses)

