"""Kafka records and record batches: build them, read them, decode them into columns.

This is the public face of the codec (``kproto.codec`` picks the Cython extension or its
pure-Python twin); everything here works the same on both.

Reading, from the cheapest to the richest:

- :func:`decode_columnar` turns a record set into Arrow-layout buffers (analytics, Spark);
- :func:`decode_record_set` returns the data records of a record set in one call
  (what a consumer does with a fetched partition);
- :func:`read_batches` walks the batches themselves (header fields, control batches,
  lazy decoding of each batch's records with :meth:`Batch.records`).

- :func:`read_batch_header` reads one batch's header from its bytes alone (a log
  segment's walk: no records, no CRC), v2 and legacy alike, as a :class:`BatchHeader`
  (which every :class:`Batch` also is).

Checking without reading: :meth:`Batch.validate` walks a batch's records as
:meth:`Batch.records` does and fails on exactly the same batches, but builds no record;
``require_keys=True`` also refuses null keys, as a compacted topic must.
:func:`validate_batch` is the whole check a broker makes of a produced record set before
it appends it (one whole v2 batch, CRC, codec, counts, every record), on the same walk.

Writing: :class:`BatchBuilder` for data batches (magic 2, or legacy 0/1) and
:func:`build_control_batch` for transaction markers. :func:`rewrite_batch` is the one
way to change header fields of a built batch (the broker's base offset, leader epoch and
LogAppendTime, the producer's idempotence fields, the cleaner's lastOffsetDelta): the
CRC is computed again when it covers them. :func:`stamped_head` is its copy-free variant
for the broker's append: the first 16 bytes with the base offset and leader epoch written
in, to store before the rest of the batch as received. :func:`empty_batch` writes the records-less
batch the cleaner keeps for a producer's sequence numbers.

The batch header layouts (v2 and legacy) live in the codec alone: outside it, kproto and
minibroker know no byte position in a header, only the 12-byte offset and length frame
that every batch starts with (Kafka's ``LOG_OVERHEAD``).
"""

from __future__ import annotations

import enum
import struct

from kproto.codec import (
    BATCH_HEADER_SIZE,
    Batch,
    BatchBuilder,
    BatchHeader,
    Columns,
    Record,
    decode_columnar,
    decode_record_set,
    empty_batch,
    read_batch_header,
    read_batches,
    rewrite_batch,
    stamped_head,
    validate_batch,
)
from kproto.errors import CorruptRecordError

__all__ = [
    "Record",
    "BatchHeader",
    "Batch",
    "BatchBuilder",
    "BATCH_HEADER_SIZE",
    "Columns",
    "TimestampType",
    "ControlType",
    "read_batches",
    "read_batch_header",
    "rewrite_batch",
    "stamped_head",
    "empty_batch",
    "validate_batch",
    "decode_record_set",
    "decode_columnar",
    "build_control_batch",
    "parse_control_record",
    "parse_txn_marker",
]


class TimestampType(enum.IntEnum):
    """What a record's timestamp means (Java's ``TimestampType``)."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlType(enum.IntEnum):
    """The type of a control record (the key's second field). Kafka's ``ControlRecordType``."""

    ABORT = 0
    COMMIT = 1


# Control record key: version i16 (0), type i16. Value of a transaction marker
# (EndTransactionMarker): version i16 (0), coordinatorEpoch i32.
_control_key = struct.Struct(">hh")
_marker_value = struct.Struct(">hi")


def build_control_batch(
    control_type: ControlType | int,
    *,
    producer_id: int,
    producer_epoch: int,
    timestamp: int,
    coordinator_epoch: int = 0,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """Build a transaction marker: a transactional control batch holding one record.

    Brokers write these when a transaction commits or aborts; clients never produce them
    (a broker rejects control batches in a Produce request).

    Args:
        control_type: :attr:`ControlType.COMMIT` or :attr:`ControlType.ABORT`.
        producer_id, producer_epoch: the transactional producer's.
        timestamp: milliseconds since the epoch.
        coordinator_epoch: the transaction coordinator's epoch, stored in the value.
        base_offset, partition_leader_epoch: as the log assigns them.
    """
    builder = BatchBuilder(
        2,
        0,
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )
    builder.append(timestamp, _control_key.pack(0, int(control_type)), _marker_value.pack(0, coordinator_epoch))
    return builder.build()


def parse_control_record(record: Record) -> tuple[int, int]:
    """Return ``(version, type)`` from a control record's key.

    Readers skip versions other than 0 and types they do not know, as Java does.

    Raises:
        CorruptRecordError: the key is missing or shorter than 4 bytes.
    """
    key = record.key
    if key is None or len(key) < _control_key.size:
        raise CorruptRecordError("control record key too short", record.offset, record.offset)
    return _control_key.unpack_from(key)


def parse_txn_marker(record: Record) -> tuple[int, int]:
    """Return ``(control type, coordinator epoch)`` of a transaction marker's record
    (Kafka's ``EndTransactionMarker.deserialize``: the key's type, the value's epoch).

    Raises:
        CorruptRecordError: the key or the value is missing or too short.
    """
    _, control_type = parse_control_record(record)
    value = record.value
    if value is None or len(value) < _marker_value.size:
        raise CorruptRecordError("transaction marker value too short", record.offset, record.offset)
    return control_type, _marker_value.unpack_from(value)[1]
