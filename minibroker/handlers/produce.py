"""Produce v3-11.

Behaviour: each partition's records must be exactly one v2 record batch (v3+ allows no
other), CRC-checked, not a control batch, with lastOffsetDelta + 1 == record count > 0
and at most ``message.max.bytes``, and every record must parse (all checked by
:func:`~kproto.records.validate_batch`, which builds no records). Accepted batches are
stored as sent, with the base offset and leader epoch written in (both outside the CRC). acks=0 gets no response;
acks 1 and -1 (all) are the same with one replica. A write that fails (disk full, an I/O
error) answers KAFKA_STORAGE_ERROR for its partition, with the log left as it was or
taken offline (see :mod:`minibroker.log.partition`); the connection stays up.
Idempotent producers: sequences are checked per producer id, epoch and partition, with
the last 5 batches remembered (see :mod:`minibroker.coordinator.producer_state`).
Topic configs, each the topic's own setting or else its broker synonym's value
(``log.cleanup.policy``, ``message.max.bytes``): ``cleanup.policy=compact`` refuses
records without a key (INVALID_RECORD, each one named in ``record_errors``), ``max.message.bytes``,
``message.timestamp.type=LogAppendTime`` (the broker stamps the batch with
:func:`~kproto.records.rewrite_batch`, CRC recomputed, and says the time in
``log_append_time_ms``), ``message.timestamp.before.max.ms`` and
``message.timestamp.after.max.ms`` on a CreateTime topic (KIP-937: INVALID_TIMESTAMP,
each record out of range named in ``record_errors``; Kafka 4.0 removed the older
``message.timestamp.difference.max.ms``), ``min.insync.replicas`` > 1 with acks=all
-> NOT_ENOUGH_REPLICAS (one replica). Internal topics (``__consumer_offsets``) take no
records from clients: INVALID_TOPIC_EXCEPTION, as in Kafka.
Version notes: v8+ carries ``record_errors`` and ``error_message`` (KIP-467).
Not implemented yet: transactions, broker-side recompression.
"""

import time
from collections.abc import Sequence
from typing import NamedTuple

from kproto.errors import (
    CorruptMessageError,
    CorruptRecordError,
    InvalidRecordError,
    InvalidRequiredAcksError,
    InvalidTimestampError,
    InvalidTopicError,
    KafkaCodeError,
    KafkaStorageError,
    MessageTooLargeError,
    NotEnoughReplicasError,
    UnknownTopicOrPartitionError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import ProduceResponse
from kproto.records import rewrite_batch, validate_batch
from minibroker.handlers import handles
from minibroker.state import INTERNAL_TOPICS
from minibroker.topic_configs import LONG_MAX, effective

PartitionResponse = ProduceResponse.PartitionProduceResponse
TopicResponse = ProduceResponse.TopicProduceResponse
_LOG_APPEND_TIME_BIT = 0x08  # attributes bit 3: the timestamp type (Kafka's TIMESTAMP_TYPE_MASK)


class _Outcome(NamedTuple):
    """One partition's answer; ``log_append_time`` is -1 unless the topic stamps
    LogAppendTime, ``record_errors`` names the records that failed a batch (KIP-467)."""

    error_code: int
    base_offset: int = -1
    message: str | None = None
    log_append_time: int = -1
    record_errors: Sequence[ProduceResponse.BatchIndexAndErrorMessage] = ()


def _keyless_records(batch, partition: str) -> _Outcome:
    """INVALID_RECORD naming every record without a key, for a compacted topic.

    Kafka's ``LogValidator`` checks every record (``validateKey``) and reports each one
    that fails by its index in the batch, then fails the batch with a message that shows
    the first three (``processRecordErrors``); clients fail the named records with
    INVALID_RECORD and the others of the batch with an error of their own (KIP-467).
    """
    message = f"Compacted topic cannot accept message without key in topic partition {partition}."
    errors = [ProduceResponse.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=message)
              for i, record in enumerate(batch.records()) if record.key is None]
    shown = ", ".join(f"RecordError(batchIndex={e.batch_index}, message='{message}')" for e in errors[:3])
    return _Outcome(InvalidRecordError.code, message=(
        f"One or more records have been rejected due to {len(errors)} record errors in total, "
        f"and only showing the first three errors at most: [{shown}]"), record_errors=errors)


def _timestamps_out_of_range(batch, before_max_ms: int, after_max_ms: int, now_ms: int) -> _Outcome | None:
    """INVALID_TIMESTAMP naming every record whose CreateTime timestamp is more than
    ``before_max_ms`` before ``now_ms`` or ``after_max_ms`` after it, or None.

    Kafka's ``LogValidator.validateTimestamp`` (KIP-937): a record without a timestamp
    (-1) passes; the batch fails as a whole, each bad record named by its index. With no
    lower bound (the default) the batch's max timestamp decides alone, without decoding a
    record, as it does everywhere else here.
    """
    low, high = now_ms - before_max_ms, now_ms + after_max_ms
    if before_max_ms == LONG_MAX and batch.max_timestamp <= high:
        return None
    errors = [ProduceResponse.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=(
                  f"Timestamp {record.timestamp} of message with offset {record.offset} is out of range. "
                  f"The timestamp should be within [{low}, {high}]"))
              for i, record in enumerate(batch.records())
              if record.timestamp != -1 and not low <= record.timestamp <= high]
    if not errors:
        return None
    return _Outcome(InvalidTimestampError.code, message="One or more records have been rejected due to invalid timestamp",
                    record_errors=errors)


def _both(keyless: _Outcome, out_of_range: _Outcome) -> _Outcome:
    """Keyless records and timestamps out of range in one batch: Kafka gives each record
    its first error (the key's), and fails the batch with INVALID_TIMESTAMP when any record
    has a bad timestamp (``LogValidator.processRecordErrors``)."""
    by_index = {e.batch_index: e for e in out_of_range.record_errors}
    by_index.update({e.batch_index: e for e in keyless.record_errors})
    return out_of_range._replace(record_errors=[by_index[i] for i in sorted(by_index)])


def _append(state, topic, index, records) -> _Outcome:
    """Validate and append one partition's batch."""
    if topic is None or not 0 <= index < len(topic.partitions):
        return _Outcome(UnknownTopicOrPartitionError.code)
    if topic.name in INTERNAL_TOPICS:
        return _Outcome(InvalidTopicError.code, message=f"cannot append to internal topic {topic.name}")
    if records is None or len(records) == 0:
        return _Outcome(InvalidRecordError.code, message="no record batch")
    limit = int(effective(topic.configs, "max.message.bytes", state.config))
    if len(records) > limit:
        return _Outcome(MessageTooLargeError.code, message=f"batch of {len(records)} bytes is above the limit of {limit}")
    # The request decoder hands records over as a memoryview into the request frame, which
    # is immutable bytes: it is read and appended as it is, with no copy of our own.
    # Kafka's LogValidator, before the producer state is looked at: the batch and every
    # record (none built), then keys, then timestamps.
    try:
        batch, keyless = validate_batch(records)
    except CorruptRecordError as exc:
        return _Outcome(CorruptMessageError.code, message=str(exc))
    except KafkaCodeError as exc:  # INVALID_RECORD (magic, control, counts), an unknown codec
        return _Outcome(exc.code, message=str(exc))
    refused: _Outcome | None = None
    if keyless and "compact" in effective(topic.configs, "cleanup.policy", state.config):
        refused = _keyless_records(batch, f"{topic.name}-{index}")
    log_append_time = effective(topic.configs, "message.timestamp.type", state.config) == "LogAppendTime"
    if not log_append_time:
        out_of_range = _timestamps_out_of_range(
            batch, int(effective(topic.configs, "message.timestamp.before.max.ms", state.config)),
            int(effective(topic.configs, "message.timestamp.after.max.ms", state.config)), int(time.time() * 1000))
        if out_of_range is not None:
            refused = out_of_range if refused is None else _both(refused, out_of_range)
    if refused is not None:
        return refused
    idempotent = batch.producer_id >= 0
    partition_key = (topic.topic_id, index)
    if idempotent:
        if batch.base_sequence < 0:
            return _Outcome(InvalidRecordError.code, message="an idempotent batch needs a base sequence")
        code, duplicate_of = state.producers.check(
            partition_key, batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.records_count)
        if code or duplicate_of >= 0:
            return _Outcome(code, duplicate_of)  # a retry already written: its first offset again
    max_timestamp = append_time = batch.max_timestamp
    if log_append_time:
        max_timestamp = append_time = int(time.time() * 1000)
        # Both lie under the CRC-32C, which the codec computes again (Kafka's
        # DefaultRecordBatch.setMaxTimestamp).
        records = rewrite_batch(records, attributes=batch.attributes | _LOG_APPEND_TIME_BIT, max_timestamp=max_timestamp)
    else:
        append_time = -1
    try:
        base = topic.partitions[index].append(
            records, last_offset_delta=batch.last_offset_delta, max_timestamp=max_timestamp, leader_epoch=topic.leader_epoch
        )
    except KafkaStorageError as exc:
        # The write failed and was undone, or the log is offline: this partition's answer,
        # the connection and the other partitions go on (Kafka: ReplicaManager.appendToLocalLog).
        return _Outcome(KafkaStorageError.code, message=str(exc))
    if idempotent:
        state.producers.record(partition_key, batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.records_count, base)
    return _Outcome(0, base, log_append_time=append_time)


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
                outcome = _Outcome(error)
            elif request.acks == -1 and topic is not None and int(effective(topic.configs, "min.insync.replicas", state.config)) > 1:
                # One replica can never satisfy acks=all with a larger minimum: Kafka's answer.
                outcome = _Outcome(NotEnoughReplicasError.code, message="min.insync.replicas exceeds the one in-sync replica")
            else:
                outcome = _append(state, topic, p.index, p.records)
                appended |= outcome.error_code == 0
            log = topic.partitions[p.index] if outcome.error_code == 0 else None
            partitions.append(PartitionResponse(
                index=p.index, error_code=outcome.error_code, base_offset=outcome.base_offset,
                log_append_time_ms=outcome.log_append_time, log_start_offset=log.log_start_offset if log else -1,
                record_errors=list(outcome.record_errors), error_message=outcome.message,
            ))
        responses.append(TopicResponse(name=topic_data.name, partition_responses=partitions))
    if appended:
        state.data_arrived()
    if request.acks == 0:
        return None
    return ProduceResponse(responses=responses)

