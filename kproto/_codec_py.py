"""The pure-Python twin of ``kproto._codec``: Kafka's record formats without a compiler.

Same functions, same classes, same results and same exceptions as the Cython module; a
differential test (tests/codec/test_differential.py) holds them to it. This module is
the readable reference and carries the docstrings; ``kproto.codec`` picks which of the
two is used. Do not import this module directly.

Formats (Kafka's documentation, "Message Format" / "Record Batch", and the protocol guide):

Record batch, magic 2 (all big-endian; batchLength counts the bytes after itself)::

    0  baseOffset i64         27 baseTimestamp i64
    8  batchLength i32        35 maxTimestamp i64
    12 partitionLeaderEpoch   43 producerId i64
    16 magic i8 (= 2)         51 producerEpoch i16
    17 crc u32 (CRC-32C over  53 baseSequence i32
       bytes 21..end)         57 recordsCount i32
    21 attributes i16         61 records (compressed as one blob when bits 0-2 != 0)
    23 lastOffsetDelta i32

    attributes: bits 0-2 codec, bit 3 timestamp type (1 = LogAppendTime), bit 4
    transactional, bit 5 control, bit 6 delete horizon set (KIP-534).

Record: length varint, attributes i8, timestampDelta varlong, offsetDelta varint,
keyLength varint (-1 = null), key, valueLength varint, value, headerCount varint,
then per header keyLength varint, key (UTF-8), valueLength varint (-1 = null), value.
All signed varints are protobuf zigzag.

Legacy message, magic 0 and 1 (a "message set" is a run of these)::

    offset i64, messageSize i32, crc u32 (CRC-32 over magic..end), magic i8,
    attributes i8, [timestamp i64 when magic 1], key bytes (i32 length, -1 = null),
    value bytes (i32 length)

A compressed legacy message is a wrapper whose value is a compressed message set. With
magic 1 the inner offsets are relative (0..n-1) and the wrapper carries the absolute
offset of the last inner message; with magic 0 inner offsets are absolute.
"""

from __future__ import annotations

import array
import contextlib
import itertools
import struct
import threading
import time as _time
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

from crc32c import crc32c as _crc32c

from kproto import compression
from kproto.errors import (
    CorruptRecordError,
    InvalidRecordError,
    UnsupportedCompressionTypeError,
)

__all__ = [
    "encode_varint",
    "decode_varint",
    "encode_varlong",
    "decode_varlong",
    "encode_uvarint",
    "decode_uvarint",
    "size_of_varint",
    "size_of_varlong",
    "crc32c",
    "crc32",
    "murmur2",
    "murmur2_partition",
    "Record",
    "BatchHeader",
    "Batch",
    "BatchBuilder",
    "BATCH_HEADER_SIZE",
    "read_batches",
    "read_batch_header",
    "rewrite_batch",
    "empty_batch",
    "validate_batch",
    "decode_record_set",
    "decode_columnar",
    "record_tuples",
    "Columns",
    "OpenBatch",
    "Appender",
    "BinaryArray",
    "largest_record",
    "partition_rows",
    "stamped_head",
    "uninitialized_bytes",
    "millis_to_micros",
]

# Byte positions in a v2 batch header, each derived from the one before.
_BASE_OFFSET = 0
_LENGTH = _BASE_OFFSET + 8
_LEADER_EPOCH = _LENGTH + 4
_MAGIC = _LEADER_EPOCH + 4
_CRC = _MAGIC + 1
_ATTRIBUTES = _CRC + 4
_LAST_OFFSET_DELTA = _ATTRIBUTES + 2
_BASE_TIMESTAMP = _LAST_OFFSET_DELTA + 4
_MAX_TIMESTAMP = _BASE_TIMESTAMP + 8
_PRODUCER_ID = _MAX_TIMESTAMP + 8
_PRODUCER_EPOCH = _PRODUCER_ID + 8
_BASE_SEQUENCE = _PRODUCER_EPOCH + 2
_RECORDS_COUNT = _BASE_SEQUENCE + 4
_V2_HEADER = _RECORDS_COUNT + 4  # 61
_LOG_OVERHEAD = _LEADER_EPOCH  # offset + length: 12 bytes before what batchLength counts
_V2_MIN_LENGTH = _V2_HEADER - _LOG_OVERHEAD  # 49

_CODEC_MASK = 0x07
_TIMESTAMP_TYPE_BIT = 0x08
_TRANSACTIONAL_BIT = 0x10
_CONTROL_BIT = 0x20
_DELETE_HORIZON_BIT = 0x40

# Legacy message layout after offset and size: crc u32, magic i8, attributes i8.
_LEGACY_MAGIC = _LOG_OVERHEAD + 4  # 16, the same place as in v2
_LEGACY_ATTRIBUTES = _LEGACY_MAGIC + 1
_LEGACY_V0_MIN_SIZE = 4 + 1 + 1 + 4 + 4  # crc, magic, attributes, key length, value length
_LEGACY_V1_MIN_SIZE = _LEGACY_V0_MIN_SIZE + 8  # + timestamp

_i8 = struct.Struct(">b")
_i16 = struct.Struct(">h")
_i32 = struct.Struct(">i")
_u32 = struct.Struct(">I")
_i64 = struct.Struct(">q")
_v2_header = struct.Struct(">qiibIhiqqqhii")
_legacy_head = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_EMPTY: tuple = ()

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _corrupt(message: str, first: int | None = None, last: int | None = None) -> CorruptRecordError:
    return CorruptRecordError(message, first, last)


def _keyless(offset: int) -> InvalidRecordError:
    return InvalidRecordError(f"record at offset {offset} has no key")


# ---------------------------------------------------------------------------
# varints
# ---------------------------------------------------------------------------


def encode_uvarint(value: int) -> bytes:
    """Encode an unsigned 32-bit integer as a base-128 varint (compact lengths, tags).

    Raises:
        OverflowError: ``value`` is negative or needs more than 32 bits.
    """
    if value < 0 or value > 0xFFFFFFFF:
        raise OverflowError(f"unsigned varint out of range: {value}")
    return _encode_unsigned(value)


def _encode_unsigned(z: int) -> bytes:
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _decode_unsigned(buf: Any, pos: int, max_bytes: int, bits: int) -> tuple[int, int]:
    end = len(buf)
    result = 0
    shift = 0
    for i in range(max_bytes):
        if pos >= end:
            raise _corrupt("truncated varint")
        b = buf[pos]
        pos += 1
        if i == max_bytes - 1 and b >> (bits - shift):
            raise _corrupt(f"varint wider than {bits} bits")
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
    raise _corrupt(f"varint longer than {max_bytes} bytes")


def decode_uvarint(buf: Any, pos: int = 0) -> tuple[int, int]:
    """Decode an unsigned 32-bit varint at ``buf[pos]``.

    Returns:
        ``(value, position after it)``.

    Raises:
        CorruptRecordError: the varint is truncated, longer than 5 bytes or wider than 32 bits.
    """
    return _decode_unsigned(buf, pos, 5, 32)


def encode_varint(value: int) -> bytes:
    """Encode a signed 32-bit integer as a zigzag varint.

    Raises:
        OverflowError: ``value`` does not fit in 32 signed bits.
    """
    if value < _INT32_MIN or value > _INT32_MAX:
        raise OverflowError(f"varint out of range: {value}")
    return encode_uvarint(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def decode_varint(buf: Any, pos: int = 0) -> tuple[int, int]:
    """Decode a signed 32-bit zigzag varint at ``buf[pos]``.

    Returns:
        ``(value, position after it)``.

    Raises:
        CorruptRecordError: truncated, longer than 5 bytes or wider than 32 bits.
    """
    z, pos = _decode_unsigned(buf, pos, 5, 32)
    return (z >> 1) ^ -(z & 1), pos


def encode_varlong(value: int) -> bytes:
    """Encode a signed 64-bit integer as a zigzag varlong.

    Raises:
        OverflowError: ``value`` does not fit in 64 signed bits.
    """
    if value < _INT64_MIN or value > _INT64_MAX:
        raise OverflowError(f"varlong out of range: {value}")
    return _encode_unsigned(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def decode_varlong(buf: Any, pos: int = 0) -> tuple[int, int]:
    """Decode a signed 64-bit zigzag varlong at ``buf[pos]``.

    Returns:
        ``(value, position after it)``.

    Raises:
        CorruptRecordError: truncated, longer than 10 bytes or wider than 64 bits.
    """
    z, pos = _decode_unsigned(buf, pos, 10, 64)
    return (z >> 1) ^ -(z & 1), pos


def size_of_varint(value: int) -> int:
    """Return how many bytes :func:`encode_varint` writes for ``value``."""
    return len(encode_varint(value))


def size_of_varlong(value: int) -> int:
    """Return how many bytes :func:`encode_varlong` writes for ``value``."""
    return len(encode_varlong(value))


# ---------------------------------------------------------------------------
# checksums and hashing
# ---------------------------------------------------------------------------


# CRC-32C (Castagnoli), the v2 batch checksum: the crc32c package's own function, in both
# backends, so that nothing stands between a caller and the hardware instruction.
crc32c = _crc32c


def crc32(data: Any, crc: int = 0) -> int:
    """CRC-32 (IEEE) of ``data``, continuing from ``crc``; the legacy message checksum."""
    return zlib.crc32(data, crc)


def murmur2(data: Any) -> int:
    """Kafka's murmur2 hash of ``data``, as the signed 32-bit int Java's ``Utils.murmur2`` returns."""
    data = bytes(data)
    length = len(data)
    m = 0x5BD1E995
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    whole = length & ~3
    for i in range(0, whole, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = length & 3
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def murmur2_partition(key: Any, num_partitions: int) -> int:
    """The partition the Java client's default partitioner picks for a non-null key.

    ``(murmur2(key) & 0x7fffffff) % num_partitions``, byte for byte as Java and librdkafka's
    ``murmur2_random`` partitioner.

    Raises:
        ValueError: ``num_partitions`` is not positive.
    """
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


# ---------------------------------------------------------------------------
# records and batches
# ---------------------------------------------------------------------------


class Record:
    """One decoded record.

    Attributes:
        offset: absolute offset in the partition.
        timestamp: milliseconds since the epoch (-1 when the format has none).
        timestamp_type: 0 CreateTime, 1 LogAppendTime, -1 none (magic 0).
        key: bytes or None.
        value: bytes or None.
        headers: tuple of ``(key: str, value: bytes | None)`` in wire order.
    """

    __slots__ = ("offset", "timestamp", "timestamp_type", "key", "value", "headers")

    def __init__(self, offset: int, timestamp: int, timestamp_type: int, key: bytes | None, value: bytes | None, headers: tuple = ()):
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.key = key
        self.value = value
        self.headers = headers

    def __eq__(self, other: object) -> bool:
        if not hasattr(other, "timestamp_type") or not hasattr(other, "headers"):
            return NotImplemented
        return _record_tuple(self) == _record_tuple(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Record(offset={self.offset!r}, timestamp={self.timestamp!r}, timestamp_type={self.timestamp_type!r}, "
            f"key={self.key!r}, value={self.value!r}, headers={self.headers!r})"
        )


def _record_tuple(r: Any) -> tuple:
    return (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers)


class BatchHeader:
    """The header of one batch: a v2 record batch's, or one legacy (magic 0/1) message's.

    :func:`read_batch_header` reads one from a header's bytes alone (no CRC check, no
    records); :class:`Batch`, what :func:`read_batches` yields, is a header with its records.

    Attributes:
        base_offset, last_offset, next_offset: first and last offsets the batch covers
            (records may have gaps after compaction; an empty batch still covers them),
            and ``last_offset + 1``.
        size: bytes the batch occupies in the record set (its length field + 12).
        magic, crc, attributes, compression, timestamp_type, is_transactional, is_control,
        has_delete_horizon, partition_leader_epoch, last_offset_delta, base_timestamp,
        max_timestamp, producer_id, producer_epoch, base_sequence, records_count: the
            header fields. A legacy message has -1 for the v2-only ones, its timestamp
            (magic 1; -1 for magic 0) as both timestamps and its CRC-32 as ``crc``. A
            compressed legacy wrapper's header gives only its last offset (its first
            needs the inner messages): ``base_offset`` is that, ``last_offset_delta`` 0 and
            ``records_count`` -1, until :func:`read_batches` reads the wrapper whole.
    """

    __slots__ = (
        "base_offset", "last_offset_delta", "size", "magic", "crc", "attributes",
        "partition_leader_epoch", "base_timestamp", "max_timestamp", "producer_id",
        "producer_epoch", "base_sequence", "records_count",
    )

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & _CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        if self.magic == 0:
            return -1
        return 1 if self.attributes & _TIMESTAMP_TYPE_BIT else 0

    @property
    def is_transactional(self) -> bool:
        return self.magic == 2 and bool(self.attributes & _TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return self.magic == 2 and bool(self.attributes & _CONTROL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        return self.magic == 2 and bool(self.attributes & _DELETE_HORIZON_BIT)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(magic={self.magic}, base_offset={self.base_offset}, "
                f"last_offset={self.last_offset}, records_count={self.records_count}, size={self.size})")


class Batch(BatchHeader):
    """One batch of a record set: a v2 record batch, or one legacy (magic 0/1) message.

    Built by :func:`read_batches`; the header fields (see :class:`BatchHeader`) are read
    at once (and the CRC checked when asked), the records are decoded (and decompressed)
    only when :meth:`records` is called. A legacy compressed wrapper is one Batch whose
    records are its inner messages, its offsets theirs.
    """

    __slots__ = ("_buf", "_start", "_legacy")

    def records(self) -> list[Record]:
        """Decode every record of the batch.

        Raises:
            CorruptRecordError: the records do not parse (carries this batch's offsets).
            UnsupportedCompressionTypeError: an unknown codec, or zstd below magic 2.
        """
        if self._legacy is not None:
            return list(self._legacy)
        out: list[Record] = []
        # From the lowest offset there is: a batch's base offset may be negative.
        _decode_v2_records(self, _INT64_MIN, out)
        return out

    def validate(self, require_keys: bool = False) -> None:
        """Check every record of the batch as :meth:`records` would, without building any.

        What a broker does before it appends a produced batch: decompress the records
        (under the same size cap), walk every length, varint and bound, and check that
        the batch holds exactly ``records_count`` records filling it to the last byte.
        It fails on exactly the batches :meth:`records` fails on, with the same error.

        Args:
            require_keys: also refuse a record whose key is null, as a compacted topic
                does. A batch that does not parse is reported as such first.

        Raises:
            CorruptRecordError: the records do not parse (carries this batch's offsets).
            UnsupportedCompressionTypeError: an unknown codec, or zstd below magic 2.
            InvalidRecordError: ``require_keys`` and a record has a null key (the first
                such record's offset is in the message).
        """
        if self._legacy is None:
            _decode_v2_records(self, _INT64_MIN, None, require_keys)
        elif require_keys:
            _require_keys(self._legacy)

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())


def _batch_payload(batch: Batch) -> bytes | memoryview:
    """The record bytes of a v2 batch, decompressed."""
    view = memoryview(batch._buf)[batch._start + _V2_HEADER : batch._start + batch.size]
    codec = batch.attributes & _CODEC_MASK
    if codec == 0:
        return view
    try:
        return memoryview(compression.decompress_view(codec, view, magic=2))
    except CorruptRecordError as exc:
        raise _corrupt(f"cannot decompress batch: {exc}", batch.base_offset, batch.last_offset) from None


def _require_keys(records: Sequence[Record]) -> None:
    """Refuse the first record with a null key (a legacy batch's, parsed when it was read)."""
    for r in records:
        if r.key is None:
            raise _keyless(r.offset)


def _decode_v2_records(batch: Batch, fetch_offset: int, out: list | None, require_keys: bool = False) -> None:
    """Append the batch's records with offset >= fetch_offset to ``out``.

    With ``out`` None no record is built, every one is only checked (:meth:`Batch.validate`):
    checking and decoding are one walk, so they cannot disagree on what parses. Then
    ``require_keys`` refuses a null key, but only once the whole batch has parsed.
    """
    data = _batch_payload(batch)
    first, last = batch.base_offset, batch.last_offset
    end = len(data)
    pos = 0
    build = out is not None
    keyless = None  # offset of the first record with a null key, when only checking
    log_append = batch.attributes & _TIMESTAMP_TYPE_BIT
    ts_type = 1 if log_append else 0
    base_offset = batch.base_offset
    base_ts = batch.base_timestamp
    max_ts = batch.max_timestamp
    try:
        for _ in range(batch.records_count):
            length, pos = decode_varint(data, pos)
            if length < 0 or pos + length > end:
                raise _corrupt("record length runs past the batch", first, last)
            rec_end = pos + length
            pos += 1  # record attributes: unused
            ts_delta, pos = decode_varlong(data, pos)
            off_delta, pos = decode_varint(data, pos)
            klen, pos = decode_varint(data, pos)
            if klen < -1 or pos + klen > rec_end:
                raise _corrupt("bad key length", first, last)
            key_at = pos
            pos += max(klen, 0)
            vlen, pos = decode_varint(data, pos)
            if vlen < -1 or pos + vlen > rec_end:
                raise _corrupt("bad value length", first, last)
            value_at = pos
            pos += max(vlen, 0)
            count, pos = decode_varint(data, pos)
            # A header takes at least 2 bytes (two length varints): a larger count is a lie.
            if count < 0 or count > (rec_end - pos) // 2:
                raise _corrupt("bad header count", first, last)
            headers: list | None = [] if build and count else None
            for _h in range(count):
                hklen, pos = decode_varint(data, pos)
                if hklen < 0 or pos + hklen > rec_end:
                    raise _corrupt("bad header key length", first, last)
                try:
                    hkey = bytes(data[pos : pos + hklen]).decode("utf-8")
                except UnicodeDecodeError:
                    raise _corrupt("header key is not UTF-8", first, last) from None
                pos += hklen
                hvlen, pos = decode_varint(data, pos)
                if hvlen < -1 or pos + hvlen > rec_end:
                    raise _corrupt("bad header value length", first, last)
                if headers is not None:
                    headers.append((hkey, None if hvlen < 0 else bytes(data[pos : pos + hvlen])))
                pos += max(hvlen, 0)
            if pos != rec_end:
                raise _corrupt("record length does not match its fields", first, last)
            offset = base_offset + off_delta
            timestamp = max_ts if log_append else base_ts + ts_delta
            if not (_INT64_MIN <= offset <= _INT64_MAX and _INT64_MIN <= timestamp <= _INT64_MAX):
                raise _corrupt("record offset or timestamp overflows 64 bits", first, last)
            if not build:
                if klen < 0 and keyless is None:
                    keyless = offset
            elif offset >= fetch_offset:
                key = None if klen < 0 else bytes(data[key_at : key_at + klen])
                value = None if vlen < 0 else bytes(data[value_at : value_at + vlen])
                out.append(Record(offset, timestamp, ts_type, key, value, _EMPTY if headers is None else tuple(headers)))
    except CorruptRecordError as exc:
        if exc.first_offset is None:
            raise _corrupt(str(exc.args[0]), first, last) from None
        raise
    if pos != end:
        raise _corrupt("bytes left after the last record of the batch", first, last)
    if require_keys and keyless is not None:
        raise _keyless(keyless)


def _v2_fields(header: BatchHeader, buf: Any, start: int, size: int) -> None:
    """Fill ``header`` from the v2 header at ``start`` and check what needs no other byte:
    the one reader of the v2 header layout, for :func:`read_batches` and
    :func:`read_batch_header` alike."""
    (base_offset, _length, leader_epoch, magic, crc, attributes, last_delta, base_ts, max_ts,
     pid, epoch, base_seq, count) = _v2_header.unpack_from(buf, start)
    header.base_offset = base_offset
    header.last_offset_delta = last_delta
    header.size = size
    header.magic = magic
    header.crc = crc
    header.attributes = attributes
    header.partition_leader_epoch = leader_epoch
    header.base_timestamp = base_ts
    header.max_timestamp = max_ts
    header.producer_id = pid
    header.producer_epoch = epoch
    header.base_sequence = base_seq
    header.records_count = count
    if count < 0:
        raise _corrupt(f"negative record count {count}", base_offset, header.last_offset)
    if not _INT64_MIN <= base_offset + last_delta + 1 <= _INT64_MAX:
        raise _corrupt("batch offsets overflow 64 bits", base_offset)
    if attributes & _CODEC_MASK > compression.ZSTD:
        raise UnsupportedCompressionTypeError(f"compression codec id {attributes & _CODEC_MASK}")


def _read_v2_header(buf: Any, start: int, size: int, check_crc: bool) -> Batch:
    batch = Batch()
    batch._buf = buf
    batch._start = start
    batch._legacy = None
    _v2_fields(batch, buf, start, size)
    if check_crc and _crc32c(memoryview(buf)[start + _ATTRIBUTES : start + size]) != batch.crc:
        raise _corrupt("CRC-32C mismatch", batch.base_offset, batch.last_offset)
    return batch


def _legacy_fields(header: BatchHeader, buf: Any, start: int, size: int) -> None:
    """Fill ``header`` from the legacy message head at ``start`` (the one reader of that
    layout) and check its size; a compressed wrapper's offsets are its last inner one's."""
    offset, msg_size, crc, magic, attributes = _legacy_head.unpack_from(buf, start)
    if msg_size < (_LEGACY_V0_MIN_SIZE if magic == 0 else _LEGACY_V1_MIN_SIZE):
        raise _corrupt(f"legacy message size {msg_size} too small", offset, offset)
    timestamp = _i64.unpack_from(buf, start + _LEGACY_ATTRIBUTES + 1)[0] if magic == 1 else -1
    header.base_offset = offset
    header.last_offset_delta = 0
    header.size = size
    header.magic = magic
    header.crc = crc
    header.attributes = attributes
    header.partition_leader_epoch = -1
    header.base_timestamp = timestamp
    header.max_timestamp = timestamp
    header.producer_id = -1
    header.producer_epoch = -1
    header.base_sequence = -1
    header.records_count = -1 if attributes & _CODEC_MASK else 1


def _read_legacy(buf: Any, start: int, size: int, check_crc: bool, record_cls: type = Record, batch_cls: type = Batch) -> Any:
    """Read one legacy message (magic 0/1) as a batch; a compressed wrapper is read whole.

    ``record_cls`` and ``batch_cls`` let the Cython codec reuse this code with its own
    classes: legacy formats are not a hot path, so they have one implementation.
    """
    batch = batch_cls()
    _legacy_fields(batch, buf, start, size)
    offset, crc, magic, attributes, timestamp = batch.base_offset, batch.crc, batch.magic, batch.attributes, batch.max_timestamp
    end = start + size
    if check_crc and zlib.crc32(memoryview(buf)[start + _LEGACY_MAGIC : end]) != crc:
        raise _corrupt("CRC-32 mismatch", offset, offset)
    pos = start + _LEGACY_ATTRIBUTES + 1 + (8 if magic == 1 else 0)
    key, pos = _legacy_bytes(buf, pos, end, offset)
    value, pos = _legacy_bytes(buf, pos, end, offset)
    if pos != end:
        raise _corrupt("legacy message size does not match its fields", offset, offset)
    batch._buf = buf
    batch._start = start
    codec = attributes & _CODEC_MASK
    ts_type = -1 if magic == 0 else (1 if attributes & _TIMESTAMP_TYPE_BIT else 0)
    if offset == _INT64_MAX:
        raise _corrupt("message offset leaves no next offset", offset)
    if codec == 0:
        batch._legacy = (record_cls(offset, timestamp, ts_type, key, value, _EMPTY),)
        return batch
    if codec > compression.LZ4:
        raise UnsupportedCompressionTypeError(f"compression codec id {codec} in a magic {magic} message")
    if value is None:
        raise _corrupt("compressed legacy wrapper has a null value", offset, offset)
    try:
        inner_buf = compression.decompress(codec, value, magic=magic)
    except CorruptRecordError as exc:
        raise _corrupt(f"cannot decompress legacy wrapper: {exc}", offset, offset) from None
    inner: list[tuple] = []
    ipos = 0
    iend = len(inner_buf)
    while iend - ipos >= _LOG_OVERHEAD:
        (isize,) = _i32.unpack_from(inner_buf, ipos + 8)
        if isize < _LEGACY_V0_MIN_SIZE or iend - ipos - _LOG_OVERHEAD < isize:
            raise _corrupt("truncated message inside a compressed wrapper", offset, offset)
        msg = _read_legacy(inner_buf, ipos, isize + _LOG_OVERHEAD, check_crc, record_cls, batch_cls)
        if msg.magic != magic:
            raise _corrupt("inner message magic differs from its wrapper", offset, offset)
        if msg.attributes & _CODEC_MASK:
            raise _corrupt("compressed message nested inside a compressed wrapper", offset, offset)
        inner.append((msg.base_offset, msg._legacy[0]))
        ipos += isize + _LOG_OVERHEAD
    if ipos != iend or not inner:
        raise _corrupt("compressed wrapper holds a partial or empty message set", offset, offset)
    if any(b[0] <= a[0] for a, b in itertools.pairwise(inner)) or inner[-1][0] - inner[0][0] > _INT32_MAX:
        raise _corrupt("offsets inside a compressed wrapper do not increase within an int32 span", offset, offset)
    records = []
    # Java (AbstractLegacyRecordBatch): a magic 1 wrapper's inner offsets are relative,
    # made absolute by wrapper offset - last inner offset, unless that is negative: a
    # wrapper a producer wrote (offset 0, not yet assigned) keeps its relative offsets.
    shift = offset - inner[-1][0] if magic == 1 else 0
    if shift < 0:
        shift = 0
    for rel, r in inner:
        ts = r.timestamp
        if ts_type == 1:
            ts = timestamp
        records.append(record_cls(rel + shift, ts, ts_type, r.key, r.value, _EMPTY))
    batch.base_offset = records[0].offset
    batch.last_offset_delta = records[-1].offset - records[0].offset
    batch.base_timestamp = records[0].timestamp
    batch.records_count = len(records)
    batch._legacy = tuple(records)
    return batch


def _legacy_bytes(buf: Any, pos: int, end: int, offset: int) -> tuple[bytes | None, int]:
    if end - pos < 4:
        raise _corrupt("truncated legacy message", offset, offset)
    (n,) = _i32.unpack_from(buf, pos)
    pos += 4
    if n == -1:
        return None, pos
    if n < 0 or end - pos < n:
        raise _corrupt("bad length in legacy message", offset, offset)
    return bytes(buf[pos : pos + n]), pos + n


def read_batches(buf: Any, check_crc: bool = True) -> Iterator[Batch]:
    """Iterate over the batches of a record set (a Fetch response's ``records``, a segment).

    A partial batch at the end (a fetch may cut the last one) ends the iteration quietly;
    ``sum(b.size for b in batches)`` tells how many bytes were whole.

    Args:
        buf: bytes-like record set.
        check_crc: verify each batch's CRC as it is read.

    Raises:
        CorruptRecordError: a batch's header, length or CRC is bad (carries its offsets
            when they could be read); magic above 2.
        UnsupportedCompressionTypeError: a codec id above 4.
    """
    end = len(buf)
    pos = 0
    while end - pos > _LEGACY_MAGIC:
        (base_offset, length) = struct.unpack_from(">qi", buf, pos)
        if length < 0:
            raise _corrupt(f"negative batch length {length}", base_offset)
        size = length + _LOG_OVERHEAD
        if size > end - pos:
            return
        magic = buf[pos + _MAGIC]
        if magic == 2:
            if length < _V2_MIN_LENGTH:
                raise _corrupt(f"batch length {length} below the v2 minimum", base_offset)
            yield _read_v2_header(buf, pos, size, check_crc)
        elif magic in (0, 1):
            yield _read_legacy(buf, pos, size, check_crc)
        else:
            raise _corrupt(f"unknown magic byte {magic}", base_offset)
        pos += size


def _check_fetch_offset(fetch_offset: int) -> None:
    # The Cython twin takes fetch_offset as an int64_t: outside it, an OverflowError alike.
    if not _INT64_MIN <= fetch_offset <= _INT64_MAX:
        raise OverflowError(f"fetch_offset does not fit in 64 signed bits: {fetch_offset}")


def decode_record_set(buf: Any, fetch_offset: int = 0, check_crc: bool = True) -> tuple[list[Record], int, int]:
    """Decode every data record of a record set in one call: the consumer's hot path.

    Control batches (transaction markers) are skipped, records below ``fetch_offset``
    dropped, and a partial batch at the end ignored.

    Returns:
        ``(records, next_offset, whole_bytes)``: the records; the offset after the last
        whole batch (or ``fetch_offset`` when there was none; empty batches left by
        compaction advance it too); how many bytes of ``buf`` were whole batches.

    Raises:
        CorruptRecordError: as :func:`read_batches` and :meth:`Batch.records`.
        OverflowError: ``fetch_offset`` does not fit in 64 signed bits.
    """
    _check_fetch_offset(fetch_offset)
    out: list[Record] = []
    next_offset = fetch_offset
    consumed = 0
    for batch in read_batches(buf, check_crc):
        consumed += batch.size
        next_offset = max(next_offset, batch.next_offset)
        if batch.is_control or batch.last_offset < fetch_offset:
            continue
        if batch._legacy is not None:
            out.extend(r for r in batch._legacy if r.offset >= fetch_offset)
        else:
            _decode_v2_records(batch, fetch_offset, out)
    return out, next_offset, consumed


# ---------------------------------------------------------------------------
# the consumer's records: a batch's records made as the consumer's tuples (issue 16)
# ---------------------------------------------------------------------------

_TUPLE_SIZE = tuple.__basicsize__


def _check_record_class(cls: Any) -> None:
    """Refuse a ``cls`` that :func:`record_tuples` cannot make: not a tuple subclass, one
    with instance fields, or one whose C constructor is not tuple's (a struct sequence such
    as ``time.struct_time``: its instances hold more slots than their visible fields, and
    ``tuple.__new__`` refuses it). The Cython twin does the same checks."""
    if isinstance(cls, type) and issubclass(cls, tuple) and cls.__basicsize__ == _TUPLE_SIZE:
        try:
            tuple.__new__(cls, ())
            return
        except TypeError:
            pass
    raise TypeError(f"record_tuples needs a tuple subclass without instance fields, not {cls!r}")


def record_tuples(batch: Batch, cls: type, topic: str, partition: int, fetch_offset: int = _INT64_MIN) -> list:
    """The records of ``batch`` at or after ``fetch_offset`` as ``cls`` tuples, made in one
    call: the consumer's records without a codec :class:`Record` per record in between.

    Each is ``cls`` holding ``(topic, partition, offset, timestamp, timestamp_type, key,
    value, headers, leader_epoch)``, the leader epoch being the batch's
    ``partition_leader_epoch``: the layout of ``kproto.consumer.ConsumerRecord``. The tuples
    are made as ``tuple.__new__(cls, fields)`` makes them, without calling ``cls.__new__``.

    Args:
        batch: a batch from :func:`read_batches` (v2 or legacy).
        cls: a subclass of ``tuple`` that adds no instance fields (a ``NamedTuple``).
        topic, partition: the first two fields of every tuple.
        fetch_offset: records below it are left out (a fetch returns whole batches).

    Raises:
        TypeError: ``cls`` is not such a class, ``topic`` not a str or ``partition`` not an int.
        OverflowError: ``fetch_offset`` does not fit in 64 signed bits.
        CorruptRecordError, UnsupportedCompressionTypeError: as :meth:`Batch.records`.
    """
    _check_fetch_offset(fetch_offset)
    _check_record_class(cls)
    if not isinstance(topic, str) or not isinstance(partition, int):
        raise TypeError("topic must be a str and partition an int")
    epoch = batch.partition_leader_epoch
    new = tuple.__new__
    return [new(cls, (topic, partition, r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers, epoch))
            for r in batch.records() if r.offset >= fetch_offset]


# ---------------------------------------------------------------------------
# one batch header: read, rewrite, empty, validate
# ---------------------------------------------------------------------------

BATCH_HEADER_SIZE = _V2_HEADER
"""Bytes of a v2 batch header (61), the longest batch header: enough to read any."""


def read_batch_header(buf: Any, pos: int = 0) -> BatchHeader | None:
    """Read the header of the batch at ``pos``: from its bytes alone, without its records.

    Only the header's bytes need to be in ``buf`` (at most :data:`BATCH_HEADER_SIZE`);
    the CRC, which covers the records, is not checked (:func:`read_batches` does).

    Returns:
        the header, or None when ``buf`` ends before the header does (a torn tail).

    Raises:
        CorruptRecordError: a negative length, a length below the smallest batch of its
            magic, a negative record count, offsets past 64 bits, an unknown magic.
        UnsupportedCompressionTypeError: a codec id above 4 (v2).
    """
    if pos < 0:
        raise ValueError(f"negative position {pos}")
    end = len(buf)
    if end - pos <= _MAGIC:
        return None
    (base_offset, length) = struct.unpack_from(">qi", buf, pos)
    if length < 0:
        raise _corrupt(f"negative batch length {length}", base_offset)
    magic = buf[pos + _MAGIC]
    header = BatchHeader()
    if magic == 2:
        if length < _V2_MIN_LENGTH:
            raise _corrupt(f"batch length {length} below the v2 minimum", base_offset)
        if end - pos < _V2_HEADER:
            return None
        _v2_fields(header, buf, pos, length + _LOG_OVERHEAD)
    elif magic in (0, 1):
        if end - pos < _LEGACY_ATTRIBUTES + 1 + (8 if magic == 1 else 0):
            return None
        _legacy_fields(header, buf, pos, length + _LOG_OVERHEAD)
        if base_offset == _INT64_MAX:
            raise _corrupt("message offset leaves no next offset", base_offset)
    else:
        raise _corrupt(f"unknown magic byte {magic}", base_offset)
    return header


def _field(name: str, value: int, bits: int) -> int:
    """``value`` if it fits a signed field of ``bits``, else ValueError naming the field."""
    if not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise ValueError(f"{name} {value} does not fit {bits} bits")
    return value


def _offsets_fit(base_offset: int, last_offset_delta: int) -> None:
    """ValueError unless the batch's last offset and the next one fit 64 bits, as a reader
    requires (a rewritten batch must stay readable)."""
    if not _INT64_MIN <= base_offset + last_offset_delta + 1 <= _INT64_MAX:
        raise ValueError(f"base_offset {base_offset} + last_offset_delta {last_offset_delta} overflows 64 bits")


def _whole_v2(buf: Any) -> int:
    """The length of ``buf``, which must be exactly one whole v2 batch."""
    end = len(buf)
    if end < _V2_HEADER or buf[_MAGIC] != 2 or _i32.unpack_from(buf, _LENGTH)[0] + _LOG_OVERHEAD != end:
        raise _corrupt("not one whole v2 record batch")
    return end


def rewrite_batch(
    buf: Any,
    *,
    base_offset: int | None = None,
    partition_leader_epoch: int | None = None,
    attributes: int | None = None,
    last_offset_delta: int | None = None,
    max_timestamp: int | None = None,
    producer_id: int | None = None,
    producer_epoch: int | None = None,
    base_sequence: int | None = None,
) -> bytes:
    """A copy of one whole v2 batch with the given header fields written in.

    The CRC-32C is computed again when a field it covers changed (all but the base offset
    and the leader epoch), as Kafka does when a broker stamps LogAppendTime
    (``DefaultRecordBatch.setMaxTimestamp``) and a producer its sequence
    (``MemoryRecordsBuilder``). The records are copied as they are.

    Raises:
        CorruptRecordError: ``buf`` is not exactly one whole v2 batch (magic 2, its
            length field matching).
        ValueError: a value does not fit its field (i64, i32 or i16), or the new base
            offset and last offset delta leave the batch's offsets beyond 64 bits.
    """
    _whole_v2(buf)
    fields = [
        (_BASE_OFFSET, _i64, "base_offset", base_offset, 64),
        (_LEADER_EPOCH, _i32, "partition_leader_epoch", partition_leader_epoch, 32),
        (_ATTRIBUTES, _i16, "attributes", attributes, 16),
        (_LAST_OFFSET_DELTA, _i32, "last_offset_delta", last_offset_delta, 32),
        (_MAX_TIMESTAMP, _i64, "max_timestamp", max_timestamp, 64),
        (_PRODUCER_ID, _i64, "producer_id", producer_id, 64),
        (_PRODUCER_EPOCH, _i16, "producer_epoch", producer_epoch, 16),
        (_BASE_SEQUENCE, _i32, "base_sequence", base_sequence, 32),
    ]
    given = [(at, fmt, _field(name, value, bits)) for at, fmt, name, value, bits in fields if value is not None]
    out = bytearray(buf)
    for at, fmt, value in given:
        fmt.pack_into(out, at, value)
    if base_offset is not None or last_offset_delta is not None:
        _offsets_fit(_i64.unpack_from(out, _BASE_OFFSET)[0], _i32.unpack_from(out, _LAST_OFFSET_DELTA)[0])
    if any(at >= _ATTRIBUTES for at, _, _ in given):
        _u32.pack_into(out, _CRC, _crc32c(memoryview(out)[_ATTRIBUTES:]))
    return bytes(out)


def empty_batch(header: BatchHeader) -> bytes:
    """A v2 batch with no records and ``header``'s offsets, producer fields, leader epoch
    and timestamp-type, transactional and control bits, not compressed.

    What Kafka's cleaner keeps of a batch whose records all went, when the batch must stay
    for its producer's sequence numbers or to keep the offsets advancing
    (``DefaultRecordBatch.writeEmptyHeader``, which uses the max timestamp as both
    timestamps).

    Raises:
        ValueError: ``header`` is not a v2 batch's.
    """
    if header.magic != 2:
        raise ValueError(f"an empty batch is a v2 batch, not magic {header.magic}")
    attributes = header.attributes & (_TIMESTAMP_TYPE_BIT | _TRANSACTIONAL_BIT | _CONTROL_BIT)
    out = bytearray(_v2_header.pack(
        header.base_offset, _V2_MIN_LENGTH, header.partition_leader_epoch, 2, 0, attributes,
        header.last_offset_delta, header.max_timestamp, header.max_timestamp, header.producer_id,
        header.producer_epoch, header.base_sequence, 0,
    ))
    _u32.pack_into(out, _CRC, _crc32c(memoryview(out)[_ATTRIBUTES:]))
    return bytes(out)


def validate_batch(buf: Any) -> tuple[Batch, bool]:
    """Check a produced record set as a broker does before appending it, building no record.

    The checks, in Kafka's order (``LogValidator``), each with its error: exactly one whole
    batch with a sound header, codec and CRC-32C (:func:`read_batches`' errors, else
    CorruptRecordError); magic 2, not a control batch, ``records_count`` equal to
    ``last_offset_delta + 1`` and above 0 (InvalidRecordError); every record parses and
    the records fill the batch (:meth:`Batch.validate`'s CorruptRecordError).

    Returns:
        ``(batch, keyless)``: the batch, and whether a record has a null key (which a
        compacted topic refuses; only the failure path needs the records themselves).
    """
    batch = next(iter(read_batches(buf)), None)
    if batch is None or batch.size != len(buf):
        raise _corrupt("expected exactly one whole record batch")
    _check_produced(batch)
    try:
        _decode_v2_records(batch, _INT64_MIN, None, True)
    except InvalidRecordError:  # a null key, raised only once every record parsed
        return batch, True
    return batch, False


def _check_produced(batch: Batch) -> None:
    """The header checks of :func:`validate_batch` (shared with the Cython codec)."""
    if batch.magic != 2:
        raise InvalidRecordError("Produce v3+ carries record batches of magic 2 only")
    if batch.is_control:
        raise InvalidRecordError("clients may not produce control batches")
    if batch.records_count <= 0 or batch.records_count != batch.last_offset_delta + 1:
        raise InvalidRecordError("record count does not match lastOffsetDelta")


# ---------------------------------------------------------------------------
# builder
# ---------------------------------------------------------------------------


_HINTS = {  # what a producer's user should do about a key, value or header value of another type
    "key": "set key.serializer to turn keys into bytes (e.g. kproto.serialization.string_serializer())",
    "value": "set value.serializer to turn values into bytes (e.g. kproto.serialization.string_serializer())",
    "header value": "header values are sent as given (no serializer applies): encode them, e.g. 'v'.encode()",
}


def _not_bytes(name: str, v: Any) -> TypeError:
    """The error for a key, value or header value that is not bytes-like (issue 11: it says
    which setting or step turns it into bytes). Both backends raise it."""
    hint = _HINTS.get(name)
    return TypeError(f"{name} must be bytes-like or None, not {type(v).__name__}" + (f": {hint}" if hint else ""))


def _length(name: str, v: Any) -> int:
    """``len`` of a bytes-like key or value; :func:`_not_bytes` for anything else."""
    if isinstance(v, (bytes, bytearray, memoryview)):
        return len(v)
    raise _not_bytes(name, v)


def _check_bytes(name: str, v: Any) -> bytes | None:
    if v is None:
        return None
    if isinstance(v, bytes):
        return v
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    raise _not_bytes(name, v)


class BatchBuilder:
    """Builds one record batch (magic 2) or one legacy message set (magic 0/1).

    Args:
        magic: 2, or 0/1 for brokers older than 0.11.
        compression: codec id (see :mod:`kproto.compression`).
        compression_level: codec level, or None for the codec's default.
        base_offset: the batch's first offset (0 from producers; the broker assigns).
        producer_id, producer_epoch, base_sequence: idempotence fields (-1: none).
        is_transactional, is_control: the attribute bits (control batches are written
            by brokers: transaction markers).
        partition_leader_epoch: -1 from producers.
        timestamp_type: 0 CreateTime; 1 LogAppendTime (brokers only).
        max_bytes: when > 0, :meth:`append` refuses a record that would take the batch's
            estimated size past it (the first record is always accepted), and the
            builder's buffer never grows past ``max_bytes`` (or the first record's size,
            if bigger): see :attr:`capacity`.

    The records are written into one buffer that grows by doubling from 1 KiB. With
    ``max_bytes`` the doubling stops at ``max(max_bytes, first record)``, the bytes a
    Java producer takes per batch from its ``BufferPool`` (``max(batch.size, record
    size)``), which is what a producer counts per batch against ``buffer.memory``: the
    builder never holds more than is counted (issue 16). Taking it whole at the first
    record was measured to cost more resident memory (the allocator's) than doubling.
    This backend keeps a ``bytearray`` but reports the same :attr:`capacity` as the
    Cython one.

    Raises:
        ValueError: a field is out of range, or v2-only fields with magic 0/1.
        UnsupportedCompressionTypeError: unknown codec, or zstd below magic 2.
    """

    def __init__(
        self,
        magic: int = 2,
        compression: int = 0,
        compression_level: int | None = None,
        *,
        base_offset: int = 0,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        is_transactional: bool = False,
        is_control: bool = False,
        partition_leader_epoch: int = -1,
        timestamp_type: int = 0,
        max_bytes: int = 0,
    ):
        if magic not in (0, 1, 2):
            raise ValueError(f"magic must be 0, 1 or 2, not {magic}")
        if not 0 <= compression <= 4:
            raise UnsupportedCompressionTypeError(f"compression codec id {compression}")
        if compression == 4 and magic < 2:
            raise UnsupportedCompressionTypeError("zstd needs magic 2 (Kafka 2.1+)")
        if magic < 2 and (producer_id != -1 or is_transactional or is_control or base_sequence != -1):
            raise ValueError("producer ids, transactions and control batches need magic 2")
        if timestamp_type not in (0, 1) or (magic == 0 and timestamp_type):
            raise ValueError(f"bad timestamp_type {timestamp_type} for magic {magic}")
        self.magic = magic
        self.compression = compression
        self.compression_level = compression_level
        self.base_offset = base_offset
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.is_control = is_control
        self.partition_leader_epoch = partition_leader_epoch
        self.timestamp_type = timestamp_type
        self.max_bytes = max_bytes
        self._body = bytearray()
        self._cap = 0  # the records' buffer, as the Cython backend sizes it (capacity)
        self._count = 0
        self._last_delta = -1
        self._first_ts = -1
        self._max_ts = -1

    @property
    def record_count(self) -> int:
        """How many records were appended."""
        return self._count

    def size_in_bytes(self) -> int:
        """The batch's size so far, before compression."""
        return (_V2_HEADER if self.magic == 2 else 0) + len(self._body)

    @property
    def capacity(self) -> int:
        """The bytes the builder holds for the batch: its header and its records' buffer
        (at least :meth:`size_in_bytes`): its header and a doubling from 1 KiB, which with
        ``max_bytes`` stops at ``max(max_bytes, first record's size)``; an empty builder
        holds its header's only."""
        return (_V2_HEADER if self.magic == 2 else 0) + self._cap

    def _reserve(self, need: int) -> None:
        # The Cython backend's buffer growth, for ``capacity``: the records' bytes reach ``need``.
        if need > self._cap:
            cap = self._cap * 2 if self._cap else 1024
            while cap < need:
                cap *= 2
            if self.max_bytes > 0:  # never past max_bytes, or the first record if bigger
                cap = min(cap, max(self.max_bytes - (_V2_HEADER if self.magic == 2 else 0), need))
            self._cap = cap

    def append(self, timestamp: int, key: Any, value: Any, headers: Sequence[tuple[str, Any]] | None = None, offset_delta: int = -1) -> int:
        """Add a record.

        Args:
            timestamp: milliseconds since the epoch (ignored by magic 0).
            key, value: bytes-like or None.
            headers: ``(str, bytes | None)`` pairs (magic 2 only).
            offset_delta: the record's offset relative to the batch's; -1 for the next one.
                Deltas must increase (compaction leaves gaps; the builder keeps them).

        Returns:
            the record's offset delta, or -1 when ``max_bytes`` would be exceeded (nothing
            is added then).

        Raises:
            TypeError: key, value or a header has the wrong type.
            ValueError: headers with magic 0/1, or a delta that does not increase.
        """
        key = _check_bytes("key", key)
        value = _check_bytes("value", value)
        if offset_delta < 0:
            offset_delta = self._last_delta + 1
        elif offset_delta <= self._last_delta:
            raise ValueError(f"offset_delta {offset_delta} does not increase (last {self._last_delta})")
        if self.magic == 2:
            rec = self._encode_v2(timestamp, key, value, headers, offset_delta)
        else:
            if headers:
                raise ValueError(f"record headers need magic 2, the batch has magic {self.magic}")
            # Inner offsets of a magic 1 wrapper are relative; everywhere else absolute.
            inner_relative = self.compression and self.magic == 1
            rec = _encode_legacy(self.magic, 0, self.timestamp_type, offset_delta if inner_relative else self.base_offset + offset_delta, timestamp, key, value)
        if self.max_bytes > 0 and self._count and self.size_in_bytes() + len(rec) > self.max_bytes:
            return -1
        self._reserve(len(self._body) + len(rec))
        self._body += rec
        if self._count == 0:
            self._first_ts = timestamp
            self._max_ts = timestamp
        elif timestamp > self._max_ts:
            self._max_ts = timestamp
        self._count += 1
        self._last_delta = offset_delta
        return offset_delta

    def append_columns(self, values: Any, keys: Any = None, headers: Any = None, timestamps: Any = None,
                       timestamp: int = 0, rows: Any = None, start: int = 0, stop: int = -1) -> int:
        """Append records taken from columns, in one call (the producer's ``send_batch``).

        Record ``i`` is ``(keys[i], values[i], headers[i], timestamps[i])``; the records
        appended are the rows ``rows[start:stop]`` (or ``start..stop`` of the columns when
        ``rows`` is None), in order, until the next one would take the batch past
        ``max_bytes`` (the first record of a batch always goes in, as with :meth:`append`).

        Args:
            values, keys: a list or tuple of bytes-like or None, or a :class:`BinaryArray`
                (Arrow's binary layout); ``keys=None``: no keys.
            headers: None, or one entry per record: None or ``(str, bytes | None)`` pairs.
            timestamps: None (every record gets ``timestamp``) or an int64 buffer (an
                ``array('q')``, a memoryview) with one timestamp per record.
            rows: None, or an int64 buffer of row indices (what :func:`partition_rows` gives).
            start, stop: the range of ``rows`` (or of the columns); ``stop=-1``: to the end.

        Returns:
            the position after the last record appended (``stop`` when all went in).

        Raises:
            TypeError, ValueError: as :meth:`append` (nothing of the failing record is added).
            IndexError: a row is outside a column.
        """
        if stop < 0:
            stop = len(rows) if rows is not None else len(values)
        pos = start
        while pos < stop:
            if rows is not None and not 0 <= pos < len(rows):
                raise IndexError(f"position {pos} is outside rows ({len(rows)})")
            i = pos if rows is None else rows[pos]
            if not 0 <= i < len(values):
                raise IndexError(f"row {i} is outside the columns ({len(values)} records)")
            if timestamps is not None and i >= len(timestamps):
                raise IndexError(f"row {i} is outside timestamps ({len(timestamps)})")
            ts = timestamp if timestamps is None else timestamps[i]
            key = None if keys is None else keys[i]
            if self.append(ts, key, values[i], None if headers is None else headers[i]) < 0:
                break
            pos += 1
        return pos

    def reuse(self, spares: list[Any]) -> bool:
        """Write the batch to come into the memory of one of ``spares``, earlier batches of
        this codec's :meth:`build` (the producer's settled ``send_batch`` batches, issue 16):
        memory the process has in use already, where a new batch of a megabyte takes fresh
        pages from the system (a page fault each 4 KiB, as much CPU as encoding the records).

        Only an empty builder takes one, and only one that nothing but the list refers to
        any more (no request, connection or caller holds it); it is removed from the list,
        and what :meth:`build` then gives is the same as without it. Others stay.

        Returns:
            whether one was taken. This backend writes into its own buffer and takes none.
        """
        return False

    def _encode_v2(self, timestamp: int, key: bytes | None, value: bytes | None, headers: Any, offset_delta: int) -> bytes:
        base_ts = timestamp if self._count == 0 else self._first_ts
        body = bytearray(b"\x00")
        body += encode_varlong(timestamp - base_ts)
        body += encode_varint(offset_delta)
        for part in (key, value):
            if part is None:
                body += b"\x01"  # zigzag(-1)
            else:
                body += encode_varint(len(part))
                body += part
        if headers:
            body += encode_varint(len(headers))
            for hkey, hval in headers:
                if not isinstance(hkey, str):
                    raise TypeError(f"header key must be str, not {type(hkey).__name__}")
                hk = hkey.encode("utf-8")
                body += encode_varint(len(hk))
                body += hk
                hval = _check_bytes("header value", hval)
                if hval is None:
                    body += b"\x01"
                else:
                    body += encode_varint(len(hval))
                    body += hval
        else:
            body += b"\x00"
        return encode_varint(len(body)) + bytes(body)

    def build(self) -> bytes:
        """Return the finished batch (or legacy message set).

        Compression is skipped when it would not make the payload smaller, as the Java
        and librdkafka producers do (for magic 2 the codec bits then say "none").
        """
        if self.magic < 2:
            return self._build_legacy()
        payload = bytes(self._body)
        codec = self.compression if self._count else 0  # nothing to compress: say "none"
        if codec:
            packed = compression.compress(codec, payload, self.compression_level)
            if len(packed) < len(payload):
                payload = packed
            else:
                codec = 0
        if not codec:
            self._cap = len(self._body)  # handed out as it is: no spare bytes (the Cython backend's realloc)
        attributes = codec
        if self.timestamp_type:
            attributes |= _TIMESTAMP_TYPE_BIT
        if self.is_transactional:
            attributes |= _TRANSACTIONAL_BIT
        if self.is_control:
            attributes |= _CONTROL_BIT
        length = _V2_HEADER - _LOG_OVERHEAD + len(payload)
        head = bytearray(_v2_header.pack(
            self.base_offset, length, self.partition_leader_epoch, 2, 0, attributes,
            max(self._last_delta, 0), self._first_ts, self._max_ts, self.producer_id,
            self.producer_epoch, self.base_sequence, self._count,
        ))
        head += payload
        _u32.pack_into(head, _CRC, _crc32c(memoryview(head)[_ATTRIBUTES:]))
        return bytes(head)

    def _build_legacy(self) -> bytes:
        if not self.compression or not self._count:
            return bytes(self._body)
        packed = compression.compress(self.compression, bytes(self._body), self.compression_level, magic=self.magic)
        # The wrapper's offset is the absolute offset of the last inner message.
        wrapper_ts = self._max_ts if self.magic == 1 else -1
        return _encode_legacy(self.magic, self.compression, self.timestamp_type, self.base_offset + self._last_delta, wrapper_ts, None, packed)


def _encode_legacy(magic: int, codec: int, ts_type: int, offset: int, timestamp: int, key: bytes | None, value: bytes | None) -> bytes:
    attributes = codec | (_TIMESTAMP_TYPE_BIT if ts_type else 0)
    body = bytearray(_i8.pack(magic) + _i8.pack(attributes))
    if magic == 1:
        body += _i64.pack(timestamp)
    for part in (key, value):
        if part is None:
            body += _i32.pack(-1)
        else:
            body += _i32.pack(len(part))
            body += part
    return _i64.pack(offset) + _i32.pack(len(body) + 4) + _u32.pack(zlib.crc32(body)) + bytes(body)


# -- send_batch: records from columns (issue 16, part "batch") ---------------------------------


class BinaryArray:
    """A column of bytes in Arrow's binary layout (``binary``, ``large_binary``, ``string``,
    ``large_string``), read without making a bytes object per row.

    Args:
        length: how many rows.
        offsets: the offsets buffer: ``offset + length + 1`` little-endian int32 (int64
            when ``large``); row ``i`` is ``data[offsets[offset + i]:offsets[offset + i + 1]]``.
        data: the data buffer.
        validity: None (no nulls) or Arrow's validity bitmap (bit ``offset + i`` set: not null).
        offset: the array's offset into its buffers (a sliced Arrow array's ``offset``).
        large: 64-bit offsets.

    Indexing gives a row: ``bytes`` or None.

    Raises:
        ValueError: a buffer is shorter than ``length`` and ``offset`` need, or an offset
            points outside ``data`` (checked per row as it is read).
    """

    __slots__ = ("length", "offsets", "data", "validity", "offset", "large")

    def __init__(self, length: int, offsets: Any, data: Any, validity: Any = None, offset: int = 0,
                 large: bool = False) -> None:
        if length < 0 or offset < 0:
            raise ValueError(f"bad length {length} or offset {offset}")
        width = 8 if large else 4
        offsets = memoryview(offsets).cast("B")
        if len(offsets) < (offset + length + 1) * width:
            raise ValueError(f"the offsets buffer holds fewer than {offset + length + 1} offsets")
        self.offsets = offsets.cast("q" if large else "i")
        self.data = memoryview(data).cast("B")
        self.validity = None if validity is None else memoryview(validity).cast("B")
        if self.validity is not None and len(self.validity) * 8 < offset + length:
            raise ValueError(f"the validity bitmap holds fewer than {offset + length} bits")
        self.length = length
        self.offset = offset
        self.large = large

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int) -> bytes | None:
        if not 0 <= i < self.length:
            raise IndexError(f"row {i} is outside the column ({self.length} rows)")
        j = self.offset + i
        if self.validity is not None and not self.validity[j >> 3] & (1 << (j & 7)):
            return None
        begin, end = self.offsets[j], self.offsets[j + 1]
        if not 0 <= begin <= end <= len(self.data):
            raise ValueError(f"row {i}'s offsets [{begin}, {end}) are outside the data buffer ({len(self.data)} bytes)")
        return bytes(self.data[begin:end])


def _column_length(name: str, column: Any, i: int) -> int:
    """The byte length of ``column[i]`` (-1 for None), refusing what is not bytes-like."""
    v = column[i]
    if v is None:
        return -1
    return _length(name, v)


def largest_record(values: Any, keys: Any = None, headers: Any = None) -> tuple[int, int]:
    """The largest record of columns, checking every row's types on the way (one pass).

    Args:
        values, keys, headers: as :meth:`BatchBuilder.append_columns`; the columns must
            have one entry per record (``len(values)``).

    Returns:
        ``(row, size)``: the first row of the largest size, and that size: the bytes of its
        key, value, header keys and header values (what ``max.request.size`` is about,
        framing aside). ``(-1, 0)`` for no records.

    Raises:
        TypeError: a key, value or header of the wrong type (as :meth:`BatchBuilder.append`).
        ValueError: a column's length differs from ``values``'.
    """
    n = len(values)
    for name, column in (("keys", keys), ("headers", headers)):
        if column is not None and len(column) != n:
            raise ValueError(f"{name} has {len(column)} entries for {n} values")
    best, best_size = -1, -1
    for i in range(n):
        size = max(_column_length("value", values, i), 0)
        if keys is not None:
            size += max(_column_length("key", keys, i), 0)
        if headers is not None and headers[i]:
            for hkey, hval in headers[i]:
                if not isinstance(hkey, str):
                    raise TypeError(f"header key must be str, not {type(hkey).__name__}")
                size += len(hkey.encode("utf-8"))
                if hval is not None:
                    size += _length("header value", hval)
        if size > best_size:
            best, best_size = i, size
    return (best, best_size) if n else (-1, 0)


def partition_rows(count: int, num_partitions: int, keys: Any = None, partitions: Any = None,
                   null_partition: int = -1) -> tuple[Any, list[tuple[int, int, int]]]:
    """Group ``count`` rows by partition, keeping their order within each partition.

    Each row's partition is ``partitions[i]`` when ``partitions`` is given (an int
    sequence or buffer), else Java's default for a keyed record,
    ``(murmur2(key) & 0x7fffffff) % num_partitions`` (:func:`murmur2_partition`), and
    ``null_partition`` for a null key (the producer's sticky partition).

    Returns:
        ``(rows, runs)``: ``rows`` an ``array('q')`` of row indices grouped by partition,
        ``runs`` a list of ``(partition, start, stop)`` slices of ``rows``, by partition.

    Raises:
        ValueError: a partition outside ``[0, num_partitions)``, or ``num_partitions < 1``.
        TypeError: a key that is not bytes-like.
    """
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    chosen = []
    for i in range(count):
        if partitions is not None:
            p = partitions[i]
        else:
            key = None if keys is None else keys[i]
            if key is None:
                p = null_partition
            else:
                _length("key", key)
                p = murmur2_partition(key, num_partitions)
        if not 0 <= p < num_partitions:
            raise ValueError(f"row {i}'s partition {p} is not in [0, {num_partitions})")
        chosen.append(p)
    counts = [0] * num_partitions
    for p in chosen:
        counts[p] += 1
    starts, total = [], 0
    for c in counts:
        starts.append(total)
        total += c
    rows = array.array("q", bytes(8 * count))
    fill = list(starts)
    for i, p in enumerate(chosen):
        rows[fill[p]] = i
        fill[p] += 1
    runs = [(p, starts[p], starts[p] + counts[p]) for p in range(num_partitions) if counts[p]]
    return rows, runs


# ---------------------------------------------------------------------------
# columnar decode
# ---------------------------------------------------------------------------


class Columns:
    """A record set decoded into flat, Arrow-layout buffers (no per-record objects).

    Every buffer is a ``bytearray``, little-endian and laid out as Arrow expects, so
    ``pyarrow.Array.from_buffers`` can wrap them without a copy:

    Attributes:
        count: number of records.
        next_offset, whole_bytes: as :func:`decode_record_set` returns.
        offsets, timestamps: int64 × count.
        timestamp_types: int32 × count (0 create time, 1 log append time, -1 none: the
            type of Spark's ``timestampType`` column, so that Arrow wraps it without a cast).
        key_offsets, value_offsets: int32 × (count + 1) into ``key_data`` / ``value_data``.
        key_validity, value_validity: validity bitmaps (bit i set = not null, LSB first).
        key_nulls, value_nulls: how many keys / values are null.
        header_offsets: int32 × (count + 1): record i's headers are entries
            ``header_offsets[i] .. header_offsets[i+1]``.
        header_count: number of header entries.
        header_key_offsets, header_key_data: the header keys (UTF-8, as on the wire).
        header_value_offsets, header_value_data, header_value_validity, header_value_nulls:
            the header values.
    """

    __slots__ = (
        "count", "next_offset", "whole_bytes", "offsets", "timestamps", "timestamp_types",
        "key_offsets", "key_data", "key_validity", "key_nulls",
        "value_offsets", "value_data", "value_validity", "value_nulls",
        "header_offsets", "header_count", "header_key_offsets", "header_key_data",
        "header_value_offsets", "header_value_data", "header_value_validity", "header_value_nulls",
    )

    def __repr__(self) -> str:
        return f"Columns(count={self.count}, next_offset={self.next_offset}, whole_bytes={self.whole_bytes})"


class _BinaryColumn:
    """An Arrow binary column being filled: offsets, data, validity bitmap."""

    def __init__(self) -> None:
        self.offsets = bytearray(struct.pack("<i", 0))
        self.data = bytearray()
        self.validity = bytearray()
        self.n = 0
        self.nulls = 0

    def add(self, value: bytes | None) -> None:
        if self.n % 8 == 0:
            self.validity.append(0)
        if value is None:
            self.nulls += 1
        else:
            self.data += value
            self.validity[-1] |= 1 << (self.n % 8)
            if len(self.data) > _INT32_MAX:
                raise OverflowError("record set too large for int32 Arrow offsets: decode it in parts")
        self.offsets += struct.pack("<i", len(self.data))
        self.n += 1


def decode_columnar(buf: Any, fetch_offset: int = 0, check_crc: bool = True) -> Columns:
    """Decode a record set into :class:`Columns`, the analytics (Spark/Arrow) path.

    Same selection as :func:`decode_record_set`: control batches skipped, records below
    ``fetch_offset`` dropped, a partial trailing batch ignored. Header keys must be UTF-8,
    as on the row path.

    Raises:
        CorruptRecordError: as :func:`decode_record_set`.
    """
    records, next_offset, consumed = decode_record_set(buf, fetch_offset, check_crc)
    keys, values, hkeys, hvals = _BinaryColumn(), _BinaryColumn(), _BinaryColumn(), _BinaryColumn()
    offsets = bytearray()
    timestamps = bytearray()
    ts_types = bytearray()
    header_offsets = bytearray(struct.pack("<i", 0))
    nheaders = 0
    for r in records:
        offsets += struct.pack("<q", r.offset)
        timestamps += struct.pack("<q", r.timestamp)
        ts_types += struct.pack("<i", r.timestamp_type)
        keys.add(r.key)
        values.add(r.value)
        for hk, hv in r.headers:
            hkeys.add(hk.encode("utf-8"))
            hvals.add(hv)
        nheaders += len(r.headers)
        header_offsets += struct.pack("<i", nheaders)
    cols = Columns()
    cols.count = len(records)
    cols.next_offset = next_offset
    cols.whole_bytes = consumed
    cols.offsets = offsets
    cols.timestamps = timestamps
    cols.timestamp_types = ts_types
    cols.key_offsets, cols.key_data, cols.key_validity, cols.key_nulls = keys.offsets, keys.data, keys.validity, keys.nulls
    cols.value_offsets, cols.value_data, cols.value_validity, cols.value_nulls = values.offsets, values.data, values.validity, values.nulls
    cols.header_offsets = header_offsets
    cols.header_count = nheaders
    cols.header_key_offsets, cols.header_key_data = hkeys.offsets, hkeys.data
    cols.header_value_offsets, cols.header_value_data = hvals.offsets, hvals.data
    cols.header_value_validity, cols.header_value_nulls = hvals.validity, hvals.nulls
    return cols


# -- the producer's per-record path (issue 16 "produce": lock, bound, futures) ------------------

# A record's bytes beyond its key, value and headers, at most: its length, attributes,
# timestamp and offset deltas, key and value lengths and header count as varints (5 + 1 +
# 10 + 5 + 5 + 5 + 5); each header adds at most 10 to its key and value (two lengths).
_RECORD_BOUND = 36
_HEADER_BOUND = 10


class OpenBatch:
    """What :class:`Appender` needs of a producer's batch; producers subclass it.

    Attributes:
        builder: the :class:`BatchBuilder` records are appended to.
        result: what each record's future refers to.
        size: bytes counted against the producer's memory: ``max(policy.batch_size,
            its builder's capacity at its first record)``, the most it may hold.
        closed: no more records go in (full, or taken to be sent).
    """

    __slots__ = ("builder", "result", "size", "closed")

    def __init__(self, builder: Any, result: Any) -> None:
        self.builder = builder
        self.result = result
        self.size = 0
        self.closed = False


class RecordRef:
    """A record's place in its batch: the batch's ``result``, the record's index, its timestamp.

    What :class:`Appender` hands out per record is an instance of a subclass (the
    producer's future), made with these three values; the Cython backend creates them
    without running any ``__init__`` (it sets the three fields itself), so subclasses must
    not rely on one. The Cython backend also hands the last record's instance out again for
    the next record when nobody else can see it any more (only the appender refers to it: no
    weak reference, no attribute set on it, the same class, no finalizer), which is the
    common case of a loop of sends that drops what they return: no allocation per record.
    It never does so for a subclass with slots or its own ``__new__``, where a fresh object
    could differ.
    """

    __slots__ = ("_batch", "_index", "_timestamp")

    def __init__(self, batch: Any, index: int, timestamp: int) -> None:
        self._batch = batch
        self._index = index
        self._timestamp = timestamp


_UNLOCKED = contextlib.nullcontext()  # an Appender's lock when its owner thread alone appends


def _headers_bound(headers: Any) -> int:
    """At most what ``headers`` add to a record (0 for a key or value of a wrong type:
    the builder refuses those)."""
    n = 0
    for hkey, hval in headers:
        n += _HEADER_BOUND
        if isinstance(hkey, str):
            n += len(hkey.encode("utf-8"))
        if hval is not None and isinstance(hval, (bytes, bytearray, memoryview)):
            n += len(hval)
    return n


class Appender:
    """The producer's per-record path: a producer's decisions, applied to one record at a time.

    The decisions are the producer's, in one Python object given once (``policy``, the
    producer's :class:`~kproto.producer.accumulator.SendPolicy`); this class applies
    them per record: the serializers, the partition count, the partition (one given with
    the record; else the partitioner's ``chooser``; else Java's default: murmur2 of the
    key unless the partitioner does not ``hash_keys``, or the topic's ``sticky``
    partition), a size check (a record whose bound, below, is over ``policy.max_record``
    goes to ``policy.check_size``, which raises), the timestamp, and :meth:`append` into
    the partition's open batch. It calls back into the policy per batch (``new_batch``;
    the partitioner's ``next_sticky`` when a new batch would be opened for a sticky
    partition, ``stick`` for a topic without one; ``full`` when a batch filled up) and to
    refuse a record (the partitioner's ``refuse``, for a partition out of range whoever
    chose it). A record that must wait (unknown partitions, no room in memory, or records
    already waiting: :attr:`hold`) goes to ``waiting`` instead. Producers bind their
    ``send`` to it, so the common case runs no Python code of theirs.

    Memory: ``used`` counts, per batch not yet settled, the most it may hold, and never
    exceeds ``buffer_memory``. As Java's ``BufferPool`` gives each new batch
    ``max(batch.size, record size)`` bytes, a record that opens a batch is appended only
    if ``used`` plus the larger of ``policy.batch_size`` and its bound (its key, value and
    headers, at most 36 bytes of framing, 10 per header, and a new batch's 61-byte header)
    stays within ``buffer_memory`` (else it waits), and the batch counts
    ``max(policy.batch_size, its builder's capacity)`` from then on. ``new_batch`` must
    give builders whose ``max_bytes`` is ``policy.batch_size``: their buffer never grows
    past that (:attr:`BatchBuilder.capacity`), so a record that goes into an open batch
    takes no more memory than is counted. A batch closes when a record does not fit (its
    builder's ``max_bytes``); the owner closes them too when it takes them to send.
    A record without room sets :attr:`exhausted`.

    Args:
        policy: read once: ``new_batch``, ``wake``, ``full``, ``buffer_memory``,
            ``partitioner``, ``future_class`` (a :class:`RecordRef` subclass), ``counts``,
            ``key_serializer``, ``value_serializer``, ``max_record``, ``batch_size``,
            ``waiting``, ``register``; called: ``check_size(bound)``, ``closed_error()``,
            ``thread_error()``.

    Attributes:
        lock: held while appending; the owner takes it for everything it shares with the
            appender (a ``threading.Lock``, or the Cython backend's C mutex with its methods).
        used: bytes counted for batches not yet settled (the owner subtracts settled ones).
        idle: True when no batch is open; the next record starts a linger clock (the owner
            sets it back).
        closed: set by the owner; :meth:`send` then raises ``policy.closed_error()``.
        exhausted: set when a record found no room in memory for a new batch (``full`` is
            called then too); the owner sends its open batches at once and clears it (Java's
            ``RecordAccumulator.ready``: batches are sendable while the pool is exhausted).
        hold: set by the owner while records wait, so that later ones queue behind them.
        owner_thread: 0, or the identity (``threading.get_ident()``) of the one thread that
            appends and takes :attr:`lock` (an asyncio producer's loop thread), set by the
            owner before it appends. The per-record path then takes no lock (nothing can
            contend for it; an uncontended lock taken and given per record was a few per
            cent of a send), and refuses a record from another thread (raises ``policy.thread_error()``).
        waiting: ``policy.waiting``, which the owner may replace.
    """

    def __init__(self, policy: Any) -> None:
        future_class = policy.future_class
        if not (isinstance(future_class, type) and issubclass(future_class, RecordRef)):
            raise TypeError(f"future_class must be a RecordRef subclass, not {future_class!r}")
        self._policy = policy
        self._future_class = future_class
        self._new_batch = policy.new_batch
        self._wake = policy.wake
        self._full = policy.full
        self.lock = threading.Lock()
        self.buffer_memory = policy.buffer_memory
        partitioner = self._partitioner = policy.partitioner
        self._chooser = partitioner.chooser
        self._hash_keys = partitioner.hash_keys
        self._sticky = partitioner.sticky
        self._counts = policy.counts
        self._key_serializer = policy.key_serializer
        self._value_serializer = policy.value_serializer
        self._max_record = policy.max_record
        self._batch_size = policy.batch_size
        self.waiting = policy.waiting
        self._register = policy.register
        self.used = 0
        self.idle = True
        self.closed = False
        self.exhausted = False
        self.hold = False
        self.owner_thread = 0
        self._open: dict[tuple[str, int], Any] = {}

    def send(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
             timestamp_ms: int | None = None, headers: Any = None, on_delivery: Any = None) -> Any:
        """A producer's ``send``: the record's future, or ``waiting``'s answer when it must wait.

        Raises:
            as :meth:`try_send`, and whatever ``waiting`` raises.
        """
        record = None if self.hold else self.try_send(topic, value, key, partition, timestamp_ms, headers)
        if record is None:
            return self.waiting(topic, value, key, partition, timestamp_ms, headers, on_delivery)
        if on_delivery is not None:
            self._register(record, on_delivery)
        return record

    def try_send(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
                 timestamp_ms: int | None = None, headers: Any = None) -> Any:
        """One record: its future, or None when it must wait (the topic's partitions are
        unknown, or there is no room in memory for it); nothing is appended then.

        Raises:
            what ``policy.closed_error()`` returns: :attr:`closed` is set.
            ValueError: ``partition`` is not one of the topic's.
            what ``policy.check_size`` raises: the record alone is too large.
            TypeError: key, value or a header has the wrong type.
        """
        if self.closed:
            raise self._policy.closed_error()
        if key is not None and self._key_serializer is not None:
            key = self._key_serializer(key)
        if value is not None and self._value_serializer is not None:
            value = self._value_serializer(value)
        partitions = self._counts.get(topic)
        if partitions is None:
            return None
        if partition is None:
            partition = -1 if self._chooser is None else self._chooser(topic, key, partitions)
        elif not 0 <= partition < partitions:
            raise self._partitioner.refuse(topic, partition, partitions)
        if headers is not None and not isinstance(headers, (list, tuple)):
            headers = list(headers.items())
        if timestamp_ms is None:
            timestamp_ms = int(_time.time() * 1000)
        return self.append(topic, partition, partitions, timestamp_ms, key, value, headers)

    def append(self, topic: str, partition: int, partitions: int, timestamp: int, key: Any, value: Any,
               headers: Sequence[tuple[str, Any]] | None = None) -> Any:
        """Append one record; returns its future, or None when there is no room in memory
        for it (nothing added).

        ``partition`` -1 applies Java's default partitioner (murmur2 or sticky).

        Raises:
            what ``policy.check_size`` raises: the record alone is too large.
            TypeError: key, value or a header has the wrong type (as :meth:`BatchBuilder.append`).
        """
        need = self._need(key, value, headers)
        full = no_room = False
        if not self.owner_thread:
            lock = self.lock
        elif threading.get_ident() == self.owner_thread:
            lock = _UNLOCKED
        else:
            raise self._policy.thread_error()
        with lock:
            sticky = False
            if partition < 0:
                if key is not None and self._hash_keys:
                    partition = murmur2_partition(key, partitions)
                else:
                    sticky = True
                    partition = self._sticky.get(topic, -1)
                    if not 0 <= partition < partitions:
                        partition = self._partitioner.stick(topic, partitions)
            if not 0 <= partition < partitions:  # a chooser's, a direct caller's or the partitioner's
                raise self._partitioner.refuse(topic, partition, partitions)
            batch = self._open.get((topic, partition))
            if batch is not None and batch.closed:
                batch = None
            index = -1 if batch is None else self._try(batch, timestamp, key, value, headers)
            full = batch is not None and index < 0
            if index < 0:
                if sticky:
                    partition = self._partitioner.next_sticky(topic, partition, partitions)
                    if not 0 <= partition < partitions:
                        raise self._partitioner.refuse(topic, partition, partitions)
                    batch = self._open.get((topic, partition))
                    if batch is not None and not batch.closed:
                        index = self._try(batch, timestamp, key, value, headers)
                        full = full or index < 0
                if index < 0:
                    # A new batch takes max(batch.size, the record), as a Java producer's takes
                    # from its BufferPool (RecordAccumulator.append: BufferPool.allocate).
                    if self.used + max(need, self._batch_size) > self.buffer_memory:
                        no_room = self.exhausted = True
                    else:
                        batch = self._open[(topic, partition)] = self._new_batch(topic, partition)
                        index = self._try(batch, timestamp, key, value, headers)
                        # It holds up to max(batch.size, this record): counted now, whole.
                        batch.size = max(self._batch_size, batch.builder.capacity)
                        self.used += batch.size
            wake = self.idle and not no_room
            if wake:
                self.idle = False
        if full or no_room:
            self._full()  # a full batch need not linger; nor do open ones while memory is exhausted
        elif wake:
            self._wake()
        if no_room:
            return None  # it waits for room: buffer.memory is never exceeded
        return self._future_class(batch.result, index, timestamp)

    def _need(self, key: Any, value: Any, headers: Any) -> int:
        """The memory a record may take at most (with a new batch's header), checked
        against the largest record the policy allows."""
        need = _RECORD_BOUND + BATCH_HEADER_SIZE
        if value is not None:
            need += _length("value", value)
        if key is not None:
            need += _length("key", key)
        if headers:
            need += _headers_bound(headers)
        if need > self._max_record:
            self._policy.check_size(need)
        return need

    def _try(self, batch: Any, timestamp: int, key: Any, value: Any, headers: Any) -> int:
        index = batch.builder.append(timestamp, key, value, headers)
        if index < 0:
            batch.closed = True
            return -1
        return index


# ---------------------------------------------------------------------------
# broker produce validation (issue 16 "broker produce"): a stored batch without a copy
# ---------------------------------------------------------------------------

# The part of a v2 batch that a broker stamps outside the CRC: base offset, length and
# partition leader epoch (Kafka's DefaultRecordBatch.setLastOffset / setPartitionLeaderEpoch).
_STAMPED_HEAD = _MAGIC


def uninitialized_bytes(size: int) -> bytes:
    """A bytes object of ``size`` bytes whose content is undefined, to be filled in place
    before anyone reads it (:class:`~kproto.protocol.frames.FrameReader`'s frame buffers).

    The extension's leaves the memory as malloc gives it: ``bytes(size)`` is calloc, which
    zeroes a block that the heap reuses (a memset of every byte, that the socket then
    overwrites). Here it is ``bytes(size)``.

    Raises:
        ValueError: ``size`` is negative.
    """
    if size < 0:
        raise ValueError(f"negative size {size}")
    return bytes(size)


_MICROS_MAX_MS = (2**63 - 1) // 1000  # the extremes of int64 milliseconds that fit in int64 microseconds
_MICROS_MIN_MS = -(2**63 // 1000)  # (C's division, towards zero, as Arrow's cast checks)


def millis_to_micros(buf: Any) -> bytearray:
    """int64 milliseconds, laid out as :attr:`Columns.timestamps`, as int64 microseconds
    in a new buffer: what Spark's and Arrow's ``timestamp("us")`` hold.

    One pass over the column in the extension, where Arrow's cast costs an allocation
    from its own pool and a checked multiply per value (issue 16).

    Raises:
        ValueError: the buffer's size is not a multiple of 8.
        OverflowError: a timestamp more than about 292,000 years from 1970, which
            microseconds cannot hold.
    """
    view = memoryview(buf).cast("B")
    if len(view) % 8:
        raise ValueError(f"{len(view)} bytes are not int64 values")
    values = array.array("q")
    values.frombytes(view)
    for t in values:
        if t > _MICROS_MAX_MS or t < _MICROS_MIN_MS:
            raise OverflowError(f"timestamp {t} ms does not fit int64 microseconds")
    return bytearray(array.array("q", [t * 1000 for t in values]).tobytes())


def stamped_head(buf: Any, base_offset: int, partition_leader_epoch: int) -> bytes:
    """The first 16 bytes of one whole v2 batch with ``base_offset`` and
    ``partition_leader_epoch`` written in: what :func:`rewrite_batch` would make of them.

    A broker stores the batch as this head followed by ``memoryview(buf)[16:]`` as
    received, so that no copy of its records is made (both fields lie outside the CRC-32C,
    which stays valid).

    Raises:
        CorruptRecordError: ``buf`` is not exactly one whole v2 batch.
        ValueError: a value does not fit its field, or the batch's offsets would overflow
            64 bits from ``base_offset``.
    """
    _whole_v2(buf)
    _offsets_fit(_field("base_offset", base_offset, 64), _i32.unpack_from(buf, _LAST_OFFSET_DELTA)[0])
    head = bytearray(memoryview(buf)[:_STAMPED_HEAD])
    _i64.pack_into(head, _BASE_OFFSET, base_offset)
    _i32.pack_into(head, _LEADER_EPOCH, _field("partition_leader_epoch", partition_leader_epoch, 32))
    return bytes(head)
