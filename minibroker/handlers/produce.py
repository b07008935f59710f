"""Produce v3-11.

Behaviour: each partition's records must be exactly one v2 record batch (v3+ allows no
other), CRC-checked, not a control batch, with lastOffsetDelta + 1 == record count > 0
and at most ``message.max.bytes``. Accepted batches are stored as sent, with the base
offset and leader epoch written in (both outside the CRC). acks=0 gets no response;
acks 1 and -1 (all) are the same with one replica.
Idempotent producers: sequences are checked per producer id, epoch and partition, with
the last 5 batches remembered (see :mod:`minibroker.producer_state`).
Not implemented yet: transactions, LogAppendTime topics, timestamp bounds.
"""

from kproto.errors import (
    CorruptMessageError,
    CorruptRecordError,
    InvalidRecordError,
    InvalidRequiredAcksError,
    KafkaCodeError,
    MessageTooLargeError,
    UnknownTopicOrPartitionError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import ProduceResponse
from kproto.records import read_batches
from minibroker.handlers import handles

PartitionResponse = ProduceResponse.PartitionProduceResponse
TopicResponse = ProduceResponse.TopicProduceResponse


def _append(state, topic, index, records):
    """Validate and append one partition's batch; returns (error_code, base_offset, message)."""
    if topic is None or not 0 <= index < len(topic.partitions):
        return UnknownTopicOrPartitionError.code, -1, None
    if records is None or len(records) == 0:
        return InvalidRecordError.code, -1, "no record batch"
    if len(records) > state.config["message.max.bytes"]:
        return MessageTooLargeError.code, -1, f"batch of {len(records)} bytes is above message.max.bytes"
    data = bytes(records)
    try:
        batches = list(read_batches(data))
    except CorruptRecordError as exc:
        return CorruptMessageError.code, -1, str(exc)
    except KafkaCodeError as exc:
        return exc.code, -1, str(exc)
    if len(batches) != 1 or batches[0].size != len(data):
        return CorruptMessageError.code, -1, "expected exactly one whole record batch"
    batch = batches[0]
    if batch.magic != 2:
        return InvalidRecordError.code, -1, "Produce v3+ carries record batches of magic 2 only"
    if batch.is_control:
        return InvalidRecordError.code, -1, "clients may not produce control batches"
    if batch.records_count <= 0 or batch.records_count != batch.last_offset_delta + 1:
        return InvalidRecordError.code, -1, "record count does not match lastOffsetDelta"
    try:
        batch.records()  # every record must parse before the batch is acknowledged
    except KafkaCodeError as exc:
        return (CorruptMessageError.code if isinstance(exc, CorruptRecordError) else exc.code), -1, str(exc)
    idempotent = batch.producer_id >= 0
    partition_key = (topic.topic_id, index)
    if idempotent:
        if batch.base_sequence < 0:
            return InvalidRecordError.code, -1, "an idempotent batch needs a base sequence"
        code, duplicate_of = state.producers.check(
            partition_key, batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.records_count)
        if code or duplicate_of >= 0:
            return code, duplicate_of, None  # a retry already written: its first offset again
    base = topic.partitions[index].append(
        data, last_offset_delta=batch.last_offset_delta, max_timestamp=batch.max_timestamp, leader_epoch=topic.leader_epoch
    )
    if idempotent:
        state.producers.record(partition_key, batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.records_count, base)
    return 0, base, None


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
            if error is not None:
                code, base, message = error, -1, None
            else:
                code, base, message = _append(state, topic, p.index, p.records)
                appended |= code == 0
            log = topic.partitions[p.index] if code == 0 else None
            partitions.append(PartitionResponse(
                index=p.index, error_code=code, base_offset=base,
                log_start_offset=log.log_start_offset if log else -1, error_message=message,
            ))
        responses.append(TopicResponse(name=topic_data.name, partition_responses=partitions))
    if appended:
        state.data_arrived()
    if request.acks == 0:
        return None
    return ProduceResponse(responses=responses)

