"""Committed offsets as records of the ``__consumer_offsets`` topic, in Kafka's format.

Kafka keeps every offset commit as one record of an internal, compacted topic: the key
names the group, topic and partition, the value holds the offset, and a null value (a
tombstone) deletes it. minibroker writes the same records, byte for byte, so that

- a broker with a ``data_dir`` replays them on start and commits survive a restart;
- the log cleaner keeps one record per key, as Kafka's does;
- anything that reads Kafka's offsets topic (a consumer of ``__consumer_offsets``,
  ``kafka-dump-log.sh --offsets-decoder`` on a segment) reads ours.

Formats: the key and the value are the schema table's data messages, each after its
version as an int16 (:mod:`kproto.protocol.messages.data`, Kafka's ``OffsetCommitKey``,
``OffsetCommitValue`` and ``GroupMetadataKey``):

- key, version 0 or 1: an :class:`~kproto.protocol.messages.OffsetCommitKey` (group, topic,
  partition); version 2 keys name a group's membership (a ``GroupMetadataKey``), which
  minibroker neither writes nor needs: replay skips them, as it skips newer record types.
- value: an :class:`~kproto.protocol.messages.OffsetCommitValue`, version 0 to 4. Version 1
  adds ``expire_timestamp``, version 3 ``leader_epoch``, version 4 is flexible (KIP-915).
  minibroker writes version 3 with key version 1, as Kafka does without an expiry.

A group's commits all go to partition ``abs(java_hash(group_id)) % partitions``, Kafka's
own rule, so one partition holds a group's history in order.

Transactional commits (TxnOffsetCommit, KIP-98) are the same records in a transactional
batch of the producer (its producer id and epoch, base sequence 0, as Kafka's
``GroupMetadataManager.storeOffsets`` writes them); they count once the transaction's
COMMIT marker follows in the partition, and never after an ABORT. Replay holds them per
producer id until the marker, and hands back those of transactions still open.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator

from kproto.errors import KafkaError, ProtocolError
from kproto.protocol.messages import OffsetCommitKey, OffsetCommitValue
from kproto.protocol.schema import read_version
from kproto.records import BatchBuilder, ControlType, parse_control_record, read_batches
from minibroker.coordinator.offsets import CommittedOffset, OffsetEntry

__all__ = [
    "OFFSETS_TOPIC",
    "OffsetEntry",
    "decode_offset_record",
    "encode_offset_key",
    "encode_offset_value",
    "java_string_hash",
    "offsets_batch",
    "partition_for",
    "read_offset_records",
    "txn_offsets_batch",
]

log = logging.getLogger("minibroker.groups")

OFFSETS_TOPIC = "__consumer_offsets"
#: The versions written (Kafka's GroupMetadataManager: key 1, value 3 without an expiry).
KEY_VERSION = 1
VALUE_VERSION = 3


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: over UTF-16 code units, wrapping at 32 bits."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition of a group (Kafka's ``Utils.abs(hash) % n``)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def encode_offset_key(group_id: str, topic: str, partition: int) -> bytes:
    return OffsetCommitKey(group=group_id, topic=topic, partition=partition).encode_versioned(KEY_VERSION)


def encode_offset_value(committed: CommittedOffset) -> bytes:
    return OffsetCommitValue(offset=committed.offset, leader_epoch=committed.leader_epoch,
                             metadata=committed.metadata or "",
                             commit_timestamp=committed.commit_timestamp).encode_versioned(VALUE_VERSION)


def decode_offset_record(key: bytes | None, value: bytes | None) -> OffsetEntry | None:
    """One record of ``__consumer_offsets`` as an entry, or None if it is not an offset.

    Raises:
        ValueError: a malformed key or value, or a value version the table does not know.
    """
    if key is None:
        raise ValueError("a record of __consumer_offsets without a key")
    try:
        if read_version(key) not in OffsetCommitKey.VERSIONS:
            return None  # group metadata (version 2) or a newer record type: not an offset
        version, k = OffsetCommitKey.decode_versioned(key)
        # Strings decode leniently, but a key's bytes are what compaction and the tombstones
        # that delete the commit match on: a key that does not re-encode to itself (its
        # strings are not UTF-8) is refused rather than replayed under another key.
        if not bytes(key).startswith(k.encode_versioned(version)):
            raise ValueError(f"a key of {OFFSETS_TOPIC} whose strings are not UTF-8")
        if value is None:
            return k.group, k.topic, k.partition, None
        _, v = OffsetCommitValue.decode_versioned(value)
    except ProtocolError as exc:
        raise ValueError(f"malformed {OFFSETS_TOPIC} record: {exc}") from exc
    return k.group, k.topic, k.partition, CommittedOffset(
        offset=v.offset, leader_epoch=v.leader_epoch, metadata=v.metadata, commit_timestamp=v.commit_timestamp)


def offsets_batch(entries: Iterable[OffsetEntry], now_ms: int) -> BatchBuilder:
    """One v2 batch holding ``entries`` (commits and tombstones), ready to append."""
    builder = BatchBuilder()
    for group_id, topic, partition, committed in entries:
        value = None if committed is None else encode_offset_value(committed)
        builder.append(now_ms, encode_offset_key(group_id, topic, partition), value)
    return builder


def txn_offsets_batch(entries: Iterable[OffsetEntry], now_ms: int, producer_id: int,
                      producer_epoch: int) -> BatchBuilder:
    """A transactional producer's commits (TxnOffsetCommit): one transactional v2 batch of
    the producer, base sequence 0 (Kafka's ``storeOffsets`` for a transactional commit)."""
    builder = BatchBuilder(producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=0,
                           is_transactional=True)
    for group_id, topic, partition, committed in entries:
        assert committed is not None
        builder.append(now_ms, encode_offset_key(group_id, topic, partition), encode_offset_value(committed))
    return builder


def read_offset_records(read: Callable[[int, int], bytes], start: int, end: int,
                        pending: dict[int, list[OffsetEntry]] | None = None) -> Iterator[OffsetEntry]:
    """Every offset entry of one partition between ``start`` and ``end``, in order.

    ``read(offset, max_bytes)`` returns whole batches from ``offset`` (a
    :meth:`PartitionLog.read`). A record this broker cannot understand is logged and
    skipped: losing one group's offset beats refusing to start. A transactional batch's
    entries are yielded where its COMMIT marker is, dropped at its ABORT marker; those of
    transactions without a marker yet are put in ``pending`` (producer id -> entries),
    when given (Kafka's ``GroupMetadataManager.loadGroupsAndOffsets``).
    """
    open_txns: dict[int, list[OffsetEntry]] = {}
    offset = start
    while offset < end:
        batches = list(read_batches(read(offset, 1 << 20), check_crc=False))
        if not batches or batches[-1].next_offset <= offset:
            raise ValueError(f"{OFFSETS_TOPIC} does not advance at offset {offset}")  # never loop forever
        for batch in batches:
            offset = max(offset, batch.next_offset)
            if batch.is_control:
                if batch.is_transactional:
                    entries = open_txns.pop(batch.producer_id, [])
                    if any(parse_control_record(r) == (0, ControlType.COMMIT) for r in batch.records()):
                        yield from entries
                continue
            entries = list(_decode(batch))
            if batch.is_transactional:
                open_txns.setdefault(batch.producer_id, []).extend(entries)
            else:
                yield from entries
    if pending is not None:
        for producer_id, entries in open_txns.items():
            pending.setdefault(producer_id, []).extend(entries)


def _decode(batch) -> Iterator[OffsetEntry]:
    for record in batch.records():
        try:
            entry = decode_offset_record(record.key, record.value)
        except (ValueError, UnicodeDecodeError, KafkaError) as exc:
            log.warning("skipping record %d of %s: %s", record.offset, OFFSETS_TOPIC, exc)
            continue
        if entry is not None:
            yield entry
