"""Committed offsets as records of the ``__consumer_offsets`` topic, in Kafka's format.

Kafka keeps every offset commit as one record of an internal, compacted topic: the key
names the group, topic and partition, the value holds the offset, and a null value (a
tombstone) deletes it. minibroker writes the same records, byte for byte, so that

- a broker with a ``data_dir`` replays them on start and commits survive a restart;
- the log cleaner keeps one record per key, as Kafka's does;
- anything that reads Kafka's offsets topic (a consumer of ``__consumer_offsets``,
  ``kafka-dump-log.sh --offsets-decoder`` on a segment) reads ours.

Formats (all integers big-endian, strings int16-length-prefixed UTF-8):

- key, version 0 or 1: ``version:int16 group:string topic:string partition:int32``;
  version 2 keys name a group's membership (Kafka's GroupMetadata), which minibroker
  neither writes nor needs: replay skips them.
- value, version 0: ``offset:int64 metadata:string commit_timestamp:int64``;
  version 1 adds ``expire_timestamp:int64`` at the end; version 2 is version 0 again;
  version 3 (what minibroker writes, as Kafka does without an expiry) puts
  ``leader_epoch:int32`` after the offset.

A group's commits all go to partition ``abs(java_hash(group_id)) % partitions``, Kafka's
own rule, so one partition holds a group's history in order.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable, Iterator

from kproto.errors import KafkaError
from kproto.records import BatchBuilder, decode_record_set
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
]

log = logging.getLogger("minibroker.groups")

OFFSETS_TOPIC = "__consumer_offsets"
KEY_VERSION = 1
VALUE_VERSION = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


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


def _string(text: str) -> bytes:
    data = text.encode()
    return _I16.pack(len(data)) + data


def encode_offset_key(group_id: str, topic: str, partition: int) -> bytes:
    return _I16.pack(KEY_VERSION) + _string(group_id) + _string(topic) + _I32.pack(partition)


def encode_offset_value(committed: CommittedOffset) -> bytes:
    return (_I16.pack(VALUE_VERSION) + _I64.pack(committed.offset) + _I32.pack(committed.leader_epoch)
            + _string(committed.metadata or "") + _I64.pack(committed.commit_timestamp))


class _Reader:
    """Bounds-checked reads over one key or value; a short buffer raises ValueError."""

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("truncated")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int16(self) -> int:
        return _I16.unpack(self._take(2))[0]

    def int32(self) -> int:
        return _I32.unpack(self._take(4))[0]

    def int64(self) -> int:
        return _I64.unpack(self._take(8))[0]

    def string(self) -> str:
        return self._take(self.int16()).decode()


def decode_offset_record(key: bytes | None, value: bytes | None) -> OffsetEntry | None:
    """One record of ``__consumer_offsets`` as an entry, or None if it is not an offset.

    Raises:
        ValueError: a malformed key or value, or a value version newer than 3.
    """
    if key is None:
        raise ValueError("a record of __consumer_offsets without a key")
    k = _Reader(bytes(key))
    if k.int16() not in (0, 1):
        return None  # group metadata (version 2) or a newer record type: not an offset
    group_id, topic, partition = k.string(), k.string(), k.int32()
    if value is None:
        return group_id, topic, partition, None
    v = _Reader(bytes(value))
    version = v.int16()
    if not 0 <= version <= 3:
        raise ValueError(f"offset commit value version {version} is not supported")
    offset = v.int64()
    leader_epoch = v.int32() if version >= 3 else -1
    metadata = v.string()
    commit_timestamp = v.int64()
    return group_id, topic, partition, CommittedOffset(
        offset=offset, leader_epoch=leader_epoch, metadata=metadata, commit_timestamp=commit_timestamp)


def offsets_batch(entries: Iterable[OffsetEntry], now_ms: int) -> BatchBuilder:
    """One v2 batch holding ``entries`` (commits and tombstones), ready to append."""
    builder = BatchBuilder()
    for group_id, topic, partition, committed in entries:
        value = None if committed is None else encode_offset_value(committed)
        builder.append(now_ms, encode_offset_key(group_id, topic, partition), value)
    return builder


def read_offset_records(read, start: int, end: int) -> Iterator[OffsetEntry]:
    """Every offset entry of one partition between ``start`` and ``end``, in order.

    ``read(offset, max_bytes)`` returns whole batches from ``offset`` (a
    :meth:`PartitionLog.read`). A record this broker cannot understand is logged and
    skipped: losing one group's offset beats refusing to start.
    """
    offset = start
    while offset < end:
        records, next_offset, _ = decode_record_set(read(offset, 1 << 20), offset)
        if next_offset <= offset:
            raise ValueError(f"{OFFSETS_TOPIC} does not advance at offset {offset}")  # never loop forever
        offset = next_offset
        for record in records:
            try:
                entry = decode_offset_record(record.key, record.value)
            except (ValueError, UnicodeDecodeError, KafkaError) as exc:
                log.warning("skipping record %d of %s: %s", record.offset, OFFSETS_TOPIC, exc)
                continue
            if entry is not None:
                yield entry
