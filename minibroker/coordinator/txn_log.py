"""Transactional ids' state as records of the ``__transaction_state`` topic, in Kafka's format.

Kafka's transaction coordinator writes every change of a transactional id's metadata as
one record of an internal, compacted topic (``TransactionStateManager.appendTransactionToLog``):
the key names the transactional id, the value holds its producer id and epoch, timeout,
state and partitions, and a null value (a tombstone) removes an expired id. minibroker
writes the same records, byte for byte, so a broker with a ``data_dir`` replays them on
start, the log cleaner keeps one record per id, and Kafka's tools (``kafka-dump-log.sh
--transaction-log-decoder``) read ours.

Formats (Kafka's ``TransactionLog``): the key is a :class:`~kproto.protocol.messages.TransactionLogKey`
(version 0: the transactional id), the value a
:class:`~kproto.protocol.messages.TransactionLogValue`, each after its version as an int16.
minibroker writes value version 0, as Kafka 3.x does, unless the ``transaction.version``
feature is 1 or more: then version 1, flexible, with the tagged previous and next producer
ids and the client's transaction version (Kafka's ``TransactionVersion.transactionLogValueVersion``:
"TV_1 enables flexible transactional state records"); it reads both. ``transaction_partitions`` is null in
Empty and lists the partitions by topic otherwise. The previous producer id and epoch
are not in version 0: after a reload they are unknown (-1), as in Kafka 3.x.

A transactional id's records all go to partition ``abs(java_hash(id)) % partitions``
(Kafka's ``TransactionStateManager.partitionFor``, the group coordinator's rule).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from itertools import groupby

from kproto.errors import KafkaError, ProtocolError
from kproto.protocol.messages import TransactionLogKey, TransactionLogValue
from kproto.protocol.schema import read_version
from kproto.records import BatchBuilder, decode_record_set
from minibroker.coordinator.offsets_log import partition_for
from minibroker.coordinator.transactions import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TxnState,
    TxnTransit,
)

__all__ = [
    "TRANSACTION_STATE_TOPIC",
    "TxnLogEntry",
    "decode_txn_record",
    "encode_txn_key",
    "encode_txn_value",
    "partition_for",
    "read_txn_records",
    "txn_batch",
]

log = logging.getLogger("minibroker.transactions")

TRANSACTION_STATE_TOPIC = "__transaction_state"
#: The versions written (Kafka 3.x's TransactionLog: key 0, value 0).
KEY_VERSION = 0
VALUE_VERSION = 0

#: One record: the transactional id and its metadata, or None (a tombstone: removed).
TxnLogEntry = tuple[str, "TxnTransit | None"]


def encode_txn_key(transactional_id: str) -> bytes:
    return TransactionLogKey(transactional_id=transactional_id).encode_versioned(KEY_VERSION)


def encode_txn_value(transit: TxnTransit, version: int = VALUE_VERSION) -> bytes | None:
    """A record's value (Kafka's ``TransactionLog.valueToBytes``); None for Dead: a tombstone.

    Raises:
        ValueError: Empty with partitions, which Kafka refuses to write too.
    """
    if transit.state is TxnState.Dead:
        return None
    if transit.state is TxnState.Empty and transit.partitions:
        raise ValueError("an Empty transaction cannot have partitions")
    partitions = None if transit.state is TxnState.Empty else [
        TransactionLogValue.PartitionsSchema(topic=topic, partition_ids=[index for _, index in group])
        for topic, group in groupby(sorted(transit.partitions), key=lambda tp: tp[0])]
    return TransactionLogValue(
        producer_id=transit.producer_id, producer_epoch=transit.producer_epoch,
        transaction_timeout_ms=transit.txn_timeout_ms, transaction_status=transit.state.value,
        transaction_partitions=partitions,
        transaction_last_update_timestamp_ms=transit.txn_last_update_timestamp,
        transaction_start_timestamp_ms=transit.txn_start_timestamp,
        previous_producer_id=transit.last_producer_id, next_producer_id=transit.next_producer_id,
        client_transaction_version=transit.client_transaction_version).encode_versioned(version)


def decode_txn_record(key: bytes | None, value: bytes | None) -> TxnLogEntry | None:
    """One record of ``__transaction_state``, or None for a key version this broker does not
    know (Kafka's ``TransactionLog.readTxnRecordKey`` skips those too).

    Raises:
        ValueError: a malformed key or value, or an unknown state.
    """
    if key is None:
        raise ValueError(f"a record of {TRANSACTION_STATE_TOPIC} without a key")
    try:
        if read_version(key) not in TransactionLogKey.VERSIONS:
            return None
        _, k = TransactionLogKey.decode_versioned(key)
        if value is None:
            return k.transactional_id, None
        version, v = TransactionLogValue.decode_versioned(value)
    except ProtocolError as exc:
        raise ValueError(f"malformed {TRANSACTION_STATE_TOPIC} record: {exc}") from exc
    state = TxnState(v.transaction_status)
    partitions = frozenset((p.topic, index) for p in v.transaction_partitions or () for index in p.partition_ids)
    return k.transactional_id, TxnTransit(
        producer_id=v.producer_id, last_producer_id=v.previous_producer_id if version >= 1 else NO_PRODUCER_ID,
        producer_epoch=v.producer_epoch, last_producer_epoch=NO_PRODUCER_EPOCH,
        txn_timeout_ms=v.transaction_timeout_ms, state=state, partitions=partitions,
        txn_start_timestamp=v.transaction_start_timestamp_ms,
        txn_last_update_timestamp=v.transaction_last_update_timestamp_ms,
        next_producer_id=v.next_producer_id if version >= 1 else NO_PRODUCER_ID,
        client_transaction_version=v.client_transaction_version if version >= 1 else 0)


def txn_batch(entries: Iterable[tuple[str, TxnTransit]], now_ms: int, transaction_version: int = 0) -> BatchBuilder:
    """One v2 batch holding the records of ``entries`` (Dead ones as tombstones), values
    at the version the finalized ``transaction_version`` calls for."""
    builder = BatchBuilder()
    version = 1 if transaction_version >= 1 else 0
    for transactional_id, transit in entries:
        builder.append(now_ms, encode_txn_key(transactional_id), encode_txn_value(transit, version))
    return builder


def read_txn_records(read: Callable[[int, int], bytes], start: int, end: int) -> Iterator[TxnLogEntry]:
    """Every record of one partition between ``start`` and ``end``, in order.

    ``read(offset, max_bytes)`` returns whole batches from ``offset`` (a
    :meth:`PartitionLog.read`). A record that cannot be understood is logged and skipped.
    """
    offset = start
    while offset < end:
        records, next_offset, _ = decode_record_set(read(offset, 1 << 20), offset)
        if next_offset <= offset:
            raise ValueError(f"{TRANSACTION_STATE_TOPIC} does not advance at offset {offset}")
        offset = next_offset
        for record in records:
            try:
                entry = decode_txn_record(record.key, record.value)
            except (ValueError, UnicodeDecodeError, KafkaError) as exc:
                log.warning("skipping record %d of %s: %s", record.offset, TRANSACTION_STATE_TOPIC, exc)
                continue
            if entry is not None:
                yield entry
