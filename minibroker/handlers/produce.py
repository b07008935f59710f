"""Produce v3-12.

Behaviour: each partition's records must be exactly one v2 record batch (v3+ allows no
other), CRC-checked, not a control batch, with lastOffsetDelta + 1 == record count > 0
and at most ``message.max.bytes``, and every record must parse (all checked by
:func:`~kproto.records.validate_batch`, which builds no records). Accepted batches are
stored as sent, with the base offset and leader epoch written in (both outside the CRC). acks=0 gets no response.
Replication (Kafka's ``ReplicaManager.appendRecords`` and ``Partition.appendRecordsToLeader``):
a partition this broker does not lead is NOT_LEADER_OR_FOLLOWER; acks=-1 (all) with an
ISR smaller than ``min.insync.replicas`` (the topic's, else the broker's) is
NOT_ENOUGH_REPLICAS and nothing is appended; acks=-1 then waits (``DelayedProduce``) until
the high watermark passes every appended batch of the request, bounded by one deadline
``timeout_ms``: per partition 0, NOT_ENOUGH_REPLICAS_AFTER_APPEND (the ISR shrank below
the minimum meanwhile), NOT_LEADER_OR_FOLLOWER (leadership lost) or REQUEST_TIMED_OUT.
v10+ answers NOT_LEADER_OR_FOLLOWER with the leader this broker knows in ``current_leader``
and its address in ``node_endpoints`` (KIP-951), so that a client need not refresh its
metadata first. A single broker's partition is its own ISR: its high watermark is there at once, so
acks 1 and -1 answer alike, and ``min.insync.replicas`` > 1 is NOT_ENOUGH_REPLICAS.
A write that fails (disk full, an I/O error) answers KAFKA_STORAGE_ERROR for its
partition, with the log left as it was or taken offline (see
:mod:`minibroker.log.partition`); the connection stays up.
Idempotent producers: sequences are checked per producer id, epoch and partition, with
the last 5 batches remembered (see :mod:`minibroker.coordinator.producer_state`).
Transactional batches (KIP-98) open their producer's transaction on the partition, which
its COMMIT/ABORT marker closes (WriteTxnMarkers); a non-transactional batch of a producer
with an open transaction there is INVALID_TXN_STATE (Kafka's ``ProducerAppendInfo``). A
request holding transactional records without a ``transactional_id`` is refused whole,
every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED (Kafka's ``handleProduceRequest``:
``hasTransactionalRecords`` looks at each partition's first batch), as is one whose
transactional id the principal may not WRITE. A topic it may not WRITE is
TOPIC_AUTHORIZATION_FAILED for each partition, before anything else is checked.
Topic configs, each the topic's own setting or else its broker synonym's value
(``log.cleanup.policy``, ``message.max.bytes``): ``cleanup.policy=compact`` refuses
records without a key (INVALID_RECORD, each one named in ``record_errors``), ``max.message.bytes``,
``message.timestamp.type=LogAppendTime`` (the broker stamps the batch with
:func:`~kproto.records.rewrite_batch`, CRC recomputed, and says the time in
``log_append_time_ms``), ``message.timestamp.before.max.ms`` and
``message.timestamp.after.max.ms`` on a CreateTime topic (KIP-937: INVALID_TIMESTAMP,
each record out of range named in ``record_errors``; Kafka 4.0 removed the older
``message.timestamp.difference.max.ms``). Internal topics (``__consumer_offsets``) take no
records from clients: INVALID_TOPIC_EXCEPTION, as in Kafka.
Version notes: v8+ carries ``record_errors`` and ``error_message`` (KIP-467).
KIP-890 part 1 (``transaction.partition.verification.enable``, default true): a
transactional batch whose producer has no open transaction on the partition is appended
only once the transaction coordinator confirms that the partition is in the producer's
ongoing transaction (see :func:`_verify`); otherwise INVALID_TXN_STATE ("Partition was
not added to the transaction"; TRANSACTION_ABORTABLE for Produce v11+), INVALID_PRODUCER_EPOCH
for a fenced producer, and NOT_ENOUGH_REPLICAS (retriable) while the coordinator cannot
answer. A late batch after its transaction ended thus no longer opens a transaction no
marker will close (a "hanging transaction"). Produce v12 with ``transaction.version`` 2
(KIP-890 part 2) asks the coordinator to add the partition instead of checking it: a TV2
producer sends no AddPartitionsToTxn. Below transaction version 2 v12 is not advertised
(see :mod:`minibroker.handlers.api_versions`) and is checked as v11.
Not implemented yet: broker-side recompression.
"""

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

from kproto.errors import (
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    CorruptMessageError,
    CorruptRecordError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidRequiredAcksError,
    InvalidTimestampError,
    InvalidTopicError,
    InvalidTxnStateError,
    KafkaCodeError,
    KafkaStorageError,
    MessageTooLargeError,
    NotCoordinatorError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    ProducerFencedError,
    RequestTimedOutError,
    TopicAuthorizationFailedError,
    TransactionAbortableError,
    TransactionalIdAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from kproto.protocol import ApiKey
from kproto.protocol.messages import ProduceResponse
from kproto.records import read_batch_header, rewrite_batch, validate_batch
from minibroker.authorizer import AclOperation, ResourceType
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


def _min_insync(state, topic) -> int:
    return int(effective(topic.configs, "min.insync.replicas", state.config))


def _append(state, topic, index, records, acks, guard: object | None = None) -> _Outcome:
    """Validate and append one partition's batch."""
    if topic is None or not 0 <= index < len(topic.partitions):
        return _Outcome(UnknownTopicOrPartitionError.code)
    if topic.name in INTERNAL_TOPICS:
        return _Outcome(InvalidTopicError.code, message=f"cannot append to internal topic {topic.name}")
    try:
        partition = state.leader_partition(topic, index)
    except KafkaCodeError as exc:  # NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR (offline)
        return _Outcome(exc.code, message=str(exc))
    min_isr = _min_insync(state, topic)
    if acks == -1 and len(partition.isr) < min_isr:
        # Partition.appendRecordsToLeader: checked before the append, nothing is written.
        return _Outcome(NotEnoughReplicasError.code, message=(
            f"The size of the current ISR {list(partition.isr)} is insufficient to satisfy the min.isr "
            f"requirement of {min_isr} for partition {topic.name}-{index}"))
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
            partition_key, batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.records_count,
            is_transactional=batch.is_transactional)
        if code or duplicate_of >= 0:
            return _Outcome(code, duplicate_of)  # a retry already written: its first offset again
        if guard is not None and not state.producers.guard_holds(partition_key, batch.producer_id, guard):
            # KIP-890: a marker came while the coordinator was asked (Kafka's VerificationGuard).
            return _Outcome(InvalidTxnStateError.code, message="Partition was not added to the transaction")
    max_timestamp = append_time = batch.max_timestamp
    if log_append_time:
        max_timestamp = append_time = int(time.time() * 1000)
        # Both lie under the CRC-32C, which the codec computes again (Kafka's
        # DefaultRecordBatch.setMaxTimestamp).
        records = rewrite_batch(records, attributes=batch.attributes | _LOG_APPEND_TIME_BIT, max_timestamp=max_timestamp)
    else:
        append_time = -1
    try:
        base = partition.append_as_leader(records, last_offset_delta=batch.last_offset_delta, max_timestamp=max_timestamp)
    except KafkaStorageError as exc:
        # The write failed and was undone, or the log is offline: this partition's answer,
        # the connection and the other partitions go on (Kafka: ReplicaManager.appendToLocalLog).
        return _Outcome(KafkaStorageError.code, message=str(exc))
    if idempotent:
        state.producers.record(partition_key, batch.producer_id, batch.producer_epoch, batch.base_sequence,
                               batch.records_count, base, is_transactional=batch.is_transactional,
                               max_timestamp=max_timestamp)
    return _Outcome(0, base, log_append_time=append_time)


async def _wait_for_acks(waits, timeout_ms: int) -> dict[int, int]:
    """acks=all (Kafka's DelayedProduce): wait for every appended partition's high
    watermark under one deadline; the error code of each wait by its key, REQUEST_TIMED_OUT
    for the ones not done by then."""
    tasks = {key: asyncio.ensure_future(wait) for key, wait in waits.items()}
    try:
        await asyncio.wait(tasks.values(), timeout=max(timeout_ms, 0) / 1000)
    finally:
        for task in tasks.values():
            task.cancel()  # a done task ignores it; a waiter still in a heap is dropped when reached
    return {key: task.result() if task.done() and not task.cancelled() else RequestTimedOutError.code
            for key, task in tasks.items()}


# ReplicaManager.appendRecords: the coordinator's answers a producer could not act on are
# NOT_ENOUGH_REPLICAS, which every producer retries.
_VERIFICATION_RETRIABLE = frozenset({ConcurrentTransactionsError.code, CoordinatorLoadInProgressError.code,
                                     CoordinatorNotAvailableError.code, NotCoordinatorError.code})


def _verification_outcome(code: int, version: int) -> _Outcome:
    """A failed verification as the producer gets it (Kafka's ``AddPartitionsToTxnManager``
    then ``ReplicaManager.appendRecords``)."""
    if code == ProducerFencedError.code:
        code = InvalidProducerEpochError.code  # producers expect INVALID_PRODUCER_EPOCH here
    elif code == TransactionAbortableError.code and version < 11:
        code = InvalidTxnStateError.code  # Produce v11 is the first to know TRANSACTION_ABORTABLE
    if code == InvalidTxnStateError.code:
        return _Outcome(code, message="Partition was not added to the transaction")
    if code in _VERIFICATION_RETRIABLE:
        return _Outcome(NotEnoughReplicasError.code, message=(
            f"Unable to verify the partition has been added to the transaction. Underlying error: {code}"))
    return _Outcome(code)


async def _verify(state, version, request, denied: set[str]) -> dict[tuple[str, int], _Outcome | object]:
    """KIP-890 part 1 (Kafka's ``ReplicaManager.appendRecords`` with
    ``transaction.partition.verification.enable``): the transactional batches that would
    open a transaction on a partition led here are checked with the transaction
    coordinator first, one call per producer id and epoch (the request's).

    Returns, per (topic, partition) checked, the failed verification's outcome, or the
    verification guard to append under (see
    :meth:`~minibroker.coordinator.producer_state.ProducerStates.verification_guard`)."""
    # KafkaApis.handleProduceRequest: v12+ with transaction version 2 is ``addPartition``
    # (KIP-890 part 2: the leader adds the partition, the producer sends no AddPartitionsToTxn);
    # the partition must then reach the transaction whatever the verification setting says.
    add = version >= 12 and state.config["transaction.version"] >= 2
    if request.transactional_id is None or not (add or state.config["transaction.partition.verification.enable"]):
        return {}
    asked: dict[tuple[int, int], list[tuple[str, int]]] = {}
    keys: dict[tuple[str, int], tuple[tuple[object, int], int]] = {}  # (partition key, producer id)
    guards = {}

    def guard(tps: list[tuple[str, int]]) -> None:
        # a guard per ask: a marker written meanwhile voids it (ProducerStates.verification_guard)
        for tp in tps:
            guards[tp] = state.producers.verification_guard(*keys[tp])
    for topic_data in request.topic_data:
        topic = state.topics.get(topic_data.name)
        if topic is None or topic.name in INTERNAL_TOPICS or topic.name in denied:
            continue
        for p in topic_data.partition_data:
            first = read_batch_header(p.records) if p.records is not None else None
            if first is None or first.magic < 2 or not first.is_transactional or first.producer_id < 0:
                continue
            try:
                partition = state.leader_partition(topic, p.index)
            except KafkaCodeError:
                continue  # the append answers it
            key = (partition.topic_id, partition.index)
            if state.producers.has_ongoing_txn(key, first.producer_id, first.producer_epoch):
                continue
            keys[(topic_data.name, p.index)] = (key, first.producer_id)
            asked.setdefault((first.producer_id, first.producer_epoch), []).append((topic_data.name, p.index))
    answers = await asyncio.gather(*(_ask_coordinator(state, request.transactional_id, pid, epoch, tps, add, guard)
                                     for (pid, epoch), tps in asked.items()))
    checked: dict[tuple[str, int], _Outcome | object] = {}
    for codes in answers:
        for tp, code in codes.items():
            checked[tp] = _verification_outcome(code, version) if code else guards[tp]
    return checked


async def _ask_coordinator(state, transactional_id: str, producer_id: int, producer_epoch: int,
                           partitions: list[tuple[str, int]], add: bool,
                           guard: Callable[[list[tuple[str, int]]], None]) -> dict[tuple[str, int], int]:
    """One producer's partitions checked (or, with ``add``, added) by its transaction
    coordinator: each partition's error code. ``guard(partitions)`` is called before each
    ask (a verification guard of that ask).

    Adding (transaction version 2), a CONCURRENT_TRANSACTIONS answer means the previous
    transaction's markers are still being written: the leader asks again every
    ``add.partitions.to.txn.retry.backoff.ms`` for up to
    ``add.partitions.to.txn.retry.backoff.max.ms`` in all, rather than answering the
    producer NOT_ENOUGH_REPLICAS at once and leaving it to retry after its own
    ``retry.backoff.ms`` (Kafka 4's ``ReplicaManager``, KAFKA-18654)."""
    guard(partitions)
    codes = await state.verify_txn_partitions(transactional_id, producer_id, producer_epoch, partitions,
                                              verify_only=not add)
    if not add:
        return codes
    loop = asyncio.get_running_loop()
    backoff = state.config["add.partitions.to.txn.retry.backoff.ms"] / 1000
    deadline = loop.time() + state.config["add.partitions.to.txn.retry.backoff.max.ms"] / 1000
    while (again := [tp for tp, code in codes.items() if code == ConcurrentTransactionsError.code]) \
            and loop.time() + backoff <= deadline:
        await asyncio.sleep(backoff)
        guard(again)  # the last transaction's marker may have been written meanwhile
        codes.update(await state.verify_txn_partitions(transactional_id, producer_id, producer_epoch, again,
                                                       verify_only=False))
    return codes


def _has_transactional_records(request) -> bool:
    """Kafka's ``RequestUtils.hasTransactionalRecords``: a partition's first batch is transactional."""
    for topic_data in request.topic_data:
        for p in topic_data.partition_data:
            first = read_batch_header(p.records) if p.records is not None else None
            if first is not None and first.magic >= 2 and first.is_transactional:
                return True
    return False


@handles(ApiKey.PRODUCE, 3, 12)
async def handle(state, header, request):
    if request.acks not in (-1, 0, 1):
        error = InvalidRequiredAcksError.code
    elif _has_transactional_records(request) and (request.transactional_id is None or not state.authorizer.allows(
            header, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id)):
        error = TransactionalIdAuthorizationFailedError.code
    else:
        error = None
    denied = {t.name for t in request.topic_data  # KafkaApis: WRITE on the topic, before anything else
              if not state.authorizer.allows(header, AclOperation.WRITE, ResourceType.TOPIC, t.name)}
    checked = await _verify(state, header.api_version, request, denied) if error is None else {}
    outcomes = []  # (topic name, [(index, outcome, partition or None)])
    waits = {}
    for topic_data in request.topic_data:
        topic = state.topics.get(topic_data.name)
        partitions = []
        for p in topic_data.partition_data:
            verified = checked.get((topic_data.name, p.index))
            if error is not None:
                outcome = _Outcome(error)
            elif topic_data.name in denied:
                outcome = _Outcome(TopicAuthorizationFailedError.code)
            elif isinstance(verified, _Outcome):
                outcome = verified
            else:
                outcome = _append(state, topic, p.index, p.records, request.acks, verified)
            partition = topic.partitions[p.index] if outcome.error_code == 0 else None
            if partition is not None and request.acks == -1 and outcome.base_offset >= 0:
                # Until the batch is below the high watermark: the LEO right after its append
                # (a duplicate's batch lies below it as well).
                waits[(topic_data.name, p.index)] = partition.wait_for_ack(
                    partition.log.log_end_offset, _min_insync(state, topic))
            partitions.append((p.index, outcome, partition))
        outcomes.append((topic_data.name, partitions))
    if any(o.error_code == 0 for _, ps in outcomes for _, o, _ in ps):
        state.data_arrived()  # wakes followers' parked fetches (and consumers' on a single broker)
    acked = await _wait_for_acks(waits, request.timeout_ms) if waits else {}
    if request.acks == 0:
        return None
    responses = []
    leaders = {}  # KIP-951: node id -> endpoint of the leaders named in current_leader
    for name, partitions in outcomes:
        answers = []
        for index, outcome, partition in partitions:
            code = acked.get((name, index), 0)
            if code:
                outcome = _Outcome(code, message=f"acks=all for {name}-{index}: error {code}")
                partition = None
            hint = {} if header.api_version < 10 else {
                "current_leader": _current_leader(state, name, index, outcome.error_code, leaders,
                                                  header.listener_name)}
            answers.append(PartitionResponse(
                **hint,
                index=index, error_code=outcome.error_code, base_offset=outcome.base_offset,
                log_append_time_ms=outcome.log_append_time,
                log_start_offset=partition.log.log_start_offset if partition is not None else -1,
                record_errors=list(outcome.record_errors), error_message=outcome.message,
            ))
        responses.append(TopicResponse(name=name, partition_responses=answers))
    return ProduceResponse(responses=responses, node_endpoints=list(leaders.values()))


def _current_leader(state, name, index, code, leaders, listener_name):
    """KIP-951's hint on NOT_LEADER_OR_FOLLOWER: the leader and epoch this broker knows
    (-1 when none), its endpoint added to ``leaders`` (from the metadata image)."""
    partition = state.partition(state.topics.get(name), index) if code == NotLeaderOrFollowerError.code else None
    if partition is None or partition.leader < 0:
        return ProduceResponse.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)
    broker = state.cluster.image.brokers.get(partition.leader) if state.cluster is not None else None
    at = None if broker is None else state.cluster_endpoint(broker, listener_name)  # the client's listener
    if broker is not None and not broker.fenced and at is not None:
        leaders[broker.broker_id] = ProduceResponse.NodeEndpoint(
            node_id=broker.broker_id, host=at[0], port=at[1], rack=broker.rack)
    return ProduceResponse.LeaderIdAndEpoch(leader_id=partition.leader, leader_epoch=partition.leader_epoch)

