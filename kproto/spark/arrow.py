"""Raw Kafka record sets to Arrow arrays, through the codec's columnar decoder.

Theory of operation. :func:`kproto.records.decode_columnar` writes a record set's
records straight into Arrow-layout buffers, and :mod:`kproto.arrow` (the owner of the
Arrow form of a record, pyspark-free) wraps them without a copy: :func:`~kproto.arrow.record_struct`
gives each row's records.

A column of many record sets (the decode UDF's input: one record set per row) must
come back as one list per row. When every row is whole magic-2 batches, the common
case, the rows' bytes already lie end to end in the Arrow data buffer: one codec call
decodes them all, and the record count in each batch header (control batches count
none) says where each row's list ends, so the Python work per row is reading one
61-byte header per batch. Otherwise (legacy message sets, a torn row, a corrupt row)
each row is decoded alone and the per-row :class:`~kproto.codec.Columns` are stitched
into one set of buffers with numpy (binary offsets rebased by the data before them,
validity bitmaps re-packed); a refused row is then pinned to its index.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from kproto.arrow import ARROW_RECORD_FIELDS, record_struct
from kproto.codec import BATCH_HEADER_SIZE, Columns, decode_columnar, read_batch_header
from kproto.errors import CorruptRecordError, KafkaError

__all__ = ["DecodeMode", "decode_record_sets"]

_INT32_MAX = 2**31 - 1


class DecodeMode:
    """What the decoders do with a record set the codec refuses (Spark's ``from_avro`` words)."""

    FAILFAST = "FAILFAST"
    """Raise, naming the row and the codec's error (with its offset range)."""
    PERMISSIVE = "PERMISSIVE"
    """Give the row a null result and the error's text in the error column."""

    @staticmethod
    def check(mode: str) -> str:
        """``mode`` upper-cased; ValueError unless it is one of the two."""
        mode = mode.upper()
        if mode not in (DecodeMode.FAILFAST, DecodeMode.PERMISSIVE):
            raise ValueError(f"mode must be FAILFAST or PERMISSIVE, not {mode!r}")
        return mode


# Errors that mean "these bytes are not a record set": the codec's own (corrupt batch,
# unknown compression codec) and a header key that is not UTF-8.
_CORRUPT = (KafkaError, ValueError)


# -- stitching many rows' Columns into one ---------------------------------------------------

_BINARY_PARTS = {  # column -> (offsets, data, validity, nulls) attribute names
    "key": ("key_offsets", "key_data", "key_validity", "key_nulls"),
    "value": ("value_offsets", "value_data", "value_validity", "value_nulls"),
    "header_key": ("header_key_offsets", "header_key_data", None, None),
    "header_value": ("header_value_offsets", "header_value_data", "header_value_validity", "header_value_nulls"),
}


def _starts(counts: np.ndarray) -> np.ndarray:
    """Where each part begins when parts of these lengths are laid end to end."""
    return np.cumsum(counts) - counts


def _rebase(counts: np.ndarray, offsets: list, bases: np.ndarray) -> np.ndarray:
    """Join per-part int32 offset arrays (``counts[i] + 1`` entries each, from 0) into one.

    Each part's leading 0 is dropped and ``bases[i]`` (what came before it) added.
    """
    total = int(counts.sum())
    joined = np.frombuffer(b"".join(offsets), np.int32)
    keep = np.ones(len(joined), bool)
    keep[_starts(counts + 1)] = False
    out = np.empty(total + 1, np.int64)
    out[0] = 0
    out[1:] = joined[keep] + np.repeat(bases, counts)
    if out[-1] > _INT32_MAX:
        raise OverflowError("the decoded records of one Arrow batch pass 2 GiB: lower "
                            "spark.sql.execution.arrow.maxRecordsPerBatch")
    return out.astype(np.int32)


def _repack(counts: np.ndarray, bitmaps: list) -> np.ndarray:
    """Join per-part validity bitmaps (each padded to whole bytes) into one bitmap."""
    bits = np.unpackbits(np.frombuffer(b"".join(bitmaps), np.uint8), bitorder="little")
    first_bit = _starts((counts + 7) // 8 * 8)
    within = np.arange(int(counts.sum())) - np.repeat(_starts(counts), counts)
    return np.packbits(bits[np.repeat(first_bit, counts) + within], bitorder="little")


def _stitch(parts: Sequence[Columns]) -> Columns:
    """One :class:`Columns` holding every record of ``parts``, in order."""
    if len(parts) == 1:
        return parts[0]
    counts = np.fromiter((p.count for p in parts), np.int64, len(parts))
    out = Columns()
    out.count = int(counts.sum())
    out.next_offset = parts[-1].next_offset
    out.whole_bytes = sum(p.whole_bytes for p in parts)
    for name in ("offsets", "timestamps", "timestamp_types"):
        setattr(out, name, b"".join(getattr(p, name) for p in parts))
    header_counts = np.fromiter((p.header_count for p in parts), np.int64, len(parts))
    out.header_count = int(header_counts.sum())
    out.header_offsets = _rebase(counts, [p.header_offsets for p in parts], _starts(header_counts))
    for offsets_name, data_name, validity_name, nulls_name in _BINARY_PARTS.values():
        rows = header_counts if offsets_name.startswith("header") else counts
        data = [getattr(p, data_name) for p in parts]
        sizes = np.fromiter(map(len, data), np.int64, len(data))
        setattr(out, data_name, b"".join(data))
        setattr(out, offsets_name, _rebase(rows, [getattr(p, offsets_name) for p in parts], _starts(sizes)))
        if validity_name is not None:
            nulls = sum(getattr(p, nulls_name) for p in parts)
            setattr(out, nulls_name, nulls)
            setattr(out, validity_name, _repack(rows, [getattr(p, validity_name) for p in parts]) if nulls else b"")
    return out


# -- the UDF's work: one record set per row ----------------------------------------------------

def _counts_if_one_v2_each(data: memoryview, starts: np.ndarray, ends: np.ndarray, valid: np.ndarray) -> np.ndarray | None:
    """Records per row, read from the batch headers with numpy, if every valid row is
    exactly one magic-2 batch or empty (the usual blob: one producer batch per row); else
    None. The per-row reading of :func:`_counts_if_whole_v2` costs about a microsecond a
    row, more than decoding a row of a few records.

    The fields are those :func:`~kproto.codec.read_batch_header` reads (v2 layout, KIP-98):
    batchLength (int32 at 8) + 12 must be the row's length, magic (8) at 16 must be 2, the
    attributes' control bit (0x20 at 22) makes the count 0, recordsCount is the int32 at 57.
    The codec's decode checks the rest, and its record count must then agree.
    """
    if not (ends[~valid] == starts[~valid]).all():
        return None  # a null spanning bytes
    rows = valid & (ends > starts)  # an empty row holds no batch and no record
    starts, lengths = starts[rows], ends[rows] - starts[rows]
    if (lengths < BATCH_HEADER_SIZE).any():
        return None
    buf = np.frombuffer(data, np.uint8)

    def int32_at(pos: int) -> np.ndarray:  # each row's big-endian int32 at ``pos``
        return buf[starts[:, None] + np.arange(pos, pos + 4)].view(">i4").ravel().astype(np.int64)

    if not ((int32_at(8) + 12 == lengths).all() and (buf[starts + 16] == 2).all()):
        return None
    records = int32_at(57)
    if (records < 0).any():
        return None
    counts = np.zeros(len(valid), np.int64)
    counts[rows] = np.where(buf[starts + 22] & 0x20, 0, records)
    return counts


def _counts_if_whole_v2(data: memoryview, row_offsets: list[int], valid: np.ndarray) -> np.ndarray | None:
    """Records per row, read from the batch headers, if every row is whole magic-2 batches.

    None when a row holds a legacy message set (whose count needs decompressing), a
    partial batch, or a null spanning bytes: the caller then decodes row by row.
    """
    counts = np.zeros(len(valid), np.int64)
    for i in range(len(valid)):
        pos, end = row_offsets[i], row_offsets[i + 1]
        if not valid[i]:
            if pos != end:
                return None
            continue
        count = 0
        row = data[:end]  # a header cut by the row's end is a torn row, not the next row's bytes
        while pos < end:
            try:
                header = read_batch_header(row, pos)
            except KafkaError:  # a damaged header: the row's own decode names the error
                return None
            if header is None or header.magic != 2 or pos + header.size > end:
                return None
            pos += header.size
            if not header.is_control:  # control batches (transaction markers) hold no data record
                count += header.records_count
        counts[i] = count
    return counts


def decode_record_sets(raw: pa.Array, mode: str = DecodeMode.FAILFAST, check_crc: bool = True,
                       allow_partial: bool = False) -> tuple[pa.ListArray, pa.StringArray | None]:
    """Decode each row of a binary array (one raw record set per row) into a list of records.

    A null row gives a null list. When every row is whole magic-2 batches (the common
    case) the rows' bytes, already contiguous in the Arrow buffer, are decoded in one
    codec call and split by the record counts in the batch headers; otherwise, or when
    that call fails, each row is decoded alone so that errors land on the right row.

    Args:
        raw: ``binary`` (or ``large_binary``) rows, each zero or more concatenated record
            batches or legacy message sets.
        mode: :attr:`DecodeMode.FAILFAST` or :attr:`DecodeMode.PERMISSIVE`.
        check_crc: verify each batch's CRC.
        allow_partial: ignore bytes after the last whole batch of a row, as a consumer
            ignores a partial batch at the end of a fetch response; by default they are
            an error, since a stored record set should hold whole batches only.

    Returns:
        The lists, and in PERMISSIVE mode a string array holding each refused row's error
        (null for the others); None in FAILFAST mode.

    Raises:
        CorruptRecordError: FAILFAST mode and a row the codec refuses, or that ends
            in a partial batch (the message names the row and the codec's error).
    """
    n = len(raw)
    if pa.types.is_large_binary(raw.type):
        raw = raw.cast(pa.binary())
    valid = np.ones(n, bool) if raw.null_count == 0 else raw.is_valid().to_numpy(zero_copy_only=False).copy()
    row_ends = np.frombuffer(raw.buffers()[1], np.int32, n + 1, raw.offset * 4) if n else np.zeros(1, np.int32)
    row_offsets = row_ends.tolist()
    data = memoryview(raw.buffers()[2] or b"")
    permissive = DecodeMode.check(mode) == DecodeMode.PERMISSIVE
    errors = pa.nulls(n, pa.string()) if permissive else None
    counts = _counts_if_one_v2_each(data, row_ends[:-1], row_ends[1:], valid)
    if counts is None:
        counts = _counts_if_whole_v2(data, row_offsets, valid)
    if counts is not None:
        try:
            cols = decode_columnar(data[row_offsets[0]:row_offsets[n]], 0, check_crc)
        except _CORRUPT:
            cols = None  # some row is corrupt: find it below
        if cols is not None and cols.count == counts.sum():
            return _lists(cols, counts, valid), errors
    counts = np.zeros(n, np.int64)
    messages: list[str | None] = [None] * n
    parts = []
    for i in range(n):
        if not valid[i]:
            continue
        try:
            row = data[row_offsets[i]:row_offsets[i + 1]]
            cols = decode_columnar(row, 0, check_crc)
            if cols.whole_bytes != len(row) and not allow_partial:
                raise CorruptRecordError(
                    f"its last {len(row) - cols.whole_bytes} bytes are not a whole batch (a torn or "
                    "truncated record set; allow_partial=True ignores such a tail)", cols.next_offset, None)
        except _CORRUPT as exc:
            if not permissive:
                raise CorruptRecordError(f"row {i} of the Arrow batch is not a valid record set: {exc}",
                                         getattr(exc, "first_offset", None), getattr(exc, "last_offset", None)) from exc
            messages[i] = f"{type(exc).__name__}: {exc}"
            valid[i] = False
            continue
        parts.append(cols)
        counts[i] = cols.count
    return _lists(_stitch(parts) if parts else None, counts, valid), pa.array(messages, pa.string()) if permissive else None


def _lists(cols: Columns | None, counts: np.ndarray, valid: np.ndarray) -> pa.ListArray:
    """Cut the records of ``cols`` into one list per row (null where ``valid`` is not set)."""
    if cols is None:
        records = pa.array([], pa.struct([pa.field(k, v) for k, v in ARROW_RECORD_FIELDS.items()]))
    else:
        records = record_struct(cols)
    offsets = pa.array(np.concatenate(([0], np.cumsum(counts))).astype(np.int32))
    return pa.ListArray.from_arrays(offsets, records, mask=None if valid.all() else pa.array(~valid))
